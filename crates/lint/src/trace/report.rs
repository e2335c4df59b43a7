//! The trace report: the JSON document (format version 1) and the text a user reads.
//!
//! ```text
//! node-a (node-a.txt)
//!   10.96.0.10:53/udp from pod -> 2 endpoints (1/2 each), not masqueraded
//!   ...
//! ```

use super::{
    Input, IpvsServer, Limit, NodeTrace, Outcome, SetFact, StepAt, TraceNode, TracedPacket, Verdict,
};
use serde::Serialize;
use std::fmt::Write;

/// The JSON format version.
pub const FORMAT_VERSION: u32 = 1;

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct TraceDocument {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// One entry per node, in the order given.
    pub nodes: Vec<NodeDoc>,
    /// With several nodes: where they first differ (`null` when they agree, or for one node).
    pub first_difference: Option<DifferenceDoc>,
}

/// One node's trace.
#[derive(Clone, Debug, Serialize)]
pub struct NodeDoc {
    /// The node's name.
    pub node: String,
    /// The file.
    pub file: String,
    /// Which ruleset the dump holds: `iptables` (iptables-save) or `nftables` (`nft list
    /// ruleset`).
    pub backend: &'static str,
    /// The one-line answer.
    pub summary: String,
    /// The packet traced.
    pub packet: TracedPacket,
    /// Every input with how it was decided (given, default, inferred, unknown).
    pub inputs: Vec<Input>,
    /// The outcomes, most probable first.
    pub outcomes: Vec<OutcomeDoc>,
    /// The bounds the walk hit (`branches`, `depth`, `rule-visits`); empty normally.
    pub limits: Vec<String>,
}

/// One outcome.
#[derive(Clone, Debug, Serialize)]
pub struct OutcomeDoc {
    /// Probability given the assumptions, from 0 to 1.
    pub probability: f64,
    /// `accept`, `forward`, `output`, `drop`, `reject` or `stopped`.
    pub verdict: Verdict,
    /// `IP:PORT` (or `IP`) after DNAT.
    pub destination: String,
    /// A DNAT changed the destination.
    pub translated: bool,
    /// The rule that masqueraded (or SNATed) the packet, `null` when none did.
    pub masquerade: Option<RuleAt>,
    /// What the path assumes.
    pub assumptions: Vec<String>,
    /// Every rule that matched or changed the packet, policies and routing decisions, in order.
    pub steps: Vec<StepDoc>,
    /// For `stopped`: the bound hit.
    pub stopped: Option<String>,
    /// What the node's ipsets hold, read from its file, for the set matches the path decided
    /// (absent when none was).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<SetFactDoc>,
    /// The IPVS virtual server the packet was delivered to, from the file's `ipvsadm -Ln`
    /// (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipvs: Option<IpvsServerDoc>,
}

/// Whether an ipset holds the packet's key, from the set's members in the file.
#[derive(Clone, Debug, Serialize)]
pub struct SetFactDoc {
    /// The set's name.
    pub ipset: String,
    /// Its type (`hash:ip,port`, `bitmap:port`, ...).
    #[serde(rename = "type")]
    pub set_type: String,
    /// The packet's key as ipset writes a member (`10.96.0.10,udp:53`, `30080`).
    pub key: String,
    /// The set holds it.
    pub holds: bool,
    /// The line of the member that holds it, else of the set's `create` (`Name:`) line.
    pub line: Option<u32>,
    /// The fact in words, as the text report prints it.
    pub text: String,
}

/// An IPVS virtual server as the file's `ipvsadm -Ln` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct IpvsServerDoc {
    /// `TCP`, `UDP`, `SCTP`.
    pub protocol: String,
    /// `10.96.0.10:53`.
    pub address: String,
    /// The scheduler (`rr`), `null` when not shown.
    pub scheduler: Option<String>,
    /// `persistent N` (ClientIP affinity) in seconds, `null` when not persistent.
    pub persistent_seconds: Option<u32>,
    /// The real servers, in the order listed (empty: new connections reach no endpoint).
    pub real_servers: Vec<RealServerDoc>,
    /// The virtual server's line.
    pub line: Option<u32>,
    /// The fact in words, as the text report prints it.
    pub text: String,
}

/// A real server of a virtual server.
#[derive(Clone, Debug, Serialize)]
pub struct RealServerDoc {
    /// `10.244.1.5:53`.
    pub address: String,
    /// `Masq`, `Route`, `Tunnel`, `Local`, or `unknown` (not shown).
    pub forward: &'static str,
    /// The weight, `null` when not shown.
    pub weight: Option<i64>,
}

/// A rule by position.
#[derive(Clone, Debug, Serialize)]
pub struct RuleAt {
    /// Table.
    pub table: String,
    /// Chain.
    pub chain: String,
    /// 1-based line in the file.
    pub line: u32,
    /// The rule's text.
    pub rule: String,
}

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepDoc {
    /// Table; `routing` for a routing decision.
    pub table: String,
    /// Chain; empty for a routing decision.
    pub chain: String,
    /// 1-based line (`null` for a routing decision, or a policy the dump does not declare).
    pub line: Option<u32>,
    /// The rule's text, the chain's declaration for a policy, empty for a routing decision.
    pub rule: String,
    /// What it did.
    pub effect: String,
}

/// Where nodes first differ.
#[derive(Clone, Debug, Serialize)]
pub struct DifferenceDoc {
    /// The sentence.
    pub message: String,
    /// The node compared with the first one.
    pub node: String,
    /// The outcome (by position, most probable first) where the paths part.
    pub outcome: usize,
    /// The step index where the paths part (`null` when the outcome sets differ in size).
    pub step: Option<usize>,
    /// The first node's step there.
    pub first: Option<StepDoc>,
    /// The other node's step there.
    pub other: Option<StepDoc>,
}

/// A probability for people: `1/3` when it is one over a small number, else 4 decimals.
pub fn probability(p: f64) -> String {
    if (p - 1.0).abs() < 1e-9 {
        return "1".into();
    }
    for n in 2..=1000u32 {
        if (p - 1.0 / f64::from(n)).abs() < 1e-6 / f64::from(n) {
            return format!("1/{n}");
        }
    }
    format!("{p:.4}")
}

/// A prepared dump the report can point into: an iptables-save node ([`TraceNode`]) or an
/// nftables node ([`super::nft::NftTraceNode`]).
pub trait TracedDump {
    /// The node's name.
    fn node_name(&self) -> &str;
    /// Where a step happened, as table, chain, line and text.
    fn step_doc(&self, at: StepAt, effect: &str) -> StepDoc;
    /// `iptables` or `nftables`.
    fn backend(&self) -> &'static str;
    /// The 1-based line of a byte offset of the node's file (the facts read beside its rules).
    fn line_at(&self, _offset: u32) -> Option<u32> {
        None
    }
}

impl TracedDump for TraceNode<'_> {
    fn node_name(&self) -> &str {
        &self.name
    }

    fn step_doc(&self, at: StepAt, effect: &str) -> StepDoc {
        iptables_step_doc(self, at, effect)
    }

    fn backend(&self) -> &'static str {
        "iptables"
    }

    fn line_at(&self, offset: u32) -> Option<u32> {
        Some(self.line(offset))
    }
}

/// The step of a routing decision (both backends).
pub(crate) fn route_step_doc(effect: &str) -> StepDoc {
    StepDoc {
        table: "routing".into(),
        chain: String::new(),
        line: None,
        rule: String::new(),
        effect: effect.into(),
    }
}

fn iptables_step_doc(node: &TraceNode<'_>, at: StepAt, effect: &str) -> StepDoc {
    let set = node.set;
    match at {
        StepAt::Rule(id) => {
            let rule = set.rule(id);
            let chain = rule.chain();
            StepDoc {
                table: chain.table().name().into(),
                chain: chain.name().into(),
                line: Some(node.rule_line(id)),
                rule: rule.text().into(),
                effect: effect.into(),
            }
        }
        StepAt::Policy(c) => {
            let chain = set.chain(c);
            let decl = chain.get().declaration();
            StepDoc {
                table: chain.table().name().into(),
                chain: chain.name().into(),
                line: decl.map(|d| node.lines.line(d.start)),
                rule: decl.map_or_else(String::new, |d| set.text(d).trim_end().into()),
                effect: effect.into(),
            }
        }
        StepAt::Route => route_step_doc(effect),
        // An nftables step in an iptables node's path cannot happen: shown without a place.
        StepAt::NftRule(_) | StepAt::NftPolicy(_) => StepDoc {
            table: String::new(),
            chain: String::new(),
            line: None,
            rule: String::new(),
            effect: effect.into(),
        },
    }
}

fn outcome_doc(node: &dyn TracedDump, o: &Outcome) -> OutcomeDoc {
    OutcomeDoc {
        probability: o.probability,
        verdict: o.verdict,
        destination: o.destination.to_string(),
        translated: o.destination.translated,
        masquerade: o.masquerade.map(|at| {
            let step = node.step_doc(at, "");
            RuleAt {
                table: step.table,
                chain: step.chain,
                line: step.line.unwrap_or(0),
                rule: step.rule,
            }
        }),
        assumptions: o.assumptions.iter().map(ToString::to_string).collect(),
        steps: o
            .steps
            .iter()
            .map(|s| node.step_doc(s.at, &s.effect_text()))
            .collect(),
        stopped: o.stopped.map(Limit::describe),
        facts: o.facts.iter().map(|f| set_fact_doc(node, f)).collect(),
        ipvs: o.ipvs.as_ref().map(|v| ipvs_server_doc(node, v)),
    }
}

fn set_fact_doc(node: &dyn TracedDump, f: &SetFact) -> SetFactDoc {
    let line = node.line_at(f.offset);
    let at = line.map_or_else(String::new, |l| format!(", line {l}"));
    let text = if f.holds {
        format!("ipset {} holds {} [from the dump{at}]", f.set, f.key)
    } else {
        let members = match f.members {
            0 => "the set is empty".to_string(),
            1 => "not its 1 member".to_string(),
            n => format!("not among its {n} members"),
        };
        let at = line.map_or_else(String::new, |l| format!(", set at line {l}"));
        format!(
            "ipset {} does not hold {} [from the dump: {members}{at}]",
            f.set, f.key
        )
    };
    SetFactDoc {
        ipset: f.set.clone(),
        set_type: f.set_type.clone(),
        key: f.key.clone(),
        holds: f.holds,
        line,
        text,
    }
}

fn ipvs_server_doc(node: &dyn TracedDump, v: &IpvsServer) -> IpvsServerDoc {
    let line = node.line_at(v.offset);
    let mut text = format!("IPVS virtual server {} {}", v.protocol, v.address);
    if let Some(s) = &v.scheduler {
        let _ = write!(text, " {s}");
    }
    if let Some(t) = v.persistent_seconds {
        let _ = write!(text, " persistent {t}");
    }
    if v.real_servers.is_empty() {
        text.push_str(" has no real server: new connections are not forwarded to any endpoint");
    } else {
        let servers: Vec<String> = v
            .real_servers
            .iter()
            .map(|r| match r.weight {
                Some(w) => format!("{} ({}, weight {w})", r.address, r.forward),
                None => format!("{} ({})", r.address, r.forward),
            })
            .collect();
        let _ = write!(text, " -> {}", servers.join(", "));
    }
    let _ = write!(
        text,
        " [from ipvsadm in the dump{}]",
        line.map_or_else(String::new, |l| format!(", line {l}"))
    );
    IpvsServerDoc {
        protocol: v.protocol.clone(),
        address: v.address.clone(),
        scheduler: v.scheduler.clone(),
        persistent_seconds: v.persistent_seconds,
        real_servers: v
            .real_servers
            .iter()
            .map(|r| RealServerDoc {
                address: r.address.clone(),
                forward: r.forward,
                weight: r.weight,
            })
            .collect(),
        line,
        text,
    }
}

/// The one-line answer: `10.96.0.10:53/udp from pod -> 3 endpoints (1/3 each), not masqueraded`.
pub fn summary(node: &dyn TracedDump, t: &NodeTrace) -> String {
    let p = &t.packet;
    let mut s = format!("{}/{} from {}", p.dst, p.protocol, p.from.as_str());
    s.push_str(" -> ");
    let delivered: Vec<&Outcome> = t
        .outcomes
        .iter()
        .filter(|o| {
            matches!(
                o.verdict,
                Verdict::Accept | Verdict::Forward | Verdict::Output
            )
        })
        .collect();
    let assumed = t
        .outcomes
        .iter()
        .filter(|o| !o.assumptions.is_empty())
        .count();
    let mut parts = Vec::new();
    // Endpoints: distinct translated destinations of delivered outcomes.
    let mut dests: Vec<(String, f64)> = Vec::new();
    let translated = delivered.iter().any(|o| o.destination.translated);
    let unchanged: Vec<&Outcome> = delivered
        .iter()
        .copied()
        .filter(|o| translated && !o.destination.translated)
        .collect();
    for o in delivered
        .iter()
        .filter(|o| !translated || o.destination.translated)
    {
        let d = o.destination.to_string();
        match dests.iter_mut().find(|(x, _)| *x == d) {
            Some((_, q)) => *q += o.probability,
            None => dests.push((d, o.probability)),
        }
    }
    if translated && dests.len() > 1 {
        let first = dests[0].1;
        if dests.iter().all(|(_, q)| (q - first).abs() < 1e-6) && assumed == 0 {
            parts.push(format!(
                "{} endpoints ({} each)",
                dests.len(),
                probability(first)
            ));
        } else {
            parts.push(format!("{} endpoints", dests.len()));
        }
    } else if let Some((d, _)) = dests.first()
        && dests.len() == 1
    {
        let how = match delivered[0].verdict {
            Verdict::Accept => "delivered locally",
            Verdict::Forward => "forwarded",
            _ => "sent",
        };
        if translated {
            parts.push(format!("{d} ({how})"));
        } else {
            parts.push(format!("{how} to {d} unchanged"));
        }
    }
    if let Some(o) = unchanged.first() {
        parts.push(format!("{} unchanged", o.verdict.as_str()));
    }
    for verdict in [Verdict::Drop, Verdict::Reject, Verdict::Stopped] {
        let of: Vec<&Outcome> = t.outcomes.iter().filter(|o| o.verdict == verdict).collect();
        if of.is_empty() {
            continue;
        }
        if verdict == Verdict::Stopped {
            let why: Vec<String> = t.limits.iter().map(|l| l.describe()).collect();
            parts.push(format!("stopped: {}", why.join("; ")));
            continue;
        }
        let by = of[0]
            .steps
            .last()
            .map(|s| node.step_doc(s.at, &s.effect_text()));
        let word = match verdict {
            Verdict::Drop => "dropped",
            Verdict::Reject => "rejected",
            _ => "stopped",
        };
        match by {
            Some(st) if st.line.is_some() && of.len() == 1 => parts.push(format!(
                "{word} by {} {} line {}",
                st.table,
                st.chain,
                st.line.unwrap_or(0)
            )),
            _ => parts.push(word.to_string()),
        }
    }
    if parts.is_empty() {
        parts.push("no outcome".into());
    }
    s.push_str(&parts.join(" or "));
    if !delivered.is_empty() {
        let masq = delivered.iter().filter(|o| o.masquerade.is_some()).count();
        s.push_str(if masq == 0 {
            ", not masqueraded"
        } else if masq == delivered.len() {
            ", masqueraded"
        } else {
            ", masqueraded on some paths"
        });
    }
    if assumed > 0 {
        let _ = write!(
            s,
            " ({assumed} of {} outcomes rest on assumptions)",
            t.outcomes.len()
        );
    }
    s
}

/// The document for one node.
pub fn node_doc(node: &dyn TracedDump, file: &str, t: &NodeTrace) -> NodeDoc {
    NodeDoc {
        node: node.node_name().to_string(),
        file: file.into(),
        backend: node.backend(),
        summary: summary(node, t),
        packet: t.packet.clone(),
        inputs: t.inputs.clone(),
        outcomes: t.outcomes.iter().map(|o| outcome_doc(node, o)).collect(),
        limits: t
            .limits
            .iter()
            .map(|l| {
                serde_json::to_value(l)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            })
            .collect(),
    }
}

/// The whole document: every node, and where the first differs from the others.
pub fn document(nodes: Vec<NodeDoc>) -> TraceDocument {
    let first_difference = first_difference(&nodes);
    TraceDocument {
        format_version: FORMAT_VERSION,
        nodes,
        first_difference,
    }
}

/// Compares steps without their lines (nodes' files differ in line numbers, not meaning).
/// How an outcome ends, comparable across backends: verdict, destination, probability (in
/// millionths), masqueraded, rests on assumptions.
fn end_of(o: &OutcomeDoc) -> (&'static str, String, u64, bool, bool) {
    (
        o.verdict.as_str(),
        o.destination.clone(),
        (o.probability * 1e6).round() as u64,
        o.masquerade.is_some(),
        !o.assumptions.is_empty(),
    )
}

/// Where the outcomes of two nodes of different backends differ, compared as sets of ends.
fn different_ends(first: &NodeDoc, other: &NodeDoc) -> Option<DifferenceDoc> {
    let ends = |n: &NodeDoc| {
        let mut e: Vec<_> = n.outcomes.iter().map(end_of).collect();
        e.sort();
        e
    };
    let (a, b) = (ends(first), ends(other));
    if a == b {
        return None;
    }
    let describe = |e: &[(&str, String, u64, bool, bool)]| {
        e.iter()
            .map(|(v, d, p, m, assumed)| {
                format!(
                    "{v} {d} ({}{}{})",
                    probability(*p as f64 / 1e6),
                    if *m { ", masqueraded" } else { "" },
                    if *assumed { ", assumed" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some(DifferenceDoc {
        message: format!(
            "outcomes differ ({} is {}, {} is {}; paths not compared): {}: {}; {}: {}",
            first.node,
            first.backend,
            other.node,
            other.backend,
            first.node,
            describe(&a),
            other.node,
            describe(&b)
        ),
        node: other.node.clone(),
        outcome: a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len())),
        step: None,
        first: None,
        other: None,
    })
}

fn same_step(a: &StepDoc, b: &StepDoc) -> bool {
    a.table == b.table && a.chain == b.chain && a.rule == b.rule && a.effect == b.effect
}

fn same_outcome(a: &OutcomeDoc, b: &OutcomeDoc) -> bool {
    a.verdict == b.verdict
        && a.destination == b.destination
        && (a.probability - b.probability).abs() < 1e-9
        && a.masquerade.is_some() == b.masquerade.is_some()
        && a.assumptions == b.assumptions
        && a.steps.len() == b.steps.len()
        && a.steps.iter().zip(&b.steps).all(|(x, y)| same_step(x, y))
}

/// The first place where a node's paths part from the first node's.
fn first_difference(nodes: &[NodeDoc]) -> Option<DifferenceDoc> {
    let first = nodes.first()?;
    for other in &nodes[1..] {
        if other.backend != first.backend {
            // An iptables node and an nftables node take different paths by design: what
            // they do to the packet is what compares.
            if let Some(d) = different_ends(first, other) {
                return Some(d);
            }
            continue;
        }
        let n = first.outcomes.len().max(other.outcomes.len());
        for i in 0..n {
            let (a, b) = (first.outcomes.get(i), other.outcomes.get(i));
            let (Some(a), Some(b)) = (a, b) else {
                return Some(DifferenceDoc {
                    message: format!(
                        "{} has {} outcomes, {} has {}",
                        first.node,
                        first.outcomes.len(),
                        other.node,
                        other.outcomes.len()
                    ),
                    node: other.node.clone(),
                    outcome: i,
                    step: None,
                    first: None,
                    other: None,
                });
            };
            if same_outcome(a, b) {
                continue;
            }
            let k = a
                .steps
                .iter()
                .zip(&b.steps)
                .position(|(x, y)| !same_step(x, y))
                .unwrap_or(a.steps.len().min(b.steps.len()));
            let (sa, sb) = (a.steps.get(k).cloned(), b.steps.get(k).cloned());
            let describe = |s: &Option<StepDoc>| match s {
                Some(s) if s.table == "routing" => format!("routing: {}", s.effect),
                Some(s) => format!("{} {} `{}`: {}", s.table, s.chain, s.rule, s.effect),
                None => "nothing more".into(),
            };
            let message = if sa.is_none() && sb.is_none() {
                format!(
                    "outcome {}: {} -> {} {}, {} -> {} {}",
                    i + 1,
                    first.node,
                    a.verdict.as_str(),
                    a.destination,
                    other.node,
                    b.verdict.as_str(),
                    b.destination
                )
            } else {
                format!(
                    "outcome {}, step {}: {} {}; {} {}",
                    i + 1,
                    k + 1,
                    first.node,
                    describe(&sa),
                    other.node,
                    describe(&sb)
                )
            };
            return Some(DifferenceDoc {
                message,
                node: other.node.clone(),
                outcome: i,
                step: Some(k),
                first: sa,
                other: sb,
            });
        }
    }
    None
}

/// The text report.
pub fn human(doc: &TraceDocument) -> String {
    let mut s = String::new();
    for n in &doc.nodes {
        let _ = writeln!(s, "{} ({})", n.node, n.file);
        let _ = writeln!(s, "  {}", n.summary);
        let _ = writeln!(s, "  packet:");
        for i in &n.inputs {
            let how = match &i.how {
                super::How::Given => "given".to_string(),
                super::How::Default => "default".to_string(),
                super::How::Inferred(why) => format!("inferred: {why}"),
                super::How::Unknown => "unknown".to_string(),
            };
            let _ = writeln!(s, "    {:<15} {}  [{how}]", i.field, i.value);
        }
        for l in &n.limits {
            let _ = writeln!(s, "  limit hit: {l} (some paths were stopped)");
        }
        for (k, o) in n.outcomes.iter().enumerate() {
            let _ = writeln!(
                s,
                "  outcome {} of {}: {} {}, probability {}{}",
                k + 1,
                n.outcomes.len(),
                o.verdict.as_str(),
                o.destination,
                probability(o.probability),
                match &o.masquerade {
                    Some(m) => format!(", masqueraded by {} {} line {}", m.table, m.chain, m.line),
                    None => ", not masqueraded".into(),
                }
            );
            if let Some(why) = &o.stopped {
                let _ = writeln!(s, "    stopped: {why}");
            }
            for a in &o.assumptions {
                let _ = writeln!(s, "    {a}");
            }
            for f in &o.facts {
                let _ = writeln!(s, "    {}", f.text);
            }
            let long = o.steps.len() > 40;
            for (k, st) in o.steps.iter().enumerate() {
                if long && (20..o.steps.len() - 5).contains(&k) {
                    if k == 20 {
                        let _ = writeln!(s, "    ... {} steps left out ...", o.steps.len() - 25);
                    }
                    continue;
                }
                if st.table == "routing" {
                    let _ = writeln!(s, "    routing: {}", st.effect);
                } else {
                    let _ = writeln!(
                        s,
                        "    {} {} {}: {}",
                        st.table,
                        st.chain,
                        st.line
                            .map_or_else(|| "-".to_string(), |l| format!("{}:{l}", n.file)),
                        st.rule
                    );
                    let _ = writeln!(s, "      => {}", st.effect);
                }
            }
            if let Some(v) = &o.ipvs {
                let _ = writeln!(s, "    {}", v.text);
            }
        }
        s.push('\n');
    }
    if doc.nodes.len() > 1 {
        match &doc.first_difference {
            Some(d) => {
                let _ = writeln!(s, "first difference: {}", d.message);
            }
            None if doc.nodes.iter().any(|n| n.backend != doc.nodes[0].backend) => {
                let _ = writeln!(
                    s,
                    "every node gives the same outcomes (iptables and nftables paths are not \
                     compared)"
                );
            }
            None => {
                let _ = writeln!(s, "every node gives the same outcomes by the same rules");
            }
        }
    }
    // Rules, set names and addresses are the input's words: a control byte in them must not
    // drive the terminal, and a 100 KB rule or comment must not fill it.
    cut_long_lines(&rulelint_parser::escape_control(&s))
}

/// `text` with every line longer than [`rulelint_parser::SNIPPET_REACH`] bytes (what `check`
/// shows of a line beside a span) cut there, on a character boundary, with how much was left
/// out. JSON keeps the whole text.
fn cut_long_lines(text: &str) -> String {
    let reach = rulelint_parser::SNIPPET_REACH;
    let mut out = String::with_capacity(text.len().min(1 << 20));
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        if body.len() <= reach {
            out.push_str(line);
            continue;
        }
        let mut end = reach;
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&body[..end]);
        let _ = write!(out, " ... ({} more bytes not shown)", body.len() - end);
        if line.len() > body.len() {
            out.push('\n');
        }
    }
    out
}
