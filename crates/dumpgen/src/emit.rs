//! Writing the dump: the cluster model turned into `iptables-save` text.
//!
//! kube-proxy writes rules in the order of its per-service loop, but
//! `iptables-save` prints them per chain: built-in chains first, then the
//! user chains sorted by name, each with its rules in insertion order. So the
//! generator sorts the chain names once and then writes every chain's rules
//! by walking the model for that chain only.
//!
//! Each rule is printed as `iptables-save` prints it back, not as kube-proxy
//! wrote it: addresses before matches (`-d 10.96.0.1/32 -p tcp -m comment
//! ... -m tcp --dport 443`), host addresses with `/32` or `/128`, `--or-mark`
//! and `--xor-mark` as `--set-xmark`, `REJECT` with its `--reject-with`, and
//! probabilities as the kernel stores them.

use crate::model::{self, Kind, Net, Planner, PortSpec, ServiceSpec, SplitMix};
use crate::text::{self, push_host, push_host_port, push_save_string, push_u64};
use crate::{Layout, Shape};

/// kube-proxy's `largeClusterEndpointsThreshold` (the legacy proxier called
/// it `endpointChainsNumberThreshold`): above this many endpoints in total,
/// rules in `KUBE-SEP-*` chains and the endpoint-picking rules in
/// `KUBE-SVC-*`/`KUBE-SVL-*`/`KUBE-XLB-*` chains lose their comments.
pub(crate) const LARGE_CLUSTER_ENDPOINTS: usize = 1000;

/// `sessionAffinityConfig.clientIP.timeoutSeconds` default.
const STICKY_SECONDS: &str = "10800";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Table {
    Filter,
    Nat,
}

/// A rule whose text never changes: `(table, chain, rest of the rule)`.
pub(crate) type FixedRule = (Table, &'static str, &'static str);

const LB_FW_JUMP: &str = "-m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL";
const HC_JUMP: &str =
    "-m comment --comment \"kubernetes health check service ports\" -j KUBE-NODEPORTS";
const EXT_JUMP: &str = "-m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES";
const FWD_JUMP: &str = "-m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD";
const SVC_JUMP_FILTER: &str = "-m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES";
const FIREWALL_JUMP: &str = "-j KUBE-FIREWALL";
const SVC_JUMP_NAT: &str = "-m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES";
const LOCALNET_DROP: &str = "! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP";
const MARK_DROP: &str = "-m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 -j DROP";
const FORWARD_RULES: [&str; 3] = [
    "-m conntrack --ctstate INVALID -j DROP",
    "-m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT",
    "-m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
];
const POSTROUTING_RULES: [&str; 3] = [
    "-m mark ! --mark 0x4000/0x4000 -j RETURN",
    "-j MARK --set-xmark 0x4000/0x0",
    "-m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully",
];
const NODEPORTS_TAIL: &str = "-m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS";
const NODEPORTS_TAIL_V6: &str = "! -d ::1/128 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS";

/// The rules kube-proxy and kubelet install whatever the Services are, in
/// the order `iptables-save` prints them within each chain. The jumps from
/// the built-in chains are in the order seen on real nodes (they are
/// prepended one by one, kubelet's first).
pub(crate) fn fixed_rules(layout: Layout, v6: bool) -> Vec<FixedRule> {
    use Table::{Filter, Nat};
    let mut r: Vec<FixedRule> = Vec::with_capacity(24);
    match layout {
        Layout::Modern => {
            // kubelet 1.27+ only creates KUBE-FIREWALL (for IPv4); on IPv6
            // kube-proxy creates the chain empty and jumps to it first.
            if v6 {
                r.push((Filter, "INPUT", FIREWALL_JUMP));
            }
            r.extend([
                (Filter, "INPUT", LB_FW_JUMP),
                (Filter, "INPUT", HC_JUMP),
                (Filter, "INPUT", EXT_JUMP),
            ]);
            if !v6 {
                r.push((Filter, "INPUT", FIREWALL_JUMP));
            }
            r.extend([
                (Filter, "FORWARD", LB_FW_JUMP),
                (Filter, "FORWARD", FWD_JUMP),
                (Filter, "FORWARD", SVC_JUMP_FILTER),
                (Filter, "FORWARD", EXT_JUMP),
            ]);
            if v6 {
                r.push((Filter, "OUTPUT", FIREWALL_JUMP));
            }
            r.extend([
                (Filter, "OUTPUT", LB_FW_JUMP),
                (Filter, "OUTPUT", SVC_JUMP_FILTER),
            ]);
            if !v6 {
                r.push((Filter, "OUTPUT", FIREWALL_JUMP));
                r.push((Filter, "KUBE-FIREWALL", LOCALNET_DROP));
            }
        }
        Layout::Legacy => {
            r.extend([
                (Filter, "INPUT", HC_JUMP),
                (Filter, "INPUT", EXT_JUMP),
                (Filter, "INPUT", FIREWALL_JUMP),
                (Filter, "FORWARD", FWD_JUMP),
                (Filter, "FORWARD", SVC_JUMP_FILTER),
                (Filter, "FORWARD", EXT_JUMP),
                (Filter, "OUTPUT", SVC_JUMP_FILTER),
                (Filter, "OUTPUT", FIREWALL_JUMP),
                (Filter, "KUBE-FIREWALL", MARK_DROP),
            ]);
            if !v6 {
                r.push((Filter, "KUBE-FIREWALL", LOCALNET_DROP));
            }
        }
    }
    for rule in FORWARD_RULES {
        r.push((Filter, "KUBE-FORWARD", rule));
    }
    r.extend([
        (Nat, "PREROUTING", SVC_JUMP_NAT),
        (Nat, "OUTPUT", SVC_JUMP_NAT),
        (
            Nat,
            "POSTROUTING",
            "-m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING",
        ),
    ]);
    if layout == Layout::Legacy {
        r.push((Nat, "KUBE-MARK-DROP", "-j MARK --set-xmark 0x8000/0x8000"));
    }
    r.push((Nat, "KUBE-MARK-MASQ", "-j MARK --set-xmark 0x4000/0x4000"));
    for rule in POSTROUTING_RULES {
        r.push((Nat, "KUBE-POSTROUTING", rule));
    }
    r
}

fn nodeports_tail(layout: Layout, v6: bool) -> &'static str {
    if v6 && layout == Layout::Modern {
        NODEPORTS_TAIL_V6
    } else {
        NODEPORTS_TAIL
    }
}

/// User chains of the filter table (already sorted).
fn filter_chains(layout: Layout) -> &'static [&'static str] {
    match layout {
        Layout::Modern => &[
            "KUBE-EXTERNAL-SERVICES",
            "KUBE-FIREWALL",
            "KUBE-FORWARD",
            "KUBE-KUBELET-CANARY",
            "KUBE-NODEPORTS",
            "KUBE-PROXY-CANARY",
            "KUBE-PROXY-FIREWALL",
            "KUBE-SERVICES",
        ],
        Layout::Legacy => &[
            "KUBE-EXTERNAL-SERVICES",
            "KUBE-FIREWALL",
            "KUBE-FORWARD",
            "KUBE-KUBELET-CANARY",
            "KUBE-NODEPORTS",
            "KUBE-PROXY-CANARY",
            "KUBE-SERVICES",
        ],
    }
}

/// Fixed user chains of the nat table.
fn nat_fixed_chains(layout: Layout) -> &'static [&'static str] {
    match layout {
        Layout::Modern => &[
            "KUBE-KUBELET-CANARY",
            "KUBE-MARK-MASQ",
            "KUBE-NODEPORTS",
            "KUBE-POSTROUTING",
            "KUBE-PROXY-CANARY",
            "KUBE-SERVICES",
        ],
        Layout::Legacy => &[
            "KUBE-KUBELET-CANARY",
            "KUBE-MARK-DROP",
            "KUBE-MARK-MASQ",
            "KUBE-NODEPORTS",
            "KUBE-POSTROUTING",
            "KUBE-PROXY-CANARY",
            "KUBE-SERVICES",
        ],
    }
}

fn mangle_chains(layout: Layout) -> &'static [&'static str] {
    match layout {
        // KUBE-IPTABLES-HINT: kubelet 1.24+.
        Layout::Modern => &[
            "KUBE-IPTABLES-HINT",
            "KUBE-KUBELET-CANARY",
            "KUBE-PROXY-CANARY",
        ],
        Layout::Legacy => &["KUBE-KUBELET-CANARY", "KUBE-PROXY-CANARY"],
    }
}

/// One Service port with its chain tag and where its endpoints start.
struct Port {
    svc: u32,
    port: u32,
    hash: [u8; 16],
    ep_start: u32,
}

/// One endpoint chain: `eps[i]` belongs to `ports[port]` and to pod `pod`
/// of that Service.
struct Ep {
    port: u32,
    pod: u32,
    hash: [u8; 16],
}

/// The whole cluster as seen from one node.
struct Cluster {
    net: Net,
    node_ip: u128,
    services: Vec<ServiceSpec>,
    ports: Vec<Port>,
    eps: Vec<Ep>,
}

impl Cluster {
    fn build(shape: &Shape) -> Cluster {
        let mut planner = Planner::new(shape);
        let mut services = Vec::new();
        let mut ports = Vec::with_capacity(shape.services);
        let mut eps = Vec::new();
        let mut key = Vec::with_capacity(128);
        let v6 = shape.ipv6;
        while ports.len() < shape.services {
            let mut svc = planner.next_service();
            svc.ports.truncate(shape.services - ports.len());
            let svc_index = services.len() as u32;
            for (pi, p) in svc.ports.iter().enumerate() {
                key.clear();
                key.extend_from_slice(p.name.as_bytes());
                key.extend_from_slice(p.proto.as_str().as_bytes());
                let port_index = ports.len() as u32;
                ports.push(Port {
                    svc: svc_index,
                    port: pi as u32,
                    hash: text::chain_hash(&key),
                    ep_start: eps.len() as u32,
                });
                let base = key.len();
                let mut ep_text = String::with_capacity(48);
                for (i, pod) in svc.pods.iter().enumerate() {
                    ep_text.clear();
                    push_host_port(&mut ep_text, pod.addr, p.target, v6);
                    key.truncate(base);
                    key.extend_from_slice(ep_text.as_bytes());
                    eps.push(Ep {
                        port: port_index,
                        pod: i as u32,
                        hash: text::chain_hash(&key),
                    });
                }
            }
            services.push(svc);
        }
        Cluster {
            net: Net { v6 },
            node_ip: planner.node_ip(),
            services,
            ports,
            eps,
        }
    }

    fn svc(&self, p: &Port) -> &ServiceSpec {
        &self.services[p.svc as usize]
    }

    fn spec(&self, p: &Port) -> &PortSpec {
        &self.svc(p).ports[p.port as usize]
    }

    fn port_eps(&self, p: &Port) -> &[Ep] {
        let n = self.svc(p).pods.len();
        &self.eps[p.ep_start as usize..p.ep_start as usize + n]
    }
}

/// A per-Service-port (or per-endpoint) chain of the nat table.
#[derive(Clone, Copy)]
enum NatChain {
    Fixed(&'static str),
    Svc(u32),
    Svl(u32),
    Ext(u32),
    Fw(u32),
    Xlb(u32),
    Sep(u32),
}

const SVC: &str = "KUBE-SVC-";
const SVL: &str = "KUBE-SVL-";
const EXT: &str = "KUBE-EXT-";
const FW: &str = "KUBE-FW-";
const XLB: &str = "KUBE-XLB-";
const SEP: &str = "KUBE-SEP-";

/// A chain name as a fixed-size, zero-padded key: sorting keys sorts names
/// the way `strcmp` does.
type Key = [u8; 28];

fn key(prefix: &str, hash: &[u8]) -> Key {
    let mut k = [0u8; 28];
    k[..prefix.len()].copy_from_slice(prefix.as_bytes());
    k[prefix.len()..prefix.len() + hash.len()].copy_from_slice(hash);
    k
}

fn hash_str(hash: &[u8; 16]) -> &str {
    std::str::from_utf8(hash).unwrap_or("")
}

/// The output buffer plus what every rule needs to know.
struct Out {
    s: String,
    scratch: String,
    counters: Option<SplitMix>,
    v6: bool,
    large: bool,
    layout: Layout,
}

impl Out {
    /// Starts a rule: optional `[packets:bytes] ` then `-A <chain>`.
    fn rule(&mut self, chain: &str) {
        self.counter_prefix();
        self.s.push_str("-A ");
        self.s.push_str(chain);
    }

    /// Starts a rule in a hash-named chain.
    fn rule_h(&mut self, prefix: &str, hash: &[u8; 16]) {
        self.counter_prefix();
        self.s.push_str("-A ");
        self.s.push_str(prefix);
        self.s.push_str(hash_str(hash));
    }

    fn counter_prefix(&mut self) {
        if let Some(rng) = self.counters.as_mut() {
            // Most service rules see little traffic; a few see a lot.
            let r = rng.next_u64();
            let packets = match r % 50 {
                0..=34 => 0,
                35..=46 => (r >> 8) % 200,
                47..=48 => (r >> 8) % 20_000,
                _ => (r >> 8) % 2_000_000,
            };
            let bytes = packets * (40 + (r >> 40) % 1400);
            self.s.push('[');
            push_u64(&mut self.s, packets);
            self.s.push(':');
            push_u64(&mut self.s, bytes);
            self.s.push_str("] ");
        }
    }

    fn p(&mut self, piece: &str) {
        self.s.push_str(piece);
    }

    fn jump_h(&mut self, prefix: &str, hash: &[u8; 16]) {
        self.s.push_str(" -j ");
        self.s.push_str(prefix);
        self.s.push_str(hash_str(hash));
    }

    fn end(&mut self) {
        self.s.push('\n');
    }

    /// ` -m comment --comment <parts joined>`.
    fn comment(&mut self, parts: &[&str]) {
        self.scratch.clear();
        for part in parts {
            self.scratch.push_str(part);
        }
        self.s.push_str(" -m comment --comment ");
        push_save_string(&mut self.s, &self.scratch);
    }

    /// ` -s <addr>/32` style host match.
    fn host(&mut self, flag: &str, addr: u128) {
        self.s.push_str(flag);
        push_host(&mut self.s, addr, self.v6);
    }

    /// ` -p tcp`.
    fn proto(&mut self, spec: &PortSpec) {
        self.s.push_str(" -p ");
        self.s.push_str(spec.proto.as_str());
    }

    /// ` -m tcp --dport 80`.
    fn dport(&mut self, spec: &PortSpec, port: u16) {
        self.s.push_str(" -m ");
        self.s.push_str(spec.proto.as_str());
        self.s.push_str(" --dport ");
        push_u64(&mut self.s, u64::from(port));
    }

    fn reject(&mut self) {
        self.s.push_str(if self.v6 {
            " -j REJECT --reject-with icmp6-port-unreachable"
        } else {
            " -j REJECT --reject-with icmp-port-unreachable"
        });
    }

    fn recent_mask(&self) -> &'static str {
        if self.v6 {
            " --mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff --rsource"
        } else {
            " --mask 255.255.255.255 --rsource"
        }
    }
}

/// What kube-proxy decides about one Service port before writing rules.
struct Facts {
    n: usize,
    local_n: usize,
    np: bool,
    lb: bool,
    local: bool,
    ranges: usize,
}

impl Facts {
    fn of(svc: &ServiceSpec, spec: &PortSpec) -> Facts {
        Facts {
            n: svc.pods.len(),
            local_n: svc.local_pods(),
            np: spec.node_port != 0,
            lb: svc.kind == Kind::LoadBalancer,
            local: svc.local,
            ranges: model::source_ranges(false, svc.ranges).len(),
        }
    }

    /// Modern `hasExternalEndpoints`.
    fn has_external(&self) -> bool {
        self.n > 0 && (!self.local || self.local_n > 0)
    }

    fn uses_fw(&self) -> bool {
        self.n > 0 && self.lb && self.ranges > 0
    }
}

/// Builds the whole dump.
pub(crate) fn generate(shape: &Shape) -> String {
    let cluster = Cluster::build(shape);
    let layout = shape.layout;
    let v6 = shape.ipv6;
    let total_eps = cluster.eps.len();

    let node = shape.node % shape.nodes.clamp(1, 256);
    let planned: usize = model::fixed_rule_count(layout, v6)
        + cluster
            .ports
            .iter()
            .map(|p| model::port_rule_count(cluster.svc(p), cluster.spec(p), layout))
            .sum::<usize>();
    // Measured bytes per rule, chain lines included, rounded up a little.
    let large = total_eps > LARGE_CLUSTER_ENDPOINTS;
    let per_rule =
        if large { 118 } else { 172 } + 10 * usize::from(shape.counters) + 10 * usize::from(v6);
    let capacity = 8192 + planned * per_rule;

    let mut out = Out {
        s: String::with_capacity(capacity),
        scratch: String::with_capacity(256),
        counters: shape
            .counters
            .then(|| SplitMix::new(model::mix(shape.seed, 0xC0_FFEE + u64::from(node)))),
        v6,
        large,
        layout,
    };

    // Go map iteration order: kube-proxy walks its service map in a random
    // order, which is the order of KUBE-SERVICES, KUBE-NODEPORTS and friends.
    let mut order: Vec<u32> = (0..cluster.ports.len() as u32).collect();
    let order_seed = model::mix(shape.seed, 0x5EED_0000 + u64::from(node));
    order.sort_by_cached_key(|&i| model::mix(order_seed, u64::from(i)));

    let (base, prog, version) = match layout {
        Layout::Legacy => (1_664_891_261u64, "iptables-save", "v1.8.7"),
        Layout::Modern => (1_750_149_669u64, "iptables-save", "v1.8.9 (nf_tables)"),
    };
    let prog = if v6 {
        format!("ip6{}", &prog[2..])
    } else {
        prog.to_owned()
    };
    let when = base + model::mix(shape.seed, 7) % 2_592_000 + 11 * u64::from(node);
    let date = text::ctime(when);
    let mut policy_rng = SplitMix::new(model::mix(shape.seed, 0xB17 + u64::from(node)));
    let fixed = fixed_rules(layout, v6);

    // mangle
    begin_table(&mut out, &prog, version, &date, "mangle");
    for chain in ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"] {
        policy_line(&mut out, chain, &mut policy_rng);
    }
    for chain in mangle_chains(layout) {
        user_chain_line(&mut out, chain);
    }
    end_table(&mut out, &date);

    // filter
    begin_table(&mut out, &prog, version, &date, "filter");
    for chain in ["INPUT", "FORWARD", "OUTPUT"] {
        policy_line(&mut out, chain, &mut policy_rng);
    }
    for chain in filter_chains(layout) {
        user_chain_line(&mut out, chain);
    }
    for chain in ["INPUT", "FORWARD", "OUTPUT"]
        .iter()
        .chain(filter_chains(layout))
    {
        fixed_chain_rules(&mut out, &fixed, Table::Filter, chain);
        match *chain {
            "KUBE-SERVICES" => filter_services(&mut out, &cluster, &order),
            "KUBE-EXTERNAL-SERVICES" => filter_external(&mut out, &cluster, &order),
            "KUBE-NODEPORTS" => filter_nodeports(&mut out, &cluster, &order),
            "KUBE-PROXY-FIREWALL" => filter_proxy_firewall(&mut out, &cluster, &order),
            _ => {}
        }
    }
    end_table(&mut out, &date);

    // nat
    begin_table(&mut out, &prog, version, &date, "nat");
    for chain in ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"] {
        policy_line(&mut out, chain, &mut policy_rng);
    }
    let chains = nat_chains(&cluster, layout);
    for &(k, _) in &chains {
        out.s.push(':');
        let len = k.iter().position(|&b| b == 0).unwrap_or(k.len());
        out.s.push_str(std::str::from_utf8(&k[..len]).unwrap_or(""));
        out.s.push_str(" - [0:0]\n");
    }
    for chain in ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"] {
        fixed_chain_rules(&mut out, &fixed, Table::Nat, chain);
    }
    for &(_, chain) in &chains {
        match chain {
            NatChain::Fixed(name) => {
                fixed_chain_rules(&mut out, &fixed, Table::Nat, name);
                match name {
                    "KUBE-SERVICES" => {
                        nat_services(&mut out, &cluster, &order);
                        out.rule("KUBE-SERVICES");
                        out.p(" ");
                        out.p(nodeports_tail(layout, v6));
                        out.end();
                    }
                    "KUBE-NODEPORTS" => nat_nodeports(&mut out, &cluster, &order),
                    _ => {}
                }
            }
            NatChain::Svc(i) => svc_chain(&mut out, &cluster, i),
            NatChain::Svl(i) => svl_chain(&mut out, &cluster, i),
            NatChain::Ext(i) => ext_chain(&mut out, &cluster, i),
            NatChain::Fw(i) => fw_chain(&mut out, &cluster, i),
            NatChain::Xlb(i) => xlb_chain(&mut out, &cluster, i),
            NatChain::Sep(e) => sep_chain(&mut out, &cluster, e),
        }
    }
    end_table(&mut out, &date);
    out.s
}

fn begin_table(out: &mut Out, prog: &str, version: &str, date: &str, table: &str) {
    for piece in [
        "# Generated by ",
        prog,
        " ",
        version,
        " on ",
        date,
        "\n*",
        table,
        "\n",
    ] {
        out.p(piece);
    }
}

fn end_table(out: &mut Out, date: &str) {
    for piece in ["COMMIT\n# Completed on ", date, "\n"] {
        out.p(piece);
    }
}

/// `:CHAIN ACCEPT [packets:bytes]` for a built-in chain; `iptables-save`
/// prints these counters with or without `-c`.
fn policy_line(out: &mut Out, chain: &str, rng: &mut SplitMix) {
    let packets = rng.below(5_000_000);
    let bytes = packets * (60 + rng.below(900));
    out.p(":");
    out.p(chain);
    out.p(" ACCEPT [");
    push_u64(&mut out.s, packets);
    out.p(":");
    push_u64(&mut out.s, bytes);
    out.p("]\n");
}

fn user_chain_line(out: &mut Out, chain: &str) {
    out.p(":");
    out.p(chain);
    out.p(" - [0:0]\n");
}

fn fixed_chain_rules(out: &mut Out, fixed: &[FixedRule], table: Table, chain: &str) {
    for &(t, c, rest) in fixed {
        if t == table && c == chain {
            out.rule(c);
            out.p(" ");
            out.p(rest);
            out.end();
        }
    }
}

/// All nat user chains, sorted by name.
fn nat_chains(cluster: &Cluster, layout: Layout) -> Vec<(Key, NatChain)> {
    let mut chains: Vec<(Key, NatChain)> =
        Vec::with_capacity(cluster.eps.len() + cluster.ports.len() * 2 + 8);
    for name in nat_fixed_chains(layout) {
        chains.push((key(name, b""), NatChain::Fixed(name)));
    }
    for (i, p) in cluster.ports.iter().enumerate() {
        let i = i as u32;
        let f = Facts::of(cluster.svc(p), cluster.spec(p));
        if f.n > 0 {
            chains.push((key(SVC, &p.hash), NatChain::Svc(i)));
        }
        match layout {
            Layout::Modern => {
                if f.n > 0 && (f.np || f.lb) {
                    chains.push((key(EXT, &p.hash), NatChain::Ext(i)));
                }
                if f.local && f.local_n > 0 {
                    chains.push((key(SVL, &p.hash), NatChain::Svl(i)));
                }
                if f.uses_fw() {
                    chains.push((key(FW, &p.hash), NatChain::Fw(i)));
                }
            }
            Layout::Legacy => {
                // The legacy proxier declares KUBE-XLB-* for every
                // Local-policy Service, even one without endpoints.
                if f.local {
                    chains.push((key(XLB, &p.hash), NatChain::Xlb(i)));
                }
                if f.n > 0 && f.lb {
                    chains.push((key(FW, &p.hash), NatChain::Fw(i)));
                }
            }
        }
    }
    for (e, ep) in cluster.eps.iter().enumerate() {
        chains.push((key(SEP, &ep.hash), NatChain::Sep(e as u32)));
    }
    chains.sort_unstable_by_key(|c| c.0);
    chains
}

// ---- filter table -------------------------------------------------------

fn filter_services(out: &mut Out, c: &Cluster, order: &[u32]) {
    for &i in order {
        let p = &c.ports[i as usize];
        let (svc, spec) = (c.svc(p), c.spec(p));
        if !svc.pods.is_empty() {
            continue;
        }
        out.rule("KUBE-SERVICES");
        out.host(" -d ", svc.cluster_ip);
        out.proto(spec);
        out.comment(&[&spec.name, " has no endpoints"]);
        out.dport(spec, spec.port);
        out.reject();
        out.end();
    }
}

fn filter_external(out: &mut Out, c: &Cluster, order: &[u32]) {
    for &i in order {
        let p = &c.ports[i as usize];
        let (svc, spec) = (c.svc(p), c.spec(p));
        let f = Facts::of(svc, spec);
        let reject = f.n == 0;
        let drop = !reject && out.layout == Layout::Modern && !f.has_external();
        if !reject && !drop {
            continue;
        }
        let what = if reject {
            " has no endpoints"
        } else {
            " has no local endpoints"
        };
        let target = |out: &mut Out| {
            if reject {
                out.reject();
            } else {
                out.p(" -j DROP");
            }
        };
        if f.lb {
            out.rule("KUBE-EXTERNAL-SERVICES");
            out.host(" -d ", svc.lb_ip);
            out.proto(spec);
            out.comment(&[&spec.name, what]);
            out.dport(spec, spec.port);
            target(out);
            out.end();
        }
        if f.np {
            out.rule("KUBE-EXTERNAL-SERVICES");
            out.proto(spec);
            out.comment(&[&spec.name, what]);
            out.p(" -m addrtype --dst-type LOCAL");
            out.dport(spec, spec.node_port);
            target(out);
            out.end();
        }
    }
}

fn filter_nodeports(out: &mut Out, c: &Cluster, order: &[u32]) {
    for &i in order {
        let p = &c.ports[i as usize];
        let (svc, spec) = (c.svc(p), c.spec(p));
        if svc.hc_node_port == 0 {
            continue;
        }
        out.rule("KUBE-NODEPORTS");
        out.p(" -p tcp");
        out.comment(&[&spec.name, " health check node port"]);
        out.p(" -m tcp --dport ");
        push_u64(&mut out.s, u64::from(svc.hc_node_port));
        out.p(" -j ACCEPT");
        out.end();
    }
}

fn filter_proxy_firewall(out: &mut Out, c: &Cluster, order: &[u32]) {
    for &i in order {
        let p = &c.ports[i as usize];
        let (svc, spec) = (c.svc(p), c.spec(p));
        if !Facts::of(svc, spec).uses_fw() {
            continue;
        }
        out.rule("KUBE-PROXY-FIREWALL");
        out.host(" -d ", svc.lb_ip);
        out.proto(spec);
        out.comment(&[
            &spec.name,
            " traffic not accepted by ",
            FW,
            hash_str(&p.hash),
        ]);
        out.dport(spec, spec.port);
        out.p(" -j DROP");
        out.end();
    }
}

// ---- nat table: shared dispatch chains -----------------------------------

fn nat_services(out: &mut Out, c: &Cluster, order: &[u32]) {
    for &i in order {
        let p = &c.ports[i as usize];
        let (svc, spec) = (c.svc(p), c.spec(p));
        let f = Facts::of(svc, spec);
        if f.n == 0 {
            continue;
        }
        out.rule("KUBE-SERVICES");
        out.host(" -d ", svc.cluster_ip);
        out.proto(spec);
        out.comment(&[&spec.name, " cluster IP"]);
        out.dport(spec, spec.port);
        out.jump_h(SVC, &p.hash);
        out.end();
        if f.lb {
            out.rule("KUBE-SERVICES");
            out.host(" -d ", svc.lb_ip);
            out.proto(spec);
            out.comment(&[&spec.name, " loadbalancer IP"]);
            out.dport(spec, spec.port);
            let target = match out.layout {
                Layout::Modern if !f.uses_fw() => EXT,
                _ => FW,
            };
            out.jump_h(target, &p.hash);
            out.end();
        }
    }
}

fn nat_nodeports(out: &mut Out, c: &Cluster, order: &[u32]) {
    for &i in order {
        let p = &c.ports[i as usize];
        let (svc, spec) = (c.svc(p), c.spec(p));
        let f = Facts::of(svc, spec);
        if f.n == 0 || !f.np {
            continue;
        }
        let target = match out.layout {
            Layout::Modern => EXT,
            Layout::Legacy if f.local => {
                out.rule("KUBE-NODEPORTS");
                out.p(" -s ");
                out.p(c.net.loopback());
                out.proto(spec);
                out.comment(&[&spec.name]);
                out.dport(spec, spec.node_port);
                out.p(" -j KUBE-MARK-MASQ");
                out.end();
                XLB
            }
            Layout::Legacy => SVC,
        };
        out.rule("KUBE-NODEPORTS");
        out.proto(spec);
        out.comment(&[&spec.name]);
        out.dport(spec, spec.node_port);
        out.jump_h(target, &p.hash);
        out.end();
    }
}

// ---- nat table: per-service chains ---------------------------------------

/// `KUBE-SVC-*`: masquerade off-cluster sources, then pick an endpoint.
fn svc_chain(out: &mut Out, c: &Cluster, i: u32) {
    let p = &c.ports[i as usize];
    let (svc, spec) = (c.svc(p), c.spec(p));
    out.rule_h(SVC, &p.hash);
    out.p(" ! -s ");
    out.p(c.net.cluster_cidr());
    out.host(" -d ", svc.cluster_ip);
    out.proto(spec);
    out.comment(&[&spec.name, " cluster IP"]);
    out.dport(spec, spec.port);
    out.p(" -j KUBE-MARK-MASQ");
    out.end();
    if out.layout == Layout::Legacy && spec.node_port != 0 && !svc.local {
        out.rule_h(SVC, &p.hash);
        out.proto(spec);
        out.comment(&[&spec.name]);
        out.dport(spec, spec.node_port);
        out.p(" -j KUBE-MARK-MASQ");
        out.end();
    }
    endpoint_rules(out, c, p, SVC, false);
}

/// `KUBE-SVL-*`: pick a node-local endpoint.
fn svl_chain(out: &mut Out, c: &Cluster, i: u32) {
    let p = &c.ports[i as usize];
    endpoint_rules(out, c, p, SVL, true);
}

/// The session-affinity and probability ladder rules of a SVC/SVL/XLB chain.
fn endpoint_rules(out: &mut Out, c: &Cluster, p: &Port, prefix: &str, local_only: bool) {
    let (svc, spec) = (c.svc(p), c.spec(p));
    let eps = c.port_eps(p);
    let chosen = || {
        eps.iter()
            .filter(move |ep| !local_only || svc.pods[ep.pod as usize].local)
    };
    let m = chosen().count();
    let mut ep_text = String::with_capacity(48);
    let mut write_comment = |out: &mut Out, ep: &Ep| {
        if out.large {
            return;
        }
        match out.layout {
            Layout::Modern => {
                ep_text.clear();
                push_host_port(
                    &mut ep_text,
                    svc.pods[ep.pod as usize].addr,
                    spec.target,
                    out.v6,
                );
                out.comment(&[&spec.name, " -> ", &ep_text]);
            }
            Layout::Legacy => out.comment(&[&spec.name]),
        }
    };
    if svc.affinity {
        for ep in chosen() {
            out.rule_h(prefix, &p.hash);
            write_comment(out, ep);
            out.p(" -m recent --rcheck --seconds ");
            out.p(STICKY_SECONDS);
            out.p(" --reap --name ");
            out.p(SEP);
            out.p(hash_str(&ep.hash));
            let mask = out.recent_mask();
            out.p(mask);
            out.jump_h(SEP, &ep.hash);
            out.end();
        }
    }
    for (j, ep) in chosen().enumerate() {
        out.rule_h(prefix, &p.hash);
        write_comment(out, ep);
        if j + 1 < m {
            out.p(" -m statistic --mode random --probability ");
            out.p(&probability(m - j));
        }
        out.jump_h(SEP, &ep.hash);
        out.end();
    }
}

/// Probabilities for small `n` are precomputed, as kube-proxy does.
fn probability(n: usize) -> std::borrow::Cow<'static, str> {
    use std::sync::OnceLock;
    static TABLE: OnceLock<Vec<String>> = OnceLock::new();
    let table = TABLE.get_or_init(|| (0..=256).map(|n| text::probability(n.max(1))).collect());
    match table.get(n) {
        Some(s) => std::borrow::Cow::Borrowed(s.as_str()),
        None => std::borrow::Cow::Owned(text::probability(n)),
    }
}

/// `KUBE-EXT-*` (1.24+): external traffic; masquerade, or for Local policy
/// short-circuit pod and host traffic, then go to the policy chain.
fn ext_chain(out: &mut Out, c: &Cluster, i: u32) {
    let p = &c.ports[i as usize];
    let (svc, spec) = (c.svc(p), c.spec(p));
    let f = Facts::of(svc, spec);
    if !f.local {
        out.rule_h(EXT, &p.hash);
        out.comment(&[
            "masquerade traffic for ",
            &spec.name,
            " external destinations",
        ]);
        out.p(" -j KUBE-MARK-MASQ");
        out.end();
    } else {
        out.rule_h(EXT, &p.hash);
        out.p(" -s ");
        out.p(c.net.cluster_cidr());
        out.comment(&["pod traffic for ", &spec.name, " external destinations"]);
        out.jump_h(SVC, &p.hash);
        out.end();
        out.rule_h(EXT, &p.hash);
        out.comment(&[
            "masquerade LOCAL traffic for ",
            &spec.name,
            " external destinations",
        ]);
        out.p(" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ");
        out.end();
        out.rule_h(EXT, &p.hash);
        out.comment(&[
            "route LOCAL traffic for ",
            &spec.name,
            " external destinations",
        ]);
        out.p(" -m addrtype --src-type LOCAL");
        out.jump_h(SVC, &p.hash);
        out.end();
    }
    if f.has_external() {
        out.rule_h(EXT, &p.hash);
        out.jump_h(if f.local { SVL } else { SVC }, &p.hash);
        out.end();
    }
}

/// `KUBE-FW-*`: `loadBalancerSourceRanges`.
fn fw_chain(out: &mut Out, c: &Cluster, i: u32) {
    let p = &c.ports[i as usize];
    let (svc, spec) = (c.svc(p), c.spec(p));
    let ranges = model::source_ranges(c.net.v6, svc.ranges);
    let allow_node = !ranges.is_empty() && model::ranges_allow_node(svc.ranges);
    debug_assert!(!allow_node || ranges.iter().any(|r| contains(r, c.node_ip, c.net.v6)));
    let (target, local) = match out.layout {
        Layout::Modern => (EXT, false),
        Layout::Legacy if svc.local => (XLB, true),
        Layout::Legacy => (SVC, false),
    };
    let lb_comment = |out: &mut Out| out.comment(&[&spec.name, " loadbalancer IP"]);
    if out.layout == Layout::Legacy && !local {
        out.rule_h(FW, &p.hash);
        lb_comment(out);
        out.p(" -j KUBE-MARK-MASQ");
        out.end();
    }
    if ranges.is_empty() {
        out.rule_h(FW, &p.hash);
        lb_comment(out);
        out.jump_h(target, &p.hash);
        out.end();
    }
    for range in ranges {
        out.rule_h(FW, &p.hash);
        out.p(" -s ");
        out.p(range);
        lb_comment(out);
        out.jump_h(target, &p.hash);
        out.end();
    }
    if allow_node {
        out.rule_h(FW, &p.hash);
        out.host(" -s ", svc.lb_ip);
        lb_comment(out);
        out.jump_h(target, &p.hash);
        out.end();
    }
    out.rule_h(FW, &p.hash);
    match out.layout {
        Layout::Modern => {
            out.comment(&[
                "other traffic to ",
                &spec.name,
                " will be dropped by KUBE-PROXY-FIREWALL",
            ]);
        }
        Layout::Legacy => {
            lb_comment(out);
            out.p(" -j KUBE-MARK-DROP");
        }
    }
    out.end();
}

/// `KUBE-XLB-*` (before 1.24): the Local-policy chain.
fn xlb_chain(out: &mut Out, c: &Cluster, i: u32) {
    let p = &c.ports[i as usize];
    let (svc, spec) = (c.svc(p), c.spec(p));
    if svc.pods.is_empty() {
        return;
    }
    out.rule_h(XLB, &p.hash);
    out.p(" -s ");
    out.p(c.net.cluster_cidr());
    out.comment(&["Redirect pods trying to reach external loadbalancer VIP to clusterIP"]);
    out.jump_h(SVC, &p.hash);
    out.end();
    out.rule_h(XLB, &p.hash);
    out.comment(&["masquerade LOCAL traffic for ", &spec.name, " LB IP"]);
    out.p(" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ");
    out.end();
    out.rule_h(XLB, &p.hash);
    out.comment(&[
        "route LOCAL traffic for ",
        &spec.name,
        " LB IP to service chain",
    ]);
    out.p(" -m addrtype --src-type LOCAL");
    out.jump_h(SVC, &p.hash);
    out.end();
    if svc.local_pods() == 0 {
        out.rule_h(XLB, &p.hash);
        out.comment(&[&spec.name, " has no local endpoints"]);
        out.p(" -j KUBE-MARK-DROP");
        out.end();
    } else {
        endpoint_rules(out, c, p, XLB, true);
    }
}

/// `KUBE-SEP-*`: hairpin masquerade, then DNAT to the endpoint.
fn sep_chain(out: &mut Out, c: &Cluster, e: u32) {
    let ep = &c.eps[e as usize];
    let p = &c.ports[ep.port as usize];
    let (svc, spec) = (c.svc(p), c.spec(p));
    let addr = svc.pods[ep.pod as usize].addr;
    out.rule_h(SEP, &ep.hash);
    out.host(" -s ", addr);
    if !out.large {
        out.comment(&[&spec.name]);
    }
    out.p(" -j KUBE-MARK-MASQ");
    out.end();
    out.rule_h(SEP, &ep.hash);
    out.proto(spec);
    if !out.large {
        out.comment(&[&spec.name]);
    }
    if svc.affinity {
        out.p(" -m recent --set --name ");
        out.p(SEP);
        out.p(hash_str(&ep.hash));
        let mask = out.recent_mask();
        out.p(mask);
    }
    out.p(" -m ");
    out.p(spec.proto.as_str());
    out.p(" -j DNAT --to-destination ");
    push_host_port(&mut out.s, addr, spec.target, out.v6);
    out.end();
}

/// Whether CIDR `range` contains `addr` (used only to check the model).
fn contains(range: &str, addr: u128, v6: bool) -> bool {
    let Some((net, len)) = range.split_once('/') else {
        return false;
    };
    let Ok(len) = len.parse::<u32>() else {
        return false;
    };
    let net: u128 = if v6 {
        match net.parse::<std::net::Ipv6Addr>() {
            Ok(a) => u128::from(a),
            Err(_) => return false,
        }
    } else {
        match net.parse::<std::net::Ipv4Addr>() {
            Ok(a) => u128::from(u32::from(a)),
            Err(_) => return false,
        }
    };
    let bits = if v6 { 128 } else { 32 };
    if len == 0 {
        return true;
    }
    let shift = bits - len.min(bits);
    (net >> shift) == (addr >> shift)
}
