// The page's layout and text around the views (issue 20, "The web page"): the analysis result
// stays visible while views change, the side pane gives its width to views that do not use it,
// sizes read in kB / MB, and Markdown `code` in findings becomes <code> elements.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import {
  ROOT, analyse, cliJson, openBrowser, openPage, screenshot, startServer,
} from '../harness.mjs';

const PAIR = ['corpus/diff/stale-endpoint/node-a.txt', 'corpus/diff/stale-endpoint/node-b.txt'];
const BARE_DROP = 'corpus/lints/RL401-bare-drop/fail-kube-firewall-bare-drop.txt';
const OTHER_TABLE = 'corpus/lints/RL201-undefined-jump-target/fail-chain-only-in-other-table.txt';
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

function assertLocalOnly() {
  const outside = requests.filter((u) => !u.startsWith(server.url) && !u.startsWith('data:'));
  assert.deepEqual(outside, [], 'requests that left 127.0.0.1');
  assert.deepEqual(errors, [], 'console errors');
}

async function openPair() {
  await page.setInputFiles('[data-testid="open-files"]', PAIR.map((f) => path.join(ROOT, f)));
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="dump-input"]').length === 2);
  await analyse(page);
}

// `#status-text` is the line the analysis has always written; the views used to write there too.
const analysisStatus = () => page.textContent('#status-text');

/** Waits until the view's own status line matches `pattern`; returns its text. */
async function viewStatus(pattern) {
  try {
    await page.waitForFunction((source) => new RegExp(source).test(
      document.querySelector('[data-testid="view-status"]').textContent), pattern.source, { timeout: 20000 });
  } catch (err) {
    const shown = await page.textContent('[data-testid="view-status"]');
    throw new Error(`the view's line reads "${shown}", not ${pattern}: ${err.message}`);
  }
  return page.textContent('[data-testid="view-status"]');
}

/** Widths in CSS pixels of the panes' grid, the main pane and the side pane (0 when hidden). */
function widths() {
  return page.evaluate(() => {
    const w = (selector) => {
      const node = document.querySelector(selector);
      return node.offsetParent === null ? 0 : node.getBoundingClientRect().width;
    };
    return { panes: w('#panes'), main: w('.pane-main'), side: w('#side') };
  });
}

describe('the views of an analysis', () => {
  it('keeps the analysis result on its line while views change and after re-analysing', async () => {
    await openPair();
    const cli = cliJson('check', '--format', 'json', '--no-config', ...PAIR);
    const total = { error: 0, warning: 0, info: 0 };
    for (const f of cli.files) for (const d of f.diagnostics) total[d.severity]++;
    const plural = (n, one) => `${n} ${n === 1 ? one : `${one}s`}`;
    const result = `2 dumps: ${plural(total.error, 'error')}, ${plural(total.warning, 'warning')}, ` +
      `${plural(total.info, 'info')}`;
    assert.ok((await analysisStatus()).startsWith(result), await analysisStatus());

    await page.click('[data-testid="services-tab"]');
    await page.locator('[data-testid="service"]').first().waitFor();
    await page.waitForFunction(() => document.body.dataset.state === 'done');
    assert.ok((await analysisStatus()).startsWith(result), await analysisStatus());
    const services = cliJson('services', '--format', 'json', PAIR[0]).files[0].services.length;
    assert.equal(await viewStatus(/Service port/), `node-a.txt: ${plural(services, 'Service port')}.`);

    await page.click('[data-testid="chains-tab"]');
    assert.match(await viewStatus(/Chain view/), /^Chain view of node-a\.txt: \d+ chains\.$/);
    assert.ok((await analysisStatus()).startsWith(result), await analysisStatus());

    // Re-analysing on the Services view: the view reloads after the result is written, and
    // used to write its line over it.
    await page.click('[data-testid="services-tab"]');
    await viewStatus(/Service port/);
    await analyse(page);
    await viewStatus(/Service port/);
    await page.waitForFunction(() => document.body.dataset.state === 'done');
    assert.ok((await analysisStatus()).startsWith(result), await analysisStatus());
    assertLocalOnly();
  });

  it('gives the diff and Services views the side pane\'s width until something is shown there', async () => {
    await openPair();
    // Findings: the side pane holds its hint beside the list.
    let w = await widths();
    assert.ok(w.side > 250, `side pane on the findings view: ${JSON.stringify(w)}`);
    assert.ok(w.main < 0.7 * w.panes, `findings view: ${JSON.stringify(w)}`);

    for (const tab of ['diff', 'services']) {
      await page.click(`[data-testid="${tab}-tab"]`);
      await page.locator(tab === 'diff' ? '[data-testid="diff-verdict"]' : '[data-testid="service"]').first().waitFor();
      w = await widths();
      assert.equal(w.side, 0, `${tab}: the side pane is hidden`);
      assert.ok(w.main > 0.98 * w.panes, `${tab}: the view takes the width: ${JSON.stringify(w)}`);
    }
    await screenshot(page, 'services-full-width');

    // A line link on a Service opens the dump beside it; closing it gives the width back.
    await page.locator('[data-testid="service"] td.mono button.link').first().click();
    await page.locator('[data-testid="highlighted-line"]').waitFor({ state: 'visible' });
    w = await widths();
    assert.ok(w.side > 250 && w.main < 0.7 * w.panes, `services with a line shown: ${JSON.stringify(w)}`);
    await page.click('#detail [data-testid="side-close"]');
    w = await widths();
    assert.equal(w.side, 0);
    assert.ok(w.main > 0.98 * w.panes, `services after close: ${JSON.stringify(w)}`);
    assertLocalOnly();
  });

  it('shows input sizes in B, kB and MB', async () => {
    const size = () => page.textContent('.dump-size');
    await page.fill('[data-testid="dump-input"]', '*filter\n');
    assert.equal(await size(), '8 B');
    const text = read(BARE_DROP);
    await page.fill('[data-testid="dump-input"]', text);
    assert.equal(text.length, 2620);
    assert.equal(await size(), '2.6 kB');
    await page.fill('[data-testid="dump-input"]', read(PAIR[0]));
    assert.equal(await size(), `${Math.round(read(PAIR[0]).length / 1000)} kB`);
    // Large inputs come as files (typing 1.5 MB into the textarea takes long).
    await page.fill('[data-testid="dump-input"]', '');
    const line = '-A INPUT -s 10.0.0.1/32 -j ACCEPT\n';
    const big = `*filter\n${line.repeat(Math.ceil(1.5e6 / line.length))}COMMIT\n`;
    assert.ok(big.length >= 1.5e6 && big.length < 1.505e6, String(big.length));
    await page.setInputFiles('[data-testid="open-files"]', { name: 'big.txt', mimeType: 'text/plain', buffer: Buffer.from(big) });
    await page.waitForFunction(() => document.querySelector('.dump-size').textContent.endsWith('MB'));
    assert.equal(await size(), '1.50 MB');
  });

  it('shows Markdown `code` in messages and help as code elements, input text escaped', async () => {
    await page.fill('[data-testid="dump-input"]', read(OTHER_TABLE));
    await analyse(page);
    const d = cliJson('check', '--format', 'json', '--no-config', OTHER_TABLE).files[0].diagnostics
      .find((x) => x.code === 'RL201');
    assert.match(d.message, /`/);
    const quoted = (text) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const plain = (text) => text.replaceAll('`', '');
    const item = page.locator('[data-testid="finding"][data-code="RL201"]');
    assert.deepEqual(await item.locator('.msg code').allTextContents(), quoted(d.message));
    assert.equal(await item.locator('.msg').textContent(), plain(d.message));

    await item.click();
    const detail = page.locator('[data-testid="finding-detail"]');
    await detail.waitFor({ state: 'visible' });
    assert.deepEqual(await detail.locator('.message code').allTextContents(), quoted(d.message));
    const help = page.locator('[data-testid="finding-help"]');
    assert.deepEqual(await help.locator('code').allTextContents(), quoted(d.help));
    assert.equal(await help.textContent(), `help: ${plain(d.help)}`);

    // The chain view's list of findings on a chain renders them the same way.
    await page.click('[data-testid="chains-tab"]');
    const onChain = page.locator('details[data-table="filter"] [data-testid="chain-finding"][data-code="RL201"]');
    await onChain.first().waitFor();
    assert.deepEqual(await onChain.first().locator('code').allTextContents(), quoted(d.message));

    // Markup in a quoted name stays text.
    const hostile = read(OTHER_TABLE).replace('-j FLANNEL-POSTRTG\n', '-j <b>X</b>\n');
    assert.notEqual(hostile, read(OTHER_TABLE));
    await page.click('[data-tab="findings"]');
    await page.fill('[data-testid="dump-input"]', hostile);
    await analyse(page);
    const codes = await page.locator('[data-testid="finding"][data-code="RL201"] .msg code').allTextContents();
    assert.ok(codes.includes('-j <b>X</b>'), codes.join(' | '));
    assert.equal(await page.locator('#panel-findings b').count(), 0, 'no element from the input');
    assertLocalOnly();
  });
});

const HAIRPIN = 'corpus/lints/RL415-missing-hairpin/fail-endpoint-chain-without-hairpin-rule.txt';

/**
 * What the chain graph must draw for `picks` in one table of the CLI's parse: every chain on a
 * path from an entry to a pick, the picks' callees two levels down, every jump between them.
 */
function expectedGraph(table, picks) {
  const calls = new Map(table.chains.map((c) => [c.name, []]));
  for (const c of table.chains) {
    for (const r of c.rules) {
      const to = r.target && r.target.name;
      if (calls.has(to) && !calls.get(c.name).includes(to)) calls.get(c.name).push(to);
    }
  }
  const drawn = new Set(picks);
  const up = [...picks];
  for (let k = 0; k < up.length; k++) {
    for (const [from, list] of calls) {
      if (list.includes(up[k]) && !drawn.has(from)) {
        drawn.add(from);
        up.push(from);
      }
    }
  }
  let frontier = [...picks];
  for (let level = 0; level < 2; level++) {
    const next = [];
    for (const c of frontier) {
      for (const to of calls.get(c)) {
        if (!drawn.has(to)) {
          drawn.add(to);
          next.push(to);
        }
      }
    }
    frontier = next;
  }
  const edges = [];
  for (const from of drawn) for (const to of calls.get(from)) if (drawn.has(to)) edges.push(`${from}->${to}`);
  return { nodes: [...drawn].sort(), edges: edges.sort() };
}

describe('the chain graph', () => {
  it('draws the jumps from the hooks to a picked chain and on, with its findings marked', async () => {
    await page.fill('[data-testid="dump-input"]', read(HAIRPIN));
    await analyse(page);
    const nat = cliJson('parse', '--format', 'json', HAIRPIN).files[0].tables
      .find((t) => t.name === 'nat' && !t.superseded);
    const pick = 'KUBE-SVC-I5LIAMPLWKMBJ54B';
    const expected = expectedGraph(nat, [pick]);
    // By hand, from the dump: the way in, the Service's endpoints and their callees.
    assert.deepEqual(expected.nodes, ['KUBE-MARK-MASQ', 'KUBE-SEP-4O5AICOKW2EZK2IV', 'KUBE-SEP-D6PPDDRHTZSFOGTV',
      'KUBE-SERVICES', pick, 'OUTPUT', 'PREROUTING']);
    assert.ok(expected.edges.includes('KUBE-SEP-D6PPDDRHTZSFOGTV->KUBE-MARK-MASQ'));
    assert.ok(!expected.edges.some((e) => e.includes('KUBE-SVC-NPX46M4PTMTKRN6Y')));

    await page.click('[data-testid="chains-tab"]');
    const natBlock = page.locator('[data-testid="chain-view"] details[data-table="nat"]');
    const services = natBlock.locator('[data-testid="chain-node"][data-chain="KUBE-SERVICES"]').first();
    await services.waitFor();
    await services.locator(':scope > .chain-row .toggle').click();
    const svc = services.locator(`:scope > .children [data-testid="chain-node"][data-chain="${pick}"]`);
    await svc.waitFor();
    assert.equal(await page.locator('[data-testid="graph-svg"]').count(), 0, 'nothing drawn before a pick');
    await svc.locator(':scope > .chain-row [data-testid="chain-pick"]').click();

    const picture = page.locator('[data-testid="graph-svg"][data-table="nat"]');
    await picture.waitFor();
    assert.equal(await picture.evaluate((n) => n.namespaceURI), 'http://www.w3.org/2000/svg');
    const nodes = await picture.locator('[data-testid="graph-node"]').evaluateAll((g) => g.map((e) => e.dataset.chain));
    assert.deepEqual(nodes.sort(), expected.nodes);
    const edges = await picture.locator('[data-testid="graph-edge"]').evaluateAll((p) => p.map((e) => `${e.dataset.from}->${e.dataset.to}`));
    assert.deepEqual(edges.sort(), expected.edges);
    assert.equal(await picture.locator(`[data-testid="graph-node"][data-chain="${pick}"]`).getAttribute('data-picked'), 'true');
    // The hooks start the picture: left of everything they reach.
    const x = (name) => picture.locator(`[data-testid="graph-node"][data-chain="${name}"]`).evaluate((g) => g.getBoundingClientRect().x);
    assert.ok(await x('PREROUTING') < await x('KUBE-SERVICES'));
    assert.ok(await x('KUBE-SERVICES') < await x(pick));

    // Findings: the counts `check` gives per chain, marked on the chains that have them.
    const findings = new Map();
    for (const d of cliJson('check', '--format', 'json', '--no-config', HAIRPIN).files[0].diagnostics) {
      if (d.table !== 'nat' || !d.chain) continue;
      const f = findings.get(d.chain) || [0, 0, 0];
      f[['error', 'warning', 'info'].indexOf(d.severity)]++;
      findings.set(d.chain, f);
    }
    assert.ok(findings.has('KUBE-SEP-4O5AICOKW2EZK2IV'), 'the missing hairpin is on the endpoint chain');
    for (const name of expected.nodes) {
      const g = picture.locator(`[data-testid="graph-node"][data-chain="${name}"]`);
      const want = findings.get(name) || [0, 0, 0];
      assert.equal(await g.getAttribute('data-findings'), want.join(','), name);
      assert.equal(await g.locator('[data-testid="graph-findings"]').count(), findings.has(name) ? 1 : 0, name);
      assert.equal(await g.evaluate((e) => e.classList.contains('findings')), findings.has(name), name);
    }
    await screenshot(page, 'chain-graph');

    // Clicking a chain shows it in the dump; un-picking removes the picture.
    await picture.locator('[data-testid="graph-node"][data-chain="KUBE-SEP-4O5AICOKW2EZK2IV"]').click();
    const line = page.locator('[data-testid="highlighted-line"] .src');
    await line.waitFor({ state: 'visible' });
    assert.match(await line.textContent(), /KUBE-SEP-4O5AICOKW2EZK2IV/);
    // And from the keyboard.
    await picture.locator('[data-testid="graph-node"][data-chain="KUBE-SERVICES"]').focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /KUBE-SERVICES/.test(document.querySelector('[data-testid="highlighted-line"] .src').textContent));
    await svc.locator(':scope > .chain-row [data-testid="chain-pick"]').click();
    await page.waitForFunction(() => !document.querySelector('[data-testid="graph-svg"]'));
    assertLocalOnly();
  });

  it('bounds what it draws: callees past 16 a chain are counted, not drawn', async () => {
    const callees = Array.from({ length: 20 }, (_, k) => `SVC-${k + 1}`);
    const dump = ['*nat', ':PREROUTING ACCEPT [0:0]', ':KUBE-SERVICES - [0:0]', ...callees.map((c) => `:${c} - [0:0]`),
      '-A PREROUTING -j KUBE-SERVICES', ...callees.map((c, k) => `-A KUBE-SERVICES -d 10.0.0.${k + 1}/32 -j ${c}`),
      ...callees.map((c) => `-A ${c} -j ACCEPT`), 'COMMIT', ''].join('\n');
    await page.fill('[data-testid="dump-input"]', dump);
    await analyse(page);

    await page.click('[data-testid="chains-tab"]');
    const services = page.locator('details[data-table="nat"] [data-testid="chain-node"][data-chain="KUBE-SERVICES"]').first();
    await services.waitFor();
    await services.locator(':scope > .chain-row [data-testid="chain-pick"]').click();
    const picture = page.locator('[data-testid="graph-svg"][data-table="nat"]');
    await picture.waitFor();
    const more = picture.locator('[data-testid="graph-more"][data-from="KUBE-SERVICES"]');
    assert.equal(await more.textContent(), `+${callees.length - 16} more`);
    const edges = await picture.locator('[data-testid="graph-edge"][data-from="KUBE-SERVICES"]')
      .evaluateAll((p) => p.map((e) => e.dataset.to));
    assert.deepEqual(edges.sort(), callees.slice(0, 16).sort());
    assertLocalOnly();
  });
});
