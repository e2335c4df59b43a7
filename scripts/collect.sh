#!/usr/bin/env bash
# Saves the packet-filter state of Kubernetes nodes into a folder that `rulelint diff DIR/` and
# `rulelint check DIR/` read: one file per node, named after the node.
#
# Each node is read through `kubectl debug node/NAME`, which starts a pod in the node's network
# namespace with the node's root filesystem at /host; the node's own iptables-save and nft run
# there (chroot /host), so the dump comes from the same iptables build (legacy or nft) that
# kube-proxy uses. The debug pod is deleted afterwards.
#
# Usage: scripts/collect.sh [options] [NODE...]
#   -o, --output DIR      where to write (default: rulelint-dumps-YYYYMMDD-HHMMSS)
#   -l, --selector SEL    nodes matching a label selector (default: every node, or the NODEs given)
#   --image IMAGE         the debug pod's image; it only needs `sh` and `chroot`
#                         (default: busybox:1.36)
#   --profile PROFILE     kubectl debug profile (default: sysadmin, which grants CAP_NET_ADMIN;
#                         iptables-save needs it)
#   -n, --namespace NS    where the debug pods are created (default: default)
#   --context CTX         kubectl context (default: the current one)
#   --timeout SECONDS     per node (default: 120)
#   -h, --help
#
# Per node it writes DIR/NODE.txt: `iptables-save`, then `nft list ruleset` when the node has a
# `kube-proxy` nftables table (kube-proxy in nftables mode, or a node being migrated); and
# DIR/ipv6/NODE.txt with `ip6tables-save` when the node has IPv6 rules. A node that cannot be
# read is reported and skipped; the exit status is 1 if any node failed.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

output=""
selector=""
image="busybox:1.36"
profile="sysadmin"
namespace="default"
context=""
timeout_seconds=120
nodes=()

while [ $# -gt 0 ]; do
  case "$1" in
    -o | --output) output="${2:?$1 needs a folder}"; shift 2 ;;
    -l | --selector) selector="${2:?$1 needs a label selector}"; shift 2 ;;
    --image) image="${2:?$1 needs an image}"; shift 2 ;;
    --profile) profile="${2:?$1 needs a profile}"; shift 2 ;;
    -n | --namespace) namespace="${2:?$1 needs a namespace}"; shift 2 ;;
    --context) context="${2:?$1 needs a context}"; shift 2 ;;
    --timeout) timeout_seconds="${2:?$1 needs seconds}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "collect.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) nodes+=("$1"); shift ;;
  esac
done

kubectl_args=()
if [ -n "$context" ]; then kubectl_args+=(--context "$context"); fi

if ! command -v kubectl > /dev/null; then
  echo "collect.sh: kubectl is not on PATH" >&2
  exit 2
fi

if [ "${#nodes[@]}" -eq 0 ]; then
  list_args=(get nodes -o name)
  if [ -n "$selector" ]; then list_args+=(-l "$selector"); fi
  while IFS= read -r name; do
    if [ -n "$name" ]; then nodes+=("${name#node/}"); fi
  done < <(kubectl "${kubectl_args[@]}" "${list_args[@]}")
fi
if [ "${#nodes[@]}" -eq 0 ]; then
  echo "collect.sh: no nodes found" >&2
  exit 2
fi

if [ -z "$output" ]; then output="rulelint-dumps-$(date +%Y%m%d-%H%M%S)"; fi
mkdir -p "$output/ipv6"

# Runs on the node (chroot /host). Sections are marked on stderr-free lines of their own so that
# one pod run gives every output; the markers are split off below and never reach the dumps.
# The first line waits for the newline sent through the attached stdin, so no output is written
# before kubectl is attached to read it.
node_script='
read -r _ || true
iptables-save 2>/dev/null || echo "#rulelint-collect: iptables-save failed" >&2
echo "#rulelint-collect-section ipv6"
ip6tables-save 2>/dev/null || true
echo "#rulelint-collect-section nft"
if command -v nft >/dev/null 2>&1 && nft list tables 2>/dev/null | grep -q " kube-proxy$"; then
  nft list ruleset 2>/dev/null
fi'

failed=0
for node in "${nodes[@]}"; do
  case "$node" in
    */* | .* | "") echo "collect.sh: skipping node name \`$node\`" >&2; failed=1; continue ;;
  esac
  raw="$output/.$node.raw"
  log="$output/.$node.log"
  status=0
  printf '\n' | timeout "$timeout_seconds" kubectl "${kubectl_args[@]}" debug "node/$node" -n "$namespace" \
    -i --image="$image" --profile="$profile" -- chroot /host sh -c "$node_script" \
    > "$raw" 2> "$log" || status=$?
  # kubectl says which pod it created ("Creating debugging pod NAME with container ...").
  pod=$(sed -n 's/.*Creating debugging pod \([^ ]*\) .*/\1/p' "$log" | head -n 1)
  if [ -n "$pod" ]; then
    kubectl "${kubectl_args[@]}" delete pod "$pod" -n "$namespace" --wait=false > /dev/null 2>&1 || true
  fi
  if [ "$status" -ne 0 ] || ! grep -q '^\*' "$raw"; then
    echo "collect.sh: $node: no iptables-save output (kubectl exit status $status); see $log" >&2
    failed=1
    rm -f "$raw"
    continue
  fi
  awk -v main="$output/$node.txt" -v v6="$output/ipv6/$node.txt" '
    /^#rulelint-collect-section ipv6$/ { section = "ipv6"; next }
    /^#rulelint-collect-section nft$/ { section = "nft"; next }
    section == "ipv6" { print > v6; next }
    { print > main }
  ' "$raw"
  # ip6tables-save of a node without IPv6 rules prints only empty tables: keep the file only
  # when it has a rule.
  if [ -f "$output/ipv6/$node.txt" ] && ! grep -q '^-A ' "$output/ipv6/$node.txt"; then
    rm -f "$output/ipv6/$node.txt"
  fi
  rm -f "$raw" "$log"
  echo "$node: $(wc -l < "$output/$node.txt") lines -> $output/$node.txt"
done
rmdir "$output/ipv6" 2> /dev/null || true

echo "next: rulelint check $output/   and   rulelint diff $output/"
exit "$failed"
