// The page: inputs, the analyse button, and the views. All analysis happens in worker.js; this
// thread only draws what is on screen, in pages, so huge dumps stay responsive. Every string
// from a dump is inserted with textContent (never as HTML).

import { renderDiff } from './diff-view.js';

const $ = (selector, root = document) => root.querySelector(selector);

/** Creates an element: `text`, `class`, `on<event>` and plain attributes; children appended. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = value;
    else if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

const fmt = new Intl.NumberFormat('en');
const plural = (n, one, many = `${one}s`) => `${fmt.format(n)} ${n === 1 ? one : many}`;
const seconds = (ms) => `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
const SEVERITIES = ['error', 'warning', 'info'];
const PAGE = 200;
/** Inputs above this size are kept out of the textarea: editing 30 MB there is slow. */
const TEXTAREA_LIMIT = 2_000_000;

// ---------------------------------------------------------------------------------------------
// The worker, as promises.

const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const pending = new Map();
let nextId = 1;
let workerFailed = false;

worker.onmessage = (event) => {
  const message = event.data;
  const request = pending.get(message.id);
  if (!request) return;
  if (message.type === 'progress') {
    request.onProgress(message);
    return;
  }
  pending.delete(message.id);
  if (message.type === 'result') request.resolve(message.result);
  else request.reject(new Error(message.message));
};

worker.onerror = (event) => {
  event.preventDefault();
  workerFailed = true;
  const why = 'the analyser could not start (is the wasm module built? `bash scripts/build-web.sh`)';
  for (const request of pending.values()) request.reject(new Error(why));
  pending.clear();
  setStatus(why, { failed: true });
};

function call(type, payload = {}, onProgress = () => {}) {
  if (workerFailed) return Promise.reject(new Error('the analyser is not available'));
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, onProgress });
    worker.postMessage({ id, type, ...payload });
  });
}

// ---------------------------------------------------------------------------------------------
// Progress and elapsed time.

const statusText = $('#status-text');
const progressBar = $('#progress-bar');

function setStatus(text, { failed = false } = {}) {
  statusText.textContent = text;
  statusText.classList.toggle('failed', failed);
}

/** Runs `work(onProgress)` with the progress bar and a running clock; returns [result, ms]. */
async function withProgress(label, work) {
  const start = performance.now();
  let current = label;
  document.body.dataset.state = 'busy';
  progressBar.hidden = false;
  progressBar.removeAttribute('value');
  const tick = () => setStatus(`${current}… ${seconds(performance.now() - start)}`);
  tick();
  const timer = setInterval(tick, 100);
  try {
    const result = await work((p) => {
      current = progressLabel(p) || label;
      if (p.of > 1) {
        progressBar.max = p.of;
        progressBar.value = p.file;
      }
      tick();
    });
    return [result, performance.now() - start];
  } catch (err) {
    setStatus(`Failed: ${err.message}`, { failed: true });
    document.body.dataset.state = 'failed';
    throw err;
  } finally {
    clearInterval(timer);
    progressBar.hidden = true;
    if (document.body.dataset.state === 'busy') document.body.dataset.state = 'done';
  }
}

function progressLabel(p) {
  const of = p.of > 1 ? ` (${p.file + 1} of ${p.of})` : '';
  switch (p.stage) {
    case 'check': return `Checking ${p.name}${of}`;
    case 'diff': return 'Comparing the nodes';
    case 'chains': return `Building the chain view of ${p.name}`;
    case 'services': return `Reading the Services of ${p.name}`;
    default: return null;
  }
}

// ---------------------------------------------------------------------------------------------
// Inputs: one per node.

const inputList = $('#input-list');
const analyseButton = $('#analyse');
const inputs = [];

function uniqueName(wanted, except) {
  const taken = new Set(inputs.filter((i) => i !== except).map((i) => i.name.value));
  let name = wanted || `node-${inputs.length + 1}`;
  for (let k = 2; taken.has(name); k++) name = `${wanted} (${k})`;
  return name;
}

function addInput(name, text = '') {
  const fragment = $('#input-template').content.cloneNode(true);
  const root = fragment.firstElementChild;
  const input = {
    root,
    name: $('.dump-name', root),
    textarea: $('.dump-text', root),
    fileNote: $('.dump-file', root),
    size: $('.dump-size', root),
    fileText: null, // a text too large for the textarea
  };
  input.name.value = uniqueName(name);
  input.name.addEventListener('change', () => {
    input.name.value = uniqueName(input.name.value.trim(), input);
  });
  input.textarea.addEventListener('input', () => updateSize(input));
  // A huge paste goes straight to memory: a 30 MB textarea makes typing lag.
  input.textarea.addEventListener('paste', (event) => {
    const text = event.clipboardData && event.clipboardData.getData('text/plain');
    if (text && text.length > TEXTAREA_LIMIT) {
      event.preventDefault();
      setText(input, text);
    }
  });
  $('.remove', root).addEventListener('click', () => removeInput(input));
  inputs.push(input);
  inputList.append(root);
  setText(input, text);
  return input;
}

function removeInput(input) {
  if (inputs.length === 1) {
    setText(input, '');
    return;
  }
  inputs.splice(inputs.indexOf(input), 1);
  input.root.remove();
}

function setText(input, text) {
  if (text.length > TEXTAREA_LIMIT) {
    input.fileText = text;
    input.textarea.value = '';
    input.textarea.hidden = true;
    input.fileNote.hidden = false;
    input.fileNote.textContent = `${input.name.value}: too large to edit here; loaded and ready to analyse.`;
  } else {
    input.fileText = null;
    input.textarea.value = text;
    input.textarea.hidden = false;
    input.fileNote.hidden = true;
  }
  updateSize(input);
}

const textOf = (input) => (input.fileText !== null ? input.fileText : input.textarea.value);

function updateSize(input) {
  const text = textOf(input);
  input.size.textContent = text ? `${(text.length / 1e6).toFixed(text.length < 1e5 ? 3 : 1)} MB` : '';
}

async function readFile(file) {
  if (/\.gz$/i.test(file.name) && typeof DecompressionStream === 'function') {
    const stream = file.stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text();
  }
  return file.text();
}

async function loadFiles(files) {
  for (const file of files) {
    let text;
    try {
      text = await readFile(file);
    } catch (err) {
      setStatus(`Could not read ${file.name}: ${err.message}`, { failed: true });
      continue;
    }
    const name = file.name.replace(/\.gz$/i, '');
    const empty = inputs.find((i) => !textOf(i));
    if (empty) {
      empty.name.value = uniqueName(name, empty);
      setText(empty, text);
    } else {
      addInput(name, text);
    }
  }
}

$('#add-input').addEventListener('click', () => addInput().textarea.focus());
$('#open-files').addEventListener('change', async (event) => {
  await loadFiles([...event.target.files]);
  event.target.value = '';
});
document.addEventListener('dragover', (event) => {
  event.preventDefault();
  document.body.classList.add('dragging');
});
document.addEventListener('dragleave', (event) => {
  if (!event.relatedTarget) document.body.classList.remove('dragging');
});
document.addEventListener('drop', (event) => {
  event.preventDefault();
  document.body.classList.remove('dragging');
  if (event.dataTransfer && event.dataTransfer.files.length) loadFiles([...event.dataTransfer.files]);
});

// ---------------------------------------------------------------------------------------------
// Analysis and the findings view.

/** The last analysis: inputs as analysed (later edits do not shift its lines) and results. */
let analysis = null;

async function analyse() {
  const list = inputs
    .map((i) => ({ name: i.name.value, text: textOf(i) }))
    .filter((i) => i.text.trim() !== '');
  if (list.length === 0) {
    setStatus('Paste a dump or open a file first.', { failed: true });
    return;
  }
  analyseButton.disabled = true;
  try {
    const config = $('#config').value;
    const start = performance.now();
    const [result] = await withProgress('Analysing', (onProgress) =>
      call('analyse', { inputs: list, config }, onProgress));
    analysis = { inputs: list, files: result.files, lineStarts: [], loaded: {} };
    renderResults(result);
    // Clicked to drawn: the worker's check, the transfer and the first page of the view.
    const elapsed = performance.now() - start;
    const total = sum(result.files.map((f) => f.summary));
    setStatus(`${plural(list.length, 'dump')}: ${plural(total.error, 'error')}, ` +
      `${plural(total.warning, 'warning')}, ${plural(total.info, 'info')} · ${seconds(elapsed)}`);
    statusText.dataset.elapsedMs = String(Math.round(elapsed));
    window.rulelintTimings = { total: elapsed, files: result.timings };
  } catch {
    // withProgress has shown the error.
  } finally {
    analyseButton.disabled = false;
  }
}
analyseButton.addEventListener('click', analyse);

function sum(summaries) {
  const total = { error: 0, warning: 0, info: 0 };
  for (const s of summaries) for (const k of SEVERITIES) total[k] += s[k];
  return total;
}

function renderResults(result) {
  $('#results').hidden = false;
  clearSide();
  renderFindings();
  for (const id of ['panel-chains', 'panel-services', 'panel-diff']) $(`#${id}`).replaceChildren();
  const diffTab = $('[data-tab="diff"]');
  diffTab.hidden = !result.diff;
  if (result.diff) renderDiff($('#panel-diff'), result.diff.doc);
  selectTab(currentTab === 'diff' && !result.diff ? 'findings' : currentTab);
}

function renderFindings() {
  const panel = $('#panel-findings');
  panel.replaceChildren();
  const several = analysis.files.length > 1;
  analysis.files.forEach((file, fileIndex) => {
    const block = el('section', { class: 'file-findings', 'data-file': file.path });
    if (several) block.append(el('h2', { text: file.path }));
    const s = file.summary;
    block.append(el('p', {
      class: 'summary',
      text: `${plural(s.error, 'error')}, ${plural(s.warning, 'warning')}, ${plural(s.info, 'info')}`,
    }));
    if (file.diagnostics.length === 0) block.append(el('p', { class: 'clean', text: 'No findings.' }));
    for (const severity of SEVERITIES) {
      const items = [];
      file.diagnostics.forEach((d, index) => { if (d.severity === severity) items.push(index); });
      if (items.length === 0) continue;
      const list = el('ul', { class: 'findings' });
      const group = el('details', { class: 'group', open: true, 'data-severity': severity },
        el('summary', { class: `sev-${severity}`, text: `${capital(severity)}s (${fmt.format(items.length)})` }),
        list);
      appendInPages(group, list, items, (index) => findingItem(fileIndex, index));
      block.append(group);
    }
    panel.append(block);
  });
}

const capital = (s) => s[0].toUpperCase() + s.slice(1);

/** Appends `items` to `list` PAGE at a time, with a button for the next page. */
function appendInPages(parent, list, items, render, start = 0) {
  const end = Math.min(items.length, start + PAGE);
  for (let k = start; k < end; k++) list.append(render(items[k]));
  if (end < items.length) {
    const more = el('button', {
      type: 'button',
      class: 'more',
      text: `Show ${fmt.format(Math.min(PAGE, items.length - end))} more of ${fmt.format(items.length - end)}`,
      onclick: () => {
        more.remove();
        appendInPages(parent, list, items, render, end);
      },
    });
    list.after(more);
  }
}

function findingItem(fileIndex, index) {
  const d = analysis.files[fileIndex].diagnostics[index];
  const item = el('li', {
    class: 'finding',
    tabindex: 0,
    role: 'button',
    'data-testid': 'finding',
    'data-code': d.code,
    'data-line': d.line,
    'data-file': analysis.files[fileIndex].path,
    'data-severity': d.severity,
    onclick: () => selectFinding(fileIndex, index, item),
    onkeydown: (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        selectFinding(fileIndex, index, item);
      }
    },
  },
  el('span', { class: `sev sev-${d.severity}`, text: d.severity }),
  el('span', {}, el('code', { text: d.code }), ' ', el('span', { class: 'fname', text: d.name })),
  el('span', { class: 'msg', text: d.message }),
  el('span', { class: 'loc', text: `line ${d.line}` }));
  return item;
}

// ---------------------------------------------------------------------------------------------
// The side pane: a finding's detail, the dump at a line, the docs of a code.

function clearSide() {
  $('#detail').hidden = true;
  $('#explain').hidden = true;
  $('#side-hint').hidden = false;
}

function selectFinding(fileIndex, index, item) {
  for (const selected of document.querySelectorAll('li.finding.selected')) selected.classList.remove('selected');
  if (item) item.classList.add('selected');
  const d = analysis.files[fileIndex].diagnostics[index];
  const detail = $('#detail');
  const where = [`${analysis.files[fileIndex].path}:${d.line}:${d.column}`];
  if (d.table) where.push(`table ${d.table}`);
  if (d.chain) where.push(`chain ${d.chain}`);
  detail.replaceChildren(
    el('h2', { class: `sev-${d.severity}` }, `${d.severity}[${d.code} ${d.name}]`),
    el('p', { class: 'message', text: d.message }),
    el('div', { class: 'where', text: where.join(' · ') }),
    dumpView(fileIndex, d.line, d.end_line || d.line, d.label),
    d.help
      ? el('div', { class: 'help', 'data-testid': 'finding-help' }, el('strong', { text: 'help: ' }), d.help)
      : el('div', { class: 'help', 'data-testid': 'finding-help', text: 'No help for this finding.' }),
    el('button', {
      type: 'button',
      'data-testid': 'explain-button',
      text: `Documentation of ${d.code}`,
      onclick: () => explain(d.code),
    }),
  );
  showSide(detail);
  scrollToHighlight(detail);
}

function showDumpAt(fileIndex, line, title) {
  const detail = $('#detail');
  detail.replaceChildren(
    el('h2', { text: title }),
    el('div', { class: 'where', text: `${analysis.files[fileIndex].path}:${line}` }),
    dumpView(fileIndex, line, line, null),
  );
  showSide(detail);
  scrollToHighlight(detail);
}

function showSide(node) {
  node.hidden = false;
  $('#side-hint').hidden = true;
}

function scrollToHighlight(root) {
  const view = $('.dumpview', root);
  const hl = $('.line.hl', root);
  if (view && hl) view.scrollTop = Math.max(0, hl.offsetTop - view.offsetTop - view.clientHeight / 3);
}

function lineStartsOf(fileIndex) {
  if (!analysis.lineStarts[fileIndex]) {
    const text = analysis.inputs[fileIndex].text;
    const starts = [0];
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
    analysis.lineStarts[fileIndex] = starts;
  }
  return analysis.lineStarts[fileIndex];
}

function lineText(fileIndex, line) {
  const text = analysis.inputs[fileIndex].text;
  const starts = lineStartsOf(fileIndex);
  const end = line < starts.length ? starts[line] - 1 : text.length;
  return text.slice(starts[line - 1], end).replace(/\r$/, '');
}

/** The dump around lines `first..=last`, those highlighted, the label under them. */
function dumpView(fileIndex, first, last, label, context = 10) {
  const count = lineStartsOf(fileIndex).length;
  const view = el('div', { class: 'dumpview', 'data-testid': 'dump-view' });
  const from = Math.max(1, first - context);
  const to = Math.min(count, last + context);
  const grow = (where) => {
    const bigger = dumpView(fileIndex, first, last, label, context + 40);
    view.replaceWith(bigger);
    if (where === 'top') bigger.scrollTop = 0;
  };
  if (from > 1) {
    view.append(el('button', { type: 'button', class: 'link', text: `⋯ ${fmt.format(from - 1)} lines above`, onclick: () => grow('top') }));
  }
  for (let line = from; line <= to; line++) {
    const hl = line >= first && line <= last;
    view.append(el('div', {
      class: hl ? 'line hl' : 'line',
      'data-line': line,
      'data-testid': hl && line === first ? 'highlighted-line' : null,
    }, el('span', { class: 'ln', text: line }), el('span', { class: 'src', text: lineText(fileIndex, line) })));
    if (hl && line === last && label) view.append(el('div', { class: 'label', text: `╰── ${label}` }));
  }
  if (to < count) {
    view.append(el('button', { type: 'button', class: 'link', text: `⋯ ${fmt.format(count - to)} lines below`, onclick: () => grow('bottom') }));
  }
  return view;
}

const docsCache = new Map();

async function explain(code) {
  const box = $('#explain');
  try {
    if (!docsCache.has(code)) docsCache.set(code, await call('explain', { code }));
    const doc = docsCache.get(code);
    box.replaceChildren(
      el('button', { type: 'button', class: 'link', text: 'close', onclick: () => { box.hidden = true; } }),
      markdown(doc.page),
    );
    showSide(box);
    box.scrollIntoView({ block: 'nearest' });
  } catch (err) {
    setStatus(`No documentation for ${code}: ${err.message}`, { failed: true });
  }
}

/** The small Markdown of the docs pages: headings, paragraphs, lists, fenced code, `code`, **bold**. */
function markdown(text) {
  const root = el('div', { class: 'docs' });
  const lines = text.split('\n');
  let paragraph = [];
  const flush = () => {
    if (paragraph.length) root.append(inline(el('p'), paragraph.join(' ')));
    paragraph = [];
  };
  const bullet = /^\s*[-*]\s+/;
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (line.startsWith('```')) {
      flush();
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith('```'); i++) code.push(lines[i]);
      i++;
      root.append(el('pre', {}, el('code', { text: code.join('\n') })));
    } else if (heading) {
      flush();
      root.append(inline(el(`h${Math.min(heading[1].length, 3)}`), heading[2]));
      i++;
    } else if (bullet.test(line)) {
      flush();
      const list = el('ul');
      while (i < lines.length && bullet.test(lines[i])) {
        let item = lines[i++].replace(bullet, '');
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !bullet.test(lines[i])) item += ` ${lines[i++].trim()}`;
        list.append(inline(el('li'), item));
      }
      root.append(list);
    } else if (!line.trim()) {
      flush();
      i++;
    } else {
      paragraph.push(line.trim());
      i++;
    }
  }
  flush();
  return root;
}

/** Inline Markdown as nodes. Links become text: the page navigates nowhere. */
function inline(node, text) {
  const pattern = /(`[^`]+`|\*\*[^*]+\*\*|\[[^\]]+\]\([^)]+\))/g;
  let last = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    node.append(text.slice(last, m.index));
    const token = m[0];
    if (token[0] === '`') node.append(el('code', { text: token.slice(1, -1) }));
    else if (token[0] === '*') node.append(el('strong', { text: token.slice(2, -2) }));
    else {
      const link = /^\[([^\]]+)\]\(([^)]+)\)$/.exec(token);
      node.append(`${link[1]} (${link[2]})`);
    }
    last = pattern.lastIndex;
  }
  node.append(text.slice(last));
  return node;
}

// ---------------------------------------------------------------------------------------------
// Tabs; the chain and services views load when first shown.

let currentTab = 'findings';

function selectTab(name) {
  currentTab = name;
  for (const tab of document.querySelectorAll('.tabs [data-tab]')) {
    tab.setAttribute('aria-selected', String(tab.dataset.tab === name));
  }
  for (const panel of document.querySelectorAll('.panel')) panel.hidden = panel.id !== `panel-${name}`;
  if (!analysis) return;
  if (name === 'chains' && !analysis.loaded.chains) {
    analysis.loaded.chains = true;
    renderChainsPanel(0);
  }
  if (name === 'services' && !analysis.loaded.services) {
    analysis.loaded.services = true;
    renderServicesPanel(0);
  }
}

for (const tab of document.querySelectorAll('.tabs [data-tab]')) {
  tab.addEventListener('click', () => selectTab(tab.dataset.tab));
}

/** A file picker for views that show one dump at a time. */
function filePicker(selected, onChange, testid) {
  if (analysis.files.length < 2) return null;
  const select = el('select', { 'data-testid': testid, onchange: () => onChange(Number(select.value)) });
  analysis.files.forEach((f, k) => select.append(el('option', { value: k, text: f.path, selected: k === selected })));
  return el('label', { class: 'services-tools' }, 'Node: ', select);
}

async function renderChainsPanel(fileIndex) {
  const panel = $('#panel-chains');
  panel.replaceChildren(el('p', { class: 'hint', text: 'Building the chain view…' }));
  let roots;
  try {
    [roots] = await withProgress('Building the chain view', (onProgress) =>
      call('chainRoots', { file: fileIndex }, onProgress));
  } catch (err) {
    panel.replaceChildren(el('p', { class: 'failed', text: err.message }));
    return;
  }
  setStatus(`Chain view of ${analysis.files[fileIndex].path}: ${plural(roots.chains, 'chain')}.`);
  panel.replaceChildren(
    filePicker(fileIndex, renderChainsPanel, 'chains-file') || '',
    el('p', { class: 'hint', text: 'From each built-in chain (hook), the chains it jumps to. Expand a chain to see its findings and the chains it calls; click a name to see it in the dump.' }),
  );
  for (const table of roots.tables) {
    const tree = el('ul', { class: 'tree root' });
    const block = el('details', { class: 'table-block', open: !table.superseded, 'data-table': table.name },
      el('summary', { text: `${table.name}${table.superseded ? ' (superseded by a later block)' : ''}` }),
      tree);
    for (const hook of table.hooks) {
      const node = chainNode(fileIndex, table.name, hook, new Set());
      tree.append(node);
      if (hook.calls > 0) node.expand();
    }
    if (table.unreached > 0) {
      const list = el('ul', { class: 'tree root' });
      const unreached = el('details', { class: 'unreached' },
        el('summary', { text: `Chains no hook reaches (${fmt.format(table.unreached)})` }), list);
      unreached.addEventListener('toggle', () => {
        if (unreached.open && !list.childElementCount) {
          loadPaged(list, (offset) => call('chainUnreached', { file: fileIndex, table: table.index, offset, limit: PAGE }),
            (n) => chainNode(fileIndex, table.name, n, new Set()));
        }
      });
      block.append(unreached);
    }
    panel.append(block);
  }
}

/** Loads pages from the worker into `list` with a "more" button. */
async function loadPaged(list, fetchPage, render, offset = 0) {
  const res = await fetchPage(offset);
  for (const item of res.items) list.append(render(item));
  const next = offset + res.items.length;
  if (next < res.total) {
    const more = el('li', {}, el('button', {
      type: 'button',
      class: 'more',
      text: `Show ${fmt.format(Math.min(PAGE, res.total - next))} more of ${fmt.format(res.total - next)}`,
      onclick: () => {
        more.remove();
        loadPaged(list, fetchPage, render, next);
      },
    }));
    list.append(more);
  }
  return res;
}

function chainNode(fileIndex, tableName, n, ancestors) {
  const loop = ancestors.has(n.index);
  const toggle = el('button', {
    type: 'button',
    class: 'toggle',
    'aria-expanded': 'false',
    'aria-label': `expand ${n.name}`,
    text: '▸',
    disabled: loop || (n.calls === 0 && n.findings.every((k) => k === 0)),
  });
  const badges = n.findings.map((k, s) => (k > 0
    ? el('span', { class: `badge sev-${SEVERITIES[s]}`, title: `${k} ${SEVERITIES[s]}`, text: `${k} ${SEVERITIES[s][0].toUpperCase()}` })
    : null));
  const name = el('button', {
    type: 'button',
    class: 'link chain-name',
    text: n.name,
    onclick: () => { if (n.line) showDumpAt(fileIndex, n.line, `${tableName} ${n.name}`); },
  });
  const item = el('li', {
    class: n.builtin ? 'chain-node builtin' : 'chain-node',
    'data-testid': 'chain-node',
    'data-chain': n.name,
  },
  el('div', { class: 'chain-row' }, toggle, name,
    el('span', { class: 'count', text: `${plural(n.rules, 'rule')}${n.calls ? ` · calls ${plural(n.calls, 'chain')}` : ''}` }),
    ...badges,
    loop ? el('span', { class: 'loopmark', text: '↺ loop back to a caller' }) : null));
  let children = null;
  item.expand = async () => {
    if (children) {
      children.hidden = !children.hidden;
    } else {
      children = el('div', { class: 'children' });
      item.append(children);
      const findings = el('ul', { class: 'chain-findings' });
      const tree = el('ul', { class: 'tree' });
      children.append(findings, tree);
      const inner = new Set(ancestors).add(n.index);
      const res = await loadPaged(tree,
        (offset) => call('chainChildren', { file: fileIndex, chain: n.index, offset, limit: PAGE }),
        (child) => chainNode(fileIndex, tableName, child, inner));
      for (const k of res.findings) {
        const d = analysis.files[fileIndex].diagnostics[k];
        findings.append(el('li', {
          'data-testid': 'chain-finding',
          'data-code': d.code,
          onclick: () => selectFinding(fileIndex, k, null),
        }, el('span', { class: `sev sev-${d.severity}`, text: d.code }), ` line ${d.line}: ${d.message}`));
      }
    }
    const open = !children.hidden;
    toggle.textContent = open ? '▾' : '▸';
    toggle.setAttribute('aria-expanded', String(open));
  };
  toggle.addEventListener('click', () => item.expand());
  return item;
}

async function renderServicesPanel(fileIndex, filter = '', offset = 0) {
  const panel = $('#panel-services');
  let res;
  try {
    [res] = await withProgress('Reading the Services', (onProgress) =>
      call('services', { file: fileIndex, offset, limit: 100, filter }, onProgress));
  } catch (err) {
    panel.replaceChildren(el('p', { class: 'failed', text: err.message }));
    return;
  }
  setStatus(`${analysis.files[fileIndex].path}: ${plural(res.all, 'Service port')}.`);
  const search = el('input', {
    type: 'search',
    'data-testid': 'services-filter',
    placeholder: 'Filter: name, address, port, endpoint',
    value: filter,
  });
  let debounce = null;
  search.addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => renderServicesPanel(fileIndex, search.value, 0), 250);
  });
  const layout = res.layout;
  const rows = el('tbody');
  for (const s of res.items) rows.append(serviceRow(fileIndex, s));
  const pager = el('div', { class: 'pager' },
    el('button', { type: 'button', text: '← Previous', disabled: offset === 0, onclick: () => renderServicesPanel(fileIndex, filter, Math.max(0, offset - 100)) }),
    el('span', { text: res.total ? `${fmt.format(offset + 1)}–${fmt.format(offset + res.items.length)} of ${fmt.format(res.total)}` : 'No match' }),
    el('button', { type: 'button', text: 'Next →', disabled: offset + res.items.length >= res.total, onclick: () => renderServicesPanel(fileIndex, filter, offset + 100) }));
  panel.replaceChildren(
    filePicker(fileIndex, (k) => renderServicesPanel(k), 'services-file') || '',
    el('p', { class: 'summary', 'data-testid': 'services-layout' },
      `Service proxy: ${layout.proxy_mode} (${layout.description})`,
      ` · ${plural(res.all, 'Service port')}`,
      res.unusedEndpointChains ? ` · ${plural(res.unusedEndpointChains, 'unused endpoint chain')}` : ''),
    el('div', { class: 'services-tools' }, search),
    el('table', { class: 'services' },
      el('thead', {}, el('tr', {}, el('th', { text: 'Service port' }), el('th', { text: 'Addresses' }),
        el('th', { text: 'Endpoints' }), el('th', { text: 'Notes' }))),
      rows),
    pager,
  );
  if (filter) {
    search.focus();
    search.setSelectionRange(filter.length, filter.length);
  }
}

function lineLink(fileIndex, line, text, title) {
  if (!line) return el('span', { text });
  return el('button', { type: 'button', class: 'link mono', text, title: `line ${line}`, onclick: () => showDumpAt(fileIndex, line, title) });
}

function serviceRow(fileIndex, s) {
  const name = s.name || (s.hash ? `(hash ${s.hash})` : '(unnamed)');
  const addresses = el('td', { class: 'mono' });
  for (const a of s.addresses) {
    addresses.append(lineLink(fileIndex, a.line, `${a.kind} ${a.address || '*'} ${a.protocol || ''}/${a.port ?? ''}`, name), el('br'));
  }
  const endpoints = el('td');
  const all = s.endpoints.length;
  if (all === 0) {
    endpoints.append(el('span', { class: 'hint', text: 'none' }));
  } else {
    const list = el('div', { class: 'mono' });
    for (const e of s.endpoints.slice(0, 50)) {
      list.append(lineLink(fileIndex, e.line, `${e.destination || e.chain}${e.probability !== null ? ` p=${e.probability}` : ''}`, `${name} → ${e.chain}`), el('br'));
    }
    if (all > 50) list.append(el('span', { class: 'hint', text: `and ${fmt.format(all - 50)} more` }));
    endpoints.append(el('details', {}, el('summary', { text: plural(all, 'endpoint') }), list));
  }
  const notes = [];
  if (s.local_endpoints.length) notes.push(`${plural(s.local_endpoints.length, 'local endpoint')}`);
  if (s.rejects_without_endpoints) notes.push('rejected: no endpoints');
  if (s.drops_without_local_endpoints) notes.push('dropped without local endpoints');
  const chains = Object.entries(s.chains).filter(([, c]) => c).map(([, c]) => c).join(' ');
  return el('tr', { 'data-testid': 'service', 'data-name': s.name || '' },
    el('td', {}, el('strong', { text: name }), el('div', { class: 'hint mono', text: chains })),
    addresses, endpoints, el('td', { text: notes.join('; ') }));
}

// ---------------------------------------------------------------------------------------------
// Start.

addInput('node-1');
call('version').then((version) => {
  $('#version').textContent = `rulelint ${version}`;
  analyseButton.disabled = false;
  document.body.dataset.state = 'ready';
  setStatus('Ready.');
}, () => {});
