#!/usr/bin/env bash
# Tests scripts/collect.sh against a stand-in `kubectl` that records its arguments and runs the
# node script with stand-in iptables-save, ip6tables-save and nft printing corpus dumps; then
# checks that `rulelint diff` and `rulelint check` read the folder it wrote.
# Usage: bash scripts/test-collect.sh [RULELINT_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
rulelint=${1:-}
if [ -z "$rulelint" ]; then
  cargo build --quiet --release
  rulelint="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/release/rulelint"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/nodebin"

fail() { echo "test-collect: FAIL: $*" >&2; exit 1; }

# The stand-in kubectl. `debug` runs the node script the way the pod would, with the node's
# tools replaced by the stand-ins in nodebin (which read FAKE_NODE to pick a corpus dump).
cat > "$work/bin/kubectl" << 'EOF'
#!/usr/bin/env bash
printf '%s\n' "$*" >> "$FAKE_LOG"
if [ "$1" = --context ]; then shift 2; fi
case "$1" in
  get) printf 'node/node-00\nnode/node-01\nnode/node-07\nnode/node-broken\n' ;;
  delete) ;;
  debug)
    node=${2#node/}
    echo "Creating debugging pod node-debugger-$node-x7k2q with container debugger on node $node." >&2
    if [ "$node" = node-broken ]; then echo "error: timed out waiting for the pod" >&2; exit 1; fi
    while [ "$1" != "--" ]; do shift; done
    shift
    [ "$1 $2" = "chroot /host" ] || { echo "stand-in kubectl: expected chroot /host" >&2; exit 3; }
    shift 2
    FAKE_NODE=$node PATH="$FAKE_NODEBIN:$PATH" "$@"
    ;;
  *) echo "stand-in kubectl: unexpected $*" >&2; exit 3 ;;
esac
EOF
cat > "$work/nodebin/iptables-save" << 'EOF'
#!/usr/bin/env bash
case "$FAKE_NODE" in
  node-nft) cat "$FAKE_REPO/corpus/diff/migration-pair/node-00.txt" ;;
  *) cat "$FAKE_REPO/corpus/diff/group-odd-node/$FAKE_NODE.txt" ;;
esac
EOF
cat > "$work/nodebin/ip6tables-save" << 'EOF'
#!/usr/bin/env bash
if [ "$FAKE_NODE" = node-00 ]; then
  cat "$FAKE_REPO/corpus/syntax/ok/kube-proxy-ipv6.txt"
else
  printf '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n'
fi
EOF
cat > "$work/nodebin/nft" << 'EOF'
#!/usr/bin/env bash
case "$FAKE_NODE:$*" in
  node-nft:"list tables") printf 'table ip filter\ntable ip kube-proxy\n' ;;
  *:"list tables") printf 'table ip filter\n' ;;
  node-nft:"list ruleset") cat "$FAKE_REPO/corpus/diff/migration-pair/node-01.txt" ;;
  *) echo "stand-in nft: unexpected $*" >&2; exit 1 ;;
esac
EOF
chmod +x "$work/bin/kubectl" "$work/nodebin/"*
export FAKE_LOG="$work/kubectl.log" FAKE_NODEBIN="$work/nodebin" FAKE_REPO="$repo"
export PATH="$work/bin:$PATH"

echo "==> every node of the cluster, one failing"
status=0
bash scripts/collect.sh -o "$work/out" > "$work/stdout" 2> "$work/stderr" || status=$?
[ "$status" -eq 1 ] || fail "a failed node must give exit status 1, got $status"
grep -q 'node-broken: no iptables-save output' "$work/stderr" || fail "node-broken not reported"
for node in node-00 node-01 node-07; do
  cmp -s "$work/out/$node.txt" "corpus/diff/group-odd-node/$node.txt" \
    || fail "$node.txt differs from the node's iptables-save"
done
[ ! -e "$work/out/node-broken.txt" ] || fail "a failed node must not leave a file"
[ "$(ls -A "$work/out" | grep '^\.' || true)" = ".node-broken.log" ] \
  || fail "only the failed node's kubectl log may stay in the output folder"
cmp -s "$work/out/ipv6/node-00.txt" corpus/syntax/ok/kube-proxy-ipv6.txt \
  || fail "node-00's ip6tables-save not saved"
[ ! -e "$work/out/ipv6/node-01.txt" ] || fail "an ip6tables-save without rules must not be kept"
grep -q -- '--profile=sysadmin' "$work/kubectl.log" || fail "debug pods need --profile=sysadmin"
grep -q -- '--image=busybox:1.36' "$work/kubectl.log" || fail "the stated default image is not used"
for node in node-00 node-01 node-07 node-broken; do
  grep -qx "delete pod node-debugger-$node-x7k2q -n default --wait=false" "$work/kubectl.log" \
    || fail "debug pod of $node not deleted"
done

echo "==> rulelint diff reads the folder: node-07 is the odd node"
status=0
"$rulelint" diff "$work/out/" > "$work/diff.txt" || status=$?
[ "$status" -eq 1 ] || fail "rulelint diff: expected exit 1 (differences), got $status"
grep -q 'node-07' "$work/diff.txt" || fail "rulelint diff does not name node-07"
status=0
"$rulelint" check "$work/out/" > /dev/null || status=$?
[ "$status" -le 1 ] || fail "rulelint check of the folder: exit status $status"

echo "==> a node named on the command line, in nftables mode, with a selector-free context"
: > "$FAKE_LOG"
bash scripts/collect.sh -o "$work/nft" --context prod --image debian:12 node-nft > /dev/null
grep -q '^get ' "$FAKE_LOG" && fail "named nodes must not be listed with kubectl get"
grep -q -- '--context prod debug node/node-nft' "$FAKE_LOG" || fail "--context not passed"
grep -q -- '--image=debian:12' "$FAKE_LOG" || fail "--image not passed"
grep -q '^\*nat' "$work/nft/node-nft.txt" || fail "iptables-save part missing"
grep -q '^table ip kube-proxy' "$work/nft/node-nft.txt" || fail "nft ruleset missing"
"$rulelint" services "$work/nft/node-nft.txt" > /dev/null || fail "rulelint services cannot read it"

echo "==> selector"
: > "$FAKE_LOG"
bash scripts/collect.sh -o "$work/sel" -l node-role.kubernetes.io/worker= > /dev/null 2>&1 || true
grep -qx 'get nodes -o name -l node-role.kubernetes.io/worker=' "$FAKE_LOG" \
  || fail "the selector is not passed to kubectl get nodes"

echo "test-collect: ok"
