#!/usr/bin/env python3
"""Input shapes for scripts/bench-scaling.sh: `bench-scaling-gen.py SHAPE N OUT` writes shape SHAPE
at count N to OUT (a file, or a folder for the `dir-*` shapes). `bench-scaling-gen.py --list`
prints every shape with its default N. Deterministic: no randomness but a fixed seed."""

import json
import os
import random
import sys

SHAPES = {}


def shape(default_n):
    def register(fn):
        SHAPES[fn.__name__.replace("_", "-")] = (default_n, fn)
        return fn

    return register


def ip(i, base=10):
    return f"{base}.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"


IPT_HEAD = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"


# -- many sections ------------------------------------------------------------------------------
@shape(4000)
def sections_mixed(n, w):
    for i in range(n):
        k = i % 6
        if k == 0:
            w(f"table ip t{i} {{\n\tchain c {{\n\t\ttype filter hook input priority 0; policy accept;\n\t\tip saddr {ip(i)} drop\n\t}}\n}}\n")
        elif k == 1:
            w(f"{IPT_HEAD}-A INPUT -s {ip(i)}/32 -j DROP\nCOMMIT\n")
        elif k == 2:
            doc = {"nftables": [{"metainfo": {"json_schema_version": 1}},
                                {"table": {"family": "ip", "name": f"j{i}", "handle": 1}},
                                {"chain": {"family": "ip", "table": f"j{i}", "name": "c", "handle": 2}}]}
            w(json.dumps(doc) + "\n")
        elif k == 3:
            w(f"add table ip a{i}\nadd chain ip a{i} c\nadd rule ip a{i} c ip daddr {ip(i)} accept\n")
        elif k == 4:
            w("IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n"
              "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n"
              f"TCP  {ip(i, 11)}:80 rr\n  -> {ip(i, 12)}:8080              Masq    1      0          0\n")
        else:
            w(f"create S{i} hash:ip family inet hashsize 1024 maxelem 65536\nadd S{i} {ip(i)}\n")


@shape(4000)
def sections_nft_ipt(n, w):
    for i in range(n):
        w(f"table ip t{i} {{\n\tchain c {{\n\t\tip saddr {ip(i)} drop\n\t}}\n}}\n")
        w(f"{IPT_HEAD}-A INPUT -s {ip(i)}/32 -j DROP\nCOMMIT\n")


@shape(20000)
def nft_empty_tables(n, w):
    for i in range(n):
        w(f"table ip t{i} {{\n}}\n")


@shape(20000)
def nft_chains(n, w):
    w("table ip t {\n")
    for i in range(n):
        w(f"\tchain c{i} {{\n\t\tip saddr {ip(i)} counter drop\n\t}}\n")
    w("}\n")


@shape(20000)
def nft_empty_chains(n, w):
    w("table ip t {\n")
    for i in range(n):
        w(f"\tchain c{i} {{\n\t}}\n")
    w("}\n")


@shape(20000)
def nft_sets(n, w):
    w("table ip t {\n")
    for i in range(n):
        w(f"\tset s{i} {{\n\t\ttype ipv4_addr\n\t\telements = {{ {ip(i)} }}\n\t}}\n")
    w("\tchain c {\n\t\ttype filter hook input priority 0; policy accept;\n\t\tip saddr @s0 drop\n\t}\n}\n")


@shape(50000)
def nft_elements(n, w):
    w("table ip t {\n\tset s {\n\t\ttype ipv4_addr\n\t\telements = { ")
    w(",\n\t\t\t     ".join(ip(i) for i in range(n)))
    w(" }\n\t}\n\tchain c {\n\t\ttype filter hook input priority 0; policy accept;\n\t\tip saddr @s drop\n\t}\n}\n")


@shape(50000)
def nft_elements_oneline(n, w):
    w("table ip t {\n\tset s {\n\t\ttype ipv4_addr\n\t\telements = { ")
    w(", ".join(ip(i) for i in range(n)))
    w(" }\n\t}\n\tchain c {\n\t\ttype filter hook input priority 0; policy accept;\n\t\tip saddr @s drop\n\t}\n}\n")


@shape(50000)
def nft_intervals(n, w):
    w("table ip t {\n\tset s {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { ")
    w(",\n\t\t\t     ".join(f"{ip(i * 4)}-{ip(i * 4 + 2)}" if i % 2 else f"{ip(i * 4)}/31" for i in range(n)))
    w(" }\n\t}\n\tchain c {\n\t\ttype filter hook input priority 0; policy accept;\n\t\tip saddr @s drop\n\t}\n}\n")


@shape(50000)
def nft_concat(n, w):
    w("table ip t {\n\tset s {\n\t\ttype ipv4_addr . inet_proto . inet_service\n\t\telements = { ")
    w(",\n\t\t\t     ".join(f"{ip(i)} . tcp . {i % 65536}" for i in range(n)))
    w(" }\n\t}\n\tchain c {\n\t\ttype filter hook input priority 0; policy accept;\n"
      "\t\tip daddr . meta l4proto . th dport @s drop\n\t}\n}\n")


@shape(20000)
def nft_vmap(n, w):
    w("table ip kube-proxy {\n\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n\t\telements = { ")
    w(",\n\t\t\t     ".join(f"{ip(i)} . tcp . 80 : goto service-{i}" for i in range(n)))
    w(" }\n\t}\n\tchain services {\n\t\tip daddr . meta l4proto . th dport vmap @service-ips\n\t}\n"
      "\tchain nat-prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\tjump services\n\t}\n")
    for i in range(n):
        w(f"\tchain service-{i} {{\n\t\tdnat to {ip(i, 11)}:8080\n\t}}\n")
    w("}\n")


@shape(20000)
def nft_numgen_ladder(n, w):
    w("table ip kube-proxy {\n\tchain nat-prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n"
      "\t\tip daddr 10.96.0.1 tcp dport 80 goto service-X\n\t}\n\tchain service-X {\n\t\tnumgen random mod ")
    w(f"{n} vmap {{ ")
    w(", ".join(f"{i} : goto endpoint-{i}" for i in range(n)))
    w(" }\n\t}\n")
    for i in range(n):
        w(f"\tchain endpoint-{i} {{\n\t\tdnat to {ip(i, 11)}:8080\n\t}}\n")
    w("}\n")


def json_doc(items):
    return json.dumps({"nftables": [{"metainfo": {"json_schema_version": 1}}] + items})


@shape(20000)
def json_chains(n, w):
    items = [{"table": {"family": "ip", "name": "t", "handle": 1}}]
    for i in range(n):
        items.append({"chain": {"family": "ip", "table": "t", "name": f"c{i}", "handle": i + 2}})
        items.append({"rule": {"family": "ip", "table": "t", "chain": f"c{i}", "handle": n + i + 2,
                               "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}},
                                                   "right": ip(i)}}, {"drop": None}]}})
    w(json_doc(items))


@shape(50000)
def json_elements(n, w):
    items = [{"table": {"family": "ip", "name": "t", "handle": 1}},
             {"set": {"family": "ip", "name": "s", "table": "t", "type": "ipv4_addr", "handle": 2,
                      "elem": [ip(i) for i in range(n)]}}]
    w(json_doc(items))


@shape(50000)
def json_unread_objects(n, w):
    items = [{"table": {"family": "ip", "name": "t", "handle": 1}}] + [{"bogus": i} for i in range(n)]
    w(json_doc(items))


# -- deep nesting -------------------------------------------------------------------------------
@shape(50000)
def nft_braces_deep(n, w):
    w("table ip t {\n\tchain c {\n\t\tip saddr " + "{ " * n + "10.0.0.1" + " }" * n + " drop\n\t}\n}\n")


@shape(50000)
def nft_open_braces(n, w):
    w("table ip t {\n" + "{\n" * n)


@shape(50000)
def json_deep_arrays(n, w):
    w('{"nftables": [{"metainfo": {"json_schema_version": 1}}, {"rule": {"family": "ip", "table": "t", '
      '"chain": "c", "expr": ' + "[" * n + "]" * n + "}}]}")


@shape(50000)
def json_deep_objects(n, w):
    w('{"nftables": [{"metainfo": {"json_schema_version": 1}}, {"rule": {"family": "ip", "table": "t", '
      '"chain": "c", "expr": ' + '{"a":' * n + "1" + "}" * n + "}}]}")


@shape(20000)
def nft_jump_chain(n, w):
    w("table ip t {\n\tchain input {\n\t\ttype filter hook input priority 0; policy accept;\n\t\tjump c0\n\t}\n")
    for i in range(n):
        nxt = f"jump c{i + 1}" if i + 1 < n else "drop"
        w(f"\tchain c{i} {{\n\t\tip saddr {ip(i)} {nxt}\n\t\t{nxt}\n\t}}\n")
    w("}\n")


@shape(20000)
def nft_jump_cycle(n, w):
    w("table ip t {\n\tchain input {\n\t\ttype filter hook input priority 0; policy accept;\n\t\tjump c0\n\t}\n")
    for i in range(n):
        w(f"\tchain c{i} {{\n\t\tip daddr {ip(i)} goto c{(i + 1) % n}\n\t\tjump c{(i + 1) % n}\n\t\treturn\n\t}}\n")
    w("}\n")


@shape(20000)
def ipt_jump_chain(n, w):
    w("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n")
    for i in range(n):
        w(f":C{i} - [0:0]\n")
    w("-A INPUT -j C0\n")
    for i in range(n):
        nxt = f"C{i + 1}" if i + 1 < n else "DROP"
        w(f"-A C{i} -s {ip(i)}/32 -j {nxt}\n-A C{i} -j {nxt}\n")
    w("COMMIT\n")


@shape(20000)
def ipt_jump_cycle(n, w):
    w("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n")
    for i in range(n):
        w(f":C{i} - [0:0]\n")
    w("-A INPUT -j C0\n")
    for i in range(n):
        w(f"-A C{i} -d {ip(i)}/32 -g C{(i + 1) % n}\n-A C{i} -j C{(i + 1) % n}\n-A C{i} -j RETURN\n")
    w("COMMIT\n")


@shape(20000)
def ipt_kube_chain(n, w):
    """kube-proxy's nat chains, each Service chain jumping to the next one's (a deep walk with the
    Kubernetes model's names)."""
    w("*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n")
    for i in range(n):
        w(f":KUBE-SVC-{i:016X} - [0:0]\n")
    w("-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n")
    w(f"-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment \"ns/s0:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-{0:016X}\n")
    for i in range(n):
        nxt = f"KUBE-SVC-{i + 1:016X}" if i + 1 < n else "DNAT --to-destination 10.244.0.1:80"
        w(f"-A KUBE-SVC-{i:016X} -m comment --comment \"ns/s{i}:http\" -j {nxt}\n")
    w("COMMIT\n")


# -- long lines ---------------------------------------------------------------------------------
@shape(2_000_000)
def one_long_line(n, w):
    w("x" * n)


@shape(2_000_000)
def ipt_long_comment(n, w):
    w(f"{IPT_HEAD}-A INPUT -m comment --comment \"{'c' * n}\" -j DROP\nCOMMIT\n")


@shape(100000)
def ipt_rule_tokens(n, w):
    w(IPT_HEAD + "-A INPUT" + " -s 10.0.0.1" * n + " -j DROP\nCOMMIT\n")


@shape(50000)
def ipt_modules(n, w):
    w(IPT_HEAD + "-A INPUT" + "".join(f" -m m{i % 97} --o{i} v" for i in range(n)) + " -j DROP\nCOMMIT\n")


@shape(100000)
def nft_rule_tokens(n, w):
    w("table ip t {\n\tchain c {\n\t\ttype filter hook input priority 0; policy accept;\n\t\t"
      + "ip saddr 10.0.0.1 " * n + "drop\n\t}\n}\n")


@shape(20000)
def unclosed_quotes(n, w):
    w(IPT_HEAD)
    for i in range(n):
        w(f"-A INPUT -m comment --comment \"open {i} -j DROP\n")
    w("COMMIT\n")


@shape(20000)
def nft_unclosed_strings(n, w):
    w("table ip t {\n\tchain c {\n")
    for i in range(n):
        w(f"\t\tip saddr {ip(i)} comment \"open {i} drop\n")
    w("\t}\n}\n")


@shape(100000)
def ipt_stray_lines(n, w):
    w(IPT_HEAD + "x\n" * n + "COMMIT\n")


@shape(100000)
def nft_stray_lines(n, w):
    w("table ip t {\n" + "x\n" * n + "}\n")


@shape(200000)
def hashes(n, w):
    w("#" * n + "\n" + "# " * n + "\n" + "#\n" * n)


# -- iptables -----------------------------------------------------------------------------------
@shape(20000)
def ipt_tables(n, w):
    for i in range(n):
        w(f"*{['filter', 'nat', 'mangle', 'raw'][i % 4]}\n:INPUT ACCEPT [0:0]\n-A INPUT -s {ip(i)}/32 -j DROP\nCOMMIT\n")


@shape(100000)
def ipt_empty_chains(n, w):
    w(IPT_HEAD)
    for i in range(n):
        w(f":C{i} - [0:0]\n")
    w("COMMIT\n")


def kube_ladder(w, svc, cluster_ip, endpoints, ep_base):
    name = f"KUBE-SVC-{svc:016X}"
    w(f"-A KUBE-SERVICES -d {cluster_ip}/32 -p tcp -m comment --comment \"ns/s{svc}:http cluster IP\" -m tcp --dport 80 -j {name}\n")
    for e in range(endpoints):
        left = endpoints - e
        sep = f"KUBE-SEP-{ep_base + e:016X}"
        prob = "" if left == 1 else f" -m statistic --mode random --probability {1 / left:.11f}"
        w(f"-A {name} -m comment --comment \"ns/s{svc}:http -> {ip(ep_base + e, 11)}:8080\"{prob} -j {sep}\n")


def kube_seps(w, svc, endpoints, ep_base):
    for e in range(endpoints):
        sep = f"KUBE-SEP-{ep_base + e:016X}"
        w(f"-A {sep} -s {ip(ep_base + e, 11)}/32 -m comment --comment \"ns/s{svc}:http\" -j KUBE-MARK-MASQ\n")
        w(f"-A {sep} -p tcp -m comment --comment \"ns/s{svc}:http\" -m tcp -j DNAT --to-destination {ip(ep_base + e, 11)}:8080\n")


NAT_HEAD = ("*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n"
            ":KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n"
            "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
            "-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
            "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n")


@shape(10000)
def ipt_prob_ladder(n, w):
    w(NAT_HEAD + f":KUBE-SVC-{0:016X} - [0:0]\n")
    for e in range(n):
        w(f":KUBE-SEP-{e:016X} - [0:0]\n")
    kube_ladder(w, 0, "10.96.0.1", n, 0)
    kube_seps(w, 0, n, 0)
    w("COMMIT\n")


@shape(10000)
def ipt_same_cluster_ip(n, w):
    w(NAT_HEAD)
    for s in range(n):
        w(f":KUBE-SVC-{s:016X} - [0:0]\n:KUBE-SEP-{s:016X} - [0:0]\n")
    for s in range(n):
        kube_ladder(w, s, "10.96.0.1", 1, s)
    for s in range(n):
        kube_seps(w, s, 1, s)
    w("COMMIT\n")


@shape(5000)
def ipt_services(n, w):
    """kube-proxy-like Services with two endpoints each (the normal shape, as a reference)."""
    w(NAT_HEAD)
    for s in range(n):
        w(f":KUBE-SVC-{s:016X} - [0:0]\n:KUBE-SEP-{2 * s:016X} - [0:0]\n:KUBE-SEP-{2 * s + 1:016X} - [0:0]\n")
    for s in range(n):
        kube_ladder(w, s, ip(s, 100), 2, 2 * s)
    for s in range(n):
        kube_seps(w, s, 2, 2 * s)
    w("COMMIT\n")


# -- IPVS / ipset -------------------------------------------------------------------------------
IPVS_HEAD = ("IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n"
             "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n")


@shape(50000)
def ipvs_services(n, w):
    w(IPVS_HEAD)
    for i in range(n):
        w(f"TCP  {ip(i, 100)}:80 rr\n  -> {ip(i, 11)}:8080              Masq    1      0          0\n")


@shape(100000)
def ipvs_reals(n, w):
    w(IPVS_HEAD + "TCP  10.96.0.1:80 rr\n")
    for i in range(n):
        w(f"  -> {ip(i, 11)}:8080              Masq    1      0          0\n")


@shape(200000)
def ipset_members(n, w):
    w("create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536\n")
    for i in range(n):
        w(f"add KUBE-CLUSTER-IP {ip(i, 100)},tcp:80\n")


@shape(50000)
def ipset_sets(n, w):
    for i in range(n):
        w(f"create S{i} hash:ip family inet hashsize 1024 maxelem 65536\nadd S{i} {ip(i)}\n")


# -- numbers (fixed edge values, repeated n times) -----------------------------------------------
@shape(5000)
def numbers(n, w):
    w("table ip t {\n")
    for i in range(n):
        prio = [2147483647, -2147483648, 2147483648, -99999999999999999999][i % 4]
        w(f"\tchain c{i} {{ # handle {18446744073709551615 - i}\n"
          f"\t\ttype filter hook input priority {prio}; policy accept;\n"
          f"\t\tnumgen random mod 4294967295 vmap {{ 0 : drop, 4294967294 : accept }} # handle 18446744073709551615\n"
          f"\t}}\n")
    w("}\n")
    w(IPT_HEAD)
    for i in range(n):
        w(f"-A INPUT -m statistic --mode random --probability 0.00000000001 -j DROP\n"
          f"-A INPUT -m statistic --mode nth --every 4294967295 --packet 4294967296 -j DROP\n"
          f"[18446744073709551615:18446744073709551616] -A INPUT -m mark --mark 0xffffffffffffffffff -j DROP\n")
    w("COMMIT\n")


# -- bytes --------------------------------------------------------------------------------------
@shape(1_000_000)
def binary_garbage(n, w):
    rnd = random.Random(7)
    w(bytes(rnd.getrandbits(8) for _ in range(n)))


@shape(1_000_000)
def nul_bytes(n, w):
    w(b"\0" * n)


@shape(200000)
def invalid_utf8(n, w):
    w(IPT_HEAD.encode() + b"-A INPUT -s 10.0.0.1/32 -m comment --comment \"\xff\xfe\" -j DROP\n" * (n // 8) + b"COMMIT\n")


@shape(50000)
def cr_only(n, w):
    w((IPT_HEAD + "".join(f"-A INPUT -s {ip(i)}/32 -j DROP\n" for i in range(n)) + "COMMIT\n").replace("\n", "\r"))


@shape(5_000_000)
def newlines(n, w):
    w("\n" * n)


@shape(1)
def empty(n, w):
    pass


# -- folders ------------------------------------------------------------------------------------
@shape(1000)
def dir_tiny_files(n, out):
    os.makedirs(out, exist_ok=True)
    for i in range(n):
        with open(os.path.join(out, f"node-{i:06}.txt"), "w") as f:
            f.write(f"{IPT_HEAD}-A INPUT -s {ip(i)}/32 -j DROP\nCOMMIT\n")


@shape(1000)
def dir_tiny_nft(n, out):
    os.makedirs(out, exist_ok=True)
    for i in range(n):
        with open(os.path.join(out, f"node-{i:06}.nft"), "w") as f:
            f.write(f"table ip t {{\n\tchain c {{\n\t\ttype filter hook input priority 0; policy accept;\n"
                    f"\t\tip saddr {ip(i)} drop\n\t}}\n}}\n")


def main():
    if sys.argv[1:] == ["--list"]:
        for name, (n, _) in SHAPES.items():
            print(name, n)
        return
    name, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    _, fn = SHAPES[name]
    if name.startswith("dir-"):
        fn(n, out)
        return
    with open(out, "wb") as f:
        def w(s):
            f.write(s if isinstance(s, bytes) else s.encode())

        fn(n, w)


if __name__ == "__main__":
    main()
