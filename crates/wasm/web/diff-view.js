// The node diff / drift report: draws the document of `rulelint diff --format json` (the wasm
// export `diff`, called by the worker with every loaded dump). Same order as the CLI's text:
// drift at the Kubernetes level, then chains, then rules (two nodes), then what healthy nodes
// differ by, then for three or more nodes the table of nodes by kind of drift.
// Dump text reaches the DOM only through textContent.

const RULES_SHOWN = 200;

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key === 'className') node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

/** Where a difference shows, e.g. `node-a:170, node-b:170`. */
function locations(difference) {
  return difference.variants
    .flatMap((v) => v.nodes)
    .filter((n) => n.line !== null)
    .slice(0, 3)
    .map((n) => `${n.node}:${n.line}`)
    .join(', ');
}

function driftList(doc, level) {
  const items = doc.differences.filter((d) => d.level === level && d.expected === null);
  if (items.length === 0) return null;
  const list = el('ul', { className: 'drift' });
  for (const d of items) {
    for (const message of d.messages) {
      const where = locations(d);
      list.append(el('li', { 'data-testid': 'drift', dataset: { kind: d.kind, level: d.level } },
        el('span', { className: 'sev-error' }, '≠ '), message,
        where ? el('span', { className: 'hint' }, `  [${where}]`) : ''));
    }
  }
  return list;
}

function ruleSection(doc) {
  const explained = new Set(doc.differences.filter((d) => d.expected === null && d.service).map((d) => d.service));
  const chains = doc.rules.filter((c) => c.changes.some((ch) => ch.expected === null));
  if (chains.length === 0) return null;
  const [a, b] = doc.nodes.map((n) => n.name);
  const section = el('div', { 'data-testid': 'diff-rules' });
  let shown = 0;
  for (const chain of chains) {
    const drift = chain.changes.filter((ch) => ch.expected === null);
    const repeated = drift.filter((ch) => ch.service && explained.has(ch.service));
    const own = drift.filter((ch) => !(ch.service && explained.has(ch.service)));
    const title = el('h4', {}, `${chain.table} ${chain.chain}`);
    if (chain.unordered) title.append(el('span', { className: 'hint' }, ' (too different to diff in order; compared as sets)'));
    if (repeated.length) title.append(el('span', { className: 'hint' }, ` (${repeated.length} change(s) for the Services above not repeated)`));
    section.append(title);
    const pre = el('pre', { className: 'rules' });
    for (const ch of own) {
      if (shown++ >= RULES_SHOWN) break;
      if (ch.change === 'moved') {
        pre.append(el('span', { className: 'sev-warning' }, `moved ${a}:${ch.a.line} -> ${b}:${ch.b.line}  ${ch.a.text}\n`));
        continue;
      }
      if (ch.a) pre.append(el('span', { className: 'sev-error' }, `- ${a}:${ch.a.line}  ${ch.a.text}\n`));
      if (ch.b) pre.append(el('span', { className: 'sev-info' }, `+ ${b}:${ch.b.line}  ${ch.b.text}\n`));
    }
    if (own.length) section.append(pre);
  }
  if (shown > RULES_SHOWN) section.append(el('p', { className: 'hint' }, `Only the first ${RULES_SHOWN} rule changes are shown.`));
  return section;
}

function expectedSection(doc) {
  const byReason = new Map();
  const add = (reason, line) => {
    if (!byReason.has(reason)) byReason.set(reason, []);
    byReason.get(reason).push(line);
  };
  for (const d of doc.differences) if (d.expected) for (const m of d.messages) add(d.expected, m);
  for (const c of doc.rules) {
    const counts = new Map();
    for (const ch of c.changes) if (ch.expected) counts.set(ch.expected, (counts.get(ch.expected) || 0) + 1);
    for (const [reason, n] of counts) add(reason, `${c.table} ${c.chain}: ${n} rule change(s)`);
  }
  if (byReason.size === 0) return null;
  const words = {
    'local-endpoints': 'local endpoints differ per node (Local traffic policy)',
    'node-local-chain': "the chain holds this node's pods",
    'node-address': 'only node addresses differ (node IP, pod CIDR)',
  };
  const details = el('details', { 'data-testid': 'diff-expected' },
    el('summary', {}, `Expected differences (${doc.summary.expected}): healthy nodes differ like this`));
  for (const [reason, lines] of byReason) {
    details.append(el('h4', {}, words[reason] || reason));
    const list = el('ul', { className: 'expected' });
    for (const line of lines.slice(0, 50)) list.append(el('li', {}, line));
    if (lines.length > 50) list.append(el('li', { className: 'hint' }, `… and ${lines.length - 50} more`));
    details.append(list);
  }
  return details;
}

function oddNodesTable(doc) {
  if (!doc.odd_nodes.length) return null;
  const kinds = [...new Set(doc.odd_nodes.flatMap((n) => Object.keys(n.drift)))].sort();
  const head = el('tr', {}, el('th', {}, 'node'), ...kinds.map((k) => el('th', {}, k)), el('th', {}, 'total'));
  const table = el('table', { 'data-testid': 'odd-nodes' }, el('thead', {}, head));
  const body = el('tbody');
  for (const n of doc.odd_nodes) {
    const total = Object.values(n.drift).reduce((x, y) => x + y, 0);
    body.append(el('tr', { dataset: { node: n.node } }, el('td', {}, n.node),
      ...kinds.map((k) => el('td', {}, String(n.drift[k] || 0))), el('td', {}, String(total))));
  }
  table.append(body);
  return table;
}

/**
 * Renders the diff report into `container` (emptied first).
 * @param {HTMLElement} container the `data-testid="diff-report"` section
 * @param {object|null} doc the parsed `rulelint diff --format json` document, or null when the
 *   wasm module has no `diff` export
 */
export function renderDiff(container, doc) {
  container.replaceChildren(el('h2', {}, 'Node diff'));
  if (doc === null) {
    container.append(el('p', { className: 'hint' }, 'This build of the analyser has no node diff: each dump was checked on its own.'));
    return;
  }
  if (doc.error) {
    container.append(el('p', { className: 'sev-error' }, `The dumps could not be compared: ${doc.error}`));
    return;
  }
  const names = doc.nodes.map((n) => n.name).join(doc.nodes.length > 2 ? ', ' : ' and ');
  const verdict = doc.agree
    ? el('p', { 'data-testid': 'diff-verdict', className: 'verdict ok' },
      `No drift between ${names}: ${doc.summary.expected} expected difference(s).`)
    : el('p', { 'data-testid': 'diff-verdict', className: 'verdict sev-error' },
      `${doc.summary.drift} drifting difference(s) between ${names}; ${doc.summary.expected} expected.`);
  container.append(verdict);
  // What was not compared and why (nodes of another mode, a summary without rules).
  for (const note of doc.notes ?? []) {
    container.append(el('p', { 'data-testid': 'diff-note', className: 'hint' }, note));
  }
  const sections = [
    ['Kubernetes', driftList(doc, 'kubernetes')],
    ['Chains', driftList(doc, 'chain')],
    ['Rules', ruleSection(doc)],
    ['Drift by node', oddNodesTable(doc)],
  ];
  for (const [title, body] of sections) {
    if (body) container.append(el('h3', {}, title), body);
  }
  const expected = expectedSection(doc);
  if (expected) container.append(expected);
}
