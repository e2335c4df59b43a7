// Nodes in kube-proxy's IPVS mode in the page (issue 21): the diff view compares them with each
// other and with an iptables node as `rulelint diff` does, with its notes, and the Services
// view lists the Service ports of their virtual servers as `rulelint services` does.

import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import {
  ROOT, analyse, cliJson, openBrowser, openPage, screenshot, startServer,
} from '../harness.mjs';

let server;
let browser;
let page;
let requests;
let errors;

before(async () => {
  server = await startServer();
  ({ browser, page, requests, errors } = await openBrowser());
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

beforeEach(async () => {
  requests.length = 0;
  errors.length = 0;
  await openPage(page, server.url);
});

function assertLocalOnly() {
  const outside = requests.filter((u) => !u.startsWith(server.url) && !u.startsWith('data:'));
  assert.deepEqual(outside, [], 'requests that left 127.0.0.1');
  assert.deepEqual(errors, [], 'console errors');
}

async function openFiles(files) {
  await page.setInputFiles('[data-testid="open-files"]', files.map((f) => path.join(ROOT, f)));
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="dump-input"]').length === n, files.length);
  await analyse(page);
}

async function shownDiff() {
  await page.click('[data-testid="diff-tab"]');
  await page.locator('[data-testid="diff-verdict"]').waitFor({ state: 'visible' });
  return {
    verdict: await page.textContent('[data-testid="diff-verdict"]'),
    drift: await page.$$eval('[data-testid="drift"]', (items) => items.map((e) => ({ kind: e.dataset.kind, text: e.textContent }))),
    notes: await page.$$eval('[data-testid="diff-note"]', (items) => items.map((e) => e.textContent)),
  };
}

describe('IPVS nodes in the page', () => {
  it('shows the stale real server of two IPVS nodes as the CLI does', async () => {
    const pair = ['corpus/diff/ipvs-stale-real-server/node-a.txt', 'corpus/diff/ipvs-stale-real-server/node-b.txt'];
    await openFiles(pair);
    const shown = await shownDiff();
    const cli = cliJson('diff', '--format', 'json', ...pair);
    assert.equal(cli.agree, false);
    const expected = cli.differences.filter((d) => d.expected === null)
      .flatMap((d) => d.messages.map((m) => ({ kind: d.kind, message: m })));
    assert.equal(shown.drift.length, expected.length);
    for (const [i, e] of expected.entries()) {
      assert.equal(shown.drift[i].kind, e.kind);
      assert.ok(shown.drift[i].text.includes(e.message), `${shown.drift[i].text} lacks ${e.message}`);
    }
    assert.ok(shown.drift.some((d) => d.text.includes('10.244.3.9:8080')));
    assert.match(shown.verdict, new RegExp(`${cli.summary.drift} drifting`));
    await screenshot(page, 'diff-ipvs');
    assertLocalOnly();
  });

  it('compares an IPVS node with an iptables node at the Service level, and says so', async () => {
    const pair = ['corpus/diff/ipvs-vs-iptables/node-a.txt', 'corpus/diff/ipvs-vs-iptables/node-b.txt'];
    await openFiles(pair);
    const shown = await shownDiff();
    const cli = cliJson('diff', '--format', 'json', ...pair);
    assert.equal(cli.agree, true);
    assert.match(shown.verdict, /^No drift between node-a and node-b/);
    assert.deepEqual(shown.notes, cli.notes);
    assert.ok(shown.notes.some((n) => n.includes('node-b is in IPVS mode')), shown.notes.join('\n'));
    assertLocalOnly();
  });

  it('lists the Service ports of an IPVS node as `rulelint services` does', async () => {
    const node = 'corpus/ipvs/healthy-node.txt';
    await openFiles([node]);
    await page.click('[data-testid="services-tab"]');
    const expected = cliJson('services', '--format', 'json', node).files[0].services.length;
    assert.ok(expected > 0);
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="service"]').length === n, expected);
    assertLocalOnly();
  });
});
