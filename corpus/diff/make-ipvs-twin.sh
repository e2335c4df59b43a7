#!/bin/sh
# Makes node-b.txt: the node of ../kube-pairs/small-cluster (ipvs-vs-iptables/node-a.txt is its iptables.txt)
# in kube-proxy's IPVS mode. ipset, ip addr and iptables-save are the real tools' output in a
# private network namespace (run as root: `unshare --net sh make-ipvs-twin.sh`); ipvsadm cannot
# run on this kernel (no IPVS), so its listing is printed with ipvsadm's own formats as
# ../ipvs/make-healthy-ipvsadm.py does. The sets and rules are what pkg/proxy/ipvs/proxier.go
# writes for these Services (see ../ipvs/README.md), the rules those of ../ipvs/healthy-node
# with the externalTrafficPolicy=Local and external-IP ones added.
set -eu
cd "$(dirname "$0")/ipvs-vs-iptables"
tmp=$(mktemp -d)

ip link add kube-ipvs0 type bridge
for a in 10.96.10.10 192.0.2.50 10.96.20.20 10.96.30.30 203.0.113.10 10.96.50.50 203.0.113.20 \
         10.96.60.60 10.96.40.40; do
  ip addr add $a/32 dev kube-ipvs0
done
ip link add eth0 type veth peer name veth-peer
ip addr add 192.168.10.11/24 dev eth0
ip link set eth0 up
ip link add cni0 type bridge
ip addr add 10.244.1.1/24 dev cni0

hash() { ipset create "$1" "$2" family inet hashsize 1024 maxelem 65536; }
hash KUBE-LOOP-BACK hash:ip,port,ip
hash KUBE-CLUSTER-IP hash:ip,port
hash KUBE-EXTERNAL-IP hash:ip,port
hash KUBE-EXTERNAL-IP-LOCAL hash:ip,port
hash KUBE-LOAD-BALANCER hash:ip,port
hash KUBE-LOAD-BALANCER-FW hash:ip,port
hash KUBE-LOAD-BALANCER-LOCAL hash:ip,port
hash KUBE-LOAD-BALANCER-SOURCE-IP hash:ip,port,ip
hash KUBE-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net
for s in KUBE-NODE-PORT-TCP KUBE-NODE-PORT-LOCAL-TCP KUBE-NODE-PORT-UDP KUBE-NODE-PORT-LOCAL-UDP KUBE-HEALTH-CHECK-NODE-PORT; do
  ipset create $s bitmap:port range 0-65535
done
hash KUBE-NODE-PORT-SCTP-HASH hash:ip,port
hash KUBE-NODE-PORT-LOCAL-SCTP-HASH hash:ip,port
hash KUBE-IPVS-IPS hash:ip

for e in 10.96.10.10,tcp:80 10.96.20.20,tcp:9000 10.96.30.30,tcp:443 10.96.50.50,tcp:80 \
         10.96.60.60,tcp:6379 10.96.40.40,tcp:8080; do
  ipset add KUBE-CLUSTER-IP $e
done
ipset add KUBE-EXTERNAL-IP 192.0.2.50,tcp:80
ipset add KUBE-LOAD-BALANCER 203.0.113.10,tcp:443
ipset add KUBE-LOAD-BALANCER 203.0.113.20,tcp:80
ipset add KUBE-LOAD-BALANCER-FW 203.0.113.10,tcp:443
ipset add KUBE-LOAD-BALANCER-SOURCE-CIDR 203.0.113.10,tcp:443,198.51.100.0/24
ipset add KUBE-LOAD-BALANCER-LOCAL 203.0.113.20,tcp:80
for p in 30900 30379 30080 31443; do ipset add KUBE-NODE-PORT-TCP $p; done
for p in 30379 30080; do ipset add KUBE-NODE-PORT-LOCAL-TCP $p; done
ipset add KUBE-HEALTH-CHECK-NODE-PORT 32000
# Endpoints on this node (10.244.1.0/24): hairpin masquerade.
for e in 10.244.1.5,tcp:8080,10.244.1.5 10.244.1.9,tcp:9000,10.244.1.9 10.244.1.20,tcp:6379,10.244.1.20; do
  ipset add KUBE-LOOP-BACK $e
done
for a in 10.96.10.10 192.0.2.50 10.96.20.20 10.96.30.30 203.0.113.10 10.96.50.50 203.0.113.20 \
         10.96.60.60 10.96.40.40; do
  ipset add KUBE-IPVS-IPS $a
done

iptables-restore <<'RULES'
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-IPVS-FILTER - [0:0]
:KUBE-IPVS-OUT-FILTER - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-PROXY-CANARY - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SOURCE-RANGES-FIREWALL - [0:0]
-A INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER
-A INPUT -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT
-A FORWARD -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A OUTPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-OUT-FILTER
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-IPVS-FILTER -m set --match-set KUBE-LOAD-BALANCER dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP-LOCAL dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j RETURN
-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT --reject-with icmp-port-unreachable
-A KUBE-NODE-PORT -m comment --comment "Kubernetes health check node port" -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j ACCEPT
-A KUBE-PROXY-FIREWALL -m comment --comment "Kubernetes service load balancer ip + port for load balancer with sourceRange" -m set --match-set KUBE-LOAD-BALANCER-FW dst,dst -j KUBE-SOURCE-RANGES-FIREWALL
-A KUBE-SOURCE-RANGES-FIREWALL -m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src -j RETURN
-A KUBE-SOURCE-RANGES-FIREWALL -j DROP
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:KUBE-LOAD-BALANCER - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-PROXY-CANARY - [0:0]
:KUBE-SERVICES - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-LOAD-BALANCER -m comment --comment "Kubernetes service load balancer ip + port with externalTrafficPolicy=local" -m set --match-set KUBE-LOAD-BALANCER-LOCAL dst,dst -j RETURN
-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port with externalTrafficPolicy=local" -m set --match-set KUBE-NODE-PORT-LOCAL-TCP dst -j RETURN
-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port for masquerade purpose" -m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ
-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SERVICES -m comment --comment "Kubernetes service lb portal" -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER
-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT
-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -m addrtype --dst-type LOCAL -j ACCEPT
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT
-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT
-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT
COMMIT
RULES

{
  echo "# node: node-b"
  echo "# small-cluster in kube-proxy's IPVS mode, made by make-ipvs-twin.sh"
  iptables-save
  ipset save
  python3 - <<'PY'
# ipvsadm.c's formats: "%s  %s" PROTO addr:port, " %s" scheduler, " persistent %u";
# "  -> %-28s %-7s %-6d %-10u %-10u" per real server.
services = [
    ("TCP", "10.96.10.10:80", None, [("10.244.1.5:8080", 1), ("10.244.2.7:8080", 1)]),
    ("TCP", "192.0.2.50:80", None, [("10.244.1.5:8080", 1), ("10.244.2.7:8080", 1)]),
    ("TCP", "10.96.20.20:9000", None, [("10.244.1.9:9000", 1)]),
    ("TCP", "192.168.10.11:30900", None, [("10.244.1.9:9000", 1)]),
    ("TCP", "10.96.30.30:443", 10800, [("10.244.2.3:8443", 1)]),
    ("TCP", "203.0.113.10:443", 10800, [("10.244.2.3:8443", 1)]),
    ("TCP", "192.168.10.11:31443", 10800, [("10.244.2.3:8443", 1)]),
    ("TCP", "10.96.50.50:80", None, [("10.244.3.4:80", 1)]),
    # externalTrafficPolicy Local, no endpoint on this node: no real servers.
    ("TCP", "203.0.113.20:80", None, []),
    ("TCP", "192.168.10.11:30080", None, []),
    ("TCP", "10.96.60.60:6379", None, [("10.244.1.20:6379", 1), ("10.244.2.20:6379", 1)]),
    # externalTrafficPolicy Local: the node's own endpoint only.
    ("TCP", "192.168.10.11:30379", None, [("10.244.1.20:6379", 1)]),
    ("TCP", "10.96.40.40:8080", None, []),
]
print("IP Virtual Server version 1.2.1 (size=4096)")
print("Prot LocalAddress:Port Scheduler Flags")
print("  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn")
for proto, vip, persistent, rss in services:
    line = "%s %s" % (("%s  %s" % (proto, vip))[:33], "rr")
    if persistent is not None:
        line += " persistent %u" % persistent
    print(line)
    for rs, weight in rss:
        print("  -> %-28s %-7s %-6d %-10u %-10u" % (rs[:28], "Masq", weight, 0, 0))
PY
  ip addr show kube-ipvs0
} > "$tmp/node-b.txt"
mv "$tmp/node-b.txt" node-b.txt
rmdir "$tmp"
