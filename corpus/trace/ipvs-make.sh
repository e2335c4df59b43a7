#!/bin/sh
# Writes the trace corpus cases of an IPVS-mode node (run from the repository root:
# sh corpus/trace/ipvs-make.sh). Each starts from corpus/ipvs (one node's iptables-save,
# ipset, ipvsadm -Ln and ip addr, see corpus/ipvs/README.md):
#   ipvs-healthy        the four outputs (`ipset save`): set matches, locality and virtual servers
#                       decided from the file
#   ipvs-list           the same with `ipset list` in place of `ipset save`, put last (an
#                       `ipset list` right before `ip addr` hides the latter from the reader)
#   ipvs-list-cut       `ipset list` whose KUBE-CLUSTER-IP shows 6 of its 7 entries: its matches fork
#   ipvs-missing-entry  the virtual server 10.96.120.7:80 without its KUBE-CLUSTER-IP entry:
#                       KUBE-IPVS-FILTER rejects it
#   ipvs-iptables-only  the iptables-save part alone: every set match forks, as without the file
set -eu
src=corpus/ipvs
dst=corpus/trace
mkdir -p $dst/ipvs-healthy $dst/ipvs-list $dst/ipvs-list-cut $dst/ipvs-missing-entry $dst/ipvs-iptables-only
cp $src/healthy-node.txt $dst/ipvs-healthy/node.txt
cat $src/healthy-node-iptables-save.txt $src/healthy-node-ipvsadm.txt \
    $src/healthy-node-ip-addr.txt $src/healthy-node-ipset-list.txt > $dst/ipvs-list/node.txt
grep -v '^10\.96\.0\.10,tcp:9153$' $dst/ipvs-list/node.txt > $dst/ipvs-list-cut/node.txt
grep -v '^add KUBE-CLUSTER-IP 10\.96\.120\.7,tcp:80$' $src/healthy-node.txt > $dst/ipvs-missing-entry/node.txt
cp $src/healthy-node-iptables-save.txt $dst/ipvs-iptables-only/node.txt
