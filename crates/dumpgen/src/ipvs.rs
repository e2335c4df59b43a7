//! The same cluster as [`crate::generate`], seen from a node whose kube-proxy
//! runs in IPVS mode: the four outputs a user collects from such a node,
//! concatenated as `iptables-save; ipset save; ipvsadm -Ln; ip addr` prints
//! them (the layout of `corpus/ipvs/healthy-node.txt`, which was made with
//! the real `iptables`, `ipset` and `ip` tools).
//!
//! What kube-proxy writes follows `pkg/proxy/ipvs/proxier.go` (Kubernetes
//! 1.29-1.33): `ipsetInfo` (set names and types, created with `hashsize 1024
//! maxelem 65536`), `ipsetWithIptablesChain` (one rule per *non-empty* set,
//! with the set's comment), `writeIptablesRules` (`KUBE-SERVICES`' cluster IP
//! masquerade, `KUBE-IPVS-FILTER`, `KUBE-SOURCE-RANGES-FIREWALL`'s `DROP`),
//! `acceptIPVSTraffic`, and `syncService`/`syncEndpoint`: one virtual server
//! per cluster IP, load-balancer IP and node address + node port, scheduler
//! `rr`, `persistent 10800` for ClientIP affinity, real servers `Masq` weight
//! 1, only the node's own endpoints behind the external virtual servers of an
//! `externalTrafficPolicy: Local` Service; every Service address bound to
//! `kube-ipvs0` and listed in `KUBE-IPVS-IPS`; every endpoint on the node in
//! `KUBE-LOOP-BACK`.
//!
//! Printed as the tools print them: `iptables-save` v1.8.9 (nf_tables) with
//! chains sorted, `ipset save` v7.17 (`bucketsize 12 initval 0x...`, bitmap
//! entries in port order, hash entries in kube-proxy's order where the
//! kernel uses its hash order), `ipvsadm -Ln` with ipvsadm's own format
//! strings (`"%s  %s"`, `"  -> %-28s %-7s %-6d %-10u %-10u"`), virtual and
//! real servers sorted by protocol and address, and `ip addr`.
//!
//! With `shape.ipv6`, the node of an IPv6 cluster: the sets are named
//! `KUBE-6-*` (`NewIPSet`: `KUBE-` becomes `KUBE-6-`, cut to ipset's 31
//! characters, so `KUBE-6-LOAD-BALANCER-SOURCE-CID`), `family inet6`,
//! `ip6tables-save` with `icmp6-port-unreachable`, `[addr]:port` in the
//! listing and `inet6` addresses (`tentative` on the down `kube-ipvs0`, as
//! the kernel prints an address that never ran duplicate address detection,
//! newest first).
//!
//! Deviations a real node would not show: `maxelem` is raised
//! above 65536 when a set holds more entries (kube-proxy's fixed 65536 would
//! make `ipset add` fail on such a node), and `hashsize` stays 1024 where the
//! kernel grows it.

use std::collections::HashSet;

use crate::Shape;
use crate::model::{self, Kind, Net, Planner, Pod, Proto, ServiceSpec};
use crate::text::{self, push_host_port, push_ip, push_u64};

/// `sessionAffinityConfig.clientIP.timeoutSeconds` default.
const STICKY_SECONDS: u64 = 10_800;

/// The sets of `ipsetInfo`, in kube-proxy's order, with their types.
const SETS: [(&str, &str); 17] = [
    ("KUBE-LOOP-BACK", "hash:ip,port,ip"),
    ("KUBE-CLUSTER-IP", "hash:ip,port"),
    ("KUBE-EXTERNAL-IP", "hash:ip,port"),
    ("KUBE-EXTERNAL-IP-LOCAL", "hash:ip,port"),
    ("KUBE-LOAD-BALANCER", "hash:ip,port"),
    ("KUBE-LOAD-BALANCER-FW", "hash:ip,port"),
    ("KUBE-LOAD-BALANCER-LOCAL", "hash:ip,port"),
    ("KUBE-LOAD-BALANCER-SOURCE-IP", "hash:ip,port,ip"),
    ("KUBE-LOAD-BALANCER-SOURCE-CIDR", "hash:ip,port,net"),
    ("KUBE-NODE-PORT-TCP", "bitmap:port"),
    ("KUBE-NODE-PORT-LOCAL-TCP", "bitmap:port"),
    ("KUBE-NODE-PORT-UDP", "bitmap:port"),
    ("KUBE-NODE-PORT-LOCAL-UDP", "bitmap:port"),
    ("KUBE-HEALTH-CHECK-NODE-PORT", "bitmap:port"),
    ("KUBE-NODE-PORT-SCTP-HASH", "hash:ip,port"),
    ("KUBE-NODE-PORT-LOCAL-SCTP-HASH", "hash:ip,port"),
    ("KUBE-IPVS-IPS", "hash:ip"),
];
/// A set's name on a node of `v6`'s family: kube-proxy's `NewIPSet` makes
/// `KUBE-` `KUBE-6-` for IPv6 and cuts the name to ipset's 31 characters.
fn set_name(set: usize, v6: bool) -> String {
    let name = SETS[set].0;
    if !v6 {
        return name.to_owned();
    }
    let mut six = name.replacen("KUBE-", "KUBE-6-", 1);
    six.truncate(31);
    six
}

const LOOP_BACK: usize = 0;
const CLUSTER_IP: usize = 1;
const LOAD_BALANCER: usize = 4;
const LOAD_BALANCER_FW: usize = 5;
const LOAD_BALANCER_LOCAL: usize = 6;
const LOAD_BALANCER_SOURCE_IP: usize = 7;
const LOAD_BALANCER_SOURCE_CIDR: usize = 8;
const NODE_PORT_TCP: usize = 9;
const NODE_PORT_LOCAL_TCP: usize = 10;
const NODE_PORT_UDP: usize = 11;
const NODE_PORT_LOCAL_UDP: usize = 12;
const HEALTH_CHECK_NODE_PORT: usize = 13;
const IPVS_IPS: usize = 16;

/// One virtual server and its real servers (`addr`, port).
struct VirtualServer {
    proto: Proto,
    addr: u128,
    port: u16,
    persistent: bool,
    reals: Vec<(u128, u16)>,
}

/// Everything a node in IPVS mode holds for the Services.
struct Node {
    /// Entries of each set of [`SETS`], as `ipset save` prints them after
    /// the set name; bitmap sets hold port numbers in `ports`.
    entries: Vec<Vec<String>>,
    ports: Vec<Vec<u16>>,
    seen: HashSet<String>,
    servers: Vec<VirtualServer>,
    /// Addresses bound to `kube-ipvs0`, in binding order.
    bound: Vec<u128>,
    bound_seen: HashSet<u128>,
    v6: bool,
}

impl Node {
    fn add(&mut self, set: usize, entry: String) {
        if self.seen.insert(format!("{set} {entry}")) {
            self.entries[set].push(entry);
        }
    }

    fn add_port(&mut self, set: usize, port: u16) {
        self.ports[set].push(port);
    }

    fn bind(&mut self, addr: u128) {
        if self.bound_seen.insert(addr) {
            self.bound.push(addr);
            let mut e = String::new();
            push_ip(&mut e, addr, self.v6);
            self.add(IPVS_IPS, e);
        }
    }
}

/// `ip,proto:port` (the `hash:ip,port` entry form).
fn ip_port(addr: u128, proto: Proto, port: u16, v6: bool) -> String {
    let mut s = String::with_capacity(24);
    push_ip(&mut s, addr, v6);
    s.push(',');
    s.push_str(proto.as_str());
    s.push(':');
    push_u64(&mut s, u64::from(port));
    s
}

fn build(shape: &Shape) -> (Node, u128) {
    let mut planner = Planner::new(shape);
    let node_ip = planner.node_ip();
    let mut services: Vec<ServiceSpec> = Vec::new();
    let mut ports: Vec<(u32, u32)> = Vec::with_capacity(shape.services);
    while ports.len() < shape.services {
        let mut svc = planner.next_service();
        svc.ports.truncate(shape.services - ports.len());
        if svc.ports.is_empty() {
            break;
        }
        for pi in 0..svc.ports.len() {
            ports.push((services.len() as u32, pi as u32));
        }
        services.push(svc);
    }
    // kube-proxy walks its service map in Go's random order: the same
    // service-port order as the iptables dump of this node.
    let node = shape.node % shape.nodes.clamp(1, 256);
    let order_seed = model::mix(shape.seed, 0x5EED_0000 + u64::from(node));
    let mut order: Vec<u32> = (0..ports.len() as u32).collect();
    order.sort_by_cached_key(|&i| model::mix(order_seed, u64::from(i)));

    let mut n = Node {
        entries: vec![Vec::new(); SETS.len()],
        ports: vec![Vec::new(); SETS.len()],
        seen: HashSet::new(),
        servers: Vec::with_capacity(ports.len() * 3 / 2),
        bound: Vec::new(),
        bound_seen: HashSet::new(),
        v6: shape.ipv6,
    };
    let v6 = shape.ipv6;
    for &i in &order {
        let (s, p) = ports[i as usize];
        let svc = &services[s as usize];
        let spec = &svc.ports[p as usize];
        let proto = spec.proto;
        let all: Vec<(u128, u16)> = svc.pods.iter().map(|p| (p.addr, spec.target)).collect();
        let local: Vec<(u128, u16)> = svc
            .pods
            .iter()
            .filter(|p| p.local)
            .map(|p: &Pod| (p.addr, spec.target))
            .collect();
        let external = if svc.local { &local } else { &all };

        // Cluster IP.
        n.add(CLUSTER_IP, ip_port(svc.cluster_ip, proto, spec.port, v6));
        n.bind(svc.cluster_ip);
        n.servers.push(VirtualServer {
            proto,
            addr: svc.cluster_ip,
            port: spec.port,
            persistent: svc.affinity,
            reals: all.clone(),
        });
        for pod in svc.pods.iter().filter(|p| p.local) {
            let mut e = ip_port(pod.addr, proto, spec.target, v6);
            e.push(',');
            push_ip(&mut e, pod.addr, v6);
            n.add(LOOP_BACK, e);
        }

        // Load-balancer ingress IP.
        if svc.kind == Kind::LoadBalancer {
            let entry = ip_port(svc.lb_ip, proto, spec.port, v6);
            n.add(LOAD_BALANCER, entry.clone());
            if svc.local {
                n.add(LOAD_BALANCER_LOCAL, entry.clone());
            }
            let ranges = model::source_ranges(v6, svc.ranges);
            if !ranges.is_empty() {
                n.add(LOAD_BALANCER_FW, entry.clone());
                for cidr in ranges {
                    n.add(LOAD_BALANCER_SOURCE_CIDR, format!("{entry},{cidr}"));
                }
                if model::ranges_allow_node(svc.ranges) {
                    let mut e = entry.clone();
                    e.push(',');
                    push_ip(&mut e, svc.lb_ip, v6);
                    n.add(LOAD_BALANCER_SOURCE_IP, e);
                }
            }
            n.bind(svc.lb_ip);
            n.servers.push(VirtualServer {
                proto,
                addr: svc.lb_ip,
                port: spec.port,
                persistent: svc.affinity,
                reals: external.clone(),
            });
        }

        // Node port, on the node's address.
        if spec.node_port != 0 {
            let (set, local_set) = match proto {
                Proto::Tcp => (NODE_PORT_TCP, NODE_PORT_LOCAL_TCP),
                Proto::Udp => (NODE_PORT_UDP, NODE_PORT_LOCAL_UDP),
            };
            n.add_port(set, spec.node_port);
            if svc.local {
                n.add_port(local_set, spec.node_port);
            }
            n.servers.push(VirtualServer {
                proto,
                addr: node_ip,
                port: spec.node_port,
                persistent: svc.affinity,
                reals: external.clone(),
            });
        }
        if svc.hc_node_port != 0 && p == 0 {
            n.add_port(HEALTH_CHECK_NODE_PORT, svc.hc_node_port);
        }
    }
    (n, node_ip)
}

/// The whole IPVS-mode node for `shape`: `iptables-save`, `ipset save`,
/// `ipvsadm -Ln` and `ip addr`, concatenated (`ip6tables-save` and the
/// `KUBE-6-*` sets with `shape.ipv6`). `shape.layout` and `shape.counters`
/// do not apply and are ignored.
pub fn generate_ipvs(shape: &Shape) -> String {
    let (node, node_ip) = build(shape);
    let net = Net { v6: shape.ipv6 };
    let node_index = shape.node % shape.nodes.clamp(1, 256);
    let entries: usize = node.entries.iter().map(Vec::len).sum();
    let reals: usize = node.servers.iter().map(|v| v.reals.len()).sum();
    let mut out =
        String::with_capacity(16_384 + entries * 48 + reals * 72 + node.servers.len() * 40);

    iptables(&mut out, shape, &node, &net, node_index);
    ipset(&mut out, shape, &node, node_index);
    ipvsadm(&mut out, &node);
    ip_addr(&mut out, &node, node_ip, &net, node_index);
    out
}

/// Number of IPVS virtual servers of the node of `shape`, for sizing
/// benchmarks.
pub fn ipvs_virtual_server_count(shape: &Shape) -> usize {
    build(shape).0.servers.len()
}

fn iptables(out: &mut String, shape: &Shape, node: &Node, net: &Net, index: u32) {
    let start = out.len();
    iptables_rules(out, shape, node, net, index);
    if net.v6 {
        // The same rules in ip6tables: the IPv6 set names and ICMPv6 rejects.
        let mut six = out
            .split_off(start)
            .replace("iptables-save v1.8.9", "ip6tables-save v1.8.9")
            .replace("icmp-port-unreachable", "icmp6-port-unreachable");
        for (set, &(name, _)) in SETS.iter().enumerate() {
            six = six.replace(
                &format!("--match-set {name} "),
                &format!("--match-set {} ", set_name(set, true)),
            );
        }
        out.push_str(&six);
    }
}

fn iptables_rules(out: &mut String, shape: &Shape, node: &Node, net: &Net, index: u32) {
    let nonempty = |set: usize| !node.entries[set].is_empty() || !node.ports[set].is_empty();
    let when = 1_750_149_669u64 + model::mix(shape.seed, 7) % 2_592_000 + 11 * u64::from(index);
    let date = text::ctime(when);
    let header = |out: &mut String, table: &str| {
        out.push_str("# Generated by iptables-save v1.8.9 (nf_tables) on ");
        out.push_str(&date);
        out.push_str("\n*");
        out.push_str(table);
        out.push('\n');
    };
    let footer = |out: &mut String| {
        out.push_str("COMMIT\n# Completed on ");
        out.push_str(&date);
        out.push('\n');
    };
    let chains = |out: &mut String, builtin: &[&str], user: &[&str]| {
        for c in builtin {
            out.push(':');
            out.push_str(c);
            out.push_str(" ACCEPT [0:0]\n");
        }
        for c in user {
            out.push(':');
            out.push_str(c);
            out.push_str(" - [0:0]\n");
        }
    };

    // filter
    header(out, "filter");
    chains(
        out,
        &["INPUT", "FORWARD", "OUTPUT"],
        &[
            "KUBE-FORWARD",
            "KUBE-IPVS-FILTER",
            "KUBE-IPVS-OUT-FILTER",
            "KUBE-KUBELET-CANARY",
            "KUBE-NODE-PORT",
            "KUBE-PROXY-CANARY",
            "KUBE-PROXY-FIREWALL",
            "KUBE-SOURCE-RANGES-FIREWALL",
        ],
    );
    out.push_str(FILTER_HEAD);
    if nonempty(LOAD_BALANCER_FW) {
        out.push_str("-A KUBE-PROXY-FIREWALL -m comment --comment \"Kubernetes service load balancer ip + port for load balancer with sourceRange\" -m set --match-set KUBE-LOAD-BALANCER-FW dst,dst -j KUBE-SOURCE-RANGES-FIREWALL\n");
    }
    if nonempty(LOAD_BALANCER_SOURCE_CIDR) {
        out.push_str("-A KUBE-SOURCE-RANGES-FIREWALL -m comment --comment \"Kubernetes service load balancer ip + port + source cidr for packet filter purpose\" -m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src -j RETURN\n");
    }
    if nonempty(LOAD_BALANCER_SOURCE_IP) {
        out.push_str("-A KUBE-SOURCE-RANGES-FIREWALL -m comment --comment \"Kubernetes service load balancer ip + port + source IP for packet filter purpose\" -m set --match-set KUBE-LOAD-BALANCER-SOURCE-IP dst,dst,src -j RETURN\n");
    }
    out.push_str("-A KUBE-SOURCE-RANGES-FIREWALL -j DROP\n");
    footer(out);

    // nat
    header(out, "nat");
    chains(
        out,
        &["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"],
        &[
            "KUBE-KUBELET-CANARY",
            "KUBE-LOAD-BALANCER",
            "KUBE-MARK-MASQ",
            "KUBE-NODE-PORT",
            "KUBE-POSTROUTING",
            "KUBE-PROXY-CANARY",
            "KUBE-SERVICES",
        ],
    );
    out.push_str(
        "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n",
    );
    out.push_str(
        "-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n",
    );
    out.push_str("-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n");
    if nonempty(LOAD_BALANCER_LOCAL) {
        out.push_str("-A KUBE-LOAD-BALANCER -m comment --comment \"Kubernetes service load balancer ip + port with externalTrafficPolicy=local\" -m set --match-set KUBE-LOAD-BALANCER-LOCAL dst,dst -j RETURN\n");
    }
    out.push_str("-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ\n");
    out.push_str("-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n");
    for (local, set, proto) in [
        (true, NODE_PORT_LOCAL_TCP, "TCP"),
        (false, NODE_PORT_TCP, "TCP"),
        (true, NODE_PORT_LOCAL_UDP, "UDP"),
        (false, NODE_PORT_UDP, "UDP"),
    ] {
        if !nonempty(set) {
            continue;
        }
        out.push_str("-A KUBE-NODE-PORT -p ");
        out.push_str(&proto.to_ascii_lowercase());
        out.push_str(" -m comment --comment \"Kubernetes nodeport ");
        out.push_str(proto);
        if local {
            out.push_str(" port with externalTrafficPolicy=local\" -m set --match-set ");
            out.push_str(SETS[set].0);
            out.push_str(" dst -j RETURN\n");
        } else {
            out.push_str(" port for masquerade purpose\" -m set --match-set ");
            out.push_str(SETS[set].0);
            out.push_str(" dst -j KUBE-MARK-MASQ\n");
        }
    }
    if nonempty(LOOP_BACK) {
        out.push_str("-A KUBE-POSTROUTING -m comment --comment \"Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose\" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE\n");
    }
    out.push_str("-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n");
    out.push_str("-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n");
    out.push_str("-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully\n");
    if nonempty(LOAD_BALANCER) {
        out.push_str("-A KUBE-SERVICES -m comment --comment \"Kubernetes service lb portal\" -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER\n");
    }
    if nonempty(CLUSTER_IP) {
        out.push_str("-A KUBE-SERVICES ! -s ");
        out.push_str(net.cluster_cidr());
        out.push_str(" -m comment --comment \"Kubernetes service cluster ip + port for masquerade purpose\" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ\n");
    }
    out.push_str("-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT\n");
    if nonempty(CLUSTER_IP) {
        out.push_str("-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\n");
    }
    if nonempty(LOAD_BALANCER) {
        out.push_str("-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT\n");
    }
    footer(out);
}

/// The filter rules that do not depend on the Services.
const FILTER_HEAD: &str = "\
-A INPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-FILTER
-A INPUT -m comment --comment \"kube-proxy firewall rules\" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment \"kubernetes health check rules\" -j KUBE-NODE-PORT
-A FORWARD -m comment --comment \"kube-proxy firewall rules\" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD
-A OUTPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-OUT-FILTER
-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-IPVS-FILTER -m set --match-set KUBE-LOAD-BALANCER dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP-LOCAL dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j RETURN
-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT --reject-with icmp-port-unreachable
-A KUBE-NODE-PORT -m comment --comment \"Kubernetes health check node port\" -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j ACCEPT
";

fn ipset(out: &mut String, shape: &Shape, node: &Node, index: u32) {
    for (i, &(_, kind)) in SETS.iter().enumerate() {
        let name = &set_name(i, node.v6);
        out.push_str("create ");
        out.push_str(name);
        out.push(' ');
        out.push_str(kind);
        if kind == "bitmap:port" {
            out.push_str(" range 0-65535\n");
            let mut ports = node.ports[i].clone();
            // A bitmap lists its members in port order, once each.
            ports.sort_unstable();
            ports.dedup();
            for p in ports {
                out.push_str("add ");
                out.push_str(name);
                out.push(' ');
                push_u64(out, u64::from(p));
                out.push('\n');
            }
            continue;
        }
        let len = node.entries[i].len();
        let maxelem = if len > 65_536 {
            len.next_power_of_two()
        } else {
            65_536
        };
        let initval =
            model::mix(shape.seed, 0x1_5E70 + ((i as u64) << 8) + u64::from(index)) as u32;
        out.push_str(if node.v6 {
            " family inet6 hashsize 1024 maxelem "
        } else {
            " family inet hashsize 1024 maxelem "
        });
        push_u64(out, maxelem as u64);
        out.push_str(&format!(" bucketsize 12 initval {initval:#010x}\n"));
        for e in &node.entries[i] {
            out.push_str("add ");
            out.push_str(name);
            out.push(' ');
            out.push_str(e);
            out.push('\n');
        }
    }
}

fn ipvsadm(out: &mut String, node: &Node) {
    out.push_str("IP Virtual Server version 1.2.1 (size=4096)\n");
    out.push_str("Prot LocalAddress:Port Scheduler Flags\n");
    out.push_str("  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n");
    let mut order: Vec<&VirtualServer> = node.servers.iter().collect();
    order.sort_by_key(|v| (v.proto == Proto::Udp, v.addr, v.port));
    let mut scratch = String::with_capacity(48);
    for vs in order {
        out.push_str(match vs.proto {
            Proto::Tcp => "TCP  ",
            Proto::Udp => "UDP  ",
        });
        push_host_port(out, vs.addr, vs.port, node.v6);
        out.push_str(" rr");
        if vs.persistent {
            out.push_str(" persistent ");
            push_u64(out, STICKY_SECONDS);
        }
        out.push('\n');
        let mut reals = vs.reals.clone();
        reals.sort_unstable();
        for (addr, port) in reals {
            scratch.clear();
            push_host_port(&mut scratch, addr, port, node.v6);
            // "  -> %-28s %-7s %-6d %-10u %-10u"
            out.push_str("  -> ");
            out.push_str(&scratch);
            for _ in scratch.len()..28 {
                out.push(' ');
            }
            out.push_str(" Masq    1      0          0         \n");
        }
    }
}

/// A MAC address for interface `n` of node `index`, locally administered.
fn push_mac(out: &mut String, index: u32, n: u32) {
    let v = model::mix(u64::from(index), 0x3AC + u64::from(n));
    let bytes = [
        0x02 | ((v as u8) & 0xfc),
        (v >> 8) as u8,
        (v >> 16) as u8,
        (v >> 24) as u8,
        (v >> 32) as u8,
        (v >> 40) as u8,
    ];
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        out.push_str(&format!("{b:02x}"));
    }
}

fn ip_addr(out: &mut String, node: &Node, node_ip: u128, net: &Net, index: u32) {
    out.push_str("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n");
    out.push_str("    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n");
    out.push_str("    inet 127.0.0.1/8 scope host lo\n");
    out.push_str("       valid_lft forever preferred_lft forever\n");
    out.push_str("2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP group default qlen 1000\n");
    out.push_str("    link/ether ");
    push_mac(out, index, 0);
    if net.v6 {
        out.push_str(" brd ff:ff:ff:ff:ff:ff\n    inet6 ");
        push_ip(out, node_ip, true);
        out.push_str("/64 scope global \n");
    } else {
        out.push_str(" brd ff:ff:ff:ff:ff:ff\n    inet ");
        push_ip(out, node_ip, false);
        out.push_str("/16 brd 192.168.255.255 scope global eth0\n");
    }
    out.push_str("       valid_lft forever preferred_lft forever\n");
    out.push_str("3: cni0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UP group default qlen 1000\n");
    out.push_str("    link/ether ");
    push_mac(out, index, 1);
    // The pod bridge holds .1 (::1) of the node's pod /24 (/64).
    let bridge = net.pod_ip(index, 0) - 1;
    if net.v6 {
        out.push_str(" brd ff:ff:ff:ff:ff:ff\n    inet6 ");
        push_ip(out, bridge, true);
        out.push_str("/64 scope global \n");
    } else {
        out.push_str(" brd ff:ff:ff:ff:ff:ff\n    inet ");
        push_ip(out, bridge, false);
        out.push_str("/24 brd ");
        push_ip(out, bridge + 254, false);
        out.push_str(" scope global cni0\n");
    }
    out.push_str("       valid_lft forever preferred_lft forever\n");
    out.push_str(
        "4: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default \n",
    );
    out.push_str("    link/ether ");
    push_mac(out, index, 2);
    out.push_str(" brd ff:ff:ff:ff:ff:ff\n");
    // The kernel lists an interface's IPv6 addresses of one scope newest first
    // (`ipv6_link_dev_addr`), IPv4 ones in the order added.
    let bound: Box<dyn Iterator<Item = &u128>> = if net.v6 {
        Box::new(node.bound.iter().rev())
    } else {
        Box::new(node.bound.iter())
    };
    for &addr in bound {
        if net.v6 {
            // Never up, so duplicate address detection never ran.
            out.push_str("    inet6 ");
            push_ip(out, addr, true);
            out.push_str("/128 scope global tentative \n");
        } else {
            out.push_str("    inet ");
            push_ip(out, addr, false);
            out.push_str("/32 scope global kube-ipvs0\n");
        }
        out.push_str("       valid_lft forever preferred_lft forever\n");
    }
}
