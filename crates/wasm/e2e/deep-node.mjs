// No recursion on input depth, in the WASM build (issue 16): a path and a cycle of 1,000,000
// chains (iptables-save and nft) through check, chains, services, trace and diff of the module
// under Node, whose stack is what a browser tab gives WebAssembly (about 1 MB). The native
// counterpart is crates/lint/tests/deep_inputs.rs. Not part of test-web.sh (the Chromium
// tests); run it by hand or from CI after a build:
//
//   CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=+simd128" \
//     cargo build -p rulelint-wasm --target wasm32-unknown-unknown --profile wasm-release
//   wasm-bindgen --target nodejs --no-typescript --out-dir /tmp/rulelint-wasm-node \
//     target/wasm32-unknown-unknown/wasm-release/rulelint_wasm.wasm
//   node --test crates/wasm/e2e/deep-node.mjs        # PKG=/tmp/rulelint-wasm-node by default
//
// DEEP_CHAINS sets the number of chains (default 1,000,000).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';

const pkg = path.resolve(process.env.PKG ?? '/tmp/rulelint-wasm-node', 'rulelint_wasm.js');
const wasm = createRequire(import.meta.url)(pkg);
const N = Number(process.env.DEEP_CHAINS ?? 1_000_000);

function iptables(cycle) {
  const parts = ['*filter\n:INPUT ACCEPT [0:0]\n'];
  for (let i = 0; i < N; i++) parts.push(`:C${i} - [0:0]\n`);
  parts.push('-A INPUT -j C0\n');
  for (let i = 0; i < N - 1; i++) parts.push(`-A C${i} -j C${i + 1}\n`);
  if (cycle) parts.push(`-A C${N - 1} -j C0\n`);
  parts.push('COMMIT\n');
  return parts.join('');
}

function nft(cycle) {
  const parts = ['table ip deep {\n\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n\t\tjump c0\n\t}\n'];
  for (let i = 0; i < N; i++) {
    const next = i + 1 < N ? `\t\tjump c${i + 1}\n` : cycle ? '\t\tjump c0\n' : '';
    parts.push(`\tchain c${i} {\n${next}\t}\n`);
  }
  parts.push('}\n');
  return parts.join('');
}

const codes = (doc) => doc.files[0].diagnostics.map((d) => d.code);

for (const cycle of [false, true]) {
  test(`iptables: a ${N}-chain ${cycle ? 'cycle' : 'path'}`, () => {
    const text = iptables(cycle);
    const checked = JSON.parse(wasm.check('deep.txt', text, ''));
    assert.equal(codes(checked).filter((c) => c === 'RL202').length, cycle ? 1 : 0);
    const chains = JSON.parse(wasm.chains('deep.txt', text, ''));
    assert.ok(!chains.error, chains.error);
    const services = JSON.parse(wasm.services('deep.txt', text));
    assert.ok(!services.error, services.error);
    const nodes = JSON.stringify([{ name: 'a', text }, { name: 'b', text }]);
    const traced = JSON.parse(wasm.trace(nodes, JSON.stringify({ dst: '192.0.2.1:80' })));
    assert.ok(!traced.error, traced.error);
    const diffed = JSON.parse(wasm.diff(nodes));
    assert.ok(!diffed.error, diffed.error);
  });

  test(`nft: a ${N}-chain ${cycle ? 'cycle' : 'path'}`, () => {
    const text = nft(cycle);
    const checked = JSON.parse(wasm.check('deep.nft', text, ''));
    const errors = checked.files[0].diagnostics.filter(
      (d) => d.severity === 'error' && !d.code.startsWith('RL15'),
    );
    assert.deepEqual(errors.map((d) => d.code), []);
    const services = JSON.parse(wasm.services('deep.nft', text));
    assert.ok(!services.error, services.error);
  });
}
