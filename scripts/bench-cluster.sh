#!/usr/bin/env bash
# Cluster-scale benchmark of `rulelint diff` and `rulelint summarize` (issue 19).
#
# Generates NODES nodes of one cluster with dumpgen (RULES rules each), then measures with
# /usr/bin/time -v (wall and peak RSS):
#   1. `rulelint diff DIR/ --format json` over the dumps;
#   2. `rulelint summarize` of every dump (size of a summary against its dump);
#   3. `rulelint diff` over the summaries, and over SUMMARIES copies of them when set
#      (a cluster of that many nodes);
#   4. `rulelint diff a b` of two dumps next to GNU `diff a b` on the same files.
# Prints figures and ratios; asserts nothing. Not run by CI (it takes minutes and gigabytes).
#
#   NODES=50 RULES=250000 scripts/bench-cluster.sh            # the issue's 50 x 250k
#   NODES=5 RULES=20000 scripts/bench-cluster.sh              # a short run
#   NODES=50 SUMMARIES=5000 scripts/bench-cluster.sh          # plus 5,000 summaries
#   GZ_NODES=500 DISTINCT=50 scripts/bench-cluster.sh         # only: diff of 500 gzipped dumps
# Env: NODES (50), RULES (250000), SUMMARIES (0: off), WORK (a temporary folder; the
# generated data is deleted afterwards unless KEEP=1), THREADS (RULELINT_THREADS; default: all
# cores), RL and DG (binaries to use instead of building). GZ_NODES (0: off) measures instead `rulelint diff` of that many dumps stored gzipped
# (`dumpgen | gzip -1`; rulelint reads `.gz` itself), DISTINCT of them generated and the others
# hard links to those (500 dumps of 250k rules are 13 GB unpacked, 1.3 GB gzipped).
set -euo pipefail

NODES=${NODES:-50}
RULES=${RULES:-250000}
SUMMARIES=${SUMMARIES:-0}
KEEP=${KEEP:-0}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/rulelint-bench-cluster.XXXXXX")}
[ -n "${THREADS:-}" ] && export RULELINT_THREADS=$THREADS

cleanup() { [ "$KEEP" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT

if [ ! -x /usr/bin/time ]; then
  echo "bench-cluster: needs GNU time at /usr/bin/time (apt-get install time)" >&2
  exit 2
fi

# RL and DG name other binaries to measure (then nothing is built).
if [ -z "${RL:-}" ] || [ -z "${DG:-}" ]; then
  echo "building rulelint and dumpgen (release)..." >&2
  (cd "$ROOT" && cargo build --release -q -p rulelint -p rulelint-dumpgen)
fi
RL=${RL:-$ROOT/target/release/rulelint}
DG=${DG:-$ROOT/target/release/dumpgen}

# Runs a command under /usr/bin/time -v; sets WALL (s) and RSS (MB).
measure() {
  local log=$WORK/time.log
  /usr/bin/time -v "$@" >"$WORK/out" 2>"$log" || true
  WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {
    n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$log")
  RSS=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$log")
}

GZ_NODES=${GZ_NODES:-0}
if [ "$GZ_NODES" -gt 0 ]; then
  DISTINCT=${DISTINCT:-50}
  cluster=$((DISTINCT < 256 ? DISTINCT : 256))
  mkdir -p "$WORK/gz"
  echo "generating $DISTINCT nodes x $RULES rules, gzipped, linked to $GZ_NODES names..." >&2
  for ((i = 0; i < DISTINCT; i++)); do
    "$DG" --rules "$RULES" --nodes "$cluster" --node $((i % cluster)) | gzip -1 >"$WORK/gz/node-$i.txt.gz"
  done
  for ((i = DISTINCT; i < GZ_NODES; i++)); do
    ln "$WORK/gz/node-$((i % DISTINCT)).txt.gz" "$WORK/gz/node-$i.txt.gz" 2>/dev/null ||
      cp "$WORK/gz/node-$((i % DISTINCT)).txt.gz" "$WORK/gz/node-$i.txt.gz"
  done
  one=$(stat -c %s "$WORK/gz/node-0.txt.gz")
  unpacked=$(gzip -dc "$WORK/gz/node-0.txt.gz" | wc -c)
  echo
  echo "load: $(uptime | sed 's/.*load average: //') (1, 5, 15 min) on $(nproc) cores"
  printf '%-44s %8d MiB gzipped, %d MiB unpacked\n' "a dump" "$((one >> 20))" "$((unpacked >> 20))"
  printf '%-44s %8d GiB unpacked (%d distinct)\n' "$GZ_NODES dumps" "$((unpacked * GZ_NODES >> 30))" "$DISTINCT"
  measure "$RL" diff "$WORK/gz" --format json
  printf '%-44s %8.2f s %7s MB\n' "diff of $GZ_NODES gzipped dumps" "$WALL" "$RSS"
  printf '%-44s %8.3f s\n' "  per node" "$(echo "$WALL / $GZ_NODES" | bc -l)"
  echo "load after: $(uptime | sed 's/.*load average: //')"
  exit 0
fi

mkdir -p "$WORK/dumps" "$WORK/summaries"
# dumpgen knows clusters of at most 256 nodes: beyond that, nodes repeat (renamed by file).
cluster=$((NODES < 256 ? NODES : 256))
echo "generating $NODES nodes x $RULES rules in $WORK..." >&2
for ((i = 0; i < NODES; i++)); do
  "$DG" --rules "$RULES" --nodes "$cluster" --node $((i % cluster)) >"$WORK/dumps/node-$i.txt"
done
dump_bytes=$(du -sb "$WORK/dumps" | cut -f1)

echo
echo "load: $(uptime | sed 's/.*load average: //') (1, 5, 15 min) on $(nproc) cores"
echo "dumps: $NODES nodes x $RULES rules, $((dump_bytes >> 20)) MiB"
echo

measure "$RL" diff "$WORK/dumps" --format json
printf '%-44s %8.2f s %7s MB\n' "diff of $NODES dumps" "$WALL" "$RSS"
diff_dumps_wall=$WALL

start=$(date +%s.%N)
for ((i = 0; i < NODES; i++)); do
  echo "$i"
done | xargs -P "$(nproc)" -I{} "$RL" summarize "$WORK/dumps/node-{}.txt" -o "$WORK/summaries/node-{}.sum.gz"
end=$(date +%s.%N)
summary_bytes=$(du -sb "$WORK/summaries" | cut -f1)
printf '%-44s %8.2f s  (%.1f ms a node on %d cores)\n' "summarize $NODES dumps" \
  "$(echo "$end - $start" | bc)" "$(echo "($end - $start) * 1000 * $(nproc) / $NODES" | bc -l)" "$(nproc)"
measure "$RL" summarize "$WORK/dumps/node-0.txt" -o "$WORK/one.sum.gz"
printf '%-44s %8.2f s %7s MB\n' "summarize one dump" "$WALL" "$RSS"
printf '%-44s %8d KiB, 1/%.0f of its dump\n' "a summary (format 2)" \
  "$((summary_bytes / NODES >> 10))" "$(echo "$dump_bytes / $summary_bytes" | bc -l)"

measure "$RL" diff "$WORK/summaries" --format json
printf '%-44s %8.2f s %7s MB\n' "diff of $NODES summaries" "$WALL" "$RSS"

if [ "$SUMMARIES" -gt 0 ]; then
  mkdir -p "$WORK/many"
  # Copies keep their node's name (renaming means recompressing each): the report repeats
  # names, the time and memory are those of SUMMARIES nodes. Hard links where the file
  # system allows (5,000 copies of 1 MB summaries would take 5 GB), else copies.
  echo "linking summaries to $SUMMARIES nodes..." >&2
  for ((i = 0; i < SUMMARIES; i++)); do
    src="$WORK/summaries/node-$((i % NODES)).sum.gz"
    ln "$src" "$WORK/many/node-$i.sum.gz" 2>/dev/null || cp "$src" "$WORK/many/node-$i.sum.gz"
  done
  measure "$RL" diff "$WORK/many" --format json
  printf '%-44s %8.2f s %7s MB\n' "diff of $SUMMARIES summaries" "$WALL" "$RSS"
  rm -rf "$WORK/many"
fi

a=$WORK/dumps/node-0.txt
b=$WORK/dumps/node-1.txt
[ "$NODES" -gt 1 ] || b=$a
measure diff "$a" "$b"
gnu_wall=$WALL
gnu_rss=$RSS
measure "$RL" diff "$a" "$b" --format json
printf '%-44s %8.2f s %7s MB\n' "diff of two dumps" "$WALL" "$RSS"
printf '%-44s %8.2f s %7s MB\n' "GNU diff of the same two files" "$gnu_wall" "$gnu_rss"
printf '%-44s %8.2f\n' "rulelint / GNU diff" "$(echo "$WALL / $gnu_wall" | bc -l)"
printf '%-44s %8.2f s\n' "diff of $NODES dumps, per node" "$(echo "$diff_dumps_wall / $NODES" | bc -l)"
