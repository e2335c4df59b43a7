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

step "tests"
cargo test --workspace

step "wasm build"
cargo build -p rulelint-wasm --target wasm32-unknown-unknown --release

step "cli smoke test"
cargo run --quiet -- stats corpus/syntax/ok/kube-proxy-1.29-iptables-nft.txt
