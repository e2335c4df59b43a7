#!/usr/bin/env bash
# Checks dumpgen's nftables-mode output against the real `nft`.
#
# For each size (Service ports) and address family, in a private network
# namespace (`unshare --net`, so the host's ruleset is never touched):
#   1. `nft -c -f` accepts dumpgen's list form (what `nft list ruleset` prints);
#   2. `nft -f` loads dumpgen's transaction form (the `add ...` lines);
#   3. `nft list ruleset` equals dumpgen's list form, and `nft -j list ruleset`
#      equals dumpgen's JSON form (handles included).
# The one normalisation: set and map elements are compared in sorted order,
# because the kernel lists them in its own hash order. In the text form the
# elements are sorted within each `elements = { ... }` block while keeping
# nft's line wrapping (how many elements each line holds), so the wrapping
# is still compared. The JSON form must also be byte-identical to
# `json.dumps` of itself (nft's spacing).
#
# Needs root, nftables (`nft`) and python3.
#   scripts/check-dumpgen-nft.sh [SIZES...]     default: 50 5000
# Env: DUMPGEN (binary; default target/release/dumpgen, built if missing),
#      KEEP=DIR (keep the generated and listed files there).
set -euo pipefail

cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(50 5000)
dumpgen=${DUMPGEN:-target/release/dumpgen}
if [ ! -x "$dumpgen" ]; then
    cargo build --release -q -p rulelint-dumpgen --bin dumpgen
fi
command -v nft >/dev/null || { echo "check-dumpgen-nft: nft not installed" >&2; exit 2; }
nft_version=$(nft --version)

work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

normalise=$work/normalise.py
cat >"$normalise" <<'PY'
import json, re, sys

def text(path):
    """Sorts the elements of each `elements = { ... }` block, keeping how many
    elements each line holds."""
    lines = open(path).read().split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.lstrip("\t").startswith("elements = { "):
            out.append(line)
            i += 1
            continue
        block = [line]
        while not block[-1].endswith(" }"):
            i += 1
            block.append(lines[i])
        i += 1
        head = block[0][: block[0].index("{ ") + 2]
        cont = re.match(r"^\s*", block[1]).group(0) if len(block) > 1 else ""
        rows = []
        for n, row in enumerate(block):
            row = row[len(head):] if n == 0 else row[len(cont):]
            row = row.rstrip(",")
            if row.endswith(" }"):
                row = row[:-2]
            rows.append(row.split(", "))
        items = sorted(x for row in rows for x in row)
        k = 0
        for n, row in enumerate(rows):
            part = ", ".join(items[k : k + len(row)])
            k += len(row)
            last = n == len(rows) - 1
            out.append((head if n == 0 else cont) + part + (" }" if last else ","))
    sys.stdout.write("\n".join(out))

def js(path):
    raw = open(path).read()
    doc = json.loads(raw)
    if raw != json.dumps(doc) + "\n":
        sys.exit(f"{path}: not in nft's JSON spacing")
    for o in doc["nftables"]:
        for kind in ("set", "map"):
            if kind in o and "elem" in o[kind]:
                o[kind]["elem"].sort(key=lambda e: json.dumps(e, sort_keys=True))
    print(json.dumps(doc, indent=1))

{"text": text, "json": js}[sys.argv[1]](sys.argv[2])
PY

status=0
for family in ipv4 ipv6; do
    flags=()
    [ "$family" = ipv6 ] && flags=(--ipv6)
    for n in "${sizes[@]}"; do
        base=$work/$family-$n
        "$dumpgen" --mode nftables --services "$n" "${flags[@]}" --form list >"$base.gen.txt"
        "$dumpgen" --mode nftables --services "$n" "${flags[@]}" --form json >"$base.gen.json"
        "$dumpgen" --mode nftables --services "$n" "${flags[@]}" --form transaction >"$base.gen.nft"
        start=$(date +%s.%N)
        # Two namespaces: a check (`-c`) still advances the namespace's table
        # handle counter, and the JSON comparison includes the table handle.
        unshare --net nft -c -f "$base.gen.txt" ||
            { echo "FAIL $family $n: nft -c -f rejects the list form" >&2; status=1; continue; }
        unshare --net sh -c "
            nft -f '$base.gen.nft' || exit 11
            nft list ruleset >'$base.nft.txt' || exit 12
            nft -j list ruleset >'$base.nft.json' || exit 13
        " || { echo "FAIL $family $n: nft exited $?" >&2; status=1; continue; }
        took=$(echo "$(date +%s.%N) - $start" | bc)
        python3 "$normalise" text "$base.gen.txt" >"$base.gen.txt.norm"
        python3 "$normalise" text "$base.nft.txt" >"$base.nft.txt.norm"
        python3 "$normalise" json "$base.gen.json" >"$base.gen.json.norm"
        python3 "$normalise" json "$base.nft.json" >"$base.nft.json.norm"
        verdict=ok
        if ! diff -u "$base.nft.txt.norm" "$base.gen.txt.norm" >"$base.txt.diff"; then
            verdict=FAIL
            echo "list form differs ($family, $n Services): $base.txt.diff" >&2
            head -40 "$base.txt.diff" >&2
        fi
        if ! diff -u "$base.nft.json.norm" "$base.gen.json.norm" >"$base.json.diff"; then
            verdict=FAIL
            echo "JSON form differs ($family, $n Services): $base.json.diff" >&2
            head -40 "$base.json.diff" >&2
        fi
        [ "$verdict" = ok ] || status=1
        printf '%-4s %s %6d Services: %8d B list, %9d B json, %8d B transaction, %5d rules, nft -c/-f/list/-j %.2fs\n' \
            "$verdict" "$family" "$n" "$(wc -c <"$base.gen.txt")" "$(wc -c <"$base.gen.json")" \
            "$(wc -c <"$base.gen.nft")" "$(grep -c '^add rule' "$base.gen.nft")" "$took"
    done
done
echo "($nft_version)"
exit $status
