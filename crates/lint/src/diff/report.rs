//! Words and documents for a [`Comparison`]: a sentence per difference, the stable JSON document
//! of `rulelint diff --format json` (format version 1), and the text for people.

use super::facts::{
    STATUS_DISPATCHED, STATUS_ORPHANED, STATUS_REJECTED, Subject, Value, chain_kind_words,
};
use super::node_local::{Expected, address_in};
use super::rules::{ChainChanges, ChangeKind};
use super::{Comparison, Difference, Node, NodeBackend, NodeInfo};
use crate::kube::AddressKind;
use crate::kube::names::{comments, service_comment};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The report level of a difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Services, endpoints, hook jumps.
    Kubernetes,
    /// Chains and policies.
    Chain,
}

impl Difference<'_> {
    /// Kubernetes level or chain level.
    pub fn level(&self) -> Level {
        match self.subject {
            Subject::Chain { .. } | Subject::Policy { .. } | Subject::ChainRules { .. } => {
                Level::Chain
            }
            _ => Level::Kubernetes,
        }
    }

    /// The stable name of the kind of difference.
    pub fn kind(&self) -> &'static str {
        match self.subject {
            Subject::Service { .. } => "service",
            Subject::ServiceChain { .. } => "service-chain",
            Subject::Address { .. } => "service-address",
            Subject::NoEndpointsReject { .. } => "no-endpoints-reject",
            Subject::Endpoint { .. } => "endpoint",
            Subject::Weight { .. } => "weight",
            Subject::LocalEndpoint { .. } => "local-endpoint",
            Subject::NoLocalEndpointsDrop { .. } => "no-local-endpoints-drop",
            Subject::HookJump { .. } => "hook-jump",
            Subject::Chain { .. } => "chain",
            Subject::Policy { .. } => "policy",
            Subject::ChainRules { .. } => "chain-rules",
        }
    }

    /// One sentence per odd group of nodes (for a pair: one sentence).
    pub fn messages(&self, comparison: &Comparison<'_>) -> Vec<String> {
        let nodes = comparison.nodes;
        let (holder, doing) = phrase(&self.subject);
        let names = |v: &super::Variant<'_>| node_list(nodes, v.nodes.iter().map(|&(n, _)| n));
        let presence = self.variants.len() == 2 && self.variants.iter().any(|v| v.value.is_none());
        let Some(major) = self.majority() else {
            // Two nodes, or no majority: say who holds what.
            if presence && let Some(h) = self.variants.iter().find(|v| v.value.is_some()) {
                let mut m = format!("{holder} {doing} on {} only", names(h));
                m.push_str(&self.stale_note(comparison));
                return vec![m];
            }
            let states: Vec<String> = self
                .variants
                .iter()
                .map(|v| format!("{} on {}", state(&self.subject, v.value), names(v)))
                .collect();
            return vec![format!("{holder}: {}", states.join("; "))];
        };
        let major_variant = &self.variants[major];
        let others = major_variant.nodes.len();
        self.variants
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != major)
            .map(|(_, v)| {
                let who = names(v);
                let plural = if others == 1 { "node" } else { "nodes" };
                // A Service port is present in one of three states; say which one this node has.
                let doing = match (&self.subject, v.value) {
                    (Subject::Service { .. }, Some(Value::Text(STATUS_REJECTED))) => {
                        "is rejected for lack of endpoints".to_string()
                    }
                    (Subject::Service { .. }, Some(Value::Text(STATUS_ORPHANED))) => {
                        "has chains that nothing jumps to".to_string()
                    }
                    _ => doing.clone(),
                };
                match (v.value, major_variant.value) {
                    // Expected differences have no history: no "still" or "dropped".
                    (Some(_), None) if self.expected.is_some() => {
                        format!("{who}: {holder} {doing}")
                    }
                    (None, Some(_)) if self.expected.is_some() => {
                        format!("{who}: not so on this node: {holder} {doing}")
                    }
                    (Some(_), None) => {
                        let doing = match doing.strip_prefix("is ") {
                            Some(rest) => format!("is still {rest}"),
                            None => format!("still {doing}"),
                        };
                        format!("{who}: {holder} {doing}, which {others} other {plural} dropped")
                    }
                    (None, Some(_)) => {
                        format!("{who}: {holder} no longer {doing}, unlike {others} other {plural}")
                    }
                    (odd, usual) => format!(
                        "{who}: {holder} {}, unlike {others} other {plural} ({})",
                        state(&self.subject, odd),
                        state(&self.subject, usual)
                    ),
                }
            })
            .collect()
    }

    /// For an endpoint only one of two nodes has: whether the other node has that pod IP in
    /// no Service at all, a stale DNAT rather than a Service change.
    fn stale_note(&self, comparison: &Comparison<'_>) -> String {
        let Subject::Endpoint { destination, .. } = self.subject else {
            return String::new();
        };
        let Some(ip) = address_in(destination) else {
            return String::new();
        };
        let lacking: Vec<u32> = self
            .variants
            .iter()
            .filter(|v| v.value.is_none())
            .flat_map(|v| v.nodes.iter().map(|&(n, _)| n))
            .collect();
        let stale_on_all = !lacking.is_empty()
            && lacking
                .iter()
                .all(|&n| !comparison.endpoint_ips(n as usize).contains(&ip));
        if stale_on_all {
            format!(
                "; {} has no endpoint at {ip} in any Service",
                node_list(comparison.nodes, lacking.into_iter())
            )
        } else {
            String::new()
        }
    }
}

/// Who and what, for sentences: ("default/api:https", "DNATs to 10.244.1.5:8080").
fn phrase(subject: &Subject<'_>) -> (String, String) {
    match *subject {
        Subject::Service { service } if super::ipvs::is_ipvs_key(service) => (
            format!("Service port {service}"),
            "has virtual servers".into(),
        ),
        Subject::Service { service } => (format!("Service port {service}"), "has chains".into()),
        Subject::ServiceChain { service, chain } => (
            service.to_string(),
            format!("has its {} chain {chain}", chain_kind_words(chain)),
        ),
        Subject::Address {
            service,
            kind,
            address,
            protocol,
            port,
        } => {
            let mut way = match kind {
                AddressKind::ClusterIp => "cluster IP",
                AddressKind::ExternalIp => "external IP",
                AddressKind::LoadBalancerIp => "load-balancer IP",
                AddressKind::NodePort => "node port",
            }
            .to_string();
            if let Some(a) = address {
                let _ = write!(way, " {}", a.addr());
            }
            if let Some(p) = protocol {
                let _ = write!(way, " {p}");
            }
            if let Some(p) = port {
                let _ = write!(way, "{}{p}", if protocol.is_some() { "/" } else { " " });
            }
            (service.to_string(), format!("takes traffic at {way}"))
        }
        Subject::NoEndpointsReject { service } => (
            service.to_string(),
            "is rejected in filter as having no endpoints".into(),
        ),
        // IPVS nodes only (their keys kept): IPVS's words, not iptables'.
        Subject::Endpoint {
            service,
            destination,
            ..
        }
        | Subject::Weight {
            service,
            destination,
        } if super::ipvs::is_ipvs_key(service) => (
            service.to_string(),
            format!("has the real server {destination}"),
        ),
        // Across backends endpoints carry no chain name (each backend names its own).
        Subject::Endpoint {
            service,
            chain: "",
            destination,
        } => (service.to_string(), format!("DNATs to {destination}")),
        Subject::Endpoint {
            service,
            chain,
            destination,
        } => (
            format!("{chain} ({service})"),
            format!("DNATs to {destination}"),
        ),
        Subject::Weight {
            service,
            destination,
        } => (service.to_string(), format!("DNATs to {destination}")),
        Subject::LocalEndpoint {
            service,
            destination,
        } => (
            service.to_string(),
            format!("has the local endpoint {destination}"),
        ),
        Subject::NoLocalEndpointsDrop { service } => (
            service.to_string(),
            "drops external traffic for lack of local endpoints".into(),
        ),
        Subject::HookJump {
            table,
            hook,
            target,
            ..
        } => (format!("{table} {hook}"), format!("jumps to {target}")),
        Subject::Chain { table, chain, .. } => {
            (table.to_string(), format!("has the chain {chain}"))
        }
        Subject::Policy { table, chain, .. } | Subject::ChainRules { table, chain, .. } => {
            (format!("{table} {chain}"), "exists".into())
        }
    }
}

/// What a value means for a subject, in words.
fn state(subject: &Subject<'_>, value: Option<Value<'_>>) -> String {
    let Some(value) = value else {
        return "absent".into();
    };
    match (subject, value) {
        (Subject::Service { .. }, Value::Text(STATUS_DISPATCHED)) => "is dispatched".into(),
        (Subject::Service { .. }, Value::Text(STATUS_ORPHANED)) => {
            "is orphaned (nothing jumps to its chains)".into()
        }
        (Subject::Service { service }, Value::Text(STATUS_REJECTED))
            if super::ipvs::is_ipvs_key(service) =>
        {
            "has no real server that takes new connections".into()
        }
        (Subject::Service { .. }, Value::Text(STATUS_REJECTED)) => {
            "has no endpoints (filter rejects it)".into()
        }
        (
            Subject::Endpoint {
                service,
                destination,
                ..
            },
            Value::Flag(persistent),
        ) if super::ipvs::is_ipvs_key(service) => format!(
            "has the real server {destination} {} persistence",
            if persistent { "with" } else { "without" }
        ),
        (Subject::Endpoint { destination, .. }, Value::Flag(affinity)) => format!(
            "DNATs to {destination} {} session affinity",
            if affinity { "with" } else { "without" }
        ),
        (Subject::Weight { destination, .. }, Value::Weight(w)) => format!(
            "sends {:.1}% of new connections to {destination}",
            f64::from(w) / 1e4
        ),
        (Subject::Policy { .. }, Value::Text(policy)) => format!("has policy {policy}"),
        (Subject::ChainRules { .. }, Value::Digest { exact, .. }) => {
            format!("has rules {:08x}", exact >> 32)
        }
        _ => "present".into(),
    }
}

/// `node-1, node-2 and 3 more`.
fn node_list(nodes: &[NodeInfo], which: impl Iterator<Item = u32>) -> String {
    const SHOWN: usize = 4;
    let names: Vec<&str> = which.map(|n| nodes[n as usize].name.as_str()).collect();
    match names.len() {
        0 => "no node".into(),
        n if n <= SHOWN + 1 => names.join(", "),
        n => format!("{} and {} more", names[..SHOWN].join(", "), n - SHOWN),
    }
}

/// The JSON document of `rulelint diff --format json`.
#[derive(Debug, Serialize)]
pub struct DiffDocument<'d> {
    /// Version of this document's shape.
    pub format_version: u32,
    /// `pair` (two nodes, with the rule level) or `group` (three or more, against the majority).
    pub mode: &'static str,
    /// The nodes, in the order given.
    pub nodes: Vec<NodeDoc<'d>>,
    /// No drift: the nodes differ at most in expected ways.
    pub agree: bool,
    /// Counts.
    pub summary: SummaryDoc,
    /// Kubernetes-level and chain-level differences, in that order.
    pub differences: Vec<DifferenceDoc<'d>>,
    /// Pairs only: rule changes per chain both nodes have.
    pub rules: Vec<ChainDoc<'d>>,
    /// Groups only: per node that drifts, its drift by kind.
    pub odd_nodes: Vec<OddNodeDoc<'d>>,
    /// What was not compared and why (nodes of other backends or nftables layouts); left out
    /// when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One node.
#[derive(Debug, Serialize)]
pub struct NodeDoc<'d> {
    /// Its name (a `# node:` line, else the file name).
    pub name: &'d str,
    /// The file, as given.
    pub path: &'d str,
    /// Rules in the dump.
    pub rules: usize,
    /// Error diagnostics of the parser (`rulelint check` shows them).
    pub parse_errors: usize,
    /// `iptables`, `nftables` or `iptables+nftables`: the packet filters its file shows.
    pub backend: &'static str,
    /// The kube-proxy nftables layout generation (`pre-dnat-filter`, ...; `none` without a
    /// kube-proxy table); left out for iptables-only nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nft_generation: Option<&'static str>,
    /// Its Services were left out of the comparison (an `ipvsadm -L` listing, names instead of
    /// addresses); left out when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub services_unknown: bool,
}

/// Counts.
#[derive(Debug, Serialize)]
pub struct SummaryDoc {
    /// Differences and rule changes that are drift.
    pub drift: usize,
    /// Differences and rule changes that healthy nodes have by design.
    pub expected: usize,
}

/// One difference.
#[derive(Debug, Serialize)]
pub struct DifferenceDoc<'d> {
    /// `kubernetes` or `chain`.
    pub level: Level,
    /// `service`, `service-chain`, `service-address`, `no-endpoints-reject`, `endpoint`,
    /// `weight`, `local-endpoint`, `no-local-endpoints-drop`, `hook-jump`, `chain`, `policy`,
    /// `chain-rules`.
    pub kind: &'static str,
    /// The Service port it concerns.
    pub service: Option<&'d str>,
    /// Null for drift; otherwise why healthy nodes differ like this.
    pub expected: Option<Expected>,
    /// Index into `variants` of the majority's value (groups only; null without a majority).
    pub majority: Option<usize>,
    /// The values nodes hold, most nodes first.
    pub variants: Vec<VariantDoc<'d>>,
    /// Sentences for people: one per odd group of nodes.
    pub messages: Vec<String>,
}

/// Nodes that hold one value.
#[derive(Debug, Serialize)]
pub struct VariantDoc<'d> {
    /// The value in words; null when these nodes lack the subject.
    pub value: Option<String>,
    /// The nodes, with the line that shows it.
    pub nodes: Vec<NodeLineDoc<'d>>,
}

/// A node and a line in its dump.
#[derive(Debug, Serialize)]
pub struct NodeLineDoc<'d> {
    /// Node name.
    pub node: &'d str,
    /// 1-based line, when one rule or chain line shows it.
    pub line: Option<u32>,
}

/// The rule changes of one chain.
#[derive(Debug, Serialize)]
pub struct ChainDoc<'d> {
    /// Table name.
    pub table: &'d str,
    /// Chain name.
    pub chain: &'d str,
    /// The Service port the chain belongs to, if any.
    pub service: Option<&'d str>,
    /// The chain's order was too costly to diff: rules were compared as a multiset.
    pub unordered: bool,
    /// The changes.
    pub changes: Vec<ChangeDoc<'d>>,
}

/// One rule change.
#[derive(Debug, Serialize)]
pub struct ChangeDoc<'d> {
    /// `removed` (first node only), `added` (second node only), `changed` (other addresses),
    /// `moved` (another place in the chain's order).
    pub change: ChangeKind,
    /// The Service port the rule serves (its chain's, its target's or its comment's).
    pub service: Option<String>,
    /// Null for drift; otherwise why healthy nodes differ like this.
    pub expected: Option<Expected>,
    /// The rule in the first dump.
    pub a: Option<RuleAtDoc<'d>>,
    /// The rule in the second dump.
    pub b: Option<RuleAtDoc<'d>>,
}

/// A rule and its line.
#[derive(Debug, Serialize)]
pub struct RuleAtDoc<'d> {
    /// 1-based line.
    pub line: u32,
    /// The rule as written (counters left out).
    pub text: &'d str,
}

/// A node that drifts from the majority, and how.
#[derive(Debug, Serialize)]
pub struct OddNodeDoc<'d> {
    /// Node name.
    pub node: &'d str,
    /// Drifting differences by kind.
    pub drift: BTreeMap<&'static str, usize>,
}

/// Builds the JSON document. `paths[i]` is the file of `comparison.nodes[i]`.
pub fn document<'d>(comparison: &'d Comparison<'d>, paths: &'d [&'d str]) -> DiffDocument<'d> {
    let nodes = comparison.nodes;
    let node_docs = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeDoc {
            name: &n.name,
            path: paths.get(i).copied().unwrap_or(""),
            rules: n.rules,
            parse_errors: n.parse_errors,
            backend: n.backend.name(),
            nft_generation: n.nft_generation,
            services_unknown: n.services_unknown,
        })
        .collect();
    let differences = comparison
        .differences
        .iter()
        .map(|d| DifferenceDoc {
            level: d.level(),
            kind: d.kind(),
            service: d.subject.service(),
            expected: d.expected,
            majority: d.majority(),
            variants: d
                .variants
                .iter()
                .map(|v| VariantDoc {
                    value: v.value.map(|value| state(&d.subject, Some(value))),
                    nodes: v
                        .nodes
                        .iter()
                        .map(|&(n, line)| NodeLineDoc {
                            node: &nodes[n as usize].name,
                            line,
                        })
                        .collect(),
                })
                .collect(),
            messages: d.messages(comparison),
        })
        .collect();
    let rules = match comparison.dumps {
        Some(dumps) => comparison
            .rules
            .iter()
            .map(|c| chain_doc(dumps, c))
            .collect(),
        None => Vec::new(),
    };
    DiffDocument {
        format_version: 1,
        mode: if nodes.len() > 2 { "group" } else { "pair" },
        nodes: node_docs,
        agree: comparison.drift_count() == 0,
        summary: SummaryDoc {
            drift: comparison.drift_count(),
            expected: comparison.expected_count(),
        },
        differences,
        rules,
        odd_nodes: odd_nodes(comparison),
        notes: notes(nodes)
            .into_iter()
            .chain(comparison.notes.iter().cloned())
            .collect(),
    }
}

/// What the comparison leaves out between nodes of different backends or nftables layouts.
fn notes(nodes: &[NodeInfo]) -> Vec<String> {
    let mut notes = Vec::new();
    let any_iptables = nodes.iter().any(|n| n.backend.has_iptables());
    if any_iptables {
        for n in nodes.iter().filter(|n| n.backend == NodeBackend::Nftables) {
            notes.push(format!(
                "{} is in nftables mode: compared with iptables nodes at the Service level only",
                n.name
            ));
        }
    }
    if nodes.iter().any(|n| !n.backend.has_ipvs()) {
        for n in nodes.iter().filter(|n| n.backend.has_ipvs()) {
            notes.push(format!(
                "{} is in IPVS mode: compared with nodes in other modes at the Service level only, its Service ports matched to theirs by cluster IP, port and protocol",
                n.name
            ));
        }
    }
    for n in nodes.iter().filter(|n| n.services_unknown) {
        notes.push(format!("{}: {}", n.name, super::ipvs::NAMES_RESOLVED));
    }
    let mut generations: Vec<&str> = nodes.iter().filter_map(|n| n.nft_generation).collect();
    generations.sort_unstable();
    generations.dedup();
    if generations.len() > 1 {
        let by_node: Vec<String> = nodes
            .iter()
            .filter_map(|n| Some(format!("{} {}", n.name, n.nft_generation?)))
            .collect();
        notes.push(format!(
            "nftables layouts differ ({}): nftables chains are compared only between nodes of one layout",
            by_node.join(", ")
        ));
    }
    notes
}

fn chain_doc<'d>(nodes: &'d [Node<'d>], c: &ChainChanges<'d>) -> ChainDoc<'d> {
    let (a, b) = (&nodes[0], &nodes[1]);
    let at = |node: &'d Node<'d>, rule: Option<rulelint_parser::RuleId>| {
        rule.map(|r| RuleAtDoc {
            line: node.rule_line(r),
            text: node.set.rule(r).text(),
        })
    };
    ChainDoc {
        table: c.table,
        chain: c.chain,
        service: a.service_key_of_chain(c.chains.0),
        unordered: c.unordered,
        changes: c
            .changes
            .iter()
            .map(|ch| ChangeDoc {
                change: ch.kind,
                service: ch
                    .a
                    .map(|r| (a, r))
                    .or(ch.b.map(|r| (b, r)))
                    .and_then(|(node, r)| rule_service(node, r)),
                expected: ch.expected,
                a: at(a, ch.a),
                b: at(b, ch.b),
            })
            .collect(),
    }
}

/// The Service port a rule serves: the one its chain or its target chain belongs to, or the
/// one its kube-proxy comment names.
fn rule_service(node: &Node<'_>, rule: rulelint_parser::RuleId) -> Option<String> {
    let r = node.set.rule(rule);
    let by_chain = node.service_key_of_chain(r.get().chain).or_else(|| {
        let target = r.target()?;
        let chain = node.set.find_chain(r.chain().get().table, target.name())?;
        node.service_key_of_chain(chain.id)
    });
    if let Some(service) = by_chain {
        return Some(service.to_string());
    }
    comments(r).find_map(|c| service_comment(&c).map(|(name, _)| name.to_string()))
}

/// Per node, the drifting differences in which it is not with the majority.
fn odd_nodes<'d>(comparison: &'d Comparison<'d>) -> Vec<OddNodeDoc<'d>> {
    let nodes = comparison.nodes;
    if nodes.len() < 3 {
        return Vec::new();
    }
    let mut per_node: Vec<BTreeMap<&'static str, usize>> = vec![BTreeMap::new(); nodes.len()];
    for d in comparison
        .differences
        .iter()
        .filter(|d| d.expected.is_none())
    {
        let Some(major) = d.majority() else { continue };
        for (i, v) in d.variants.iter().enumerate() {
            if i == major {
                continue;
            }
            for &(n, _) in &v.nodes {
                *per_node[n as usize].entry(d.kind()).or_default() += 1;
            }
        }
    }
    per_node
        .into_iter()
        .enumerate()
        .filter(|(_, m)| !m.is_empty())
        .map(|(i, drift)| OddNodeDoc {
            node: &nodes[i].name,
            drift,
        })
        .collect()
}

/// Colours for the text report, off when not on a terminal.
struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    fn bold(&self, t: &str) -> String {
        self.wrap("1", t)
    }
    fn red(&self, t: &str) -> String {
        self.wrap("31", t)
    }
    fn green(&self, t: &str) -> String {
        self.wrap("32", t)
    }
    fn yellow(&self, t: &str) -> String {
        self.wrap("33", t)
    }
    fn dim(&self, t: &str) -> String {
        self.wrap("2", t)
    }
}

/// The text report: drift first (Kubernetes, chains, rules), then expected differences, then
/// for groups a table of nodes by kind of drift.
pub fn human(doc: &DiffDocument<'_>, color: bool) -> String {
    let p = Paint { on: color };
    let mut out = String::new();
    let names: Vec<String> = doc
        .nodes
        .iter()
        .map(|n| {
            if n.name == n.path {
                n.name.to_string()
            } else {
                format!("{} ({})", n.name, n.path)
            }
        })
        .collect();
    let _ = writeln!(
        out,
        "{} {}",
        p.bold("Comparing"),
        if doc.nodes.len() > 2 {
            format!("{} nodes", doc.nodes.len())
        } else {
            names.join(" with ")
        }
    );
    for note in &doc.notes {
        let _ = writeln!(out, "{} {note}", p.dim("note:"));
    }
    for n in doc.nodes.iter().filter(|n| n.parse_errors > 0) {
        let _ = writeln!(
            out,
            "{} {} has {} parse error(s); `rulelint check {}` shows them",
            p.yellow("warning:"),
            n.path,
            n.parse_errors,
            n.path
        );
    }
    let line_of = |l: &NodeLineDoc<'_>| match l.line {
        Some(line) => format!("{}:{line}", path_of(doc, l.node)),
        None => path_of(doc, l.node).to_string(),
    };
    // With a majority, message `i` describes the `i`-th odd variant: its locations are that
    // variant's lines only, never the majority's (they are in other nodes' files).
    let locations = |d: &DifferenceDoc<'_>, message: usize| -> String {
        let described: Vec<&VariantDoc<'_>> = match d.majority {
            Some(major) => d
                .variants
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != major)
                .map(|(_, v)| v)
                .skip(message)
                .take(1)
                .collect(),
            None => d.variants.iter().collect(),
        };
        let all: Vec<String> = described
            .into_iter()
            .flat_map(|v| v.nodes.iter())
            .filter(|l| l.line.is_some())
            .take(3)
            .map(line_of)
            .collect();
        if all.is_empty() {
            String::new()
        } else {
            p.dim(&format!("  [{}]", all.join(", ")))
        }
    };
    for (level, title) in [(Level::Kubernetes, "Kubernetes"), (Level::Chain, "Chains")] {
        let drift: Vec<&DifferenceDoc<'_>> = doc
            .differences
            .iter()
            .filter(|d| d.level == level && d.expected.is_none())
            .collect();
        if drift.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{}", p.bold(title));
        for d in drift {
            for (i, m) in d.messages.iter().enumerate() {
                let _ = writeln!(out, "  {} {m}{}", p.red("≠"), locations(d, i));
            }
        }
    }
    let explained: std::collections::BTreeSet<&str> = doc
        .differences
        .iter()
        .filter(|d| d.expected.is_none())
        .filter_map(|d| d.service)
        .collect();
    let drifting_chains: Vec<&ChainDoc<'_>> = doc
        .rules
        .iter()
        .filter(|c| c.changes.iter().any(|ch| ch.expected.is_none()))
        .collect();
    if !drifting_chains.is_empty() {
        let _ = writeln!(out, "\n{}", p.bold("Rules"));
        let (a, b) = (doc.nodes[0].path, doc.nodes[1].path);
        for c in drifting_chains {
            let drift = c.changes.iter().filter(|ch| ch.expected.is_none());
            let (explained_here, shown): (Vec<&ChangeDoc<'_>>, Vec<&ChangeDoc<'_>>) =
                drift.partition(|ch| ch.service.as_deref().is_some_and(|s| explained.contains(s)));
            let note = if c.unordered {
                " (too different to diff in order; compared as sets)"
            } else {
                ""
            };
            let mut title = format!("  {} {}{note}", c.table, c.chain);
            if !explained_here.is_empty() {
                let _ = write!(
                    title,
                    "{}",
                    p.dim(&format!(
                        "  ({} change(s) for the Services above not repeated)",
                        explained_here.len()
                    ))
                );
            }
            let _ = writeln!(out, "{title}");
            for ch in shown {
                write_change(&mut out, &p, ch, a, b);
            }
        }
    }
    if doc.summary.expected > 0 {
        let _ = writeln!(
            out,
            "\n{} {}",
            p.bold("Expected differences"),
            p.dim("(healthy nodes differ like this)")
        );
        // Each reason with what it covers, a few lines each: the JSON lists all of them.
        const SHOWN: usize = 8;
        let mut by_reason: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
        for d in doc.differences.iter() {
            if let Some(e) = d.expected {
                by_reason
                    .entry(e.describe())
                    .or_default()
                    .extend(d.messages.iter().cloned());
            }
        }
        for c in &doc.rules {
            let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
            for e in c.changes.iter().filter_map(|ch| ch.expected) {
                *counts.entry(e.describe()).or_default() += 1;
            }
            for (reason, n) in counts {
                by_reason
                    .entry(reason)
                    .or_default()
                    .push(format!("{} {}: {n} rule change(s)", c.table, c.chain));
            }
        }
        for (reason, lines) in by_reason {
            let _ = writeln!(out, "  {}", p.dim(&format!("{reason}:")));
            for line in lines.iter().take(SHOWN) {
                let _ = writeln!(out, "    {} {line}", p.dim("~"));
            }
            if lines.len() > SHOWN {
                let _ = writeln!(
                    out,
                    "    {}",
                    p.dim(&format!(
                        "... and {} more (`--format json` lists all)",
                        lines.len() - SHOWN
                    ))
                );
            }
        }
    }
    if !doc.odd_nodes.is_empty() {
        write_odd_table(&mut out, &p, doc);
    }
    let unknown: Vec<&str> = doc
        .nodes
        .iter()
        .filter(|n| n.services_unknown)
        .map(|n| n.name)
        .collect();
    let verdict = if doc.agree && !unknown.is_empty() {
        // "No drift" alone would vouch for Services that were never compared.
        p.green(&format!(
            "no drift in what was compared (Services not compared on {})",
            unknown.join(", ")
        ))
    } else if doc.agree {
        p.green("no drift")
    } else {
        p.red(&format!("{} drifting difference(s)", doc.summary.drift))
    };
    let _ = writeln!(
        out,
        "\n{verdict}, {} expected difference(s)",
        doc.summary.expected
    );
    out
}

fn path_of<'d>(doc: &DiffDocument<'d>, node: &str) -> &'d str {
    doc.nodes
        .iter()
        .find(|n| n.name == node)
        .map_or("", |n| n.path)
}

fn write_change(out: &mut String, p: &Paint, ch: &ChangeDoc<'_>, a: &str, b: &str) {
    match (&ch.a, &ch.b) {
        (Some(ra), Some(rb)) if ch.change == ChangeKind::Moved => {
            let _ = writeln!(
                out,
                "    {} {a}:{} -> {b}:{}  {}",
                p.yellow("moved"),
                ra.line,
                rb.line,
                ra.text
            );
        }
        (Some(ra), Some(rb)) => {
            let _ = writeln!(out, "    {} {a}:{}  {}", p.red("-"), ra.line, ra.text);
            let _ = writeln!(out, "    {} {b}:{}  {}", p.green("+"), rb.line, rb.text);
        }
        (Some(ra), None) => {
            let _ = writeln!(out, "    {} {a}:{}  {}", p.red("-"), ra.line, ra.text);
        }
        (None, Some(rb)) => {
            let _ = writeln!(out, "    {} {b}:{}  {}", p.green("+"), rb.line, rb.text);
        }
        (None, None) => {}
    }
}

/// Nodes x kinds of drift.
fn write_odd_table(out: &mut String, p: &Paint, doc: &DiffDocument<'_>) {
    let mut kinds: Vec<&'static str> = doc
        .odd_nodes
        .iter()
        .flat_map(|n| n.drift.keys().copied())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    let width = doc
        .odd_nodes
        .iter()
        .map(|n| n.node.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(out, "\n{}", p.bold("Drift by node"));
    let mut header = format!("  {:width$}", "node");
    for k in &kinds {
        let _ = write!(header, "  {k}");
    }
    header.push_str("  total");
    let _ = writeln!(out, "{}", p.dim(&header));
    for n in &doc.odd_nodes {
        let mut row = format!("  {:width$}", n.node);
        for k in &kinds {
            let count = n.drift.get(k).copied().unwrap_or(0);
            let _ = write!(row, "  {count:>w$}", w = k.len());
        }
        let _ = write!(row, "  {:>5}", n.drift.values().sum::<usize>());
        let _ = writeln!(out, "{row}");
    }
}
