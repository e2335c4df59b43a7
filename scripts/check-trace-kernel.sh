#!/usr/bin/env bash
# Checks `rulelint trace` against the real kernel: does the packet take the path trace says?
#
# For each node ruleset and packet, in private network namespaces (the host's ruleset is
# never touched): loads the ruleset with the real `iptables-restore` (nf_tables backend) or
# `nft -f` into a "node" namespace joined to a "peer" namespace by veth pairs (the input
# interface named as `--in`, default eth0; the output interface as `--out`, default eth1),
# sends one packet of the flow (TCP SYN, UDP datagram or ICMP echo; from the peer, or from
# the node for `--from host`) and reads what the kernel did with `nft monitor trace` (every
# rule and policy the packet matched, every hook it survived, its address after DNAT). The
# kernel's path must be exactly the steps of one of trace's outcomes, with the same verdict
# and destination. Rules are mapped to file lines by position in their chain (the k-th rule
# of a chain in `nft -a list ruleset` is the k-th of that chain in the file; counted).
# Details: scripts/check-trace-kernel.py.
#
# Cases: every `corpus/trace/*/packets` line on its folder's dumps (the kernel-iptables and
# kernel-nft folders probe goto/return, marks, multiport, negations, interfaces, policies,
# notrack, REDIRECT, nat INPUT, base chains of one hook in two tables, verdict maps), and
# dumpgen nodes of 50 Service ports in iptables and nftables mode: a cluster IP (its
# probability ladder sent 24 times), a NodePort from outside, the node itself, pod to pod,
# UDP DNS, `--from host`. Not checked: `--state established`, `--affinity hit`, SCTP, IPv6,
# dumps needing ipsets (`-m set`), IPVS.
#
# Needs root, iproute2, iptables, nft, python3.
#   scripts/check-trace-kernel.sh                 all cases
#   scripts/check-trace-kernel.sh CASES-FILE      lines `FILE<TAB>NAME: FLAGS[<TAB>TRIES]`
# Env: RULELINT, DUMPGEN (binaries; default target/release/*, built if missing),
#      VERBOSE=1 (print the agreeing runs too), KEEP=DIR (keep the generated files there).
# Exit: 0 every run agrees (or namespaces are not allowed here: skipped), 1 a mismatch,
#       2 a tool is missing.
set -euo pipefail

cd "$(dirname "$0")/.."
for tool in ip iptables-restore nft python3; do
    command -v "$tool" >/dev/null || { echo "check-trace-kernel: $tool not installed" >&2; exit 2; }
done
if [ "$(id -u)" != 0 ] || ! unshare --net true 2>/dev/null; then
    echo "check-trace-kernel: skipped: needs root and network namespaces (unshare --net)"
    exit 0
fi
export RULELINT=${RULELINT:-target/release/rulelint}
dumpgen=${DUMPGEN:-target/release/dumpgen}
[ -x "$RULELINT" ] || cargo build --release -q --bin rulelint
[ -x "$dumpgen" ] || cargo build --release -q -p rulelint-dumpgen --bin dumpgen

work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

if [ $# -gt 0 ]; then
    exec python3 scripts/check-trace-kernel.py < "$1"
fi

cases=$work/cases
: > "$cases"
for dir in corpus/trace/*/; do
    [ -f "$dir/packets" ] || continue
    for node in "$dir"*.txt; do
        grep -v '^#' "$dir/packets" | while IFS= read -r line; do
            [ -n "$line" ] && printf '%s\t%s\n' "$node" "$line"
        done >> "$cases"
    done
done

"$dumpgen" --services 50 > "$work/dumpgen.txt"
"$dumpgen" --services 50 --mode nftables > "$work/dumpgen.nft"
for node in "$work/dumpgen.txt" "$work/dumpgen.nft"; do
    "$RULELINT" services --format json "$node" | python3 -c '
import json, sys
node = sys.argv[1]
services = json.load(sys.stdin)["files"][0]["services"]
def first(kind, protocol="tcp", endpoints=lambda n: n > 0):
    for s in services:
        for a in s["addresses"]:
            if a["kind"] == kind and a["protocol"] == protocol and endpoints(len(s["endpoints"])):
                return s, a
    return None, None
def line(name, flags, tries=1):
    print(f"{node}\t{name}: {flags}\t{tries}")
def addr(a):
    return a["address"].split("/")[0] + ":" + str(a["port"])
s, a = first("cluster-ip", endpoints=lambda n: n >= 4)
line("cluster-ip-ladder", "--dst " + addr(a), 24)
line("cluster-ip-from-host", "--dst " + addr(a) + " --from host", 6)
line("pod-to-pod", "--dst " + s["endpoints"][0]["destination"])
s, a = first("cluster-ip", protocol="udp")
if a:
    line("cluster-ip-udp", "--dst " + addr(a) + " --proto udp", 6)
s, a = first("node-port")
node_ip = "192.168.0.10"  # dumpgen node 0
nodeport = "--dst %s:%d --from outside --src 203.0.113.9 --node-ip %s" % (node_ip, a["port"], node_ip)
line("nodeport-from-outside", nodeport, 6)
line("to-the-node", f"--dst {node_ip}:22 --from outside --src 203.0.113.9 --node-ip {node_ip}")
line("host-to-the-node", f"--dst {node_ip}:10250 --from host --node-ip {node_ip}")
' "$node" >> "$cases"
done

echo "check-trace-kernel: $(wc -l < "$cases") packets; $(iptables --version); $(nft --version)"
python3 scripts/check-trace-kernel.py < "$cases"
