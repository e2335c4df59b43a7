#!/bin/sh
# Makes ipvs-shared-pods-local/node-{a,b}.txt: two nodes of one cluster in kube-proxy's IPVS mode
# whose Services share pods (`ipset save; ipvsadm -Ln` each). ipset output is the real tool's in a
# private network namespace (run as root: `unshare --net sh make-ipvs-shared-pods.sh`); ipvsadm
# cannot run on this kernel (no IPVS), so its listing is printed with ipvsadm's own formats as
# make-ipvs-twin.sh does.
#
# Services (all TCP, externalTrafficPolicy Local where a node port is listed):
#   shop        10.96.70.70:80  -> 10.244.1.5:8080 10.244.2.6:8080   node port 30700, LB 203.0.113.70:80 (Local)
#   shop-canary 10.96.71.71:80  -> 10.244.1.5:8080                   (selects one of shop's pods)
#   report      10.96.73.73:80  -> 10.244.2.8:8080 10.244.3.3:8080   node port 30730 (Local)
# node-a (pods 10.244.1.0/24): shop's local endpoint 10.244.1.5 is shop-canary's whole set;
# report has no endpoint here. node-b (pods 10.244.2.0/24): shop's local endpoint fits shop
# only; report's local endpoint is 10.244.2.8.
set -eu
cd "$(dirname "$0")/ipvs-shared-pods-local"

node() {
  name=$1 np_a=$2 np_b=$3
  ipset destroy 2>/dev/null || true
  hash() { ipset create "$1" "$2" family inet hashsize 1024 maxelem 65536; }
  hash KUBE-LOOP-BACK hash:ip,port,ip
  hash KUBE-CLUSTER-IP hash:ip,port
  hash KUBE-LOAD-BALANCER hash:ip,port
  hash KUBE-LOAD-BALANCER-LOCAL hash:ip,port
  for s in KUBE-NODE-PORT-TCP KUBE-NODE-PORT-LOCAL-TCP; do
    ipset create $s bitmap:port range 0-65535
  done
  for e in 10.96.70.70,tcp:80 10.96.71.71,tcp:80 10.96.73.73,tcp:80; do
    ipset add KUBE-CLUSTER-IP $e
  done
  ipset add KUBE-LOAD-BALANCER 203.0.113.70,tcp:80
  ipset add KUBE-LOAD-BALANCER-LOCAL 203.0.113.70,tcp:80
  for p in 30700 30730; do
    ipset add KUBE-NODE-PORT-TCP $p
    ipset add KUBE-NODE-PORT-LOCAL-TCP $p
  done
  for e in $np_a; do ipset add KUBE-LOOP-BACK "$e"; done
  {
    echo "# node: $name"
    ipset save
    NODE="$name" python3 - <<'PY'
import os
# ipvsadm.c's formats: "%s  %s" PROTO addr:port, " %s" scheduler;
# "  -> %-28s %-7s %-6d %-10u %-10u" per real server.
a = os.environ["NODE"] == "node-a"
ip = "192.168.10.11" if a else "192.168.10.12"
local_shop = ["10.244.1.5:8080"] if a else ["10.244.2.6:8080"]
local_report = [] if a else ["10.244.2.8:8080"]
services = [
    ("10.96.70.70:80", ["10.244.1.5:8080", "10.244.2.6:8080"]),
    ("10.96.71.71:80", ["10.244.1.5:8080"]),
    ("10.96.73.73:80", ["10.244.2.8:8080", "10.244.3.3:8080"]),
    ("203.0.113.70:80", local_shop),
    (ip + ":30700", local_shop),
    (ip + ":30730", local_report),
]
print("IP Virtual Server version 1.2.1 (size=4096)")
print("Prot LocalAddress:Port Scheduler Flags")
print("  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn")
for vip, rss in services:
    print("%s %s" % (("TCP  %s" % vip)[:33], "rr"))
    for rs in rss:
        print("  -> %-28s %-7s %-6d %-10u %-10u" % (rs[:28], "Masq", 1, 0, 0))
PY
  } > "$name.txt"
  ipset destroy
}
# Hairpin entries: the node's own endpoints.
node node-a "10.244.1.5,tcp:8080,10.244.1.5" ""
node node-b "10.244.2.6,tcp:8080,10.244.2.6 10.244.2.8,tcp:8080,10.244.2.8" ""
