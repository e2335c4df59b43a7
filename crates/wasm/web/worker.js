// The analyser: loads rulelint's wasm module and does all the work off the page's thread, so a
// 250k-rule dump never freezes the page. It keeps the inputs and the (large) results and hands
// the page only what a view shows: findings, one level of the chain tree, one page of services.
//
// Protocol: the page posts {id, type, ...}; the worker answers {id, type: "progress", ...}
// any number of times, then {id, type: "result", result} or {id, type: "error", message}.

import init, * as wasm from './pkg/rulelint_wasm.js';
import wasmBase64 from './pkg/rulelint_wasm_bytes.js';

// The policy has `connect-src 'none'`, so the module's bytes come in as a script, not a fetch.
function decodeBase64(text) {
  if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const ready = init({ module_or_path: decodeBase64(wasmBase64) });

const state = {
  inputs: [], // [{name, text}]
  config: '',
  checks: [], // per input: the `check` file document
  byChain: [], // per input: Map "table\0chain" -> [diagnostic index]
  chains: [], // per input: the `chains` document, built on first use
  services: [], // per input: the `services` file document, built on first use
  // Every input as `check` parsed it (a wasm Session: one parsed copy per input), traced on
  // that parse; its trace nodes are prepared at the first trace.
  session: null,
  traced: false,
};

/** Frees the session's parsed inputs (wasm memory is not garbage-collected) when they change. */
function dropSession() {
  if (state.session) state.session.free();
  state.session = null;
  state.traced = false;
}

const now = () => performance.now();

function parseJson(text, what) {
  const value = JSON.parse(text);
  if (value && typeof value.error === 'string') throw new Error(`${what}: ${value.error}`);
  return value;
}

function chainsOf(file) {
  if (!state.chains[file]) {
    const { name, text } = state.inputs[file];
    state.chains[file] = parseJson(wasm.chains(name, text, state.config), 'chains');
  }
  return state.chains[file];
}

/** The callers of every chain (the `calls` lists reversed), built on first use. */
function callersOf(file) {
  const doc = chainsOf(file);
  if (!doc.callers) {
    const callers = doc.chains.map(() => []);
    doc.chains.forEach((c, from) => {
      for (const to of c.calls || []) callers[to].push(from);
    });
    doc.callers = callers;
  }
  return doc.callers;
}

/** Bounds of the chain graph: callers drawn per table, callees drawn per chain, levels down. */
const GRAPH_CALLERS = 60;
const GRAPH_CHILDREN = 16;
const GRAPH_MAX_DEPTH = 4;

/**
 * The picture of one table around the picked chains: every chain on a path from an entry (a
 * built-in chain, or a chain nothing calls) to a pick, nearest callers first and at most
 * GRAPH_CALLERS of them; below each pick its callees `depth` levels down, at most
 * GRAPH_CHILDREN per chain (the rest counted in `more`); and every jump between drawn chains.
 */
function graphOf(doc, callers, picks, depth) {
  const drawn = new Set(picks);
  const queue = [...picks];
  let hiddenCallers = 0;
  let up = 0;
  for (let k = 0; k < queue.length; k++) {
    for (const c of callers[queue[k]]) {
      if (drawn.has(c)) continue;
      if (up >= GRAPH_CALLERS) {
        hiddenCallers++;
        continue;
      }
      up++;
      drawn.add(c);
      queue.push(c);
    }
  }
  const more = [];
  let frontier = [...picks];
  for (let level = 0; level < depth; level++) {
    const next = [];
    for (const c of frontier) {
      const calls = doc.chains[c].calls || [];
      const shown = calls.slice(0, GRAPH_CHILDREN);
      for (const to of shown) {
        if (!drawn.has(to)) {
          drawn.add(to);
          next.push(to);
        }
      }
      if (calls.length > shown.length) more.push({ from: c, count: calls.length - shown.length });
    }
    frontier = next;
  }
  const edges = [];
  const called = new Set();
  for (const from of drawn) {
    for (const to of doc.chains[from].calls || []) {
      if (drawn.has(to)) {
        edges.push([from, to]);
        called.add(to);
      }
    }
  }
  // Columns: distance from the drawn chains nothing drawn calls (the hooks, mostly).
  const layer = new Map();
  let wave = [...drawn].filter((c) => !called.has(c));
  for (const c of wave) layer.set(c, 0);
  for (let d = 1; wave.length; d++) {
    const next = [];
    for (const from of wave) {
      for (const to of doc.chains[from].calls || []) {
        if (drawn.has(to) && !layer.has(to)) {
          layer.set(to, d);
          next.push(to);
        }
      }
    }
    wave = next;
  }
  const deepest = Math.max(0, ...layer.values());
  for (const c of drawn) if (!layer.has(c)) layer.set(c, deepest + 1); // only in a loop
  const picked = new Set(picks);
  const nodes = [...drawn].sort((a, b) => layer.get(a) - layer.get(b) || a - b).map((c) => ({
    ...node(doc, c),
    layer: layer.get(c),
    picked: picked.has(c),
  }));
  return { table: doc.tables[doc.chains[picks[0]].table].name, nodes, edges, more, hiddenCallers };
}

function servicesOf(file) {
  if (!state.services[file]) {
    const { name, text } = state.inputs[file];
    state.services[file] = parseJson(wasm.services(name, text), 'services').files[0];
  }
  return state.services[file];
}

/** One chain as a tree node: what the page draws for it. */
function node(doc, index) {
  const c = doc.chains[index];
  return {
    index,
    name: c.name,
    builtin: c.builtin,
    rules: c.rules,
    line: c.line,
    findings: c.findings || [0, 0, 0],
    calls: c.calls ? c.calls.length : 0,
  };
}

function page(items, offset, limit) {
  const start = Math.max(0, offset | 0);
  return items.slice(start, start + Math.max(1, limit | 0));
}

const handlers = {
  version() {
    return wasm.version();
  },

  analyse({ inputs, config }, progress) {
    dropSession();
    Object.assign(state, { inputs, config, checks: [], byChain: [], chains: [], services: [] });
    state.session = new wasm.Session();
    const timings = [];
    const files = inputs.map(({ name, text }, i) => {
      progress({ stage: 'check', file: i, of: inputs.length, name });
      const t0 = now();
      const out = state.session.check(name, text, config);
      const t1 = now();
      const doc = parseJson(out, 'check').files[0];
      timings.push({ name, wasm: t1 - t0, json: now() - t1, bytes: text.length });
      state.checks.push(doc);
      const byChain = new Map();
      doc.diagnostics.forEach((d, k) => {
        if (d.chain === null) return;
        const key = `${d.table}\0${d.chain}`;
        if (!byChain.has(key)) byChain.set(key, []);
        byChain.get(key).push(k);
      });
      state.byChain.push(byChain);
      return doc;
    });
    let diff = null;
    if (inputs.length >= 2) {
      progress({ stage: 'diff', file: inputs.length, of: inputs.length });
      // The node diff is another issue's work: use it when this build of the module has it.
      if (typeof wasm.diff === 'function') {
        const t0 = now();
        diff = { doc: parseJson(wasm.diff(JSON.stringify(inputs)), 'diff') };
        timings.push({ name: 'diff', wasm: now() - t0 });
      } else {
        diff = { doc: null };
      }
    }
    return { files, diff, timings };
  },

  chainRoots({ file }, progress) {
    progress({ stage: 'chains', file, of: state.inputs.length, name: state.inputs[file].name });
    const doc = chainsOf(file);
    return {
      tables: doc.tables.map((t, index) => ({
        index,
        name: t.name,
        superseded: t.superseded,
        hooks: t.hooks.map((h) => node(doc, h)),
        unreached: t.unreached.length,
      })),
      chains: doc.chains.length,
    };
  },

  chainChildren({ file, chain, offset = 0, limit = 200 }) {
    const doc = chainsOf(file);
    const c = doc.chains[chain];
    const calls = c.calls || [];
    const table = doc.tables[c.table].name;
    return {
      total: calls.length,
      items: page(calls, offset, limit).map((k) => node(doc, k)),
      // Only with the first page: the findings on this chain, as indices into the file's list.
      findings: offset === 0 ? state.byChain[file].get(`${table}\0${c.name}`) || [] : [],
    };
  },

  // The chain graph around the chains the user picked: one picture per table.
  chainGraph({ file, picks, depth = 2 }) {
    const doc = chainsOf(file);
    const callers = callersOf(file);
    const byTable = new Map();
    for (const p of picks) {
      if (!doc.chains[p]) continue;
      const t = doc.chains[p].table;
      if (!byTable.has(t)) byTable.set(t, []);
      byTable.get(t).push(p);
    }
    const levels = Math.max(0, Math.min(GRAPH_MAX_DEPTH, depth | 0));
    return {
      tables: [...byTable.keys()].sort((a, b) => a - b)
        .map((t) => graphOf(doc, callers, byTable.get(t), levels)),
    };
  },

  chainUnreached({ file, table, offset = 0, limit = 200 }) {
    const doc = chainsOf(file);
    const list = doc.tables[table].unreached;
    return { total: list.length, items: page(list, offset, limit).map((k) => node(doc, k)) };
  },

  services({ file, offset = 0, limit = 100, filter = '' }, progress) {
    if (!state.services[file]) {
      progress({ stage: 'services', file, of: state.inputs.length, name: state.inputs[file].name });
    }
    const doc = servicesOf(file);
    const needle = filter.trim().toLowerCase();
    const matches = needle
      ? doc.services.filter((s) => serviceText(s).includes(needle))
      : doc.services;
    return {
      layout: doc.layout,
      all: doc.services.length,
      total: matches.length,
      unusedEndpointChains: doc.unused_endpoint_chains.length,
      items: page(matches, offset, limit),
    };
  },

  // The packet trace on every input: the document of `rulelint trace --format json`, on the
  // parse `check` made (the session keeps it). The first trace prepares each input's trace node
  // (no parse); later ones only walk.
  trace({ packet }, progress) {
    if (!state.session) throw new Error('trace: no dumps loaded');
    const first = !state.traced;
    if (first) progress({ stage: 'trace', file: 0, of: state.inputs.length });
    const t0 = now();
    const out = state.session.trace(JSON.stringify(packet));
    const wasmMs = now() - t0;
    state.traced = true;
    return { doc: parseJson(out, 'trace'), wasmMs, first };
  },

  explain({ code }) {
    return parseJson(wasm.explain(code), 'explain');
  },
};

/** What the services filter searches: name, hash, chains, addresses and endpoints. */
const searchText = new WeakMap();
function serviceText(s) {
  let text = searchText.get(s);
  if (text === undefined) {
    const parts = [s.name, s.hash, ...Object.values(s.chains || {})];
    for (const a of s.addresses) parts.push(a.address, a.port, a.protocol, a.kind);
    for (const e of s.endpoints) parts.push(e.destination, e.chain);
    text = parts.filter((p) => p !== null && p !== undefined).join(' ').toLowerCase();
    searchText.set(s, text);
  }
  return text;
}

self.onmessage = async (event) => {
  const { id, type } = event.data;
  const progress = (p) => self.postMessage({ id, type: 'progress', ...p });
  try {
    await ready;
    const handler = handlers[type];
    if (!handler) throw new Error(`unknown request ${type}`);
    self.postMessage({ id, type: 'result', result: handler(event.data, progress) });
  } catch (err) {
    self.postMessage({ id, type: 'error', message: String((err && err.message) || err) });
  }
};
