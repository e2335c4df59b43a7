#!/bin/bash
# Compares `rulelint trace` on node.txt with the kernel's own verdicts (`nft monitor trace`):
# loads node.txt into a private network namespace ("node", 192.168.0.2) with a client namespace
# (192.168.0.99) on a veth pair, sends one TCP SYN per destination, prints the kernel's rule
# path, then rulelint's summary for the same packet. Needs root, iproute2 and nft >= 1.0.
set -eu  # bash: /dev/tcp
cd "$(dirname "$0")"
RULELINT=${RULELINT:-../../../target/release/rulelint}
cleanup() { ip netns del rlnode 2>/dev/null || true; ip netns del rlcli 2>/dev/null || true; }
trap cleanup EXIT
ip netns add rlnode; ip netns add rlcli
ip link add vc type veth peer name vn
ip link set vc netns rlcli; ip link set vn netns rlnode
ip -n rlnode addr add 192.168.0.2/24 dev vn; ip -n rlnode link set vn up; ip -n rlnode link set lo up
ip -n rlcli addr add 192.168.0.99/24 dev vc; ip -n rlcli link set vc up; ip -n rlcli link set lo up
ip -n rlcli route add default via 192.168.0.2
ip -n rlnode route add default via 192.168.0.99
ip netns exec rlnode sysctl -qw net.ipv4.ip_forward=1
ip netns exec rlnode nft -f node.txt
ip netns exec rlnode nft add table ip tracer
ip netns exec rlnode nft add chain ip tracer pre '{ type filter hook prerouting priority -400; }'
ip netns exec rlnode nft add rule ip tracer pre ip saddr 192.168.0.99 meta nftrace set 1
for dst in 172.30.0.41:80 172.30.0.46:80 5.6.7.8:80 172.30.0.41:81 192.168.0.2:3002; do
  echo "== $dst"
  ip netns exec rlnode timeout 2 nft monitor trace > /tmp/rl-kernel-trace.txt 2>&1 &
  sleep 1
  ip netns exec rlcli timeout 1 bash -c "exec 3<>/dev/tcp/${dst%:*}/${dst#*:}" 2>/dev/null || true
  wait
  grep -E ' (rule|policy) ' /tmp/rl-kernel-trace.txt | grep -v ' ip tracer ' | cut -d' ' -f3- || true
  "$RULELINT" trace node.txt --dst "$dst" --src 192.168.0.99 --from outside --node-ip 192.168.0.2 | sed -n 2p
done
