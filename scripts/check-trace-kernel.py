#!/usr/bin/env python3
"""Compares `rulelint trace` with what the kernel does to the same packet.

Called by scripts/check-trace-kernel.sh (read its header first). Input: lines
`FILE<TAB>NAME: TRACE-FLAGS[<TAB>TRIES]` on stdin (TRIES packets of the flow, each
from another source port: a probability ladder's endpoints are each hit in time). For each line, in fresh network
namespaces:
  node  the ruleset (iptables-restore or nft -f), the node addresses, the input
        interface (veth, named as --in or eth0) and an output interface (dummy,
        named as --out or eth1) holding the default route;
  peer  the other end of the veth, holding the packet's source address.
A table `ip hk_tracer` sets `meta nftrace` on the packet only (by its source
port or ICMP id: replies are not traced) at priority -500 of prerouting and
output, and has empty base chains at priority 500 of input, forward and
postrouting, so `nft -a monitor trace` shows every hook the packet survived.
One packet is sent (TCP SYN by connect(), UDP datagram, ICMP echo), from the
peer, or from the node for `--from host`. The kernel's path is the rules and
policies that matched, in order, mapped to lines of FILE through rule handles
(the k-th rule of a chain in `nft -a list ruleset` is the k-th rule of that
chain in FILE; checked by counting). It must equal the steps of one of the
trace's outcomes (steps marked "only when" may be absent, consistently), with
the same verdict and destination after DNAT.

Exit status: 0 all agree, 1 a mismatch, 2 the harness failed.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import time

RULELINT = os.environ.get("RULELINT", "target/release/rulelint")
TRIES = int(os.environ.get("TRIES", "1"))
VERBOSE = os.environ.get("VERBOSE", "") != ""
NODE = "hk-kernel-node"
PEER = "hk-kernel-peer"
HOOK_OF_BUILTIN = {
    "PREROUTING": "prerouting",
    "INPUT": "input",
    "FORWARD": "forward",
    "OUTPUT": "output",
    "POSTROUTING": "postrouting",
}


def run(cmd, ns=None, check=True, stdin=None, timeout=60):
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p


def parse_flags(text):
    words = shlex.split(text)
    flags = {"node-ip": []}
    i = 0
    while i < len(words):
        key = words[i][2:]
        val = words[i + 1]
        if key == "node-ip":
            flags[key].append(val)
        else:
            flags[key] = val
        i += 2
    return words, flags


def split_hostport(text):
    if text.startswith("["):
        raise ValueError("IPv6 is not checked")
    if ":" in text:
        host, port = text.rsplit(":", 1)
        return host, int(port)
    return text, None


def is_iptables(path):
    with open(path) as f:
        for line in f:
            if line.startswith("*"):
                return True
            if line.startswith("table ") or line.startswith("add "):
                return False
    return False


def file_rule_lines(path, iptables):
    """(table, chain) -> the file's rule lines in order, 1-based."""
    rules = {}
    lines = open(path).read().split("\n")
    if iptables:
        table = None
        for n, line in enumerate(lines, 1):
            if line.startswith("*"):
                table = line[1:].strip()
            elif line.startswith("-A "):
                chain = line.split()[1]
                rules.setdefault((table, chain), []).append(n)
        return rules
    table = chain = None
    depth = 0
    pending = 0  # open braces of a rule that spans lines
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if pending:
            pending += line.count("{") - line.count("}")
            continue
        if depth == 0 and line.startswith("table "):
            table = " ".join(line.split()[1:3])
            depth = 1
        elif depth == 1 and line.startswith("chain "):
            chain = line.split()[1]
            depth = 2
        elif depth == 1 and line.endswith("{"):
            depth = 3  # a set, map, flowtable or object
        elif depth >= 3:
            depth += line.count("{") - line.count("}")
            if depth < 3:
                depth = 1
        elif line == "}":
            depth -= 1
        elif depth == 2 and line and not line.startswith(("#", "type ", "policy ", "comment ")):
            rules.setdefault((table, chain), []).append(n)
            pending = line.count("{") - line.count("}")
    return rules


def kernel_handles():
    """(family table, chain) -> rule handles in order; (family table, chain) -> hook."""
    text = run(["nft", "-a", "list", "ruleset"], ns=NODE).stdout
    handles, hooks = {}, {}
    table = chain = None
    for line in text.split("\n"):
        s = line.strip()
        m = re.match(r"table (\S+ \S+) \{", s)
        if m:
            table = m.group(1)
            continue
        m = re.match(r"chain (\S+) \{", s)
        if m:
            chain = m.group(1)
            handles[(table, chain)] = []
            continue
        m = re.match(r"type \S+ hook (\S+) ", s)
        if m and chain:
            hooks[(table, chain)] = m.group(1)
            continue
        if s == "}":
            chain = None if chain else chain
            continue
        m = re.search(r"# handle (\d+)$", s)
        if m and chain and not s.startswith(("set ", "map ")):
            handles[(table, chain)].append(int(m.group(1)))
    return handles, hooks


def setup(flags, node_ips, src, iptables, path, out_if, in_if):
    teardown()
    run(["ip", "netns", "add", NODE])
    run(["ip", "netns", "add", PEER])
    run(["ip", "link", "add", "hkpeer0", "type", "veth", "peer", "name", "hknode0"])
    run(["ip", "link", "set", "hkpeer0", "netns", PEER])
    run(["ip", "link", "set", "hknode0", "netns", NODE])
    run(["ip", "link", "set", "hknode0", "name", in_if], ns=NODE)
    for ns in (NODE, PEER):
        run(["ip", "link", "set", "lo", "up"], ns=ns)
        for k in ("all", "default"):
            run(["sysctl", "-qw", f"net.ipv4.conf.{k}.rp_filter=0"], ns=ns)
    run(["sysctl", "-qw", "net.ipv4.ip_forward=1"], ns=NODE)
    run(["sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1"], ns=NODE)
    run(["ip", "link", "set", in_if, "up"], ns=NODE)
    run(["ip", "link", "set", "hkpeer0", "up"], ns=PEER)
    # a link network for the veth, the node's addresses on it
    run(["ip", "addr", "add", "169.254.77.1/30", "dev", in_if], ns=NODE)
    run(["ip", "addr", "add", "169.254.77.2/30", "dev", "hkpeer0"], ns=PEER)
    for ip in node_ips:
        run(["ip", "addr", "add", f"{ip}/32", "dev", in_if], ns=NODE)
    run(["ip", "route", "add", "default", "via", "169.254.77.1"], ns=PEER)
    if flags.get("from") != "host" and src not in node_ips:
        run(["ip", "addr", "add", f"{src}/32", "dev", "hkpeer0"], ns=PEER)
    if out_if == in_if:
        run(["ip", "route", "add", "default", "via", "169.254.77.2"], ns=NODE)
    else:
        # no dummy driver here: a veth whose far end (in the peer, which does not
        # forward) swallows what the node sends
        run(["ip", "link", "add", "hkpeer1", "type", "veth", "peer", "name", "hknode1"])
        run(["ip", "link", "set", "hkpeer1", "netns", PEER])
        run(["ip", "link", "set", "hknode1", "netns", NODE])
        run(["ip", "link", "set", "hknode1", "name", out_if], ns=NODE)
        run(["ip", "link", "set", out_if, "up"], ns=NODE)
        run(["ip", "link", "set", "hkpeer1", "up"], ns=PEER)
        run(["ip", "route", "add", "default", "dev", out_if], ns=NODE)
    for ns in (NODE,):
        for dev in (in_if, out_if):
            run(["sysctl", "-qw", f"net.ipv4.conf.{dev}.rp_filter=0"], ns=ns, check=False)
    if iptables:
        run(["iptables-restore"], ns=NODE, stdin=open(path).read())
    else:
        run(["nft", "-f", path], ns=NODE)


def load_tracer(proto, sport, icmp_id):
    if proto in ("tcp", "udp"):
        match = f"meta l4proto {proto} th sport {sport}"
    else:
        match = f"icmp type echo-request icmp id {icmp_id}"
    # a packet the node sends to itself comes back through prerouting, perhaps with
    # another source port (masquerade): its conntrack entry still names the first one
    again = f"ct direction original ct original protocol {proto} ct original proto-src {sport}" if proto in ("tcp", "udp") else match
    text = f"""table ip hk_tracer {{
  chain pre {{
    type filter hook prerouting priority -500;
    {match} meta nftrace set 1
    {again} meta nftrace set 1
  }}
  chain out {{ type filter hook output priority -500; {match} meta nftrace set 1; }}
  chain late-in {{ type filter hook input priority 500; }}
  chain late-fwd {{ type filter hook forward priority 500; }}
  chain late-post {{ type filter hook postrouting priority 500; }}
}}
"""
    run(["nft", "-f", "-"], ns=NODE, stdin=text)


def teardown():
    for ns in (NODE, PEER):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


SENDER = r"""
import socket, struct, sys
proto, src, sport, dst, dport, icmp_id = sys.argv[1:7]
if proto == "tcp":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((src, int(sport)))
    s.settimeout(0.4)  # less than the first SYN retransmission (1 s)
    try:
        s.connect((dst, int(dport)))
    except OSError:
        pass
elif proto == "udp":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, int(sport)))
    s.sendto(b"rulelint", (dst, int(dport)))
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.bind((src, 0))
    body = struct.pack("!BBHHH", 8, 0, 0, int(icmp_id), 1) + b"rulelint"
    c = sum(struct.unpack("!%dH" % (len(body) // 2), body))
    c = (c >> 16) + (c & 0xFFFF)
    c = ~(c + (c >> 16)) & 0xFFFF
    body = body[:2] + struct.pack("!H", c) + body[4:]
    s.sendto(body, (dst, 0))
"""


def send_and_trace(flags, proto, src, sport, dst, dport, icmp_id):
    mon = subprocess.Popen(
        ["ip", "netns", "exec", NODE, "nft", "-a", "monitor", "trace"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    time.sleep(0.3)
    ns = NODE if flags.get("from") == "host" else PEER
    run(
        ["python3", "-c", SENDER, proto, src, str(sport), dst, str(dport or 0), str(icmp_id)],
        ns=ns,
        check=False,
    )
    time.sleep(0.3)
    mon.terminate()
    out, _ = mon.communicate()
    return out.split("\n")


EVENT = re.compile(r"^trace id (\S+) (\S+ \S+) (\S+) (packet|rule|policy|return)\b(.*)$")


def ours(lines, flow):
    """The trace ids of our packet, the ones hk_tracer's rules marked: a ruleset may set
    nftrace on other packets too."""
    ids = set()
    for line in lines:
        m = EVENT.match(line)
        if m and m.group(2) == "ip hk_tracer" and m.group(4) == "rule":
            ids.add(m.group(1))
    return ids


def kernel_path(lines, flow, handles, hooks, rule_lines, iptables):
    """The packet's rule and policy steps, the hooks it survived, where it ended."""
    steps, seen_hooks, last_packet, end = [], [], None, None
    wanted = ours(lines, flow)
    for line in lines:
        m = EVENT.match(line)
        if not m or m.group(1) not in wanted:
            continue
        table, chain, kind, rest = m.groups()[1:]
        if table == "ip hk_tracer":
            if kind == "packet":
                last_packet = rest
                hook = hooks.get((table, chain))
                if hook and chain.startswith("late-"):
                    seen_hooks.append(hook)
            continue
        if kind == "packet":
            last_packet = rest
            continue
        name = table.split()[1] if iptables else table
        if kind == "policy":
            verdict = rest.split()[0]
            steps.append((name, chain, "policy", verdict))
            if verdict == "drop":
                end = "drop"
            continue
        if kind == "return":
            continue
        hm = re.search(r"\(handle (\d+)\)", rest) or re.search(r"# handle (\d+)", rest)
        vm = re.search(r"\(verdict (\S+?)(?: .*)?\)", rest)
        verdict = vm.group(1) if vm else "?"
        if not hm:
            raise RuntimeError(f"no handle in trace line: {line}")
        pos = handles[(table, chain)].index(int(hm.group(1)))
        rl = rule_lines.get((name, chain), [])
        if len(rl) != len(handles[(table, chain)]):
            raise RuntimeError(f"{name} {chain}: {len(rl)} rules in the file, {len(handles[(table, chain)])} loaded")
        steps.append((name, chain, rl[pos], verdict))
        if verdict == "drop":
            end = "reject" if re.search(r"\breject\b", rest) else "drop"
    if end is None:
        if "input" in seen_hooks:
            end = "accept"
        elif "postrouting" in seen_hooks:
            end = "forward" if "forward" in seen_hooks else "output"
        else:
            end = "lost"
    dest = None
    if last_packet:
        a = re.search(r"ip daddr (\S+)", last_packet)
        p = re.search(r"(?:tcp|udp) dport (\d+)", last_packet)
        if a:
            dest = a.group(1) + (f":{p.group(1)}" if p else "")
    oif = re.search(r'oif "([^"]+)"', last_packet or "")
    return steps, end, dest, oif.group(1) if oif else None


COND = re.compile(r" \(only when( not)?: (.*?)\)(?= \(only when| \(and \d+ more|$)")


def trace_steps(outcome, iptables):
    """(key, conditions) per step, routing decisions left out; conditions None = optional."""
    out = []
    for s in outcome["steps"]:
        if s["table"] == "routing":
            continue
        effect = s["effect"]
        conds = [(q, neg == "") for neg, q in COND.findall(effect)]
        if " more condition" in effect:
            conds = None
        kind = "policy" if effect.startswith("policy ") else s["line"]
        out.append(((s["table"], s["chain"], kind), conds))
    return out


def matches(outcome_steps, kernel_keys):
    """The kernel's steps are the outcome's, with each question of its "only when" steps
    answered one way (or, when trace counted conditions it did not list, with any of them
    left out)."""
    questions = sorted({q for _, c in outcome_steps if c for q, _ in c})
    if any(c is None for _, c in outcome_steps) or len(questions) > 12:
        i = 0
        for key in kernel_keys:
            while i < len(outcome_steps) and outcome_steps[i][0] != key:
                if outcome_steps[i][1] == []:
                    return False
                i += 1
            if i == len(outcome_steps):
                return False
            i += 1
        return all(c != [] for _, c in outcome_steps[i:])
    for bits in range(1 << len(questions)):
        answer = {q: bool(bits >> n & 1) for n, q in enumerate(questions)}
        keys = [k for k, c in outcome_steps if all(answer[q] == h for q, h in c)]
        if keys == kernel_keys:
            return True
    return False


def same_destination(outcome, dest, in_if_addresses):
    """Whether trace's outcome sends the packet where the kernel did. A REDIRECT on PREROUTING
    whose input interface trace could not read keeps the address and says so as an
    assumption: then the port must agree and the kernel's address be one of the input
    interface's (the harness gave it `in_if_addresses`)."""
    if outcome["destination"] == dest:
        return True
    unknown = any("an address of the input interface" in a for a in outcome["assumptions"])
    if not unknown or dest is None:
        return False
    ip, port = split_hostport(dest)
    _, traced_port = split_hostport(outcome["destination"])
    return ip in in_if_addresses and port == traced_port


def main():
    cases = [l.rstrip("\n") for l in sys.stdin if l.strip()]
    agree = mismatch = skipped = branches_seen = 0
    report = []
    sport_base = 41000
    for n, case in enumerate(cases):
        path, packet, *rest = case.split("\t")
        tries = int(rest[0]) if rest else TRIES
        name, flagtext = packet.split(":", 1)
        words, flags = parse_flags(flagtext.strip())
        label = f"{path} {name}"
        if flags.get("state") == "established":
            skipped += 1
            report.append(f"skip {label}: --state established (one new packet is sent)")
            continue
        if flags.get("affinity") == "hit":
            skipped += 1
            report.append(f"skip {label}: --affinity hit (the kernel's lists start empty)")
            continue
        iptables = is_iptables(path)
        doc = json.loads(run([RULELINT, "trace", "--format", "json", *words, path]).stdout)
        node = doc["nodes"][0]
        pkt = node["packet"]
        proto = pkt["protocol"]
        if proto not in ("tcp", "udp", "icmp"):
            skipped += 1
            report.append(f"skip {label}: protocol {proto} is not sent")
            continue
        dst, dport = split_hostport(pkt["dst"])
        node_ips = list(flags["node-ip"])
        for inp in node["inputs"]:
            if inp["field"] == "node addresses":
                head = inp["value"].split(";")[0]
                for ip in re.findall(r"\b\d+\.\d+\.\d+\.\d+\b", re.sub(r"\(.*?\)", "", head)):
                    if not ip.startswith("127.") and ip not in node_ips:
                        node_ips.append(ip)
        if pkt["src"]:
            src, sport_given = split_hostport(pkt["src"])
        else:
            # trace left it unknown: any address of the node, or one from outside
            host = flags.get("from") == "host"
            src = (node_ips[0] if node_ips else "169.254.77.1") if host else "203.0.113.77"
            sport_given = None
        in_if = flags.get("in", "eth0")
        out_if = flags.get("out", "eth1")
        rule_lines = file_rule_lines(path, iptables)
        try:
            setup(flags, node_ips, src, iptables, path, out_if, in_if)
        except RuntimeError as e:
            skipped += 1
            report.append(f"skip {label}: the kernel here does not take it: {e}")
            teardown()
            continue
        if iptables and any(
            "an address of the input interface" in a
            for o in node["outcomes"]
            for a in o["assumptions"]
        ):
            # trace could not tell where a REDIRECT sends the packet: give it the node's own
            # `ip addr` beside the rules, as a user would paste it, and hold it to the address.
            addr = run(["ip", "addr"], ns=NODE).stdout
            with_addr = "/tmp/hk-kernel-with-ip-addr.txt"
            with open(with_addr, "w") as f:
                f.write(open(path).read().rstrip("\n") + "\n" + addr)
            doc = json.loads(run([RULELINT, "trace", "--format", "json", *words, with_addr]).stdout)
            node = doc["nodes"][0]
            label += " (with the namespace's ip addr)"
        try:
            handles, hooks = kernel_handles()
            hit = set()
            for t in range(tries):
                sport = sport_given or sport_base + n * 50 + t
                icmp_id = 1000 + n * 50 + t
                run(["nft", "delete", "table", "ip", "hk_tracer"], ns=NODE, check=False)
                load_tracer(proto, sport, icmp_id)
                handles, hooks = kernel_handles()
                lines = send_and_trace(flags, proto, src, sport, dst, dport, icmp_id)
                if proto in ("tcp", "udp"):
                    flow = rf"\b{proto} sport {sport}\b"
                else:
                    flow = rf"\bicmp id {icmp_id}\b"
                steps, end, dest, oif = kernel_path(lines, flow, handles, hooks, rule_lines, iptables)
                # trace leaves out the ACCEPT policy of a built-in chain without rules
                keys = [
                    s[:3]
                    for s in steps
                    if not (s[2] == "policy" and s[3] == "accept" and not rule_lines.get(s[:2]))
                ]
                found = None
                for i, o in enumerate(node["outcomes"]):
                    if o["verdict"] != end:
                        continue
                    if end not in ("drop", "reject") and not same_destination(
                        o, dest, ["169.254.77.1", *node_ips]
                    ):
                        continue
                    if matches(trace_steps(o, iptables), keys):
                        found = i
                        break
                if found is not None:
                    agree += 1
                    hit.add(found)
                    if VERBOSE:
                        report.append(f"ok   {label} try {t}: {end} {dest} = outcome {found}")
                    if sport_given:
                        break
                    continue
                mismatch += 1
                lines_out = [f"MISMATCH {label} (try {t}): kernel {end}, destination {dest}, out {oif}"]
                for s in steps:
                    lines_out.append(f"    kernel  {s[0]} {s[1]} {s[2]} ({s[3]})")
                for i, o in enumerate(node["outcomes"]):
                    lines_out.append(f"  trace outcome {i}: {o['verdict']} {o['destination']} p={o['probability']:.4g}")
                    for s in o["steps"]:
                        if s["table"] != "routing":
                            lines_out.append(f"    trace   {s['table']} {s['chain']} {s['line']} {s['effect']}")
                        else:
                            lines_out.append(f"    trace   routing: {s['effect']}")
                report.append("\n".join(lines_out))
                break
            if len(hit) > 1 or (tries > 1 and len(node["outcomes"]) > 1):
                report.append(
                    f"ladder {label}: {tries} packets hit {len(hit)} of trace's {len(node['outcomes'])} outcomes"
                )
            branches_seen += len(hit)
        except (RuntimeError, ValueError, KeyError) as e:
            mismatch += 1
            report.append(f"ERROR {label}: {e}")
        finally:
            teardown()
    print("\n".join(report))
    print(
        f"check-trace-kernel: {len(cases)} packets, {agree} kernel runs agree with one of "
        f"trace's outcomes ({branches_seen} distinct outcomes hit), {mismatch} mismatches, "
        f"{skipped} skipped"
    )
    sys.exit(1 if mismatch else 0)


if __name__ == "__main__":
    main()
