#!/usr/bin/env bash
# IPVS-mode benchmark: `rulelint check` on dumpgen IPVS nodes of 1k, 10k and 100k Service
# ports, `rulelint diff` of two IPVS nodes of one cluster, and `rulelint diff` of an IPVS node
# with the iptables node of the same shape. Measured with /usr/bin/time -v (wall, peak RSS);
# prints figures, asserts nothing. Not run by CI.
#
#   scripts/bench-ipvs.sh                 # 1000 10000 100000 Service ports
#   scripts/bench-ipvs.sh 1000 10000      # other sizes
# Env: WORK (a temporary folder; deleted afterwards unless KEEP=1), RULELINT and DUMPGEN
# (binaries; default target/release/...).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000 100000)
RULELINT=${RULELINT:-$ROOT/target/release/rulelint}
DUMPGEN=${DUMPGEN:-$ROOT/target/release/dumpgen}
KEEP=${KEEP:-0}
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/rulelint-bench-ipvs.XXXXXX")}
cleanup() { [ "$KEEP" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT
for bin in "$RULELINT" "$DUMPGEN"; do
    [ -x "$bin" ] || { echo "bench-ipvs: build first: cargo build --release ($bin)" >&2; exit 2; }
done

# `label command...`: runs the command (output discarded), prints wall and peak RSS.
measure() {
    local label=$1
    shift
    local t=$WORK/time.txt
    local rc=0
    /usr/bin/time -v "$@" >/dev/null 2>"$t" || rc=$?
    local wall rss
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$t")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$t")
    printf '%-52s wall %8s  peak %7.1f MB  exit %d\n' "$label" "$wall" "$(echo "$rss / 1024" | bc -l)" "$rc"
}

echo "load: $(uptime | sed 's/.*load average: //')"
for n in "${sizes[@]}"; do
    a=$WORK/ipvs-$n-node0.txt
    b=$WORK/ipvs-$n-node1.txt
    ipt=$WORK/iptables-$n-node0.txt
    "$DUMPGEN" --mode ipvs --services "$n" --node 0 >"$a"
    "$DUMPGEN" --mode ipvs --services "$n" --node 1 >"$b"
    "$DUMPGEN" --services "$n" --node 0 >"$ipt"
    vs=$(grep -c -E '^(TCP|UDP)  ' "$a")
    rs=$(grep -c '^  -> [0-9]' "$a")
    sets=$(grep -c '^add ' "$a")
    printf '%d Service ports: %s MB, %d virtual servers, %d real servers, %d ipset entries\n' \
        "$n" "$(echo "$(stat -c %s "$a") / 1048576" | bc -l | cut -c1-5)" "$vs" "$rs" "$sets"
    measure "  check (IPVS node)" "$RULELINT" check "$a"
    measure "  check (iptables node, same shape)" "$RULELINT" check "$ipt"
    measure "  diff (two IPVS nodes)" "$RULELINT" diff "$a" "$b"
    measure "  diff (IPVS node vs iptables node)" "$RULELINT" diff "$ipt" "$a"
done
echo "load: $(uptime | sed 's/.*load average: //')"
