#!/usr/bin/env bash
# Robustness sweep: how every command's time, memory and threads grow with the input.
#
# For each input shape of scripts/bench-scaling-gen.py (many sections, tables, chains, sets,
# elements, deep nesting and jump chains, long lines and tokens, iptables, IPVS and ipset
# extremes, edge numbers, binary garbage, folders of tiny files), the shape is generated at
# n, 2n and 4n (8n with --big) and each command runs on it under `timeout 60` and
# `/usr/bin/time -f '%e %M'`. One row per run:
#
#   shape command bytes seconds peak-KiB peak/byte t-ratio m-ratio threads rc flags
#
# t-ratio and m-ratio are the growth from the previous size (linear is ~2). `threads` counts
# clone/clone3 calls under `strace -f -c` at the largest size (only with strace installed).
# Flags: SLOW (time x>3 per doubling, from 0.2 s), MEM (peak x>3 per doubling, from 64 MiB),
# BIG (peak above 30x the input, from 64 MiB), THREADS (more than 64 clones), TIMEOUT,
# CRASH (signal or a panic message). It measures and prints; it asserts nothing.
#
# Usage: scripts/bench-scaling.sh [--quick] [--big] [--bin PATH] [--only REGEX] [--scale F]
#   --quick   n/4 and no strace (about a minute)     --big    also 8n
#   --bin     the rulelint binary (default target/release/rulelint)
#   --only    shapes whose name matches REGEX        --scale  multiply every default n by F
# Default run: about 5 minutes on 2 cores when nothing times out; each TIMEOUT adds 60 s (at
# bd1a6c4: `trace` on ipt-modules and `summarize`/`diff` on ipvs-reals, about 10 more minutes;
# both are linear since, and nothing timed out at 87c4bce).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../target/release/rulelint
scale=1
sizes=(1 2 4)
only=.
threads=1
while [ $# -gt 0 ]; do
  case $1 in
    --quick) scale=0.25; threads=0 ;;
    --big) sizes=(1 2 4 8) ;;
    --bin) bin=$2; shift ;;
    --only) only=$2; shift ;;
    --scale) scale=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
command -v strace >/dev/null || threads=0
bin=$(realpath "$bin")
work=$(mktemp -d /tmp/bench-scaling.XXXXXX)
trap 'rm -rf "$work"' EXIT
gen="python3 $here/bench-scaling-gen.py"

# The commands run on a file ($1); folder shapes use the dir_ ones.
commands=(check check-json check-sarif services summarize trace diff)
dir_commands=(check-json diff)
argv_of() { # command-name path: sets argv
  case $1 in
    check) argv=("$bin" check --no-config "$2") ;;
    check-json) argv=("$bin" check --no-config --format json "$2") ;;
    check-sarif) argv=("$bin" check --no-config --format sarif "$2") ;;
    services) argv=("$bin" services --format json "$2") ;;
    summarize) argv=("$bin" summarize "$2") ;;
    trace) argv=("$bin" trace --dst 10.96.0.1:80 "$2") ;;
    diff) if [ -d "$2" ]; then argv=("$bin" diff --format json "$2"); else argv=("$bin" diff --format json "$2" "$2"); fi ;;
  esac
}

printf '%-22s %-11s %10s %7s %9s %7s %6s %6s %7s %4s %s\n' \
  shape command bytes seconds peakKiB peak/B t-x m-x threads rc flags
$gen --list | while read -r shape base; do
  [[ $shape =~ $only ]] || continue
  n0=$(awk -v b="$base" -v f="$scale" 'BEGIN { n = int(b * f); print (n < 1 ? 1 : n) }')
  cmds=("${commands[@]}")
  [[ $shape == dir-* ]] && cmds=("${dir_commands[@]}")
  declare -A last_t=() last_m=()
  for k in "${sizes[@]}"; do
    n=$((n0 * k))
    input=$work/$shape-$n
    [[ $shape == dir-* ]] || input=$input.txt
    $gen "$shape" "$n" "$input"
    bytes=$(du -sb "$input" | cut -f1)
    for c in "${cmds[@]}"; do
      argv_of "$c" "$input"
      /usr/bin/time -o "$work/time" -f '%e %M' timeout 60 "${argv[@]}" >/dev/null 2>"$work/err"
      rc=$?
      read -r secs kib < <(tail -1 "$work/time")
      flags=""
      [ "$rc" = 124 ] && flags+=" TIMEOUT"
      { [ "$rc" -gt 128 ] || grep -q 'panicked' "$work/err"; } && flags+=" CRASH"
      prev_t=${last_t[$c]:-} prev_m=${last_m[$c]:-}
      read -r per tx mx more < <(awk -v s="$secs" -v k="$kib" -v b="$bytes" -v pt="$prev_t" -v pm="$prev_m" 'BEGIN {
        per = k * 1024 / (b > 0 ? b : 1); f = ""
        if (pt == "") { tx = "-"; mx = "-" } else {
          tx = sprintf("%.1f", s / (pt > 0.01 ? pt : 0.01)); mx = sprintf("%.1f", k / (pm > 1 ? pm : 1))
          if (tx + 0 > 3 && s >= 0.2) f = f "+SLOW"
          if (mx + 0 > 3 && k >= 65536) f = f "+MEM"
        }
        if (per > 30 && k >= 65536) f = f "+BIG"
        printf "%.1f %s %s %s\n", per, tx, mx, f }')
      flags+=${more//+/ }
      nthreads=-
      if [ "$threads" = 1 ] && [ "$k" = "${sizes[-1]}" ] && [ "$rc" != 124 ]; then
        timeout 120 strace -f -c -e trace=clone,clone3 -o "$work/strace" "${argv[@]}" >/dev/null 2>&1
        # columns: % time, seconds, usecs/call, calls, [errors,] syscall
        nthreads=$(awk '$NF ~ /^clone3?$/ {s += $4} END {print s + 0}' "$work/strace")
        [ "$nthreads" -gt 64 ] && flags+=" THREADS"
      fi
      last_t[$c]=$secs last_m[$c]=$kib
      printf '%-22s %-11s %10s %7s %9s %7s %6s %6s %7s %4s%s\n' \
        "$shape" "$c" "$bytes" "$secs" "$kib" "$per" "$tx" "$mx" "$nthreads" "$rc" "$flags"
    done
    rm -rf "$input"
  done
  unset last_t last_m
done
