#!/usr/bin/env bash
# The web page's end-to-end tests, with their setup on a fresh machine: Debian's Chromium,
# playwright-core and binaryen from npm, the wasm build, the CLI that serves the page.
# Usage: bash scripts/test-web.sh   (scripts/test.sh runs it last)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

step "web: browser and node"
if [ ! -x /usr/bin/chromium ] || ! command -v npm >/dev/null; then
  as_root apt-get update
  missing=()
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  command -v npm >/dev/null || missing+=(nodejs npm)
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi
/usr/bin/chromium --version
# Node 20 or later (Debian 12 has 18): installed from the npm registry when older.
source scripts/ensure-node.sh

step "web: npm packages (playwright-core, binaryen)"
(cd crates/wasm/e2e && npm ci --no-audit --no-fund)
# The harness finds the binary through cargo's target directory, wherever CARGO_TARGET_DIR puts it.
CARGO_TARGET_DIR=/tmp/rulelint-target-dir-check node --input-type=module -e "
  const { TARGET } = await import('./crates/wasm/e2e/harness.mjs');
  if (TARGET !== '/tmp/rulelint-target-dir-check') { console.error('harness target: ' + TARGET); process.exit(1); }"

bash scripts/build-web.sh --opt

step "web: the CLI with the page embedded"
cargo build

step "web: end-to-end tests in headless Chromium"
cd crates/wasm/e2e
node --test --test-concurrency=1 tests/
