// The web page end to end: the real `rulelint serve`, Debian's headless Chromium, and the CLI
// as the source of expected results. Run by scripts/test-web.sh (`node --test tests/`).

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import {
  ROOT, analyse, cliJson, openBrowser, openPage, screenshot, startServer,
} from '../harness.mjs';

const BARE_DROP = 'corpus/lints/RL401-bare-drop/fail-kube-firewall-bare-drop.txt';
const HEALTHY = 'corpus/kube/healthy/modern-1.29-full.txt';
const read = (file) => readFileSync(path.join(ROOT, file), 'utf8');

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

/** Every request stayed on the page's origin (data: URLs are not requests on the network). */
function assertLocalOnly() {
  const outside = requests.filter((u) => !u.startsWith(server.url) && !u.startsWith('data:'));
  assert.deepEqual(outside, [], 'requests that left 127.0.0.1');
  assert.ok(requests.some((u) => u.endsWith('/worker.js')), 'the worker was loaded');
  assert.deepEqual(errors, [], 'console errors');
}

/** The findings the page shows, as sorted "CODE:line" strings. */
async function shownFindings() {
  return page.$$eval('[data-testid="finding"]', (items) => items
    .map((i) => `${i.dataset.code}:${i.dataset.line}`)
    .sort());
}

function expectedFindings(file) {
  const doc = cliJson('check', '--format', 'json', '--no-config', file);
  return doc.files[0].diagnostics.map((d) => `${d.code}:${d.line}`).sort();
}

describe('the web page', () => {
  it('shows the findings `rulelint check` gives for a pasted dump', async () => {
    await page.fill('[data-testid="dump-input"]', read(BARE_DROP));
    const elapsed = await analyse(page);
    assert.ok(elapsed >= 0, 'the page shows the time it took');
    assert.match(await page.textContent('#status-text'), /1 error/);
    const expected = expectedFindings(BARE_DROP);
    assert.deepEqual(expected, ['RL401:15']);
    assert.deepEqual(await shownFindings(), expected);
    await screenshot(page, 'findings');
    assertLocalOnly();
  });

  // Every backend's cases: iptables-save (.txt), nftables (.nft listing and transaction, .json)
  // and IPVS-mode outputs (.ipvs), pasted as a user would.
  it('gives the CLI\'s codes and lines on every failing lint corpus dump', async () => {
    const dirs = readdirSync(path.join(ROOT, 'corpus/lints'), { withFileTypes: true })
      .filter((d) => d.isDirectory() && /^RL\d/.test(d.name));
    let compared = 0;
    for (const dir of dirs) {
      const files = readdirSync(path.join(ROOT, 'corpus/lints', dir.name)).filter((f) => /^fail-.*\.(txt|nft|json|ipvs)$/.test(f));
      for (const f of files) {
        const file = `corpus/lints/${dir.name}/${f}`;
        await page.fill('[data-testid="dump-input"]', read(file));
        await analyse(page);
        assert.deepEqual(await shownFindings(), expectedFindings(file), file);
        compared++;
      }
    }
    assert.ok(compared >= 20, `compared ${compared} dumps`);
    assertLocalOnly();
  });

  it('shows a finding\'s line highlighted, its help, and its docs one click away', async () => {
    const text = read(BARE_DROP);
    await page.fill('[data-testid="dump-input"]', text);
    await analyse(page);
    const expected = cliJson('check', '--format', 'json', '--no-config', BARE_DROP).files[0].diagnostics[0];
    await page.click(`[data-testid="finding"][data-code="${expected.code}"]`);
    const line = page.locator('[data-testid="highlighted-line"]');
    await line.waitFor({ state: 'visible' });
    assert.equal(await line.getAttribute('data-line'), String(expected.line));
    assert.equal((await line.locator('.src').textContent()), text.split('\n')[expected.line - 1]);
    const help = await page.textContent('[data-testid="finding-help"]');
    // Markdown `code` spans show as code elements, without their backticks.
    assert.ok(help.includes(expected.help.replaceAll('`', '').slice(0, 60)), help);
    await page.click('[data-testid="explain-button"]');
    const docs = page.locator('[data-testid="explain-view"]');
    await docs.waitFor({ state: 'visible' });
    const docsText = await docs.textContent();
    assert.match(docsText, /RL401 bare-drop/);
    assert.match(docsText, /What it flags/);
    await screenshot(page, 'finding-detail');
    assertLocalOnly();
  });

  it('renders the chain view and the services view of a kube-proxy node', async () => {
    await page.fill('[data-testid="dump-input"]', read(HEALTHY));
    await analyse(page);
    const parsed = cliJson('parse', '--format', 'json', HEALTHY).files[0];
    const nat = parsed.tables.find((t) => t.name === 'nat' && !t.superseded);
    const natChains = new Set(nat.chains.map((c) => c.name));
    const calls = (name) => [...new Set(nat.chains.find((c) => c.name === name).rules
      .map((r) => r.target && r.target.name).filter((t) => natChains.has(t)))].sort();

    await page.click('[data-testid="chains-tab"]');
    const view = page.locator('[data-testid="chain-view"]');
    const natBlock = view.locator('details[data-table="nat"]');
    const prerouting = natBlock.locator(':scope > ul > [data-chain="PREROUTING"]');
    await prerouting.waitFor({ state: 'visible' });
    // Hooks open one level by themselves: PREROUTING lists what it jumps to.
    const level = prerouting.locator(':scope > .children > ul.tree > [data-testid="chain-node"]');
    await level.first().waitFor();
    assert.deepEqual((await level.evaluateAll((n) => n.map((e) => e.dataset.chain))).sort(), calls('PREROUTING'));
    const services = level.and(page.locator('[data-chain="KUBE-SERVICES"]'));
    await services.locator(':scope > .chain-row .toggle').click();
    const svc = services.locator(':scope > .children > ul.tree > [data-testid="chain-node"]');
    await svc.first().waitFor();
    assert.deepEqual((await svc.evaluateAll((n) => n.map((e) => e.dataset.chain))).sort(), calls('KUBE-SERVICES'));
    await screenshot(page, 'chains');

    await page.click('[data-testid="services-tab"]');
    const rows = page.locator('[data-testid="services-view"] [data-testid="service"]');
    await rows.first().waitFor();
    const expected = cliJson('services', '--format', 'json', HEALTHY).files[0].services;
    assert.ok(expected.length > 3 && expected.length <= 100);
    assert.deepEqual(await rows.evaluateAll((r) => r.map((e) => e.dataset.name)), expected.map((s) => s.name || ''));
    const named = expected.find((s) => s.name && s.endpoints.length > 0);
    await page.fill('[data-testid="services-filter"]', named.name);
    await page.waitForFunction((name) => {
      const shown = [...document.querySelectorAll('[data-testid="service"]')];
      return shown.length > 0 && shown.every((r) => r.textContent.includes(name));
    }, named.name);
    await page.fill('[data-testid="services-filter"]', '');
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="service"]').length === n, expected.length);
    await screenshot(page, 'services');
    assertLocalOnly();
  });

  it('with two dumps opened as files, shows both and the diff report', async () => {
    await page.setInputFiles('[data-testid="open-files"]', [path.join(ROOT, BARE_DROP), path.join(ROOT, HEALTHY)]);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="dump-input"]').length === 2);
    await analyse(page);
    const files = await page.$$eval('[data-testid="finding"]', (f) => [...new Set(f.map((e) => e.dataset.file))]);
    assert.ok(files.includes(path.basename(BARE_DROP)), files.join());
    await page.click('[data-testid="diff-tab"]');
    const report = page.locator('[data-testid="diff-report"]');
    await report.waitFor({ state: 'visible' });
    assert.match(await report.textContent(), /Node diff/);
    assert.match(await page.textContent('[data-testid="diff-verdict"]'), /drifting difference/);
    assertLocalOnly();
  });

  it('compares two nodes the way `rulelint diff` does: the stale endpoint', async () => {
    const pair = ['corpus/diff/stale-endpoint/node-a.txt', 'corpus/diff/stale-endpoint/node-b.txt'];
    await page.setInputFiles('[data-testid="open-files"]', pair.map((f) => path.join(ROOT, f)));
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="dump-input"]').length === 2);
    await analyse(page);
    await page.click('[data-testid="diff-tab"]');
    await page.locator('[data-testid="diff-verdict"]').waitFor({ state: 'visible' });
    const cli = cliJson('diff', '--format', 'json', ...pair);
    assert.equal(cli.agree, false);
    const expected = cli.differences.filter((d) => d.expected === null)
      .flatMap((d) => d.messages.map((m) => ({ kind: d.kind, message: m })));
    const shown = await page.$$eval('[data-testid="drift"]', (items) => items.map((e) => ({
      kind: e.dataset.kind,
      text: e.textContent,
    })));
    assert.equal(shown.length, expected.length);
    for (const [i, e] of expected.entries()) {
      assert.equal(shown[i].kind, e.kind);
      assert.ok(shown[i].text.includes(e.message), `${shown[i].text} lacks ${e.message}`);
    }
    assert.ok(shown.some((s) => s.kind === 'endpoint' && s.text.includes('10.244.3.9:8080')));
    assert.match(await page.textContent('[data-testid="diff-verdict"]'), new RegExp(`${cli.summary.drift} drifting`));
    await screenshot(page, 'diff');
    assertLocalOnly();
  });

  it('finds the odd node out of a group of twelve', async () => {
    const dir = 'corpus/diff/group-odd-node';
    const files = readdirSync(path.join(ROOT, dir)).filter((f) => f.endsWith('.txt')).sort();
    await page.setInputFiles('[data-testid="open-files"]', files.map((f) => path.join(ROOT, dir, f)));
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="dump-input"]').length === n, files.length);
    await analyse(page);
    await page.click('[data-testid="diff-tab"]');
    await page.locator('[data-testid="odd-nodes"]').waitFor({ state: 'visible' });
    const odd = await page.$$eval('[data-testid="odd-nodes"] tbody tr', (rows) => rows.map((r) => r.dataset.node));
    assert.deepEqual(odd, ['node-07']);
    const drift = await page.$$eval('[data-testid="drift"]', (items) => items.map((e) => e.textContent));
    assert.equal(drift.length, 1);
    assert.match(drift[0], /node-07: KUBE-SVC-\w+ \(team-alpha\/fraud-redis:redis\) still DNATs to 10\.244\.7\.158:6379, which 11 other nodes dropped/);
    await screenshot(page, 'diff-group');
    assertLocalOnly();
  });

  it('is served with its policy, wasm MIME type, and nothing outside the page', async () => {
    const index = await fetch(server.url);
    assert.match(index.headers.get('content-security-policy'), /connect-src 'none'/);
    const wasm = await fetch(`${server.url}pkg/rulelint_wasm_bg.wasm`);
    assert.equal(wasm.headers.get('content-type'), 'application/wasm');
    // fetch() would normalise `..` away: send it raw.
    const raw = await new Promise((resolve, reject) => {
      const socket = net.connect(server.port, '127.0.0.1', () => {
        socket.end(`GET /../Cargo.toml HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
      });
      let data = '';
      socket.on('data', (d) => { data += d; });
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    assert.match(raw, /^HTTP\/1\.1 404 /);
  });
});
