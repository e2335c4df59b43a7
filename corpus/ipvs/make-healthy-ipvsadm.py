#!/usr/bin/env python3
"""Writes healthy-node-ipvsadm.txt: `ipvsadm -Ln` of the healthy node's Services, printed with
ipvsadm's own formats (ipvsadm.c: list_all prints the version line, print_title the two titles,
print_service_entry "%s %s" for "PROTO  addr:port" and the scheduler [" persistent %u"], and
"  -> %-28s %-7s %-6d %-10u %-10u" per real server), since this kernel has no IPVS to run it."""
import sys

services = [
    # (proto, vip:port, scheduler, persistent, [(rs, weight)])
    ("TCP", "10.96.0.1:443", "rr", None, [("192.168.56.10:6443", 1)]),
    ("TCP", "10.96.0.10:53", "rr", None, [("10.244.1.5:53", 1), ("10.244.2.3:53", 1)]),
    ("TCP", "10.96.0.10:9153", "rr", None, [("10.244.1.5:9153", 1), ("10.244.2.3:9153", 1)]),
    ("TCP", "10.96.50.5:80", "rr", None, []),
    ("TCP", "10.96.120.7:80", "rr", None, [("10.244.1.8:8080", 1), ("10.244.2.9:8080", 1)]),
    ("TCP", "10.96.200.20:443", "rr", 10800, [("10.244.2.12:8443", 1)]),
    ("TCP", "192.168.56.11:30080", "rr", None, [("10.244.1.8:8080", 1), ("10.244.2.9:8080", 1)]),
    ("TCP", "192.168.56.11:31443", "rr", 10800, [("10.244.2.12:8443", 1)]),
    ("TCP", "203.0.113.10:443", "rr", 10800, [("10.244.2.12:8443", 1)]),
    ("UDP", "10.96.0.10:53", "rr", None, [("10.244.1.5:53", 1), ("10.244.2.3:53", 1)]),
]

out = ["IP Virtual Server version 1.2.1 (size=4096)",
       "Prot LocalAddress:Port Scheduler Flags",
       "  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn"]
for proto, vip, sched, persistent, rss in services:
    line = "%s %s" % (("%s  %s" % (proto, vip))[:33], sched)
    if persistent is not None:
        line += " persistent %u" % persistent
    out.append(line)
    for rs, weight in rss:
        out.append("  -> %-28s %-7s %-6d %-10u %-10u" % (rs[:28], "Masq", weight, 0, 0))
sys.stdout.write("\n".join(out) + "\n")
