#!/usr/bin/env bash
# Tests what the README's install line gives: `cargo install --path . --features page` into a
# temporary root, with no page built beforehand (a clone of HEAD, so no crates/wasm/web/pkg),
# then the installed binary's `rulelint serve` drives the page in headless Chromium.
# Needs what scripts/test-web.sh installs (Chromium, the e2e npm packages); run it after that.
# Usage: bash scripts/test-install.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

git clone --quiet "$repo" "$work/clone"
[ ! -e "$work/clone/crates/wasm/web/pkg" ] || { echo "test-install: the clone has a built page" >&2; exit 1; }
# --debug: the CLI's own build is not what is tested here; the page's module is built in release.
# The repository's target folder: dependencies already built there are reused.
target=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
(cd "$work/clone" && cargo install --quiet --debug --path . --features page --root "$work/root" \
  --target-dir "$target")
"$work/root/bin/rulelint" --version

echo "==> the installed binary serves the page, and the page checks a dump in Chromium"
source scripts/ensure-node.sh
cd crates/wasm/e2e
RULELINT_BIN="$work/root/bin/rulelint" node --test --test-concurrency=1 \
  --test-name-pattern="shows the findings" tests/page.test.mjs
