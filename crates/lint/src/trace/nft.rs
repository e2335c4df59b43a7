//! The trace on an nftables node (`nft list ruleset`): the same packet, outcomes and report as
//! the iptables walk, over nftables' semantics.
//!
//! Every base chain of the packet's family (`ip` and `inet` for IPv4, `ip6` and `inet` for IPv6)
//! runs on its hook in priority order, whatever its table. An `accept` ends only the current base
//! chain: the next base chain of the hook still sees the packet. A `drop` or `reject` ends the
//! packet. `dnat` and `masquerade` end their base chain like an accept. Rules are read statement
//! by statement: a match that the packet and the node's addresses decide is yes or no, one that
//! depends on what the dump does not hold forks with an assumption, as does any statement the
//! tracer does not model. `numgen random mod N` forks N ways, 1/N each.

use super::eval::{self, Env, Packet};
use super::report::{StepDoc, TracedDump, route_step_doc};
use super::walk::{self, Hook, Known, assume, hook_interfaces, merge, resolve, settle_affinity};
use super::{
    Affinity, Assumption, ConnState, Destination, Endpoint, Limit, MAX_BRANCHES, MAX_DEPTH,
    MAX_PATH_STEPS, MAX_RULE_VISITS, MIN_PROBABILITY, NodeFacts, NodeTrace, Origin, Outcome,
    PacketSpec, Step, StepAt, Verdict, has_ports,
};
use crate::kube::AddressKind;
use crate::kube::catalog::NodePortAddresses;
use crate::matchset::protocol_number;
use crate::nft::kube::NftKubeModel;
use ipnet::IpNet;
use rulelint_nft::{
    ChainGraph, ChainId, Element, Expr, Family, LineIndex, RuleId, Ruleset, SetId, Stmt, Value,
    VerdictKind,
};
use rulelint_parser::views::NatAddress;
use rustc_hash::FxHashMap;
use std::net::IpAddr;

/// One nftables node's listing, prepared for tracing (parse once, trace many packets).
pub struct NftTraceNode<'a> {
    /// The node's name.
    pub name: String,
    /// The parsed listing.
    pub set: &'a Ruleset<'a>,
    /// What kube-proxy programmed.
    pub model: NftKubeModel<'a>,
    /// What the listing says about the node.
    pub facts: NodeFacts,
    /// The node's addresses the listing shows, with where.
    addresses: Vec<(IpAddr, String)>,
    /// Pod addresses of node-local endpoints.
    local_endpoints: Vec<IpAddr>,
    lines: LineIndex,
    /// Named sets and maps by table and name.
    sets: FxHashMap<(u32, &'a str), SetId>,
}

impl<'a> NftTraceNode<'a> {
    /// Builds the Kubernetes model, the node facts and the set index.
    pub fn new(name: impl Into<String>, set: &'a Ruleset<'a>) -> NftTraceNode<'a> {
        let graph = ChainGraph::build(set);
        let model = NftKubeModel::build(set, &graph);
        let lines = LineIndex::new(set.text);
        let mut sets = FxHashMap::default();
        for (i, s) in set.sets.iter().enumerate() {
            sets.entry((s.table.0, s.name)).or_insert(SetId(i as u32));
        }
        let mut facts = NodeFacts::default();
        let mut local_endpoints = Vec::new();
        for service in &model.services {
            for address in &service.addresses {
                if address.kind != AddressKind::NodePort
                    && let Some(net) = address.address
                {
                    facts.service_ips.insert(net.addr());
                }
            }
            let first_ip = |e: &crate::kube::catalog::CatalogEndpoint<'_>| {
                e.destination
                    .as_deref()
                    .and_then(|d| NatAddress::parse(d).ok()?.first)
            };
            facts
                .endpoint_ips
                .extend(service.endpoints.iter().filter_map(first_ip));
            local_endpoints.extend(service.local_endpoints.iter().filter_map(first_ip));
        }
        facts.pod_cidr = pod_cidr_from_rules(set, &lines)
            .or_else(|| super::pod_cidr_around(&facts.endpoint_ips));
        let mut addresses = Vec::new();
        if let NodePortAddresses::Listed(nets) = &model.node_port_addresses {
            for net in nets {
                if net.prefix_len() == net.max_prefix_len() && !net.addr().is_loopback() {
                    addresses.push((net.addr(), "in the `nodeport-ips` set".to_string()));
                }
            }
        }
        NftTraceNode {
            name: name.into(),
            set,
            model,
            facts,
            addresses,
            local_endpoints,
            lines,
            sets,
        }
    }

    fn rule_text(&self, id: RuleId) -> &'a str {
        let span = self.set.rules[id.index()].span;
        self.set.text.get(span.range()).unwrap_or("").trim()
    }

    fn table_name(&self, chain: ChainId) -> String {
        let table = &self.set.tables[self.set.chains[chain.index()].table.index()];
        match (table.family, table.name) {
            (Some(f), Some(n)) => format!("{} {n}", f.as_str()),
            (None, Some(n)) => n.to_string(),
            _ => "(no table)".to_string(),
        }
    }

    /// The named set `name` of the table holding `chain`.
    fn named_set(&self, chain: ChainId, name: &str) -> Option<&'a rulelint_nft::Set<'a>> {
        let table = self.set.chains[chain.index()].table.0;
        self.sets
            .get(&(table, name))
            .map(|id| &self.set.sets[id.index()])
    }
}

impl TracedDump for NftTraceNode<'_> {
    fn node_name(&self) -> &str {
        &self.name
    }

    fn backend(&self) -> &'static str {
        "nftables"
    }

    fn step_doc(&self, at: StepAt, effect: &str) -> StepDoc {
        match at {
            StepAt::NftRule(id) => {
                let rule = &self.set.rules[id.index()];
                StepDoc {
                    table: self.table_name(rule.chain),
                    chain: self.set.chains[rule.chain.index()].name.to_string(),
                    line: Some(self.lines.line(rule.span.start)),
                    rule: self.rule_text(id).to_string(),
                    effect: effect.into(),
                }
            }
            StepAt::NftPolicy(c) => {
                let chain = &self.set.chains[c.index()];
                let decl = chain.base.as_ref().map(|b| b.span);
                StepDoc {
                    table: self.table_name(c),
                    chain: chain.name.to_string(),
                    line: decl.map(|d| self.lines.line(d.start)),
                    rule: decl
                        .and_then(|d| self.set.text.get(d.range()))
                        .unwrap_or("")
                        .trim()
                        .to_string(),
                    effect: effect.into(),
                }
            }
            StepAt::Route => route_step_doc(effect),
            StepAt::Rule(_) | StepAt::Policy(_) => StepDoc {
                table: String::new(),
                chain: String::new(),
                line: None,
                rule: String::new(),
                effect: effect.into(),
            },
        }
    }
}

/// The pod network from kube-proxy's `ip saddr != CIDR jump mark-for-masquerade` (its
/// `--cluster-cidr`) in a `service-*` chain.
fn pod_cidr_from_rules(set: &Ruleset<'_>, lines: &LineIndex) -> Option<(IpNet, String)> {
    for chain in &set.chains {
        if !chain.name.starts_with("service-") {
            continue;
        }
        for id in &chain.rules {
            let rule = &set.rules[id.index()];
            for st in set.statements_of(rule) {
                if let Stmt::Match {
                    left: Expr::Payload { field: "saddr", .. },
                    op: Some("!="),
                    right: Expr::Literal(lit),
                } = &st.kind
                    && let Ok(net) = lit.parse::<IpNet>()
                {
                    return Some((
                        net.trunc(),
                        format!(
                            "from `ip saddr != {lit}` in {}, line {}",
                            chain.name,
                            lines.line(rule.span.start)
                        ),
                    ));
                }
            }
        }
    }
    None
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Hook(Hook),
    Route,
}

/// A chain being read: the rule and the statement within it.
#[derive(Clone, Copy, Debug)]
struct Frame {
    chain: ChainId,
    rule: u32,
    stmt: u32,
    /// The questions the rule has met so far on this path (see [`eval::MAX_RULE_QUESTIONS`]).
    asked: u32,
}

#[derive(Clone, Debug)]
struct Branch {
    pkt: Packet,
    probability: f64,
    assumptions: Vec<Assumption>,
    steps: Vec<Step>,
    masquerade: Option<StepAt>,
    stage: Stage,
    /// Index into the hook's base chains of the one being (or next to be) run.
    base: usize,
    stack: Vec<Frame>,
    local: Option<bool>,
    /// The host's packet to a local address, back in through `lo`: its connection's NAT was
    /// set up on the way out, so the nat chains do not run again.
    looped: bool,
    /// A `redirect` rewrote the destination: the routing decision delivers it locally.
    redirected: bool,
}

impl Branch {
    fn known(&self, question: &str) -> Option<bool> {
        // Sorted (`assume`): a path of thousands of assumptions is searched, not scanned.
        let i = self
            .assumptions
            .partition_point(|a| a.question.as_str() < question);
        self.assumptions
            .get(i)
            .filter(|a| a.question == question)
            .map(|a| a.holds)
    }

    fn assume(&mut self, question: String, holds: bool) {
        assume(&mut self.assumptions, question, holds);
    }

    fn next_rule(&mut self) {
        if let Some(f) = self.stack.last_mut() {
            f.rule += 1;
            f.stmt = 0;
            f.asked = 0;
        }
    }

    fn next_stmt(&mut self) {
        if let Some(f) = self.stack.last_mut() {
            f.stmt += 1;
        }
    }
}

enum End {
    Verdict(Verdict),
    Stopped(Limit),
}

/// A match's answer.
enum Tri {
    Yes,
    No,
    Ask(String),
}

/// A packet field's value.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    /// The packet has no such header (`tcp dport` on a udp packet, `ip daddr` on IPv6): the
    /// statement fails whatever it compares with, `!=` too.
    Absent,
    Ip(IpAddr),
    Num(u64),
    Word(String),
}

/// What a selector reads: a value, a question (the dump or the flags do not tell), or nothing
/// the tracer models.
enum Field {
    Known(Val),
    Ask(String),
    NotModelled,
}

/// The one assumption a path rests on under `--affinity miss`.
const AFFINITY_MISS: &str =
    "no session-affinity set holds the source (--affinity miss: a first connection)";

struct Walker<'n, 'a> {
    node: &'n NftTraceNode<'a>,
    env: Env<'n>,
    origin: Origin,
    in_given: Option<String>,
    out_given: Option<String>,
    affinity: Option<Affinity>,
    /// The base chains of each hook (by [`Hook`] index), by priority.
    bases: [Vec<ChainId>; 5],
    visits: usize,
    branches: usize,
    /// The steps and assumptions the forks have copied.
    forked: usize,
    limits: Vec<Limit>,
    outcomes: Vec<Outcome>,
}

fn hook_index(hook: Hook) -> usize {
    match hook {
        Hook::Prerouting => 0,
        Hook::Input => 1,
        Hook::Forward => 2,
        Hook::Output => 3,
        Hook::Postrouting => 4,
    }
}

/// The base chains of the packet's family on each hook, by priority (text order breaks ties,
/// as nft registers them in that order). A priority nft would not resolve counts as 0.
fn base_chains(set: &Ruleset<'_>, v4: bool) -> [Vec<ChainId>; 5] {
    let mut bases: [Vec<(i32, ChainId)>; 5] = Default::default();
    for (i, chain) in set.chains.iter().enumerate() {
        let Some(base) = &chain.base else { continue };
        let family = set.tables[chain.table.index()].family;
        let ours = match family {
            Some(Family::Inet) => true,
            Some(Family::Ip) => v4,
            Some(Family::Ip6) => !v4,
            _ => false,
        };
        if !ours {
            continue;
        }
        let hook = match base.hook {
            "prerouting" => Hook::Prerouting,
            "input" => Hook::Input,
            "forward" => Hook::Forward,
            "output" => Hook::Output,
            "postrouting" => Hook::Postrouting,
            _ => continue,
        };
        bases[hook_index(hook)].push((base.priority.value.unwrap_or(0), ChainId(i as u32)));
    }
    bases.map(|mut v| {
        v.sort_by_key(|(p, _)| *p);
        v.into_iter().map(|(_, c)| c).collect()
    })
}

/// Traces `spec` on an nftables node.
pub fn trace_nft(node: &NftTraceNode<'_>, spec: &PacketSpec) -> NodeTrace {
    let known = Known {
        facts: &node.facts,
        service_ips: &node.facts.service_ips,
        addresses: node.addresses.clone(),
        layout: node.model.generation.describe().into(),
        services_not_local: true,
        local_endpoints: node.local_endpoints.clone(),
        endpoints: &node.facts.endpoint_ips,
    };
    let (mut inputs, pkt, env, origin, traced) = resolve(&known, spec);
    for input in inputs.iter_mut() {
        if input.field == "affinity" && spec.affinity.is_none() {
            input.value = "unknown: `ip saddr @affinity-*` (session affinity) lookups fork".into();
        }
    }
    let mut walker = Walker {
        node,
        env,
        origin,
        in_given: spec.in_interface.clone(),
        out_given: spec.out_interface.clone(),
        affinity: spec.affinity,
        bases: base_chains(node.set, spec.dst.ip.is_ipv4()),
        visits: 0,
        branches: 1,
        forked: 0,
        limits: Vec::new(),
        outcomes: Vec::new(),
    };
    let first = match origin {
        Origin::Host => Hook::Output,
        Origin::Pod | Origin::Outside => Hook::Prerouting,
    };
    let mut start = Branch {
        pkt,
        probability: 1.0,
        assumptions: Vec::new(),
        steps: Vec::new(),
        masquerade: None,
        stage: Stage::Hook(first),
        base: 0,
        stack: Vec::new(),
        local: None,
        looped: false,
        redirected: false,
    };
    if spec.state == Some(ConnState::Established) {
        start.assume(
            "the connection is established: conntrack answers, the nat chains are not \
             traversed (what a DNAT at its start did is not shown)"
                .into(),
            true,
        );
    }
    walker.set_interfaces(&mut start);
    let mut work = vec![start];
    while let Some(mut branch) = work.pop() {
        let end = walker.run(&mut branch, &mut work);
        walker.finish(branch, end);
    }
    walker.limits.sort();
    walker.limits.dedup();
    let met_affinity = walker.outcomes.iter().any(|o| {
        o.assumptions
            .iter()
            .any(|a| eval::is_affinity_question(&a.question) || a.question == AFFINITY_MISS)
    });
    if spec.affinity.is_none() && !met_affinity {
        inputs.retain(|i| i.field != "affinity");
    }
    NodeTrace {
        inputs,
        packet: traced,
        outcomes: merge(walker.outcomes),
        limits: walker.limits,
    }
}

impl<'n, 'a> Walker<'n, 'a> {
    fn fork(&mut self, b: &Branch) -> Option<Limit> {
        self.forked += b.assumptions.len() + b.steps.len();
        walk::fork_limit(&mut self.branches, self.forked)
    }

    fn set_interfaces(&self, b: &mut Branch) {
        let Stage::Hook(hook) = b.stage else { return };
        let (i, o) = hook_interfaces(self.origin, hook, b.local, &self.in_given, &self.out_given);
        b.pkt.in_interface = i;
        b.pkt.out_interface = o;
    }

    fn finish(&mut self, mut b: Branch, end: End) {
        if !settle_affinity(self.affinity, AFFINITY_MISS, &mut b.assumptions) {
            return;
        }
        let (verdict, stopped) = match end {
            End::Verdict(v) => (v, None),
            End::Stopped(l) => {
                self.limits.push(l);
                (Verdict::Stopped, Some(l))
            }
        };
        self.outcomes.push(Outcome {
            probability: b.probability,
            verdict,
            destination: Destination {
                endpoint: Endpoint {
                    ip: b.pkt.dst,
                    port: b.pkt.dport,
                },
                translated: b.pkt.dnat,
            },
            masquerade: b.masquerade,
            assumptions: b.assumptions,
            steps: b.steps,
            stopped,
            facts: Vec::new(),
            ipvs: None,
        });
    }

    fn run(&mut self, b: &mut Branch, work: &mut Vec<Branch>) -> End {
        let set = self.node.set;
        loop {
            let hook = match b.stage {
                Stage::Route => {
                    if let Some(end) = self.route(b, work) {
                        return end;
                    }
                    continue;
                }
                Stage::Hook(h) => h,
            };
            if b.stack.is_empty() {
                match self.next_base(b, hook) {
                    Some(chain) => b.stack.push(Frame {
                        chain,
                        rule: 0,
                        stmt: 0,
                        asked: 0,
                    }),
                    None => {
                        if let Some(end) = self.next_stage(b, hook) {
                            return end;
                        }
                        continue;
                    }
                }
            }
            self.visits += 1;
            if self.visits > MAX_RULE_VISITS {
                return End::Stopped(Limit::RuleVisits);
            }
            if b.steps.len() >= MAX_PATH_STEPS {
                return End::Stopped(Limit::PathLength);
            }
            let Some(&frame) = b.stack.last() else {
                continue;
            };
            let chain = &set.chains[frame.chain.index()];
            let Some(&rule_id) = chain.rules.get(frame.rule as usize) else {
                if let Some(end) = self.ret(b) {
                    return end;
                }
                continue;
            };
            let rule = &set.rules[rule_id.index()];
            let Some(st) = set.statements_of(rule).get(frame.stmt as usize) else {
                // Every statement matched and none did anything: the kernel counts the rule
                // as matched (`nft monitor trace` lists it), so the path shows it.
                let at = StepAt::NftRule(rule_id);
                if b.steps.last().is_none_or(|s| s.at != at) {
                    b.steps
                        .push(Step::new(at, "matched (no verdict: continues)".into()));
                }
                b.next_rule();
                continue;
            };
            if let Some(end) = self.statement(b, work, frame.chain, rule_id, &st.kind, st.span) {
                return end;
            }
        }
    }

    fn next_base(&self, b: &mut Branch, hook: Hook) -> Option<ChainId> {
        let bases = &self.bases[hook_index(hook)];
        while let Some(&c) = bases.get(b.base) {
            let is_nat = self.node.set.chains[c.index()]
                .base
                .as_ref()
                .is_some_and(|x| x.kind == "nat");
            let nat_done = b.pkt.state == ConnState::Established || b.pkt.untracked || b.looped;
            if is_nat && nat_done {
                b.base += 1;
                continue;
            }
            return Some(c);
        }
        None
    }

    fn next_stage(&self, b: &mut Branch, hook: Hook) -> Option<End> {
        b.base = 0;
        b.stage = match (hook, self.origin, b.local) {
            // Routed already, on the way out.
            (Hook::Prerouting, _, _) if b.looped => Stage::Hook(Hook::Input),
            (Hook::Prerouting, _, _) | (Hook::Output, _, _) => Stage::Route,
            (Hook::Forward, _, _) => Stage::Hook(Hook::Postrouting),
            // Sent out through `lo`, the packet comes back in through prerouting (the kernel
            // runs its hooks again), then input.
            (Hook::Postrouting, Origin::Host, Some(true)) => {
                b.looped = true;
                Stage::Hook(Hook::Prerouting)
            }
            (Hook::Postrouting, Origin::Host, _) => return Some(End::Verdict(Verdict::Output)),
            (Hook::Postrouting, _, _) => return Some(End::Verdict(Verdict::Forward)),
            (Hook::Input, _, _) => return Some(End::Verdict(Verdict::Accept)),
        };
        self.set_interfaces(b);
        None
    }

    fn route(&mut self, b: &mut Branch, work: &mut Vec<Branch>) -> Option<End> {
        let dst = b.pkt.dst;
        // `redirect` always sends the packet to an address of the node.
        let local = match b
            .redirected
            .then_some(true)
            .or_else(|| self.env.is_local(dst))
        {
            Some(l) => l,
            None => {
                let q = Env::local_question(dst);
                match b.known(&q) {
                    Some(l) => l,
                    None => {
                        if let Some(limit) = self.fork(b) {
                            return Some(End::Stopped(limit));
                        }
                        let mut other = b.clone();
                        other.assume(q.clone(), false);
                        work.push(other);
                        b.assume(q, true);
                        true
                    }
                }
            }
        };
        b.local = Some(local);
        let host = self.origin == Origin::Host;
        let effect = match (local, host) {
            (true, false) if b.known(NFT_REDIRECT_UNKNOWN_ADDRESS).is_some() => {
                "the address of the input interface redirect chose is local: delivered through input"
                    .to_string()
            }
            (true, false) => format!("{dst} is local: delivered through input"),
            (true, true) => {
                format!(
                    "{dst} is local: delivered through postrouting (lo), then prerouting and input (their nat chains do not run again)"
                )
            }
            (false, _) => {
                let leaves = if host {
                    "sent out through postrouting"
                } else {
                    "forwarded through forward and postrouting"
                };
                if !b.pkt.dnat && self.node.facts.service_ips.contains(&dst) {
                    format!(
                        "{dst} is not local: {leaves}; nothing DNATed this Service address, \
                         so it leaves the node unchanged"
                    )
                } else {
                    format!("{dst} is not local: {leaves}")
                }
            }
        };
        b.steps.push(Step::new(StepAt::Route, effect));
        b.stage = Stage::Hook(match (local, host) {
            (true, false) => Hook::Input,
            (false, false) => Hook::Forward,
            (_, true) => Hook::Postrouting,
        });
        b.base = 0;
        self.set_interfaces(b);
        None
    }

    /// Off the end of a chain: back to the caller, or the base chain's policy.
    fn ret(&mut self, b: &mut Branch) -> Option<End> {
        b.stack.pop();
        if !b.stack.is_empty() {
            return None;
        }
        let Stage::Hook(hook) = b.stage else {
            return None;
        };
        let base_id = *self.bases[hook_index(hook)].get(b.base)?;
        let chain = &self.node.set.chains[base_id.index()];
        let policy = chain.base.as_ref().and_then(|x| x.policy);
        let drop = policy.is_some_and(|p| p == "drop");
        if drop || !chain.rules.is_empty() {
            b.steps.push(Step::new(
                StepAt::NftPolicy(base_id),
                format!(
                    "policy {}{}",
                    policy.unwrap_or("accept"),
                    if drop {
                        ""
                    } else {
                        ": the next base chain of the hook runs"
                    }
                ),
            ));
        }
        if drop {
            return Some(End::Verdict(Verdict::Drop));
        }
        b.base += 1;
        None
    }

    /// Reads one statement: `None` to go on (the branch's position moved), or the end.
    fn statement(
        &mut self,
        b: &mut Branch,
        work: &mut Vec<Branch>,
        chain: ChainId,
        rule: RuleId,
        stmt: &'n Stmt<'a>,
        span: rulelint_parser::Span,
    ) -> Option<End> {
        let text = self.node.set.text.get(span.range()).unwrap_or("");
        let step =
            |b: &mut Branch, effect: String| b.steps.push(Step::new(StepAt::NftRule(rule), effect));
        match stmt {
            Stmt::Comment(_) | Stmt::Counter { .. } => {
                b.next_stmt();
                None
            }
            Stmt::Match { left, op, right } => {
                let answer = self.match_stmt(b, chain, left, *op, right, text);
                self.decide_match(b, work, rule, answer)
            }
            Stmt::Vmap { key, map } => self.vmap(b, work, chain, rule, key, map, text),
            Stmt::Verdict(v) => self.verdict(b, rule, v.kind, v.target, chain, None),
            Stmt::Reject { with } => {
                let with = if with.is_empty() {
                    "the default (icmp port-unreachable)".to_string()
                } else {
                    with.join(" ")
                };
                step(b, format!("reject with {with}"));
                Some(End::Verdict(Verdict::Reject))
            }
            Stmt::Assign { left, value } => {
                if matches!(left, Expr::Meta { key: "nftrace", .. }) {
                    // `nft monitor trace` output only: nothing a rule matches.
                    step(b, format!("`{text}` (packet tracing on: continues)"));
                    b.next_stmt();
                    return None;
                }
                let is_mark = matches!(left, Expr::Meta { key: "mark", .. });
                match is_mark.then(|| eval_mark(value, b.pkt.mark)).flatten() {
                    Some(after) => {
                        let before = b.pkt.mark;
                        b.pkt.mark = after;
                        step(b, format!("mark {before:#x} -> {after:#x}"));
                    }
                    None => {
                        b.assume(
                            format!("`{text}` changes nothing later rules match (not modelled)"),
                            true,
                        );
                        step(
                            b,
                            format!("`{text}` (not modelled: assumed to change nothing)"),
                        );
                    }
                }
                b.next_stmt();
                None
            }
            Stmt::Nat(nat) => self.nat(b, work, rule, nat.kind, nat.to.as_ref(), text),
            Stmt::SetUpdate { op, set, .. } => {
                step(
                    b,
                    format!("{op} @{set}: the source is recorded (session affinity)"),
                );
                b.next_stmt();
                None
            }
            Stmt::Keyword { keyword, .. } if *keyword == "notrack" && !b.looped => {
                b.pkt.untracked = true;
                step(b, format!("notrack: {}", super::walk::UNTRACKED));
                b.next_stmt();
                None
            }
            Stmt::Keyword { keyword, .. } if continues(keyword) => {
                step(b, format!("{keyword} (non-terminating: continues)"));
                b.next_stmt();
                None
            }
            Stmt::Keyword { .. } | Stmt::Opaque { .. } => {
                self.decide_match(b, work, rule, opaque_question(text))
            }
        }
    }

    /// [`Walker::decide`] for a match statement: from the rule's
    /// [`eval::MAX_RULE_QUESTIONS`]th question on, the rule's remaining match statements up to
    /// the next other statement are one question ([`eval::folded_question`]).
    fn decide_match(
        &mut self,
        b: &mut Branch,
        work: &mut Vec<Branch>,
        rule: RuleId,
        answer: Tri,
    ) -> Option<End> {
        let Tri::Ask(q) = answer else {
            return self.decide(b, work, answer);
        };
        let Some(frame) = b.stack.last_mut() else {
            return self.decide(b, work, Tri::Ask(q));
        };
        frame.asked += 1;
        let (chain, first) = (frame.chain, frame.stmt as usize + 1);
        if (frame.asked as usize) <= eval::MAX_RULE_QUESTIONS {
            return self.decide(b, work, Tri::Ask(q));
        }
        // Answered on the path: searched once here, not again in `decide`.
        match b.known(&q) {
            Some(true) => {
                b.next_stmt();
                return None;
            }
            Some(false) => {
                b.next_rule();
                return None;
            }
            None => {}
        }
        let mut rest = vec![(q, false)];
        let statements = self
            .node
            .set
            .statements_of(&self.node.set.rules[rule.index()]);
        let mut resume = statements.len();
        for (i, st) in statements.iter().enumerate().skip(first) {
            let text = self.node.set.text.get(st.span.range()).unwrap_or("");
            let answer = match &st.kind {
                Stmt::Comment(_) | Stmt::Counter { .. } => continue,
                Stmt::Match { left, op, right } => {
                    self.match_stmt(b, chain, left, *op, right, text)
                }
                Stmt::Keyword { keyword, .. } if !continues(keyword) => opaque_question(text),
                Stmt::Opaque { .. } => opaque_question(text),
                _ => {
                    resume = i;
                    break;
                }
            };
            match answer {
                Tri::Yes => {}
                Tri::No => {
                    b.next_rule();
                    return None;
                }
                Tri::Ask(q) => match b.known(&q) {
                    Some(true) => {}
                    Some(false) => {
                        b.next_rule();
                        return None;
                    }
                    None => rest.push((q, false)),
                },
            }
        }
        if rest.len() == 1 {
            let (q, _) = rest.swap_remove(0);
            return self.decide(b, work, Tri::Ask(q));
        }
        let folded = eval::folded_question(&rest);
        let holds = match b.known(&folded) {
            Some(holds) => holds,
            None => {
                if let Some(limit) = self.fork(b) {
                    return Some(End::Stopped(limit));
                }
                let mut other = b.clone();
                other.assume(folded.clone(), false);
                other.next_rule();
                work.push(other);
                b.assume(folded, true);
                true
            }
        };
        if holds {
            if let Some(f) = b.stack.last_mut() {
                f.stmt = resume as u32;
            }
        } else {
            b.next_rule();
        }
        None
    }

    /// Applies a match's answer: the next statement, the next rule, or a fork.
    fn decide(&mut self, b: &mut Branch, work: &mut Vec<Branch>, answer: Tri) -> Option<End> {
        match answer {
            Tri::Yes => b.next_stmt(),
            Tri::No => b.next_rule(),
            Tri::Ask(q) => match b.known(&q) {
                Some(true) => b.next_stmt(),
                Some(false) => b.next_rule(),
                None if self.affinity == Some(Affinity::Miss) && eval::is_affinity_question(&q) => {
                    b.assume(q, false);
                    b.next_rule();
                }
                None => {
                    if let Some(limit) = self.fork(b) {
                        return Some(End::Stopped(limit));
                    }
                    let mut other = b.clone();
                    other.assume(q.clone(), false);
                    other.next_rule();
                    work.push(other);
                    b.assume(q, true);
                    b.next_stmt();
                }
            },
        }
        None
    }

    fn verdict(
        &mut self,
        b: &mut Branch,
        rule: RuleId,
        kind: VerdictKind,
        target: Option<&str>,
        chain: ChainId,
        via: Option<String>,
    ) -> Option<End> {
        let prefix = via.map(|v| format!("{v}: ")).unwrap_or_default();
        let step = |b: &mut Branch, effect: String| {
            b.steps.push(Step::new(
                StepAt::NftRule(rule),
                format!("{prefix}{effect}"),
            ))
        };
        match kind {
            VerdictKind::Accept => {
                step(
                    b,
                    "accept: this base chain is done, the next base chain of the hook runs".into(),
                );
                b.stack.clear();
                b.base += 1;
                None
            }
            VerdictKind::Drop => {
                step(b, "drop".into());
                Some(End::Verdict(Verdict::Drop))
            }
            VerdictKind::Continue => {
                step(b, "continue".into());
                b.next_stmt();
                None
            }
            VerdictKind::Return => {
                step(b, "return".into());
                self.ret(b)
            }
            VerdictKind::Jump | VerdictKind::Goto => {
                let table = self.node.set.chains[chain.index()].table;
                let Some(name) = target else {
                    step(b, format!("{} without a chain: ends here", kind.as_str()));
                    return Some(End::Stopped(Limit::Depth));
                };
                let Some(callee) = self.node.set.chain_in(table, name) else {
                    // nft refuses a ruleset naming a missing chain; a cut paste may.
                    b.assume(
                        format!("the missing chain {name} lets the packet on (not in the dump)"),
                        true,
                    );
                    step(b, format!("{} {name} (not in the dump)", kind.as_str()));
                    b.next_rule();
                    return None;
                };
                step(b, format!("{} {name}", kind.as_str()));
                let frame = Frame {
                    chain: callee,
                    rule: 0,
                    stmt: 0,
                    asked: 0,
                };
                if kind == VerdictKind::Goto {
                    if let Some(top) = b.stack.last_mut() {
                        *top = frame;
                    }
                } else {
                    b.next_rule();
                    if b.stack.len() >= MAX_DEPTH {
                        return Some(End::Stopped(Limit::Depth));
                    }
                    b.stack.push(frame);
                }
                None
            }
        }
    }

    /// The elements of a set expression (`{ ... }` or `@name`), or `None` when unknown.
    fn elements(&self, chain: ChainId, map: &'n Expr<'a>) -> Option<&'n [Element<'a>]> {
        match map {
            Expr::Set(elements) => Some(elements),
            Expr::SetRef(name) => self.node.named_set(chain, name).map(|s| &s.elements[..]),
            _ => None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn vmap(
        &mut self,
        b: &mut Branch,
        work: &mut Vec<Branch>,
        chain: ChainId,
        rule: RuleId,
        key: &Expr<'a>,
        map: &'n Expr<'a>,
        text: &str,
    ) -> Option<End> {
        let Some(elements) = self.elements(chain, map) else {
            return self.decide(
                b,
                work,
                Tri::Ask(format!(
                    "`{text}` finds an element (the map is not in the dump)"
                )),
            );
        };
        if let Expr::Numgen(numgen) = key {
            return self.numgen(
                b,
                work,
                numgen.modulus,
                numgen.offset,
                text,
                |me, b, value| {
                    let found = match numgen_value(elements, value) {
                        Some(Value::Verdict(v)) => Some(v.clone()),
                        _ => None,
                    };
                    match found {
                        Some(v) => me.verdict(b, rule, v.kind, v.target, chain, None),
                        None => {
                            b.steps.push(Step::new(
                                StepAt::NftRule(rule),
                                format!("numgen {value}: no element (next rule)"),
                            ));
                            b.next_rule();
                            None
                        }
                    }
                },
            );
        }
        let fields = key_fields(key, &b.pkt, &self.env);
        if fields
            .iter()
            .any(|f| matches!(f, Field::Known(Val::Absent)))
        {
            b.next_rule();
            return None;
        }
        // With a part of the key unknown, each element is its own question.
        let unknown = fields.iter().any(|f| !matches!(f, Field::Known(_)));
        for element in elements {
            let label;
            let text = if unknown {
                let element_text = self.node.set.text.get(element.span.range()).unwrap_or("");
                label = format!("{text}` finds `{element_text}");
                label.as_str()
            } else {
                text
            };
            let answer = match element_matches(&fields, &element.key, text) {
                Tri::Ask(q) => match b.known(&q) {
                    Some(true) => Tri::Yes,
                    Some(false) => Tri::No,
                    None => Tri::Ask(q),
                },
                t => t,
            };
            match answer {
                Tri::No => continue,
                Tri::Yes => {}
                Tri::Ask(q) => {
                    // Fork: this element is the one (the verdict), or not (read on).
                    if let Some(limit) = self.fork(b) {
                        return Some(End::Stopped(limit));
                    }
                    let mut other = b.clone();
                    other.assume(q.clone(), false);
                    work.push(other);
                    b.assume(q, true);
                }
            }
            let found_in = match map {
                Expr::SetRef(name) => format!("found in @{name}"),
                _ => "found in the map".to_string(),
            };
            return match &element.value {
                Some(Value::Verdict(v)) => {
                    self.verdict(b, rule, v.kind, v.target, chain, Some(found_in))
                }
                _ => {
                    b.assume(format!("`{text}` leads nowhere (no verdict)"), true);
                    b.next_rule();
                    None
                }
            };
        }
        b.next_rule();
        None
    }

    /// Forks on `numgen ... mod N`, 1/N each, and runs `then` on each branch with its value.
    fn numgen(
        &mut self,
        b: &mut Branch,
        work: &mut Vec<Branch>,
        modulus: &str,
        offset: Option<&str>,
        text: &str,
        then: impl Fn(&mut Self, &mut Branch, u64) -> Option<End>,
    ) -> Option<End> {
        let modulus = parse_num(modulus).filter(|&n| n > 0);
        let offset = offset.map_or(Some(0), parse_num);
        let (Some(n), Some(offset)) = (modulus, offset) else {
            return self.decide(
                b,
                work,
                Tri::Ask(format!("`{text}` lets the packet on (not understood)")),
            );
        };
        if n as usize > MAX_BRANCHES {
            return Some(End::Stopped(Limit::Branches));
        }
        let p = 1.0 / n as f64;
        for i in (1..n).rev() {
            if let Some(limit) = self.fork(b) {
                return Some(End::Stopped(limit));
            }
            let mut other = b.clone();
            other.probability *= p;
            if other.probability < MIN_PROBABILITY {
                self.limits.push(Limit::Improbable);
                continue;
            }
            // The other branches are walked later from the work list; each takes its value now.
            let end = then(self, &mut other, offset + i);
            match end {
                None => work.push(other),
                Some(end) => self.finish(other, end),
            }
        }
        b.probability *= p;
        if b.probability < MIN_PROBABILITY {
            return Some(End::Stopped(Limit::Improbable));
        }
        then(self, b, offset)
    }

    fn nat(
        &mut self,
        b: &mut Branch,
        work: &mut Vec<Branch>,
        rule: RuleId,
        kind: &str,
        to: Option<&'n Expr<'a>>,
        text: &str,
    ) -> Option<End> {
        match kind {
            "masquerade" | "snat" => {
                b.masquerade = Some(StepAt::NftRule(rule));
                b.pkt.snat = true;
                let effect = if kind == "masquerade" {
                    "masquerade: source -> the address of the outgoing interface".to_string()
                } else {
                    format!("`{text}`: source rewritten")
                };
                b.steps.push(Step::new(StepAt::NftRule(rule), effect));
                b.stack.clear();
                b.base += 1;
                None
            }
            "dnat" | "redirect" => {
                if let Some(Expr::Map { key, map }) = to
                    && let Expr::Numgen(numgen) = key.as_ref()
                    && let Some(elements) = self.elements(rule_chain(self.node, rule), map)
                {
                    return self.numgen(
                        b,
                        work,
                        numgen.modulus,
                        numgen.offset,
                        text,
                        |me, b, value| {
                            let target = match numgen_value(elements, value) {
                                Some(Value::Data(d)) => nat_target(d),
                                _ => None,
                            };
                            me.dnat(b, rule, target, text)
                        },
                    );
                }
                if kind == "redirect" {
                    return self.redirect(b, rule, to, text);
                }
                let target = to.and_then(nat_target);
                self.dnat(b, rule, target, text)
            }
            _ => {
                b.assume(
                    format!("`{text}` lets the packet on unchanged (not modelled)"),
                    true,
                );
                b.next_stmt();
                None
            }
        }
    }

    fn dnat(
        &mut self,
        b: &mut Branch,
        rule: RuleId,
        target: Option<(IpAddr, Option<u16>)>,
        text: &str,
    ) -> Option<End> {
        let before = Endpoint {
            ip: b.pkt.dst,
            port: b.pkt.dport,
        };
        let effect = match target {
            Some((ip, port)) => {
                b.pkt.dst = ip;
                if let Some(port) = port
                    && has_ports(b.pkt.protocol)
                {
                    b.pkt.dport = Some(port);
                }
                b.pkt.dnat = true;
                let after = Endpoint {
                    ip: b.pkt.dst,
                    port: b.pkt.dport,
                };
                format!("dnat {before} -> {after}")
            }
            None => {
                b.assume(
                    format!("`{text}` leaves the destination as it is (not understood)"),
                    true,
                );
                "dnat (not understood: destination kept)".to_string()
            }
        };
        b.steps.push(Step::new(StepAt::NftRule(rule), effect));
        b.stack.clear();
        b.base += 1;
        None
    }

    /// `redirect [to :PORT]`: to an address of the node (`walk::redirect_to`).
    fn redirect(
        &mut self,
        b: &mut Branch,
        rule: RuleId,
        to: Option<&'n Expr<'a>>,
        text: &str,
    ) -> Option<End> {
        let port = match to {
            None => None,
            Some(e) => match redirect_port(e) {
                Some(port) => Some(port),
                None => return self.dnat(b, rule, None, text),
            },
        };
        let hook = match b.stage {
            Stage::Hook(hook) => hook,
            _ => Hook::Prerouting,
        };
        // The nft walk reads no `ip addr`: the input interface's address stays unknown.
        let (ip, note) = match walk::redirect_to(hook, b.pkt.dst, None, None) {
            walk::RedirectTo::Address(ip, note) => (ip, note),
            walk::RedirectTo::Drop(why) => {
                b.steps
                    .push(Step::new(StepAt::NftRule(rule), format!("redirect: {why}")));
                return Some(End::Verdict(Verdict::Drop));
            }
            walk::RedirectTo::Unknown => {
                b.assume(NFT_REDIRECT_UNKNOWN_ADDRESS.into(), true);
                (b.pkt.dst, walk::REDIRECT_UNKNOWN_NOTE)
            }
        };
        let before = Endpoint {
            ip: b.pkt.dst,
            port: b.pkt.dport,
        };
        b.pkt.dst = ip;
        if let Some(port) = port
            && has_ports(b.pkt.protocol)
        {
            b.pkt.dport = Some(port);
        }
        b.pkt.dnat = true;
        b.redirected = true;
        let after = Endpoint {
            ip: b.pkt.dst,
            port: b.pkt.dport,
        };
        b.steps.push(Step::new(
            StepAt::NftRule(rule),
            format!("redirect {before} -> {after}{note}"),
        ));
        b.stack.clear();
        b.base += 1;
        None
    }

    /// A match statement, three-valued.
    fn match_stmt(
        &self,
        b: &Branch,
        chain: ChainId,
        left: &Expr<'a>,
        op: Option<&str>,
        right: &'n Expr<'a>,
        text: &str,
    ) -> Tri {
        let negate = match op {
            None | Some("==") => false,
            Some("!=") => true,
            Some(_) => return not_modelled(text),
        };
        // Session affinity: whether the source is in a dynamic set kube-proxy fills.
        if let Expr::SetRef(name) = right
            && name.starts_with("affinity-")
        {
            let q = eval::nft_affinity_question(name);
            return match (b.known(&q), negate) {
                (Some(h), n) => tri(h != n),
                (None, false) => Tri::Ask(q),
                (None, true) => not_modelled(text),
            };
        }
        let fields = key_fields(left, &b.pkt, &self.env);
        if fields
            .iter()
            .any(|f| matches!(f, Field::Known(Val::Absent)))
        {
            return Tri::No;
        }
        let answer = match right {
            Expr::Set(_) | Expr::SetRef(_) => {
                let Some(elements) = self.elements(chain, right) else {
                    return not_modelled(text);
                };
                if let Expr::SetRef(name) = right
                    && self
                        .node
                        .named_set(chain, name)
                        .is_some_and(|s| s.flags.contains(&"dynamic"))
                {
                    // Filled at run time: the listing's elements are a snapshot.
                    return Tri::Ask(format!("the packet matches `{text}` (a dynamic set)"));
                }
                let mut any = Tri::No;
                for e in elements {
                    match element_matches(&fields, &e.key, text) {
                        Tri::Yes => {
                            any = Tri::Yes;
                            break;
                        }
                        Tri::Ask(q) => any = Tri::Ask(q),
                        Tri::No => {}
                    }
                }
                any
            }
            other => element_matches(&fields, other, text),
        };
        match (answer, negate) {
            (Tri::Yes, n) => tri(!n),
            (Tri::No, n) => tri(n),
            (Tri::Ask(q), false) => Tri::Ask(q),
            // "Not in the set" is its own question: the walk answers it once.
            (Tri::Ask(_), true) => Tri::Ask(format!("the packet matches `{text}`")),
        }
    }
}

fn rule_chain(node: &NftTraceNode<'_>, rule: RuleId) -> ChainId {
    node.set.rules[rule.index()].chain
}

fn tri(b: bool) -> Tri {
    if b { Tri::Yes } else { Tri::No }
}

/// The question a statement the tracer does not model asks.
/// A keyword statement the walk steps over, recording it (`log`, `notrack`, ...): it ends a
/// run of match statements folded into one question.
fn continues(keyword: &str) -> bool {
    matches!(keyword, "log" | "notrack" | "flow" | "ct" | "dup")
}

fn opaque_question(text: &str) -> Tri {
    Tri::Ask(format!(
        "the statement `{text}` lets the packet on (not modelled)"
    ))
}

fn not_modelled(text: &str) -> Tri {
    Tri::Ask(format!("the packet matches `{text}` (not modelled)"))
}

/// The fields a key reads: one for a selector, several for a concatenation.
fn key_fields(key: &Expr<'_>, pkt: &Packet, env: &Env<'_>) -> Vec<Field> {
    match key {
        Expr::Concat(parts) => parts.iter().map(|p| field(p, pkt, env)).collect(),
        other => vec![field(other, pkt, env)],
    }
}

fn field(e: &Expr<'_>, pkt: &Packet, env: &Env<'_>) -> Field {
    let v4 = pkt.dst.is_ipv4();
    match e {
        Expr::Payload { proto, field } => {
            let family_ok = match proto.as_str() {
                "ip" => Some(v4),
                "ip6" => Some(!v4),
                _ => None,
            };
            match (*field, family_ok) {
                ("daddr", Some(true)) => Field::Known(Val::Ip(pkt.dst)),
                ("saddr", Some(true)) => match pkt.src {
                    Some(ip) => Field::Known(Val::Ip(ip)),
                    None => Field::Ask("the source address is unknown".into()),
                },
                ("protocol" | "nexthdr", Some(true)) => {
                    Field::Known(Val::Num(u64::from(pkt.protocol)))
                }
                (_, Some(false)) => Field::Known(Val::Absent),
                ("dport" | "sport", None) => {
                    let proto_ok = match proto.as_str() {
                        "th" => has_ports(pkt.protocol),
                        p => protocol_number(p) == Some(pkt.protocol),
                    };
                    if !proto_ok {
                        return Field::Known(Val::Absent);
                    }
                    let port = if *field == "dport" {
                        pkt.dport
                    } else {
                        pkt.sport
                    };
                    match port {
                        Some(p) => Field::Known(Val::Num(u64::from(p))),
                        None => Field::Ask(format!("the {field} of the packet is unknown")),
                    }
                }
                _ => Field::NotModelled,
            }
        }
        Expr::Meta { key, .. } => match *key {
            "l4proto" => Field::Known(Val::Num(u64::from(pkt.protocol))),
            "nfproto" => Field::Known(Val::Word(if v4 { "ipv4" } else { "ipv6" }.into())),
            "mark" => Field::Known(Val::Num(u64::from(pkt.mark))),
            "iifname" | "oifname" => {
                let iface = if *key == "iifname" {
                    &pkt.in_interface
                } else {
                    &pkt.out_interface
                };
                match iface {
                    Some(i) => Field::Known(Val::Word(i.clone())),
                    None => Field::Ask(format!("the {key} of the packet is unknown")),
                }
            }
            _ => Field::NotModelled,
        },
        Expr::Ct { dir: None, key } if *key == "state" => Field::Known(Val::Word(
            match pkt.state {
                _ if pkt.untracked => "untracked",
                ConnState::New => "new",
                ConnState::Established => "established",
            }
            .into(),
        )),
        Expr::Fib(fib) if fib.result == "type" && fib.flags.len() == 1 => {
            let ip = match fib.flags[0] {
                "daddr" => Some(pkt.dst),
                "saddr" => pkt.src,
                _ => return Field::NotModelled,
            };
            let Some(ip) = ip else {
                return Field::Ask("the source address is unknown".into());
            };
            // As the iptables walk reads `addrtype --src-type`: a source the addresses do not
            // place is local only for `--from host`.
            let local = match env.is_local(ip) {
                Some(l) => Some(l),
                None if fib.flags[0] == "saddr" => Some(env.src_local_default),
                None => None,
            };
            match local {
                Some(true) => Field::Known(Val::Word("local".into())),
                Some(false) => Field::Known(Val::Word("unicast".into())),
                None => Field::Ask(Env::local_question(ip)),
            }
        }
        Expr::Binop(b) if b.op == "&" => match (field(&b.left, pkt, env), &b.right) {
            (Field::Known(Val::Num(v)), Expr::Literal(m)) => match parse_num(m) {
                Some(mask) => Field::Known(Val::Num(v & mask)),
                None => Field::NotModelled,
            },
            (Field::Ask(q), _) => Field::Ask(q),
            _ => Field::NotModelled,
        },
        _ => Field::NotModelled,
    }
}

/// Whether the key `fields` equals (or falls in) the element key `key`.
fn element_matches(fields: &[Field], key: &Expr<'_>, text: &str) -> Tri {
    let parts: Vec<&Expr<'_>> = match key {
        Expr::Concat(p) => p.iter().collect(),
        other => vec![other],
    };
    if parts.len() != fields.len() {
        return not_modelled(text);
    }
    let mut result = Tri::Yes;
    for (f, part) in fields.iter().zip(parts) {
        let one = match f {
            Field::NotModelled => not_modelled(text),
            Field::Ask(why) => {
                let q = if why.ends_with("is an address of this node") {
                    why.clone()
                } else {
                    format!("the packet matches `{text}` ({why})")
                };
                Tri::Ask(q)
            }
            Field::Known(v) => value_matches(v, part).unwrap_or_else(|| not_modelled(text)),
        };
        match one {
            Tri::No => return Tri::No,
            Tri::Ask(q) => result = Tri::Ask(q),
            Tri::Yes => {}
        }
    }
    result
}

/// Whether a value matches one literal (or flag list); `None` when the literal is not read.
fn value_matches(v: &Val, e: &Expr<'_>) -> Option<Tri> {
    match (v, e) {
        (Val::Absent, _) => Some(Tri::No),
        (Val::Word(w), Expr::List(words)) => Some(tri(words.iter().any(|x| x == w))),
        (Val::Word(w), Expr::Literal(lit)) => {
            let lit = lit.trim_matches('"');
            Some(tri(match lit.strip_suffix('*') {
                Some(prefix) => w.starts_with(prefix),
                None => w == lit,
            }))
        }
        (Val::Ip(ip), Expr::Literal(lit)) => {
            if let Ok(net) = lit.parse::<IpNet>() {
                return Some(tri(net.contains(ip)));
            }
            if let Ok(a) = lit.parse::<IpAddr>() {
                return Some(tri(a == *ip));
            }
            let (lo, hi) = lit.split_once('-')?;
            let (lo, hi) = (lo.parse::<IpAddr>().ok()?, hi.parse::<IpAddr>().ok()?);
            Some(tri(lo <= *ip && *ip <= hi))
        }
        (Val::Num(n), Expr::Literal(lit)) => {
            if let Some(x) = parse_num(lit) {
                return Some(tri(x == *n));
            }
            if let Some(p) = protocol_number(lit) {
                return Some(tri(u64::from(p) == *n));
            }
            let (lo, hi) = lit.split_once('-')?;
            Some(tri(parse_num(lo)? <= *n && *n <= parse_num(hi)?))
        }
        _ => None,
    }
}

fn literal_num_matches(key: &Expr<'_>, value: u64) -> bool {
    matches!(value_matches(&Val::Num(value), key), Some(Tri::Yes))
}

/// The value of the map element whose key is the number `numgen` picked.
fn numgen_value<'e, 'a>(elements: &'e [Element<'a>], value: u64) -> Option<&'e Value<'a>> {
    elements
        .iter()
        .find(|e| literal_num_matches(&e.key, value))
        .and_then(|e| e.value.as_ref())
}

fn parse_num(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// `meta mark set VALUE`: a literal, or the mark with `|`, `^` or `&` a literal.
fn eval_mark(value: &Expr<'_>, mark: u32) -> Option<u32> {
    match value {
        Expr::Literal(l) => parse_num(l).and_then(|v| u32::try_from(v).ok()),
        Expr::Binop(b) => {
            if !matches!(b.left, Expr::Meta { key: "mark", .. }) {
                return None;
            }
            let Expr::Literal(l) = &b.right else {
                return None;
            };
            let v = u32::try_from(parse_num(l)?).ok()?;
            Some(match b.op {
                "|" => mark | v,
                "^" => mark ^ v,
                "&" => mark & v,
                _ => return None,
            })
        }
        _ => None,
    }
}

/// The assumption a `redirect` on prerouting rests on: unlike the iptables walk, this one reads
/// no `ip addr`, so it does not tell the user to paste one.
const NFT_REDIRECT_UNKNOWN_ADDRESS: &str = "redirect sends the packet to an address of the \
     input interface (the first `ip addr` lists for it), which the trace of an nft ruleset does \
     not read: the destination address is shown unchanged";

/// The port of `redirect to :PORT` (`:PORT-PORT`: the first); `None` when it is not one.
fn redirect_port(e: &Expr<'_>) -> Option<u16> {
    let Expr::Literal(l) = e else { return None };
    let l = l.strip_prefix(':').unwrap_or(l);
    l.split('-').next()?.parse().ok()
}

/// The address and port of `dnat to ...`: `10.180.0.1:80`, `10.180.0.1`, `10.180.0.1 . 80`,
/// `[fd00::1]:80`.
fn nat_target(e: &Expr<'_>) -> Option<(IpAddr, Option<u16>)> {
    match e {
        Expr::Literal(l) => {
            let n = NatAddress::parse(l).ok()?;
            Some((n.first?, n.ports.map(|p| p.first)))
        }
        Expr::Concat(parts) if parts.len() == 2 => {
            let (Expr::Literal(a), Expr::Literal(p)) = (&parts[0], &parts[1]) else {
                return None;
            };
            Some((a.parse().ok()?, Some(p.parse().ok()?)))
        }
        _ => None,
    }
}
