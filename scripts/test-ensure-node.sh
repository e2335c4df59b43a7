#!/usr/bin/env bash
# Tests scripts/ensure-node.sh as a fresh Debian 12 would run it: with a `node` 18 first on PATH
# (a stand-in that says v18 and otherwise runs the system's node, so npm still works), sourcing it
# must leave a real Node 20 or later on PATH, installed from the npm registry into a cache folder.
# Usage: bash scripts/test-ensure-node.sh
set -euo pipefail
cd "$(dirname "$0")/.."
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
real_node=$(command -v node)
printf '#!/bin/sh\n[ "$1" = --version ] && { echo v18.19.0; exit 0; }\nexec %s "$@"\n' "$real_node" > "$fake/node"
chmod +x "$fake/node"

RULELINT_NODE_CACHE="$fake/cache" PATH="$fake:$PATH" bash -c '
  set -euo pipefail
  [ "$(node --version)" = v18.19.0 ] || { echo "test-ensure-node: the stand-in is not first" >&2; exit 1; }
  source scripts/ensure-node.sh
  version=$(node --version)
  major=${version#v}; major=${major%%.*}
  [ "$major" -ge 20 ] || { echo "test-ensure-node: still $version after ensure-node.sh" >&2; exit 1; }
  case "$(command -v node)" in "$RULELINT_NODE_CACHE"/*) ;; *)
    echo "test-ensure-node: node is $(command -v node), not the installed one" >&2; exit 1 ;;
  esac
  [ "$(node -p 1+1)" = 2 ] || { echo "test-ensure-node: node does not run code" >&2; exit 1; }
  echo "test-ensure-node: Node 18 on PATH gives $version from $(command -v node)"
'
