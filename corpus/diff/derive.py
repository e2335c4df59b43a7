#!/usr/bin/env python3
"""Derives the dumps of corpus/diff/ from corpus/kube/healthy/modern-1.29-full.txt (node-a of a
cluster) and from dumpgen output (the group). Run from the repository root:

    python3 corpus/diff/derive.py

Each edit below is what a real node differs by: counters and timestamps, kube-proxy's map order
in KUBE-SERVICES, the node's pod CIDR and IP, its local endpoints, and the drift of each case.
The outputs are committed; this script documents how they were made."""

import random
import re
import subprocess
from pathlib import Path

BASE = Path("corpus/kube/healthy/modern-1.29-full.txt").read_text()
OUT = Path("corpus/diff")


def node_a(text):
    """Node-a: the base dump, plus a host rule naming the node's own IP (kubelet's port)."""
    text = re.sub(r"^# case:.*\n", "# node: node-a\n", text, flags=re.M)
    return text.replace(
        "-A INPUT -j KUBE-FIREWALL\n",
        "-A INPUT -j KUBE-FIREWALL\n-A INPUT -d 192.168.10.11/32 -p tcp -m tcp --dport 10250 -j ACCEPT\n",
    )


def resample(text, seed):
    """Other counters and timestamps, as another node (or a later iptables-save) prints them."""
    rng = random.Random(seed)
    text = re.sub(r"\[\d+:\d+\]", lambda m: m.group(0) if m.group(0) == "[0:0]"
                  else f"[{rng.randrange(1, 10**7)}:{rng.randrange(1, 10**10)}]", text)
    return text.replace("Tue Feb 20 14:03:51 2024", "Tue Feb 20 14:05:%02d 2024" % rng.randrange(60))


def shuffle_dispatch(text, seed):
    """kube-proxy writes KUBE-SERVICES in map order: shuffle all but the final NodePort rule."""
    lines = text.split("\n")
    idx = [i for i, l in enumerate(lines)
           if l.startswith("-A KUBE-SERVICES ") and "cluster IP" in l or "loadbalancer IP\" -m" in l and l.startswith("-A KUBE-SERVICES ")
           or l.startswith("-A KUBE-SERVICES ") and "external IP" in l]
    picked = [lines[i] for i in idx]
    random.Random(seed).shuffle(picked)
    for i, l in zip(idx, picked):
        lines[i] = l
    return "\n".join(lines)


def node_b(text):
    """Node-b of the same cluster: pod CIDR 10.244.2.0/24, IP 192.168.10.12, and the local
    endpoint of web/storefront (Local traffic policy) is its own pod 10.244.2.22."""
    text = text.replace("# node: node-a", "# node: node-b")
    text = text.replace("-A FLANNEL-POSTRTG -s 10.244.1.0/24", "-A FLANNEL-POSTRTG -s 10.244.2.0/24")
    text = text.replace("-d 10.244.1.0/24 -m comment", "-d 10.244.2.0/24 -m comment")
    text = text.replace("-d 192.168.10.11/32 -p tcp", "-d 192.168.10.12/32 -p tcp")
    text = text.replace(
        '-A KUBE-SVL-PTKXAPMHT2W6EICL -m comment --comment "web/storefront:https -> 10.244.1.21:8443" -j KUBE-SEP-YZN5UGLJSQNFRMRX',
        '-A KUBE-SVL-PTKXAPMHT2W6EICL -m comment --comment "web/storefront:https -> 10.244.2.22:8443" -j KUBE-SEP-5WBODIQWRSCW4BSA')
    return shuffle_dispatch(resample(text, 2), 2)


def drop_lines(text, *needles):
    return "\n".join(l for l in text.split("\n") if not any(n in l for n in needles))


def write(case, files, readme):
    d = OUT / case
    d.mkdir(parents=True, exist_ok=True)
    for old in d.glob("*.txt"):
        old.unlink()
    for name, text in files.items():
        (d / name).write_text(text)
    (d / "CASE.md").write_text(readme.strip() + "\n")


A = node_a(BASE)
B = node_b(A)

write("healthy-pair", {"node-a.txt": A, "node-b.txt": B}, """
Two healthy nodes of one cluster. They differ only as healthy nodes do: counters, timestamps,
KUBE-SERVICES order, the Flannel pod CIDR and the node IP in a host rule (node addresses), and
the local endpoint of the Local-policy Service web/storefront:https. Expected: exit 0, no drift.
""")

same = shuffle_dispatch(resample(A, 7), 7)
# Chains declared in another order too.
decl = [l for l in same.split("\n") if l.startswith(":KUBE-SEP-")]
same = same.replace("\n".join(decl), "\n".join(reversed(decl)))
write("same-node-reordered", {"node-a.txt": A, "node-a-later.txt": same.replace("# node: node-a", "# node: node-a-later")}, """
One node saved twice: other counters and timestamps, KUBE-SERVICES in another order, KUBE-SEP
chains declared in reverse. Expected: exit 0, no difference at all.
""")

missing = drop_lines(B, "FJMMSE6RR33B432U", "TH3OHNB6GTFGEQZ2")
write("missing-service", {"node-a.txt": A, "node-b.txt": missing}, """
Node-b lacks every rule of shop/reports:http (cluster IP, external IP, its KUBE-SVC, KUBE-EXT and
KUBE-SEP chains): the Service is missing there. Expected: exit 1, drift `service`.
""")

# Node-a is current: shop/cart:http lost its pod 10.244.3.9; node-b still DNATs to it.
cart_fixed = drop_lines(A, "KUBE-SEP-4CTVESJT6OEYUEID").replace(
    '"shop/cart:http -> 10.244.1.12:8080" -m statistic --mode random --probability 0.33333333349',
    '"shop/cart:http -> 10.244.1.12:8080" -m statistic --mode random --probability 0.50000000000').replace(
    '"shop/cart:http -> 10.244.2.7:8080" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-D6PPDDRHTZSFOGTV',
    '"shop/cart:http -> 10.244.2.7:8080" -j KUBE-SEP-D6PPDDRHTZSFOGTV')
write("stale-endpoint", {"node-a.txt": cart_fixed, "node-b.txt": B}, """
The pod 10.244.3.9 of shop/cart:http is gone: node-a dropped it, node-b still DNATs to it (a
stale KUBE-SEP chain and jump) and node-a has no endpoint at that IP at all. Expected: exit 1,
drift `endpoint` (and the rule changes of KUBE-SVC-I5LIAMPLWKMBJ54B).
""")

skewed = B.replace(
    '"shop/cart:http -> 10.244.1.12:8080" -m statistic --mode random --probability 0.33333333349',
    '"shop/cart:http -> 10.244.1.12:8080" -m statistic --mode random --probability 0.50000000000')
write("changed-probability", {"node-a.txt": A, "node-b.txt": skewed}, """
Same endpoints, other weights: node-b's first shop/cart:http rule has probability 0.5 instead of
1/3, so 10.244.1.12 gets 50% of new connections and the others 25%. Expected: exit 1, drift
`weight` for the three endpoints.
""")

no_hook = drop_lines(B, '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES')
write("missing-hook-jump", {"node-a.txt": A, "node-b.txt": no_hook}, """
Node-b's nat PREROUTING no longer jumps to KUBE-SERVICES: traffic from pods and from outside
bypasses every Service. Expected: exit 1, drift `hook-jump`.
""")

# Four nodes: shop/legacy-api:http was deleted; node-a still rejects it for lack of endpoints.
deleted = lambda text: drop_lines(text, "shop/legacy-api:http")
def node_like_b(name, cidr, ip, seed):
    """Another node shaped like node-b: its own pod CIDR and node IP (no local endpoint changes)."""
    text = B.replace("# node: node-b", "# node: " + name)
    text = text.replace("-s 10.244.2.0/24", "-s " + cidr).replace("-d 10.244.2.0/24", "-d " + cidr)
    text = text.replace("-d 192.168.10.12/32 -p tcp", "-d %s/32 -p tcp" % ip)
    return shuffle_dispatch(resample(text, seed), seed)


C = node_like_b("node-c", "10.244.3.0/24", "192.168.10.13", 3)
D = node_like_b("node-d", "10.244.4.0/24", "192.168.10.14", 4)
# node-a also has a rule added by hand in filter FORWARD: its own change, shown at its own line.
A_hand = A.replace('-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD\n',
                   '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD\n'
                   '-A FORWARD -s 10.99.0.0/16 -j ACCEPT\n')
write("group-rejected-service", {"node-a.txt": A_hand, "node-b.txt": deleted(B), "node-c.txt": deleted(C),
                                 "node-d.txt": deleted(D)}, """
Four nodes; the Service shop/legacy-api:http (no endpoints) was deleted, and node-a still rejects
its traffic: kube-proxy's REJECT rules in filter KUBE-SERVICES and KUBE-EXTERNAL-SERVICES. Node-a
also has a rule added by hand in filter FORWARD. The report names node-a, says the Service is
rejected there (it has no chains on any node), and every location points into node-a's file.
Expected: exit 1, drift `service` and `chain-rules`, node-a the only odd node.
""")

# The group: 12 nodes of a dumpgen cluster. On the eleven current nodes kube-proxy removed one
# endpoint of a Service; node-07 still has it.
def dumpgen(node):
    return subprocess.run(["target/release/dumpgen", "--rules", "400", "--nodes", "12", "--node", str(node), "--seed", "5"],
                          check=True, capture_output=True, text=True).stdout


def remove_endpoint(text, sep):
    """Removes one endpoint of a KUBE-SVC chain and re-ladders the probabilities the way
    kube-proxy writes them (1/(n-i), ten decimals)."""
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


group = {}
first = dumpgen(0)
svc_with_three = None
for line in first.split("\n"):
    m = re.match(r"-A (KUBE-SVC-\w+) .*--probability 0\.33333333349 -j (KUBE-SEP-\w+)", line)
    if m:
        svc_with_three = m.group(2)
        break
for node in range(12):
    text = "# node: node-%02d\n" % node + dumpgen(node)
    if node != 7:
        text = remove_endpoint(text, svc_with_three)
    group["node-%02d.txt" % node] = text
write("group-odd-node", group, """
Twelve nodes of one cluster (dumpgen, seed 5). kube-proxy removed one endpoint of a Service on
eleven of them; node-07 still DNATs to it. Node-local differences (local endpoints, KUBE-SERVICES
order, counters) are everywhere. Expected: exit 1, node-07 the only odd node, for `endpoint`.
""")
