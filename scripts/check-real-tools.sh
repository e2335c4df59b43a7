#!/usr/bin/env bash
# The checks against the real tools, in private network namespaces (the host's ruleset is never
# touched): dumpgen's nftables and IPVS nodes are what `nft`, `iptables-save` and `ipset` print
# (check-dumpgen-nft.sh, check-dumpgen-ipvs.sh), and `rulelint trace` takes the path the kernel
# takes (check-trace-kernel.sh). Installs iptables, nftables, ipset and iproute2 when missing.
# Needs root (or sudo) and network namespaces; says "skipped" and exits 0 where they are not
# allowed. About 9 minutes on 2 cores, most of it `nft` loading 5,000-Service rulesets.
# Usage: bash scripts/check-real-tools.sh   (.ci/run runs it)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v iptables-restore >/dev/null || missing+=(iptables)
command -v nft >/dev/null || missing+=(nftables)
command -v ipset >/dev/null || missing+=(ipset)
command -v ip >/dev/null || missing+=(iproute2)
command -v python3 >/dev/null || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi
if [ "$(id -u)" != 0 ] || ! unshare --net true 2>/dev/null; then
  echo "check-real-tools: skipped: needs root and network namespaces (unshare --net)"
  exit 0
fi

cargo build --release -q --bin rulelint -p rulelint
cargo build --release -q -p rulelint-dumpgen --bin dumpgen

step "dumpgen's nftables-mode nodes against the real nft"
bash scripts/check-dumpgen-nft.sh
step "dumpgen's IPVS-mode nodes against the real iptables-save and ipset"
bash scripts/check-dumpgen-ipvs.sh
step "trace against the kernel"
bash scripts/check-trace-kernel.sh
