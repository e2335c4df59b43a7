//! Packet trace: where does this packet go on this node, and why?
//!
//! [`trace`] walks one packet through a node's ruleset the way netfilter does: the hooks in
//! order (`PREROUTING`, the routing decision, `INPUT` or `FORWARD`, `POSTROUTING`; or `OUTPUT`
//! first for a packet the host sends), on each hook the tables by priority (raw, mangle, nat,
//! filter, security), and in each table the rules with their jumps, gotos and returns. A DNAT
//! changes what every later rule sees. Matches are read three-valued ([`eval`]): what the packet
//! and the node's addresses decide is yes or no; what depends on state the dump does not hold
//! (an interface not given, an ipset the file does not list ([`ipvs`]), `recent`, an unknown
//! module) forks the walk into "assumed
//! to match" and "assumed not to match", each outcome carrying its assumptions. A
//! `statistic --mode random` rule forks too, each side with its probability.
//!
//! ```
//! use rulelint_lint::trace::{PacketSpec, TraceNode, trace};
//! let dump = "*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n\
//!     :KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n:KUBE-SEP-BBBBBBBBBBBBBBBB - [0:0]\n\
//!     -A PREROUTING -j KUBE-SERVICES\n\
//!     -A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n\
//!     -A KUBE-SVC-AAAAAAAAAAAAAAAA -j KUBE-SEP-BBBBBBBBBBBBBBBB\n\
//!     -A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m tcp -j DNAT --to-destination 10.244.1.5:6443\nCOMMIT\n";
//! let parsed = rulelint_parser::parse(dump);
//! let node = TraceNode::new("node-a", &parsed.ruleset);
//! let spec = PacketSpec::to("10.96.0.1:443".parse().unwrap());
//! let result = trace(&node, &spec);
//! assert_eq!(result.outcomes.len(), 1);
//! assert_eq!(result.outcomes[0].destination.to_string(), "10.244.1.5:6443");
//! ```
//!
//! The walk is bounded: outcomes that agree are merged, a trace makes at most [`MAX_BRANCHES`]
//! branches, the call stack is at most [`MAX_DEPTH`] chains deep and the whole trace reads
//! at most [`MAX_RULE_VISITS`] rules and a path at most [`MAX_PATH_STEPS`] matching rules; a
//! branch that hits a bound ends as [`Verdict::Stopped`] and the trace says which bound was hit.

pub mod eval;
pub mod facts;
pub mod index;
pub mod ipvs;
mod lines;
pub mod nft;
pub mod report;
mod walk;

use crate::kube::ProxyMode;
use crate::matchset::protocol_number;
use facts::IptablesFacts;
use index::ChainIndexes;
use ipnet::IpNet;
use lines::Lines;
use rulelint_parser::views::parse_address;
use rulelint_parser::{RuleId, Ruleset};
use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

pub use walk::trace;

/// The most branches one trace makes (each fork makes one); a fork beyond it stops the branch
/// instead. Live branches are fewer still.
pub const MAX_BRANCHES: usize = 1024;
/// The deepest call stack (jumps into chains); deeper stops the branch (a jump loop).
pub const MAX_DEPTH: usize = 64;
/// The most rules the whole trace reads (a huge chain without an index, many branches).
pub const MAX_RULE_VISITS: usize = 2_000_000;
/// The most steps one path records (rules that matched): a longer path is a goto loop.
pub const MAX_PATH_STEPS: usize = 1_000;
/// The most steps and assumptions the forks of one trace copy (a fork copies its path): a
/// fork beyond it stops the branch instead. Many rules that each ask one question (a paste of
/// thousands of small tables) would otherwise make [`MAX_BRANCHES`] paths each as long as the
/// input, and a report of them all quadratic in it.
pub const MAX_FORKED: usize = 100_000;
/// A branch less likely than this is stopped: a `statistic` rule in a loop would otherwise
/// halve a branch until its probability is zero.
pub const MIN_PROBABILITY: f64 = 1e-12;

/// Where the packet comes from: which hook it enters at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// A pod on this node: enters at `PREROUTING` from the pod's interface.
    Pod,
    /// Another machine: enters at `PREROUTING` from a node interface.
    Outside,
    /// A process of the node itself: leaves through `OUTPUT`.
    Host,
}

impl Origin {
    /// `pod`, `outside`, `host`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Pod => "pod",
            Origin::Outside => "outside",
            Origin::Host => "host",
        }
    }
}

/// The conntrack state the packet is traced in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnState {
    /// The first packet of a connection: the nat tables are traversed.
    New,
    /// A packet of a known connection: conntrack answers, the nat tables are not traversed.
    Established,
}

/// What the session-affinity lists (`-m recent`, kube-proxy's `sessionAffinity: ClientIP`) hold
/// for the packet's source: the dump does not say, so unless asked a `recent --rcheck` forks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Affinity {
    /// The source is in a list (a returning client): each list it may be in forks, and paths
    /// on which no list holds it are left out.
    Hit,
    /// No list holds the source (a first connection): every `recent --rcheck` fails, one
    /// assumption says so, and the `statistic` rules decide.
    Miss,
}

impl Affinity {
    /// `hit`, `miss`.
    pub fn as_str(self) -> &'static str {
        match self {
            Affinity::Hit => "hit",
            Affinity::Miss => "miss",
        }
    }
}

/// An address with an optional port: `10.96.0.10`, `10.96.0.10:53`, `[fd00::1]:80`, `fd00::1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// The address.
    pub ip: IpAddr,
    /// The port, when given.
    pub port: Option<u16>,
}

impl FromStr for Endpoint {
    type Err = String;

    fn from_str(text: &str) -> Result<Endpoint, String> {
        let bad = || format!("`{text}` is not an address or address:port");
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(Endpoint { ip, port: None });
        }
        let (addr, port) = if let Some(rest) = text.strip_prefix('[') {
            let (a, p) = rest.split_once("]:").ok_or_else(bad)?;
            (a, p)
        } else {
            text.rsplit_once(':').ok_or_else(bad)?
        };
        let ip = addr.parse::<IpAddr>().map_err(|_| bad())?;
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("`{port}` is not a port from 1 to 65535"))?;
        Ok(Endpoint {
            ip,
            port: Some(port),
        })
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.ip, self.port) {
            (IpAddr::V6(ip), Some(p)) => write!(f, "[{ip}]:{p}"),
            (ip, Some(p)) => write!(f, "{ip}:{p}"),
            (ip, None) => write!(f, "{ip}"),
        }
    }
}

/// The packet as the user describes it: what is not given is defaulted or inferred per node
/// (and printed).
#[derive(Clone, Debug)]
pub struct PacketSpec {
    /// `--dst`.
    pub dst: Endpoint,
    /// `--src`; default: an address of the pod network (`--from pod`), a documentation address
    /// (`--from outside`), the node's address (`--from host`).
    pub src: Option<Endpoint>,
    /// `--proto` as a protocol number; default tcp.
    pub protocol: Option<u8>,
    /// `--from`; default pod.
    pub from: Option<Origin>,
    /// `--in`: the input interface; unknown when not given.
    pub in_interface: Option<String>,
    /// `--out`: the output interface; unknown when not given.
    pub out_interface: Option<String>,
    /// `--state`; default new.
    pub state: Option<ConnState>,
    /// `--node-ip`: addresses of the node, besides those the dump shows.
    pub node_ips: Vec<IpAddr>,
    /// `--affinity`: what the session-affinity lists hold; unknown (forks) when not given.
    pub affinity: Option<Affinity>,
}

impl PacketSpec {
    /// A packet to `dst` with every other field defaulted.
    pub fn to(dst: Endpoint) -> PacketSpec {
        PacketSpec {
            dst,
            src: None,
            protocol: None,
            from: None,
            in_interface: None,
            out_interface: None,
            state: None,
            node_ips: Vec::new(),
            affinity: None,
        }
    }

    /// Reads `--proto`: `tcp`, `udp`, `sctp`, `icmp`, `icmpv6` or a number.
    pub fn parse_protocol(text: &str) -> Option<u8> {
        protocol_number(text).filter(|&n| n != 0)
    }
}

/// The packet as text fields, before they are read: the CLI's flags and the web page's form
/// (as JSON: `{"dst": "10.96.0.10:53", "proto": "udp", "src": null, "from": "pod", "in": null,
/// "out": null, "state": "new", "node_ips": [], "affinity": null}`; only `dst` is required). Empty strings count
/// as not given.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct PacketFields {
    /// `IP`, `IP:PORT` or `[IPv6]:PORT`.
    pub dst: String,
    /// `IP` or `IP:PORT`.
    pub src: Option<String>,
    /// tcp, udp, sctp, icmp, icmpv6 or a number.
    pub proto: Option<String>,
    /// Where the packet comes from.
    pub from: Option<Origin>,
    /// The input interface.
    #[serde(rename = "in")]
    pub in_interface: Option<String>,
    /// The output interface.
    #[serde(rename = "out")]
    pub out_interface: Option<String>,
    /// The conntrack state.
    pub state: Option<ConnState>,
    /// Addresses of the node.
    pub node_ips: Vec<String>,
    /// What the session-affinity lists hold.
    pub affinity: Option<Affinity>,
}

impl PacketFields {
    /// Reads the fields into a packet spec. `flag` names a field in an error message (`dst`,
    /// `src`, `proto`, `node-ip`): the CLI passes `--dst`, the page the label.
    pub fn spec(&self, flag: impl Fn(&str) -> String) -> Result<PacketSpec, String> {
        let given = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        };
        let dst: Endpoint = self
            .dst
            .trim()
            .parse()
            .map_err(|e| format!("{}: {e}", flag("dst")))?;
        let mut spec = PacketSpec::to(dst);
        if let Some(src) = given(&self.src) {
            let src: Endpoint = src.parse().map_err(|e| format!("{}: {e}", flag("src")))?;
            if src.ip.is_ipv4() != dst.ip.is_ipv4() {
                return Err(format!(
                    "{} and {} must be of the same address family",
                    flag("src"),
                    flag("dst")
                ));
            }
            spec.src = Some(src);
        }
        if let Some(p) = given(&self.proto) {
            spec.protocol = Some(PacketSpec::parse_protocol(&p).ok_or_else(|| {
                format!(
                    "{}: `{p}` is not a protocol (tcp, udp, sctp, icmp, icmpv6, or a number)",
                    flag("proto")
                )
            })?);
        }
        spec.from = self.from;
        spec.state = self.state;
        spec.affinity = self.affinity;
        spec.in_interface = given(&self.in_interface);
        spec.out_interface = given(&self.out_interface);
        for ip in &self.node_ips {
            let ip = ip.trim();
            if ip.is_empty() {
                continue;
            }
            spec.node_ips.push(
                ip.parse::<IpAddr>()
                    .map_err(|_| format!("{}: `{ip}` is not an address", flag("node-ip")))?,
            );
        }
        Ok(spec)
    }
}

/// The name of a protocol number, for output.
pub fn protocol_name(number: u8) -> String {
    match number {
        1 => "icmp".into(),
        6 => "tcp".into(),
        17 => "udp".into(),
        58 => "icmpv6".into(),
        132 => "sctp".into(),
        n => n.to_string(),
    }
}

/// Whether a protocol has ports (`--dport` can match it).
pub fn has_ports(protocol: u8) -> bool {
    matches!(protocol, 6 | 17 | 33 | 132 | 136)
}

/// What one dump says about its node, read once: its addresses, its pod network, its Service
/// addresses.
#[derive(Clone, Debug, Default)]
pub struct NodeFacts {
    /// Addresses the dump shows as the node's own: `-d <ip> -j KUBE-NODEPORTS` (kube-proxy's
    /// `--nodeport-addresses`), with the rule that shows each.
    pub addresses: Vec<(IpAddr, RuleId)>,
    /// The pod network and how it was found.
    pub pod_cidr: Option<(IpNet, String)>,
    /// Cluster IPs, external IPs and load-balancer IPs of the Services (not node addresses in
    /// iptables mode); empty for an iptables-save node, which answers on demand.
    pub service_ips: FxHashSet<IpAddr>,
    /// Endpoint (pod) addresses that Services DNAT to; empty for an iptables-save node, which
    /// reads them on demand.
    pub endpoint_ips: FxHashSet<IpAddr>,
}

/// One node's dump, prepared for tracing (parse once, trace many packets).
pub struct TraceNode<'a> {
    /// The node's name.
    pub name: String,
    /// The parsed dump.
    pub set: &'a Ruleset<'a>,
    /// What the dump says about the node, read in light passes (not the Kubernetes model).
    pub(crate) read: IptablesFacts,
    /// Line numbers, counted for the rules a trace prints.
    pub(crate) lines: Lines<'a>,
    /// The large chains' indexes, each built when a trace first reads the chain.
    pub(crate) index: ChainIndexes,
    /// The walk reads large chains through `index` (off: rule by rule, for benchmarks).
    pub(crate) use_index: bool,
    /// The ipsets, addresses and IPVS virtual servers the node's file holds beside its rules
    /// (boxed: most nodes have none).
    pub(crate) file_state: Option<Box<ipvs::FileState<'a>>>,
}

impl<'a> TraceNode<'a> {
    /// Reads the node facts and the proxy mode, and notes the large chains. No Kubernetes
    /// model, no chain graph and no line index: the walk follows each rule's resolved target,
    /// the facts are read from the few chains that state them ([`facts`]), and what only some
    /// traces need (a chain's index, the endpoints' addresses, a line number) is read when one
    /// first asks.
    pub fn new(name: impl Into<String>, set: &'a Ruleset<'a>) -> TraceNode<'a> {
        let lines = Lines::new(set.source());
        let index = ChainIndexes::new(set);
        let read = IptablesFacts::read(set, &lines);
        TraceNode {
            name: name.into(),
            set,
            read,
            lines,
            index,
            use_index: true,
            file_state: None,
        }
    }

    /// The IPVS-mode state the node's file holds beside its rules (`ipset save`/`list`, `ip
    /// addr`, `ipvsadm -Ln`, as [`crate::ipvs::check::read_ipvs`] reads them, spans into the
    /// same text as the ruleset's): set matches are decided from the sets' members, the
    /// destination's locality from `ip addr`, and a packet delivered to a virtual server ends
    /// with what `ipvsadm` lists for it.
    pub fn with_file_state(mut self, ipvs: rulelint_ipvs::Ipvs<'a>) -> TraceNode<'a> {
        self.file_state = Some(Box::new(ipvs::FileState::new(ipvs)));
        self
    }

    /// The 1-based line of a rule.
    pub fn rule_line(&self, rule: RuleId) -> u32 {
        self.lines.line(self.set.rule(rule).get().span.start)
    }

    /// The 1-based line of a byte offset of the dump.
    pub fn line(&self, offset: u32) -> u32 {
        self.lines.line(offset)
    }

    /// Reads every chain rule by rule, without the index of large chains (benchmarks).
    pub fn disable_index(&mut self) {
        self.use_index = false;
    }

    /// The proxy mode the dump shows.
    pub fn proxy_mode(&self) -> ProxyMode {
        self.read.mode
    }

    /// What the dump says about the node: its addresses and pod network (`service_ips` and
    /// `endpoint_ips` are empty: [`TraceNode::is_service_ip`] and [`TraceNode::endpoint_ips`]
    /// answer them).
    pub fn facts(&self) -> &NodeFacts {
        &self.read.facts
    }

    /// The proxy mode and layout in words, as the Kubernetes model describes them.
    pub fn layout_description(&self) -> &'static str {
        self.read.layout
    }

    /// Pod addresses of node-local endpoints (`KUBE-SVL-*` jumps): where `--from pod` comes
    /// from by default.
    pub fn local_endpoints(&self) -> &[IpAddr] {
        &self.read.local_endpoints
    }

    /// Whether `ip` is a cluster, external or load-balancer IP of a Service, as the Kubernetes
    /// model lists them.
    pub fn is_service_ip(&self, ip: IpAddr) -> bool {
        self.read.is_service_ip(self.set, &self.index, ip)
    }

    /// The pod addresses the endpoint chains DNAT to, as the Kubernetes model lists them
    /// (read on the first call).
    pub fn endpoint_ips(&self) -> &FxHashSet<IpAddr> {
        self.read.endpoint_ips(self.set)
    }

    /// The endpoints' pod addresses among the first `count` addresses of `net`, sorted (one
    /// pass over the endpoint chains per network, remembered; no set of them all).
    pub fn endpoint_ips_near(&self, net: IpNet, count: u32) -> Vec<IpAddr> {
        self.read.endpoints_near(self.set, net, count)
    }
}

impl walk::EndpointAddresses for TraceNode<'_> {
    fn near(&self, net: IpNet, count: u32) -> Vec<IpAddr> {
        self.endpoint_ips_near(net, count)
    }
}

impl eval::NotLocal for TraceNode<'_> {
    fn contains(&self, ip: IpAddr) -> bool {
        self.is_service_ip(ip)
    }
}

/// The network most endpoints share, widened to a /16 (IPv4) or /64 (IPv6): the pod network
/// when no rule names it.
pub(crate) fn pod_cidr_around(endpoint_ips: &FxHashSet<IpAddr>) -> Option<(IpNet, String)> {
    let mut counts: Vec<(IpNet, usize)> = Vec::new();
    for ip in endpoint_ips {
        let prefix = if ip.is_ipv4() { 16 } else { 64 };
        let Ok(net) = IpNet::new(*ip, prefix) else {
            continue;
        };
        let net = net.trunc();
        match counts.iter_mut().find(|(n, _)| *n == net) {
            Some((_, c)) => *c += 1,
            None => counts.push((net, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts.first().map(|(net, n)| {
        (
            *net,
            format!("the network around {n} of the endpoints' pod addresses"),
        )
    })
}

/// How a packet field got its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "how", content = "why")]
pub enum How {
    /// The user gave it.
    Given,
    /// The default.
    Default,
    /// Read from the dump; the text says from where.
    Inferred(String),
    /// Not known: matches on it fork.
    Unknown,
}

/// One input of the trace and where it came from.
#[derive(Clone, Debug, Serialize)]
pub struct Input {
    /// The field: `protocol`, `src`, `dst`, `from`, `in`, `out`, `state`, `node addresses`,
    /// `pod network`, `proxy mode`.
    pub field: &'static str,
    /// Its value as text.
    pub value: String,
    /// How it was decided.
    #[serde(flatten)]
    pub how: How,
}

/// Parses a network for tests and callers (`10.244.0.0/16`).
pub fn parse_network(text: &str) -> Option<IpNet> {
    parse_address(text).ok()
}

/// What happened to the packet at the end of one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Delivered to a local process (INPUT accepted it).
    Accept,
    /// Forwarded: it leaves the node through FORWARD and POSTROUTING.
    Forward,
    /// Sent by the host: it leaves the node through OUTPUT and POSTROUTING.
    Output,
    /// Dropped.
    Drop,
    /// Rejected (an ICMP error or TCP reset goes back).
    Reject,
    /// The tracer stopped at one of its bounds (see the outcome's `stopped`).
    Stopped,
}

impl Verdict {
    /// The word used in text and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accept => "accept",
            Verdict::Forward => "forward",
            Verdict::Output => "output",
            Verdict::Drop => "drop",
            Verdict::Reject => "reject",
            Verdict::Stopped => "stopped",
        }
    }
}

/// A bound of the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// [`MAX_BRANCHES`] branches were made.
    Branches,
    /// The call stack reached [`MAX_DEPTH`].
    Depth,
    /// [`MAX_RULE_VISITS`] rules were read.
    RuleVisits,
    /// A path matched [`MAX_PATH_STEPS`] rules.
    PathLength,
    /// A branch's probability fell below [`MIN_PROBABILITY`] (a `statistic` rule in a loop).
    Improbable,
    /// The forks copied [`MAX_FORKED`] steps and assumptions.
    Forked,
}

impl Limit {
    /// A sentence for the report.
    pub fn describe(self) -> String {
        match self {
            Limit::Branches => format!("the trace forked into {MAX_BRANCHES} branches"),
            Limit::Depth => format!("the call stack reached {MAX_DEPTH} chains (a jump loop?)"),
            Limit::RuleVisits => format!("{MAX_RULE_VISITS} rules were read"),
            Limit::PathLength => format!("a path matched {MAX_PATH_STEPS} rules (a goto loop?)"),
            Limit::Improbable => {
                format!("a branch's probability fell below {MIN_PROBABILITY:e} (a random loop?)")
            }
            Limit::Forked => format!(
                "the trace's forks copied {MAX_FORKED} steps and assumptions (many paths, each long)"
            ),
        }
    }
}

/// An assumption a path rests on: a question the dump cannot answer, and the answer taken.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Assumption {
    /// The question, e.g. "the packet enters on an interface matching `cali+`".
    pub question: String,
    /// The answer this path takes.
    pub holds: bool,
}

impl fmt::Display for Assumption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.holds {
            write!(f, "assumed: {}", self.question)
        } else {
            write!(f, "assumed not: {}", self.question)
        }
    }
}

/// Where in the ruleset a step happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepAt {
    /// A rule.
    Rule(RuleId),
    /// A built-in chain's policy (the chain's id).
    Policy(rulelint_parser::ChainId),
    /// The routing decision.
    Route,
    /// A rule of an nftables listing.
    NftRule(rulelint_nft::RuleId),
    /// A base chain's policy in an nftables listing.
    NftPolicy(rulelint_nft::ChainId),
}

/// One thing that happened to the packet: a rule that matched (and what it did), a policy, a
/// routing decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Where.
    pub at: StepAt,
    /// What it did, in words: `jump KUBE-SVC-...`, `DNAT to 10.244.1.5:53`, `mark 0x0 -> 0x4000`.
    pub effect: String,
    /// The answers the step needs, when it is on only some of the paths an outcome merges.
    pub only_when: Conditions,
}

impl Step {
    /// A step every path of its outcome takes.
    pub fn new(at: StepAt, effect: String) -> Step {
        Step {
            at,
            effect,
            only_when: Conditions::default(),
        }
    }

    /// The effect with the answers it needs: `accept (only when: ...) (only when not: ...)`,
    /// at most [`MAX_SHOWN_CONDITIONS`] of them, then how many more.
    pub fn effect_text(&self) -> std::borrow::Cow<'_, str> {
        if self.only_when.is_empty() {
            return self.effect.as_str().into();
        }
        let mut text = self.effect.clone();
        for c in &self.only_when.shown {
            let when = if c.holds {
                "only when"
            } else {
                "only when not"
            };
            text.push_str(&format!(" ({when}: {})", c.question));
        }
        match self.only_when.more {
            0 => {}
            1 => text.push_str(" (and 1 more condition)"),
            n => text.push_str(&format!(" (and {n} more conditions)")),
        }
        text.into()
    }
}

/// The most answers a step's text lists (see [`Step::only_when`]); the others are counted. A
/// rule of thousands of undecided matches merges into a step that needs thousands of answers,
/// which no one reads, and whose text would grow with each merge.
pub const MAX_SHOWN_CONDITIONS: usize = 8;

/// An answer a step needs: it is on the path only when the question is answered this way.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Condition {
    /// The question (shared by every step that needs it).
    pub question: std::sync::Arc<str>,
    /// The answer.
    pub holds: bool,
}

/// The answers a step needs, in the order outcomes were merged: the first
/// [`MAX_SHOWN_CONDITIONS`] kept, the others counted and folded into a digest, so that two
/// steps compare equal only when (but for a hash collision) they need the same answers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    shown: Vec<Condition>,
    more: usize,
    digest: u64,
}

impl Conditions {
    /// Adds an answer.
    pub fn push(&mut self, condition: Condition) {
        if self.shown.len() < MAX_SHOWN_CONDITIONS {
            self.shown.push(condition);
            return;
        }
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        self.digest.hash(&mut h);
        condition.hash(&mut h);
        self.digest = h.finish();
        self.more += 1;
    }

    /// The answers listed.
    pub fn shown(&self) -> &[Condition] {
        &self.shown
    }

    /// How many answers are counted and not listed.
    pub fn more(&self) -> usize {
        self.more
    }

    /// No answer is needed: every path of the outcome takes the step.
    pub fn is_empty(&self) -> bool {
        self.shown.is_empty()
    }
}

/// The destination at the end of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Destination {
    /// Address and port.
    pub endpoint: Endpoint,
    /// Changed by a DNAT (or REDIRECT) on the way.
    pub translated: bool,
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.endpoint.fmt(f)
    }
}

/// One way the packet can go.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The probability of this path given its assumptions (the product of the `statistic`
    /// branches taken).
    pub probability: f64,
    /// What happened at the end.
    pub verdict: Verdict,
    /// The destination after DNAT.
    pub destination: Destination,
    /// The MASQUERADE or SNAT rule (iptables) or statement's rule (nftables) that rewrote the
    /// source, if any.
    pub masquerade: Option<StepAt>,
    /// What the path assumes, sorted.
    pub assumptions: Vec<Assumption>,
    /// Every rule that matched or changed the packet, policies, routing decisions.
    pub steps: Vec<Step>,
    /// For [`Verdict::Stopped`]: the bound hit.
    pub stopped: Option<Limit>,
    /// What the node's ipsets hold, read from its file, for the set matches the path decided
    /// (sorted, each once).
    pub facts: Vec<SetFact>,
    /// For a packet delivered locally to an IPVS virtual server of the node's `ipvsadm`
    /// listing: that server.
    pub ipvs: Option<IpvsServer>,
}

/// Whether an ipset holds the packet's key, read from the set's members in the node's file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SetFact {
    /// The set's name.
    pub set: String,
    /// Its type (`hash:ip,port`).
    pub set_type: String,
    /// The packet's key as ipset writes a member (`10.96.0.10,udp:53`, `30080`).
    pub key: String,
    /// The set holds it.
    pub holds: bool,
    /// How many members the set has.
    pub members: usize,
    /// The byte offset in the file of the member that holds it, else of the set's `create`
    /// (`Name:`) line.
    pub offset: u32,
}

/// An IPVS virtual server as `ipvsadm -Ln` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpvsServer {
    /// `TCP`, `UDP`, `SCTP`.
    pub protocol: String,
    /// `10.96.0.10:53` as listed.
    pub address: String,
    /// The scheduler (`rr`).
    pub scheduler: Option<String>,
    /// `persistent N`: ClientIP session affinity.
    pub persistent_seconds: Option<u32>,
    /// Its real servers, in the order listed.
    pub real_servers: Vec<RealServerFact>,
    /// The byte offset of its line in the file.
    pub offset: u32,
}

/// A real server of an [`IpvsServer`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealServerFact {
    /// `10.244.1.5:53` as listed.
    pub address: String,
    /// `Masq`, `Route`, `Tunnel`, `Local`, or `unknown` (not shown).
    pub forward: &'static str,
    /// Its weight, when shown.
    pub weight: Option<i64>,
}

/// The result of tracing one packet on one node.
#[derive(Clone, Debug)]
pub struct NodeTrace {
    /// The packet's fields, defaults and inferences, in order.
    pub inputs: Vec<Input>,
    /// The packet as traced, for the summary line.
    pub packet: TracedPacket,
    /// The outcomes: most probable first.
    pub outcomes: Vec<Outcome>,
    /// The bounds hit, if any.
    pub limits: Vec<Limit>,
}

/// The packet fields the walk starts from.
#[derive(Clone, Debug, Serialize)]
pub struct TracedPacket {
    /// Protocol name.
    pub protocol: String,
    /// Source (`null`: unknown).
    pub src: Option<String>,
    /// Destination as given.
    pub dst: String,
    /// Where it enters.
    pub from: Origin,
    /// Input interface (`null`: unknown).
    #[serde(rename = "in")]
    pub in_interface: Option<String>,
    /// Output interface (`null`: unknown).
    #[serde(rename = "out")]
    pub out_interface: Option<String>,
    /// Conntrack state.
    pub state: ConnState,
    /// What the session-affinity lists hold (`null`: unknown, `recent` matches fork).
    pub affinity: Option<Affinity>,
}
