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

/** A size as people read it: bytes under 1 kB, kB under 1 MB, then MB (decimal units). */
function formatSize(n) {
  if (n < 1000) return `${n} B`;
  if (n < 1e6) return `${(n / 1e3).toFixed(n < 1e4 ? 1 : 0)} kB`;
  return `${(n / 1e6).toFixed(n < 1e7 ? 2 : 1)} MB`;
}

/**
 * Appends `text` to `node` with its Markdown `code` spans as <code> elements (the messages and
 * help of findings quote rules and chains that way). Only text nodes and elements: never HTML.
 */
function withCode(node, text) {
  const pattern = /`([^`]+)`/g;
  let last = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    node.append(text.slice(last, m.index), el('code', { text: m[1] }));
    last = pattern.lastIndex;
  }
  node.append(text.slice(last));
  return node;
}
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

// Two lines: the analysis result (beside the Analyse button), which stays until the next
// analysis, and what the shown view holds (beside the tabs), which each view rewrites.
const statusText = $('#status-text');
const viewStatus = $('#view-status');
const progressBar = $('#progress-bar');

function setStatus(text, { failed = false, line = 'analysis' } = {}) {
  const target = line === 'view' ? viewStatus : statusText;
  target.textContent = text;
  target.classList.toggle('failed', failed);
}

/** Each view's own line (by tab), shown while that view is. */
const viewLines = new Map();

function setViewStatus(text, { failed = false, tab = currentTab } = {}) {
  viewLines.set(tab, { text, failed });
  if (tab === currentTab) setStatus(text, { failed, line: 'view' });
}

/**
 * Runs `work(onProgress)` with the progress bar and a running clock on the analysis line, or
 * with `view` (a tab's name) on that view's line; returns [result, ms].
 */
async function withProgress(label, work, { view = null } = {}) {
  const start = performance.now();
  let current = label;
  const show = (text, failed = false) => (view ? setViewStatus(text, { failed, tab: view }) : setStatus(text, { failed }));
  document.body.dataset.state = 'busy';
  progressBar.hidden = false;
  progressBar.removeAttribute('value');
  const tick = () => show(`${current}… ${seconds(performance.now() - start)}`);
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
    show(`Failed: ${err.message}`, true);
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
    case 'trace': return 'Preparing the dumps for tracing';
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
  input.size.textContent = text ? formatSize(text.length) : '';
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
    viewLines.clear();
    setStatus('', { line: 'view' });
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
  for (const id of ['panel-chains', 'panel-services', 'panel-diff', 'trace-output']) $(`#${id}`).replaceChildren();
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
  withCode(el('span', { class: 'msg' }), d.message),
  el('span', { class: 'loc', text: `line ${d.line}` }));
  return item;
}

// ---------------------------------------------------------------------------------------------
// The side pane: a finding's detail, the dump at a line, the docs of a code.

function clearSide() {
  $('#detail').hidden = true;
  $('#explain').hidden = true;
  $('#side-hint').hidden = false;
  fitSide();
}

/**
 * The side pane takes its column only when it has something to show, or on the findings view
 * (where its hint says what a click does); elsewhere the view gets the whole width.
 */
function fitSide() {
  const content = !$('#detail').hidden || !$('#explain').hidden;
  const show = content || currentTab === 'findings';
  $('#side').hidden = !show;
  $('#panes').classList.toggle('no-side', !show);
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
    closeButton(detail),
    el('h2', { class: `sev-${d.severity}` }, `${d.severity}[${d.code} ${d.name}]`),
    withCode(el('p', { class: 'message' }), d.message),
    el('div', { class: 'where', text: where.join(' · ') }),
    dumpView(fileIndex, d.line, d.end_line || d.line, d.label),
    d.help
      ? withCode(el('div', { class: 'help', 'data-testid': 'finding-help' }, el('strong', { text: 'help: ' })), d.help)
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
    closeButton(detail),
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
  fitSide();
}

/** A button that closes one box of the side pane (and the pane, once it is empty). */
function closeButton(box) {
  return el('button', {
    type: 'button',
    class: 'link close',
    'data-testid': 'side-close',
    text: 'close',
    onclick: () => {
      box.hidden = true;
      if ($('#detail').hidden && $('#explain').hidden) $('#side-hint').hidden = false;
      fitSide();
    },
  });
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
      closeButton(box),
      markdown(doc.page),
    );
    showSide(box);
    box.scrollIntoView({ block: 'nearest' });
  } catch (err) {
    setViewStatus(`No documentation for ${code}: ${err.message}`, { failed: true });
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
  const line = viewLines.get(name) || { text: '', failed: false };
  setStatus(line.text, { failed: line.failed, line: 'view' });
  fitSide();
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
      call('chainRoots', { file: fileIndex }, onProgress), { view: 'chains' });
  } catch (err) {
    panel.replaceChildren(el('p', { class: 'failed', text: err.message }));
    return;
  }
  setViewStatus(`Chain view of ${analysis.files[fileIndex].path}: ${plural(roots.chains, 'chain')}.`, { tab: 'chains' });
  graph = { file: fileIndex, picks: new Set(), box: el('section', { class: 'chain-graph', 'data-testid': 'chain-graph' }) };
  panel.replaceChildren(
    filePicker(fileIndex, renderChainsPanel, 'chains-file') || '',
    el('p', { class: 'hint', text: 'From each built-in chain (hook), the chains it jumps to. Expand a chain to see its findings and the chains it calls; click a name to see it in the dump; click ◇ to draw a chain in the graph.' }),
    graph.box,
  );
  drawGraph();
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

// ---------------------------------------------------------------------------------------------
// The chain graph: for the chains the user picks (never all of them), the jumps from the
// table's built-in chains down to them and their callees a few levels on, as inline SVG built
// node by node. The worker chooses what to draw (bounded); this draws it.

/** The chain view's picks: `{file, picks: Set of chain indices, box}`. */
let graph = null;
const GRAPH_PICKS = 12;
const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function pickButton(n) {
  const picked = graph && graph.picks.has(n.index);
  return el('button', {
    type: 'button',
    class: 'link pick',
    'data-testid': 'chain-pick',
    'data-index': n.index,
    'aria-pressed': String(Boolean(picked)),
    title: `Draw ${n.name} in the chain graph`,
    text: picked ? '◆' : '◇',
    onclick: () => togglePick(n.index),
  });
}

function togglePick(index) {
  if (graph.picks.has(index)) graph.picks.delete(index);
  else if (graph.picks.size < GRAPH_PICKS) graph.picks.add(index);
  else {
    setViewStatus(`The graph draws at most ${GRAPH_PICKS} picked chains.`, { failed: true, tab: 'chains' });
    return;
  }
  const picked = graph.picks.has(index);
  for (const b of document.querySelectorAll(`[data-testid="chain-pick"][data-index="${index}"]`)) {
    b.setAttribute('aria-pressed', String(picked));
    b.textContent = picked ? '◆' : '◇';
  }
  drawGraph();
}

async function drawGraph() {
  const { box, file } = graph;
  // Only the latest drawing lands: an earlier answer may arrive after a later change.
  const ticket = (graph.ticket = (graph.ticket || 0) + 1);
  if (graph.picks.size === 0) {
    box.replaceChildren(el('p', { class: 'hint', text: 'Chain graph: click ◇ beside chains to draw how the built-in chains reach them.' }));
    return;
  }
  const asked = graph;
  let res;
  try {
    res = await call('chainGraph', { file, picks: [...graph.picks], depth: 2 });
  } catch (err) {
    box.replaceChildren(el('p', { class: 'failed', text: err.message }));
    return;
  }
  if (graph !== asked || graph.ticket !== ticket) return; // picks or the dump changed meanwhile
  const clear = el('button', {
    type: 'button',
    class: 'link',
    text: 'clear',
    onclick: () => {
      for (const index of [...graph.picks]) togglePick(index);
    },
  });
  box.replaceChildren(el('h2', {}, 'Chain graph ', clear));
  for (const t of res.tables) box.append(graphPicture(file, t));
}

const G = { colW: 250, gap: 56, rowH: 40, boxH: 28, pad: 12 };

/** One table's graph as an SVG: columns by distance from the hooks, jumps as arrows. */
function graphPicture(fileIndex, t) {
  const columns = [];
  const where = new Map();
  const place = (key, layer) => {
    while (columns.length <= layer) columns.push(0);
    const pos = { x: G.pad + layer * (G.colW + G.gap), y: G.pad + columns[layer] * G.rowH };
    columns[layer]++;
    where.set(key, pos);
    return pos;
  };
  for (const n of t.nodes) place(n.index, n.layer);
  const layerOf = new Map(t.nodes.map((n) => [n.index, n.layer]));
  for (const m of t.more) place(`more-${m.from}`, layerOf.get(m.from) + 1);
  const width = G.pad * 2 + columns.length * G.colW + (columns.length - 1) * G.gap;
  const height = G.pad * 2 + Math.max(...columns) * G.rowH - (G.rowH - G.boxH);
  const marker = `arrow-${fileIndex}-${t.table}`;
  const picture = svg('svg', {
    class: 'graph',
    'data-testid': 'graph-svg',
    'data-table': t.table,
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-label': `Chain graph of table ${t.table}`,
  }, svg('defs', {}, svg('marker', {
    id: marker, viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse',
  }, svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' }))));
  const edges = svg('g', { class: 'edges' });
  const boxes = svg('g', { class: 'nodes' });
  picture.append(edges, boxes);
  const arrow = (from, to, attrs) => {
    const a = where.get(from);
    const b = where.get(to);
    const y1 = a.y + G.boxH / 2;
    const y2 = b.y + G.boxH / 2;
    let d;
    if (b.x > a.x) {
      const x1 = a.x + G.colW;
      const mid = (x1 + b.x) / 2;
      d = `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${b.x} ${y2}`;
    } else {
      // A jump back (a loop) or within a column: around the left side.
      const x = Math.min(a.x, b.x) - G.gap / 2;
      d = `M ${a.x} ${y1} C ${x} ${y1}, ${x} ${y2}, ${b.x} ${y2}`;
    }
    edges.append(svg('path', { d, class: 'edge', 'marker-end': `url(#${marker})`, ...attrs }));
  };
  const names = new Map(t.nodes.map((n) => [n.index, n.name]));
  for (const [from, to] of t.edges) {
    arrow(from, to, { 'data-testid': 'graph-edge', 'data-from': names.get(from), 'data-to': names.get(to) });
  }
  for (const n of t.nodes) {
    const { x, y } = where.get(n.index);
    const worst = n.findings.findIndex((k) => k > 0);
    const classes = ['gnode'];
    if (n.builtin) classes.push('builtin');
    if (n.picked) classes.push('picked');
    if (worst >= 0) classes.push(`findings sev-${SEVERITIES[worst]}`);
    const counts = n.findings.map((k, s) => (k ? `${k} ${SEVERITIES[s]}` : null)).filter(Boolean);
    const badge = n.findings.map((k, s) => (k ? `${k}${SEVERITIES[s][0].toUpperCase()}` : null)).filter(Boolean).join(' ');
    boxes.append(svg('g', {
      class: classes.join(' '),
      'data-testid': 'graph-node',
      'data-chain': n.name,
      'data-findings': n.findings.join(','),
      'data-picked': String(n.picked),
      transform: `translate(${x} ${y})`,
      tabindex: n.line ? 0 : null,
      role: n.line ? 'button' : null,
      onclick: () => { if (n.line) showDumpAt(fileIndex, n.line, `${t.table} ${n.name}`); },
      onkeydown: (event) => {
        if ((event.key === 'Enter' || event.key === ' ') && n.line) {
          event.preventDefault();
          showDumpAt(fileIndex, n.line, `${t.table} ${n.name}`);
        }
      },
    },
    svg('title', { text: `${t.table} ${n.name}: ${plural(n.rules, 'rule')}${counts.length ? `; ${counts.join(', ')}` : ''}` }),
    svg('rect', { width: G.colW, height: G.boxH, rx: 5 }),
    svg('text', { x: 8, y: G.boxH / 2 + 4, class: 'gname', text: n.name }),
    badge ? svg('text', { x: G.colW - 8, y: G.boxH / 2 + 4, class: 'gbadge', 'text-anchor': 'end', 'data-testid': 'graph-findings', text: badge }) : null));
  }
  for (const m of t.more) {
    const key = `more-${m.from}`;
    const { x, y } = where.get(key);
    arrow(m.from, key, { class: 'edge more' });
    boxes.append(svg('g', { class: 'gnode more', 'data-testid': 'graph-more', 'data-from': names.get(m.from), transform: `translate(${x} ${y})` },
      svg('rect', { width: G.colW, height: G.boxH, rx: 5 }),
      svg('text', { x: 8, y: G.boxH / 2 + 4, class: 'gname', text: `+${fmt.format(m.count)} more` })));
  }
  const notes = [];
  if (t.hiddenCallers) notes.push(`${plural(t.hiddenCallers, 'more caller')} not drawn`);
  return el('figure', { class: 'graph-box', 'data-table': t.table },
    el('figcaption', { text: `table ${t.table}: ${plural(t.nodes.length, 'chain')}, ${plural(t.edges.length, 'jump')}${notes.length ? ` (${notes.join('; ')})` : ''}` }),
    el('div', { class: 'graph-scroll' }, picture));
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
  el('div', { class: 'chain-row' }, toggle, name, pickButton(n),
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
        }, el('span', { class: `sev sev-${d.severity}`, text: d.code }), ` line ${d.line}: `));
        withCode(findings.lastElementChild, d.message);
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
      call('services', { file: fileIndex, offset, limit: 100, filter }, onProgress), { view: 'services' });
  } catch (err) {
    panel.replaceChildren(el('p', { class: 'failed', text: err.message }));
    return;
  }
  setViewStatus(`${analysis.files[fileIndex].path}: ${plural(res.all, 'Service port')}.`, { tab: 'services' });
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
  const target = traceTarget(s);
  const traceAction = target ? el('button', {
    type: 'button',
    class: 'link trace-action',
    'data-testid': 'service-trace',
    text: 'trace',
    title: `Trace a packet to ${target.dst}/${target.proto}`,
    onclick: () => prefillTrace(target),
  }) : null;
  return el('tr', { 'data-testid': 'service', 'data-name': s.name || '' },
    el('td', {}, el('strong', { text: name }), ' ', traceAction, el('div', { class: 'hint mono', text: chains })),
    addresses, endpoints, el('td', { text: notes.join('; ') }));
}

// ---------------------------------------------------------------------------------------------
// The trace view: the packet's fields, then per node (side by side) the summary and each outcome
// with its path, every step linked to its line. The worker traces on the parse its check made
// (a wasm Session per analysis), so a trace neither parses nor, after the first, prepares.

const traceField = (name) => $(`#trace-${name}`);

/** A Service's cluster IP (else its first address with a port) as the trace form's fields. */
function traceTarget(s) {
  const usable = s.addresses.filter((a) => a.address && a.port);
  const a = usable.find((x) => x.kind === 'cluster-ip') || usable[0];
  if (!a) return null;
  const ip = a.address.replace(/\/(32|128)$/, '');
  if (ip.includes('/')) return null;
  return { dst: ip.includes(':') ? `[${ip}]:${a.port}` : `${ip}:${a.port}`, proto: (a.protocol || 'tcp').toLowerCase() };
}

function prefillTrace(target) {
  traceField('dst').value = target.dst;
  traceField('proto').value = target.proto;
  selectTab('trace');
  traceField('dst').focus();
}

function tracePacket() {
  const value = (name) => traceField(name).value.trim() || null;
  return {
    dst: traceField('dst').value.trim(),
    proto: value('proto'),
    src: value('src'),
    from: traceField('from').value,
    in: value('in'),
    out: value('out'),
    state: traceField('state').value,
    node_ips: traceField('node-ips').value.split(/[\s,]+/).filter(Boolean),
    affinity: traceField('affinity').value || null,
  };
}

async function runTrace() {
  const output = $('#trace-output');
  if (!analysis) return;
  const packet = tracePacket();
  if (!packet.dst) {
    output.replaceChildren(el('p', { class: 'failed', 'data-testid': 'trace-error', text: 'Give a destination: IP or IP:PORT.' }));
    return;
  }
  const button = $('#trace-button');
  button.disabled = true;
  const start = performance.now();
  try {
    const [res] = await withProgress('Tracing', (onProgress) => call('trace', { packet }, onProgress), { view: 'trace' });
    const elapsed = performance.now() - start;
    renderTrace(output, res, elapsed);
    const prepared = res.first ? ' (first trace: the dumps were prepared for tracing)' : '';
    setViewStatus(`Traced ${packet.dst} on ${plural(res.doc.nodes.length, 'node')} in ${elapsed.toFixed(1)} ms${prepared}.`, { tab: 'trace' });
    window.rulelintTraceTimings = { total: elapsed, wasm: res.wasmMs, first: res.first };
  } catch (err) {
    output.replaceChildren(el('p', { class: 'failed', 'data-testid': 'trace-error', text: err.message }));
  } finally {
    button.disabled = false;
  }
}

$('#trace-button').addEventListener('click', runTrace);
$('#trace-form').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && event.target.tagName === 'INPUT') {
    event.preventDefault();
    runTrace();
  }
});

const HOOKS = new Set(['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING']);

/** A probability as the CLI's summary reads it: 1/3, 50 %, … */
function percent(p) {
  if (p >= 0.99995) return '100 %';
  return `${(p * 100).toFixed(p < 0.01 ? 2 : 1)} %`;
}

function renderTrace(output, res, elapsed) {
  const { doc } = res;
  const timing = el('p', {
    class: 'summary',
    'data-testid': 'trace-time',
    'data-ms': elapsed.toFixed(1),
    'data-wasm-ms': res.wasmMs.toFixed(1),
    text: `Traced in ${elapsed.toFixed(1)} ms (wasm ${res.wasmMs.toFixed(1)} ms` +
      `${res.first ? ', the dumps prepared for tracing first' : ''}).`,
  });
  const parts = [timing];
  if (doc.first_difference) {
    const d = doc.first_difference;
    const diff = el('div', { class: 'trace-difference', 'data-testid': 'trace-difference' },
      el('strong', { text: 'First difference: ' }), d.message);
    // The two steps that differ, each linked to its line in its own dump.
    const other = doc.nodes.findIndex((n) => n.node === d.node);
    for (const [fileIndex, step] of [[0, d.first], [other, d.other]]) {
      if (step && fileIndex >= 0 && step.line) {
        diff.append(el('div', {}, `${doc.nodes[fileIndex].node}: `,
          lineLink(fileIndex, step.line, `${doc.nodes[fileIndex].file}:${step.line}`, `${step.table} ${step.chain}`)));
      }
    }
    parts.push(diff);
  } else if (doc.nodes.length > 1) {
    parts.push(el('p', { class: 'verdict ok', 'data-testid': 'trace-agree', text: 'The nodes agree: the same outcomes along the same paths.' }));
  }
  const columns = el('div', { class: 'trace-columns' });
  columns.style.setProperty('--columns', String(doc.nodes.length));
  doc.nodes.forEach((node, fileIndex) => columns.append(traceNode(node, fileIndex)));
  parts.push(columns);
  output.replaceChildren(...parts);
}

function traceNode(node, fileIndex) {
  const column = el('section', { class: 'trace-node', 'data-testid': 'trace-node', 'data-node': node.node },
    el('h3', { text: node.node === node.file ? node.node : `${node.node} (${node.file})` }),
    el('p', { class: 'trace-summary', 'data-testid': 'trace-summary', text: node.summary }));
  const inputs = el('ul', { class: 'trace-inputs' });
  for (const i of node.inputs) {
    inputs.append(el('li', {}, el('strong', { text: `${i.field}: ` }), el('span', { class: 'mono', text: i.value }),
      el('span', { class: 'hint', text: ` (${i.how}${i.why ? `: ${i.why}` : ''})` })));
  }
  column.append(el('details', { class: 'trace-packet' }, el('summary', { text: 'The packet as traced' }), inputs));
  for (const limit of node.limits) column.append(el('p', { class: 'failed', text: `Bound hit: ${limit}` }));
  node.outcomes.forEach((o, k) => column.append(traceOutcome(o, k, fileIndex)));
  return column;
}

function traceOutcome(o, k, fileIndex) {
  const box = el('details', {
    class: `trace-outcome verdict-${o.verdict}`,
    open: k < 3,
    'data-testid': 'trace-outcome',
    'data-verdict': o.verdict,
    'data-destination': o.destination,
    'data-probability': String(o.probability),
  });
  const head = el('summary', {},
    el('span', { class: 'prob', text: percent(o.probability) }), ' ',
    el('strong', { text: o.verdict }), ' → ',
    el('span', { class: 'mono', text: o.destination }),
    o.translated ? el('span', { class: 'hint', text: ' (translated)' }) : null);
  box.append(head);
  if (o.masquerade) {
    box.append(el('div', { class: 'trace-masq' }, 'masqueraded by ',
      lineLink(fileIndex, o.masquerade.line, `${o.masquerade.table} ${o.masquerade.chain} line ${o.masquerade.line}`, `${o.masquerade.table} ${o.masquerade.chain}`)));
  }
  if (o.stopped) box.append(el('div', { class: 'failed', text: `stopped: ${o.stopped}` }));
  if (o.assumptions.length) {
    const list = el('ul', { class: 'trace-assumptions', 'data-testid': 'trace-assumptions' });
    for (const a of o.assumptions) list.append(el('li', { text: a }));
    box.append(el('div', { class: 'hint', text: 'assuming:' }), list);
  }
  box.append(traceSteps(o.steps, fileIndex));
  return box;
}

/** The path as nested groups: hook, then table and chain, each step a rule with its line. */
function traceSteps(steps, fileIndex) {
  const root = el('div', { class: 'trace-path' });
  const file = analysis.files[fileIndex] ? analysis.files[fileIndex].path : '';
  let hook = null;
  let hookBox = null;
  let group = null;
  let groupKey = null;
  for (const step of steps) {
    if (HOOKS.has(step.chain) && step.chain !== hook) {
      hook = step.chain;
      hookBox = el('div', { class: 'trace-hook', 'data-hook': hook }, el('div', { class: 'hook-name', text: hook }));
      root.append(hookBox);
      groupKey = null;
    }
    if (!hookBox) {
      hookBox = el('div', { class: 'trace-hook' });
      root.append(hookBox);
    }
    const key = `${step.table}\0${step.chain}`;
    if (key !== groupKey) {
      groupKey = key;
      group = el('ol', { class: 'trace-steps' });
      hookBox.append(el('div', { class: 'trace-chain' },
        el('div', { class: 'chain-label mono', text: `${step.table} · ${step.chain}` }), group));
    }
    group.append(el('li', { 'data-testid': 'trace-step', 'data-line': step.line ?? '' },
      lineLink(fileIndex, step.line, step.line ? `${file}:${step.line}` : '(policy)', `${step.table} ${step.chain}`),
      ' ', el('span', { class: 'effect', text: step.effect }),
      el('div', { class: 'rule mono', text: step.rule })));
  }
  return root;
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
