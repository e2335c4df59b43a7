#!/usr/bin/env bash
# Runs every fuzz target for a short time (a minute in all by default, split evenly), as CI does,
# from the seeds in the repository's corpus. Needs a nightly toolchain (cargo-fuzz builds with
# sanitizers) and installs cargo-fuzz when it is missing. Prints libFuzzer's final statistics;
# fails on a crash, a timeout (2 s per input) or an input that takes more than 1 GB, the limits
# issue 16 sets.
# Targets: lint `parse_graph` (the light one: parse, chain graph and Kubernetes model, no
# rendering; thousands of inputs a second from its minimised seeds under 4 KB), parser `parse`,
# nft `forms`, lint `check` (every output format), `diff` (an input cut into up to three dumps at
# `====` lines) and `trace` (the first byte picks the packet).
# Usage: bash scripts/fuzz-brief.sh [TOTAL-SECONDS]
# Longer runs: cd crates/nft && cargo +nightly fuzz run forms -- -max_total_time=3600
# The long run of issue 16 (10 million executions; without sanitizer it runs several times faster):
#   cd crates/lint && cargo +nightly fuzz run -s none parse_graph fuzz/corpus/parse_graph \
#     fuzz/seeds/parse_graph -- -runs=10000000 -max_len=4096 -timeout=2 -rss_limit_mb=1024 \
#     -dict=../parser/fuzz/iptables.dict -print_final_stats=1
set -euo pipefail
cd "$(dirname "$0")/.."
total=${1:-60}
targets=6
seconds=$(( total / targets > 0 ? total / targets : 1 ))

if ! cargo +nightly --version > /dev/null 2>&1; then
  echo "fuzz-brief.sh: no nightly toolchain (cargo-fuzz needs one); skipped"
  exit 0
fi
if ! cargo fuzz --version > /dev/null 2>&1; then
  cargo install cargo-fuzz --version 0.13.2 --locked
fi

seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
mkdir -p "$seeds/iptables" "$seeds/nft" "$seeds/all"
# Seeds named by their path: the corpus repeats file names across folders.
seed() { for f in "$@"; do cp "$f" "$seeds/$kind/$(printf '%s' "$f" | tr / _)"; done; }
kind=iptables seed $(find corpus/syntax corpus/lints -name '*.txt' -size -256k)
kind=nft seed $(find corpus/lints corpus/diff -name '*.nft' -size -256k)
cp "$seeds"/iptables/* "$seeds"/nft/* "$seeds/all/"

# Dictionaries of the formats' words; the check target reads both formats.
cat crates/parser/fuzz/iptables.dict crates/nft/fuzz/nft.dict > "$seeds/all.dict"

run() {
  local crate=$1 target=$2 seed=$3 dict=$4 status=0
  shift 4 # the rest: extra libFuzzer flags
  echo "==> fuzz $crate $target for $seconds s"
  mkdir -p "crates/$crate/fuzz/corpus/$target"
  (cd "crates/$crate" && cargo +nightly fuzz run "$target" "fuzz/corpus/$target" "$seed" -- \
    -max_total_time="$seconds" -timeout=2 -rss_limit_mb=1024 -dict="$dict" -print_final_stats=1 "$@") \
    > "$seeds/$target.log" 2>&1 || status=$?
  # The progress lines are many; the final statistics and any error are what CI shows.
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|INFO: seed corpus|Done )' \
    "$seeds/$target.log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$seeds/$target.log"
    echo "fuzz-brief.sh: $crate/$target failed (status $status); the input is in crates/$crate/fuzz/artifacts/$target" >&2
    exit 1
  fi
}

# Minimised seeds (`cargo fuzz cmin parse_graph ... -- -max_len=4096` over corpus/ cut to 4 KB).
run lint parse_graph "$PWD/crates/lint/fuzz/seeds/parse_graph" "$PWD/crates/parser/fuzz/iptables.dict" -max_len=4096
run parser parse "$seeds/iptables" "$PWD/crates/parser/fuzz/iptables.dict"
run nft forms "$seeds/nft" "$PWD/crates/nft/fuzz/nft.dict"
run lint check "$seeds/all" "$seeds/all.dict"
run lint diff "$seeds/all" "$seeds/all.dict"
run lint trace "$seeds/iptables" "$seeds/all.dict"
