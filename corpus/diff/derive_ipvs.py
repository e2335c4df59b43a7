#!/usr/bin/env python3
"""Derives the IPVS-mode node cases of corpus/diff/ from corpus/ipvs/healthy-node.txt (node-a of
a cluster in kube-proxy's IPVS mode, made with the real iptables, ipset and ip tools; see
corpus/ipvs/README.md). Run from the repository root:

    python3 corpus/diff/derive_ipvs.py

Each edit below is what a real node differs by: its own address and pod network, the hairpin
entries of its own endpoints in KUBE-LOOP-BACK, and the drift of each case. The outputs are
committed; this script documents how they were made. (ipvs-vs-iptables/ is made by
make-ipvs-twin.sh.)"""

from pathlib import Path

BASE = Path("corpus/ipvs/healthy-node.txt").read_text()
OUT = Path("corpus/diff")


def node_a():
    return "# node: node-a\n" + BASE


def node_b(name="node-b"):
    """Another node of the cluster: 192.168.56.12, pods in 10.244.2.0/24."""
    text = BASE.replace("192.168.56.11", "192.168.56.12").replace(
        "inet 10.244.1.1/24", "inet 10.244.2.1/24"
    )
    loop_back_a = (
        "add KUBE-LOOP-BACK 10.244.1.5,udp:53,10.244.1.5\n"
        "add KUBE-LOOP-BACK 10.244.1.5,tcp:53,10.244.1.5\n"
        "add KUBE-LOOP-BACK 10.244.1.8,tcp:8080,10.244.1.8\n"
        "add KUBE-LOOP-BACK 10.244.1.5,tcp:9153,10.244.1.5\n"
    )
    loop_back_b = (
        "add KUBE-LOOP-BACK 10.244.2.3,tcp:9153,10.244.2.3\n"
        "add KUBE-LOOP-BACK 10.244.2.12,tcp:8443,10.244.2.12\n"
        "add KUBE-LOOP-BACK 10.244.2.3,udp:53,10.244.2.3\n"
        "add KUBE-LOOP-BACK 10.244.2.9,tcp:8080,10.244.2.9\n"
        "add KUBE-LOOP-BACK 10.244.2.3,tcp:53,10.244.2.3\n"
    )
    assert loop_back_a in text
    return f"# node: {name}\n" + text.replace(loop_back_a, loop_back_b)


def real_server(rs, weight=1):
    return "  -> %-28s %-7s %-6d %-10u %-10u\n" % (rs, "Masq", weight, 0, 0)


def add_real_server(text, virtual, rs):
    """A real server after the last one of a virtual server."""
    head = virtual + " rr\n"
    at = text.index(head) + len(head)
    while text.startswith("  -> ", at):
        at = text.index("\n", at) + 1
    return text[:at] + real_server(rs) + text[at:]


def write(case, nodes):
    folder = OUT / case
    folder.mkdir(exist_ok=True)
    for name, text in nodes.items():
        (folder / f"{name}.txt").write_text(text)


# The pod 10.244.3.9 of the web Service is gone: node-a dropped it, node-b still balances to it
# (a stale real server in the cluster-IP and the node-port virtual servers).
b = node_b()
for vs in ("TCP  10.96.120.7:80", "TCP  192.168.56.12:30080"):
    b = add_real_server(b, vs, "10.244.3.9:8080")
write("ipvs-stale-real-server", {"node-a": node_a(), "node-b": b})

# Four nodes: node-c gives a real server weight 0 (graceful termination left over, or set by
# hand), node-d lost the virtual server of the metrics port 10.96.0.10:9153.
c = node_b("node-c").replace("192.168.56.12", "192.168.56.13")
weighted = real_server("10.244.2.9:8080")
assert c.count(weighted) == 2
c = c.replace(weighted, real_server("10.244.2.9:8080", 0))
d = node_b("node-d").replace("192.168.56.12", "192.168.56.14")
metrics = "TCP  10.96.0.10:9153 rr\n" + real_server("10.244.1.5:9153") + real_server("10.244.2.3:9153")
assert metrics in d
d = d.replace(metrics, "")
write("ipvs-group", {"node-a": node_a(), "node-b": node_b(), "node-c": c, "node-d": d})
