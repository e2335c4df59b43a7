#!/bin/sh
# Makes the ipset, ip addr and iptables-save parts of healthy-node.txt with the real tools, in a
# private network namespace (run as root: `unshare --net sh make-healthy-node.sh`). The sets,
# addresses and rules are what kube-proxy's IPVS proxier writes for the Services of
# healthy-node-ipvsadm.txt (pkg/proxy/ipvs/proxier.go: ipsetInfo, ipsetWithIptablesChain,
# writeIptablesRules); ipvsadm cannot run here (no IPVS in this kernel), see README.md.
set -eu
out=${1:-.}

# ip addr: the dummy interface with every Service address, the node address, the pod bridge.
# This kernel has no dummy driver: kube-ipvs0 is made a bridge here, so its flags read
# <BROADCAST,MULTICAST> where kube-proxy's dummy shows <BROADCAST,NOARP>; the lines are the same.
ip link add kube-ipvs0 type bridge
for a in 10.96.0.1 10.96.0.10 10.96.120.7 10.96.200.20 10.96.50.5 203.0.113.10; do
  ip addr add $a/32 dev kube-ipvs0
done
ip link add eth0 type veth peer name veth-peer
ip addr add 192.168.56.11/24 dev eth0
ip link set eth0 up
ip link add cni0 type bridge
ip addr add 10.244.1.1/24 dev cni0

# ipset: every set of ipsetInfo, created as utilipset does (hash: family/hashsize/maxelem,
# bitmap:port: range 0-65535).
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

for e in 10.96.0.1,tcp:443 10.96.0.10,udp:53 10.96.0.10,tcp:53 10.96.0.10,tcp:9153 \
         10.96.120.7,tcp:80 10.96.200.20,tcp:443 10.96.50.5,tcp:80; do
  ipset add KUBE-CLUSTER-IP $e
done
# Endpoints on this node (10.244.1.0/24): hairpin masquerade.
for e in 10.244.1.5,udp:53,10.244.1.5 10.244.1.5,tcp:53,10.244.1.5 10.244.1.5,tcp:9153,10.244.1.5 \
         10.244.1.8,tcp:8080,10.244.1.8; do
  ipset add KUBE-LOOP-BACK $e
done
ipset add KUBE-LOAD-BALANCER 203.0.113.10,tcp:443
ipset add KUBE-NODE-PORT-TCP 30080
ipset add KUBE-NODE-PORT-TCP 31443
for a in 10.96.0.1 10.96.0.10 10.96.120.7 10.96.200.20 10.96.50.5 203.0.113.10; do
  ipset add KUBE-IPVS-IPS $a
done

# iptables: the IPVS-mode rules, restored and saved by the real tools.
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
-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port for masquerade purpose" -m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ
-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SERVICES -m comment --comment "Kubernetes service lb portal" -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER
-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT
-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT
-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT
COMMIT
RULES

iptables-save > "$out/healthy-node-iptables-save.txt"
ipset save > "$out/healthy-node-ipset-save.txt"
ipset list > "$out/healthy-node-ipset-list.txt"
ip addr show > "$out/healthy-node-ip-addr.txt"
