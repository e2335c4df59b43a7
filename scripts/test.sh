#!/usr/bin/env bash
# Sets up what the tests need on a fresh machine and runs all of them.
# Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain"
cargo --version
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi

step "format"
cargo fmt --all -- --check

step "clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "docs"
# Broken intra-doc links (a renamed or private item) fail here rather than rot unseen.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

step "tests"
cargo test --workspace

step "wasm build"
cargo build -p rulelint-wasm --target wasm32-unknown-unknown --release

step "cli smoke test"
cargo run --quiet -- stats corpus/syntax/ok/kube-proxy-1.29-iptables-nft.txt
cargo run --quiet -- corpus/syntax/ok/kube-proxy-1.29-iptables-nft.txt
# The README's example: one error, exit status 1.
status=0
cargo run --quiet -- corpus/lints/RL401-bare-drop/fail-kube-firewall-bare-drop.txt || status=$?
if [ "$status" -ne 1 ]; then
  echo "expected exit status 1 from the bare-drop example, got $status" >&2
  exit 1
fi

step "Node 20 for the web tests where the system has 18 (stand-in node 18)"
bash scripts/test-ensure-node.sh

step "collection script (stand-in kubectl)"
cargo build --quiet
bash scripts/test-collect.sh "$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/debug/rulelint"

bash scripts/test-web.sh
