#!/usr/bin/env python3
"""Derives the migration cases of corpus/diff/ (a cluster moving kube-proxy from iptables to
nftables mode): nodes of one dumpgen cluster, some printed in iptables mode (`dumpgen`), some in
nftables mode (`dumpgen --mode nftables`, the `nft list ruleset` text of the same node). Run
from the repository root after `cargo build --release -p rulelint-dumpgen`:

    python3 corpus/diff/derive_nft.py

The outputs are committed; this script documents how they were made."""

import re
import subprocess
from pathlib import Path

OUT = Path("corpus/diff")
SEED, NODES, RULES = "5", "4", "400"


def dumpgen(node, nft):
    mode = ["--mode", "nftables"] if nft else []
    text = subprocess.run(["target/release/dumpgen", *mode, "--rules", RULES, "--nodes", NODES,
                           "--node", str(node), "--seed", SEED],
                          check=True, capture_output=True, text=True).stdout
    return "# node: node-%02d\n" % node + text


def write(case, files, readme):
    d = OUT / case
    d.mkdir(parents=True, exist_ok=True)
    for old in d.glob("*.txt"):
        old.unlink()
    for name, text in files.items():
        (d / name).write_text(text)
    (d / "CASE.md").write_text(readme.strip() + "\n")


def endpoint_of_three(iptables):
    """The first endpoint (KUBE-SEP chain and DNAT destination) of a Service with three."""
    sep = next(m.group(1) for m in re.finditer(
        r"^-A KUBE-SVC-\w+ .*--probability 0\.33333333349 -j (KUBE-SEP-\w+)$", iptables, re.M))
    dest = re.search(r"^-A %s .*--to-destination (\S+)$" % sep, iptables, re.M).group(1)
    return sep, dest


def remove_endpoint_iptables(text, sep):
    """As kube-proxy writes the Service after the endpoint is gone: its KUBE-SEP chain and jump
    removed, the probability ladder 1/(n-i) rewritten."""
    lines = text.split("\n")
    jump = next(l for l in lines if l.startswith("-A KUBE-SVC-") and l.endswith("-j " + sep) and "--rcheck" not in l)
    svc = jump.split()[1]
    lines = [l for l in lines if sep not in l]
    ladder = [i for i, l in enumerate(lines) if l.startswith("-A " + svc + " ") and "-j KUBE-SEP-" in l and "--rcheck" not in l]
    n = len(ladder)
    for k, i in enumerate(ladder):
        l = re.sub(r" -m statistic --mode random --probability [0-9.]+", "", lines[i])
        if k < n - 1:
            l = l.replace(" -j KUBE-SEP-", " -m statistic --mode random --probability %.11f -j KUBE-SEP-" % (1.0 / (n - k)), 1)
        lines[i] = l
    return "\n".join(lines)


def remove_endpoint_nft(text, dest):
    """The same in nftables mode: the `numgen random mod N` map loses the entry (indexes
    renumbered, mod N-1) and the endpoint chain is deleted."""
    ip, port = dest.rsplit(":", 1)
    suffix = "__%s/%s" % (ip, port)
    lines = text.split("\n")
    hits = [i for i, l in enumerate(lines) if "numgen random mod" in l and suffix + "," in l + ","]
    assert len(hits) == 1, hits
    i = hits[0]
    head, entries = lines[i].split(" vmap { ", 1)
    targets = [e.split(" : ", 1)[1] for e in entries.rstrip(" }").split(", ")]
    gone = next(t for t in targets if t.endswith(suffix))
    kept = [t for t in targets if t != gone]
    head = re.sub(r"mod \d+", "mod %d" % len(kept), head)
    lines[i] = head + " vmap { " + ", ".join("%d : %s" % (k, t) for k, t in enumerate(kept)) + " }"
    chain = gone.split(" ", 1)[1]
    start = lines.index("\tchain %s {" % chain)
    end = lines.index("\t}", start)
    del lines[start:end + 1]
    if lines[start - 1] == "" and lines[start] == "":
        del lines[start]
    return "\n".join(lines)


IPT = [dumpgen(n, False) for n in range(4)]
NFT = [dumpgen(n, True) for n in range(4)]
SEP, DEST = endpoint_of_three(IPT[0])

write("migration-pair", {"node-00.txt": IPT[0], "node-01.txt": NFT[1]}, """
A cluster moving kube-proxy from iptables to nftables mode (dumpgen, seed 5): node-00 in
iptables mode, node-01 in nftables mode (`nft list ruleset`). They program the same Services and
endpoints; they differ only in their local endpoints (Local traffic policy). Compared at the
Service level (the chains of the two backends are not compared). Expected: exit 0, no drift.
""")

write("migration-stale-endpoint", {"node-00.txt": remove_endpoint_iptables(IPT[0], SEP),
                                   "node-01.txt": NFT[1]}, """
The migration pair after an endpoint (%s) was removed: node-00 (iptables) dropped it; node-01
(nftables) still sends a share of the Service's new connections to it through its `numgen random
mod N` map. Expected: exit 1, drift `endpoint` located in node-01.txt at the map's line; the
weights it changes are not repeated.
""" % DEST)

write("migration-group", {
    "node-00.txt": remove_endpoint_iptables(IPT[0], SEP),
    "node-01.txt": remove_endpoint_nft(NFT[1], DEST),
    "node-02.txt": IPT[2],
    "node-03.txt": remove_endpoint_nft(NFT[3], DEST),
}, """
Four nodes of a cluster in migration, two in iptables mode (node-00, node-02) and two in nftables
mode (node-01, node-03). kube-proxy removed the endpoint %s on three of them; node-02 (iptables)
still DNATs to it. Expected: exit 1, node-02 the only odd node, for `endpoint`.
""" % DEST)


def inline_masquerade(text):
    """The next nftables layout (kubernetes#135800): no `mark-for-masquerade` chain, the mark
    set inline where the jump was."""
    text = text.replace("\tchain mark-for-masquerade {\n\t\tmeta mark set meta mark | 0x00004000\n\t}\n\n", "")
    return text.replace("jump mark-for-masquerade", "meta mark set meta mark | 0x00004000")


write("nft-layout-upgrade", {"node-01.txt": NFT[1], "node-03.txt": inline_masquerade(NFT[3])}, """
Two nodes in nftables mode during a kube-proxy upgrade: node-01 in the `pre-dnat-filter` layout
(a `mark-for-masquerade` chain), node-03 in the `inline-masquerade` layout (the mark set inline).
Same Services and endpoints. The layout change is by design, not drift: chains are compared only
between nodes of one layout. Expected: exit 0, no drift.
""")
