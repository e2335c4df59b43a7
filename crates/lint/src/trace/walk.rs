//! The walk: hooks in netfilter's order, tables by priority, chains with a call stack, forks on
//! questions and on `statistic`, outcomes merged.

use super::eval::{self, Env, Eval, Packet};
use super::{
    Affinity, Assumption, Condition, ConnState, Destination, Endpoint, How, Input, Limit,
    MAX_BRANCHES, MAX_DEPTH, MAX_FORKED, MAX_PATH_STEPS, MAX_RULE_VISITS, MIN_PROBABILITY,
    NodeTrace, Origin, Outcome, PacketSpec, SetFact, Step, StepAt, TraceNode, TracedPacket,
    Verdict, has_ports, protocol_name,
};
use crate::kube::ProxyMode;
use ipnet::IpNet;
use rulelint_parser::views::NatAddress;
use rulelint_parser::{ChainId, RuleRef, TableKind};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// A netfilter hook (both walkers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hook {
    Prerouting,
    Input,
    Forward,
    Output,
    Postrouting,
}

impl Hook {
    fn chain(self) -> &'static str {
        match self {
            Hook::Prerouting => "PREROUTING",
            Hook::Input => "INPUT",
            Hook::Forward => "FORWARD",
            Hook::Output => "OUTPUT",
            Hook::Postrouting => "POSTROUTING",
        }
    }

    /// The tables on the hook, by priority (raw -300, mangle -150, nat DNAT -100, filter 0,
    /// security 50, nat SNAT 100).
    fn tables(self) -> &'static [TableKind] {
        use TableKind::*;
        match self {
            Hook::Prerouting => &[Raw, Mangle, Nat],
            Hook::Input => &[Mangle, Filter, Security, Nat],
            Hook::Forward => &[Mangle, Filter, Security],
            Hook::Output => &[Raw, Mangle, Nat, Filter, Security],
            Hook::Postrouting => &[Mangle, Nat],
        }
    }
}

/// Where a branch is in the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Hook(Hook),
    /// The routing decision after PREROUTING (or after OUTPUT for the host's packets).
    Route,
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    chain: ChainId,
    pos: u32,
}

/// One path being walked.
#[derive(Clone, Debug)]
struct Branch {
    pkt: Packet,
    probability: f64,
    assumptions: Vec<Assumption>,
    steps: Vec<Step>,
    masquerade: Option<StepAt>,
    stage: Stage,
    /// Index into the hook's tables of the table being (or next to be) traversed.
    table: usize,
    stack: Vec<Frame>,
    /// The destination is local (after the routing decision).
    local: Option<bool>,
    /// The host's packet to a local address, back in through `lo`: its connection's NAT was
    /// set up on the way out, so the nat tables do not run again.
    looped: bool,
    /// What the node's ipsets answered on the path, sorted.
    facts: Vec<SetFact>,
    /// A REDIRECT rewrote the destination: the routing decision delivers it locally.
    redirected: bool,
}

impl Branch {
    fn known(&self, question: &str) -> Option<bool> {
        // The list is sorted (`assume`): a rule of thousands of unknown matches asked a linear
        // search for each (quadratic: 12.5k modules in one rule took 34-47 s).
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
}

/// Adds facts to a sorted list, each once (both walkers' outcomes, merged ones too).
pub(super) fn add_facts(list: &mut Vec<SetFact>, facts: impl IntoIterator<Item = SetFact>) {
    for f in facts {
        if let Err(i) = list.binary_search(&f) {
            list.insert(i, f);
        }
    }
}

/// Adds an assumption to a path's sorted list, once.
pub(super) fn assume(assumptions: &mut Vec<Assumption>, question: String, holds: bool) {
    let a = Assumption { question, holds };
    if let Err(i) = assumptions.binary_search(&a) {
        assumptions.insert(i, a);
    }
}

/// `--affinity` applied to a finished path's assumptions (both walkers): `false` when the path
/// contradicts `hit` (no list holds the source on it); under `miss`, the one assumption `miss`
/// replaces the path's questions about the lists.
pub(super) fn settle_affinity(
    affinity: Option<Affinity>,
    miss: &str,
    assumptions: &mut Vec<Assumption>,
) -> bool {
    let asked = assumptions
        .iter()
        .any(|a| eval::is_affinity_question(&a.question));
    match affinity {
        Some(Affinity::Hit) if asked => assumptions
            .iter()
            .any(|a| a.holds && eval::is_affinity_question(&a.question)),
        Some(Affinity::Miss) if asked => {
            assumptions.retain(|a| !eval::is_affinity_question(&a.question));
            assume(assumptions, miss.into(), true);
            true
        }
        _ => true,
    }
}

/// The interfaces a packet has on `hook` (both walkers): from the host, it leaves by `lo` when
/// its destination is local; from outside or a pod, it has the interfaces given.
pub(super) fn hook_interfaces(
    origin: Origin,
    hook: Hook,
    local: Option<bool>,
    in_given: &Option<String>,
    out_given: &Option<String>,
) -> (Option<String>, Option<String>) {
    let host_local = origin == Origin::Host && local == Some(true);
    match (origin, hook) {
        (Origin::Host, Hook::Output | Hook::Postrouting) => (
            Some(String::new()),
            if host_local {
                Some("lo".to_string())
            } else {
                out_given.clone()
            },
        ),
        (Origin::Host, _) => (Some("lo".to_string()), Some(String::new())),
        (_, Hook::Prerouting | Hook::Input) => (in_given.clone(), Some(String::new())),
        (_, _) => (in_given.clone(), out_given.clone()),
    }
}

/// Where a REDIRECT (nft `redirect`) sends the packet (both walkers).
pub(super) enum RedirectTo {
    /// This address; the text says why (appended to the step).
    Address(IpAddr, &'static str),
    /// The input interface has no address of the packet's family: the kernel drops it.
    Drop(String),
    /// An address of the input interface that the dump and the options do not show.
    Unknown,
}

/// The assumption a REDIRECT on PREROUTING rests on when the input interface's address is not
/// known (the iptables walk; the nft walk has its own, since `ip addr` cannot help it).
pub(super) const REDIRECT_UNKNOWN_ADDRESS: &str = "REDIRECT sends the packet to an address of \
     the input interface (the first `ip addr` lists for it), which the trace does not know: \
     the destination address is shown unchanged (give `--in` and the node's `ip addr`)";

/// Appended to a REDIRECT step whose new address is not known.
pub(super) const REDIRECT_UNKNOWN_NOTE: &str =
    " (to an address of the input interface, not known here: address shown unchanged)";

/// The kernel's choice (`nf_nat_redirect.c`): loopback only for the host's own packets (nat
/// OUTPUT); on PREROUTING, the first address of the packet's family of the interface it came
/// in on, and a drop when that interface has none. Inventing 127.0.0.1 there would send the
/// packet to a socket bound to loopback, which it never reaches.
pub(super) fn redirect_to(
    hook: Hook,
    dst: IpAddr,
    in_interface: Option<&str>,
    state: Option<&super::ipvs::FileState<'_>>,
) -> RedirectTo {
    if hook == Hook::Output {
        return RedirectTo::Address(
            match dst {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            },
            " (to the node itself)",
        );
    }
    let v4 = dst.is_ipv4();
    let (Some(name), Some(state)) = (in_interface.filter(|n| !n.is_empty()), state) else {
        return RedirectTo::Unknown;
    };
    let Some(interface) = state.ipvs().interface(name) else {
        return RedirectTo::Unknown;
    };
    if let Some((net, _)) = interface
        .addresses
        .iter()
        .find(|(n, _)| n.addr().is_ipv4() == v4)
    {
        return RedirectTo::Address(
            net.addr(),
            if v4 {
                " (the first IPv4 address of the input interface in `ip addr`)"
            } else {
                " (the first IPv6 address of the input interface in `ip addr`)"
            },
        );
    }
    // `ip -4 addr` shows no IPv6 address of any interface: only a listing that shows the
    // family at all, and this interface whole, says it has none.
    let family_listed = state
        .ipvs()
        .interfaces
        .iter()
        .any(|i| i.addresses.iter().any(|(n, _)| n.addr().is_ipv4() == v4));
    if interface.complete && family_listed {
        let family = if v4 { "IPv4" } else { "IPv6" };
        return RedirectTo::Drop(format!(
            "the input interface {name} has no {family} address in `ip addr`: the kernel drops the packet"
        ));
    }
    RedirectTo::Unknown
}

/// The one assumption a path rests on under `--affinity miss`, in place of one per list.
const AFFINITY_MISS: &str =
    "no session-affinity (`recent`) list holds the source (--affinity miss: a first connection)";

/// Counts a fork (both walkers): the bound it would pass, given the steps and assumptions the
/// forks have copied so far.
pub(super) fn fork_limit(branches: &mut usize, forked: usize) -> Option<Limit> {
    *branches += 1;
    if *branches > MAX_BRANCHES {
        Some(Limit::Branches)
    } else if forked > MAX_FORKED {
        Some(Limit::Forked)
    } else {
        None
    }
}

/// How a branch ended.
enum End {
    Verdict(Verdict),
    Stopped(Limit),
}

struct Walker<'n, 'a> {
    node: &'n TraceNode<'a>,
    env: Env<'n>,
    origin: Origin,
    in_given: Option<String>,
    out_given: Option<String>,
    affinity: Option<Affinity>,
    visits: usize,
    branches: usize,
    /// The steps and assumptions the forks have copied.
    forked: usize,
    limits: Vec<Limit>,
    outcomes: Vec<Outcome>,
    /// The facts the rule being read drew from the node's ipsets.
    read_facts: Vec<SetFact>,
}

/// Traces `spec` on `node`.
pub fn trace(node: &TraceNode<'_>, spec: &PacketSpec) -> NodeTrace {
    let known = Known {
        facts: node.facts(),
        service_ips: node,
        addresses: node
            .facts()
            .addresses
            .iter()
            .map(|(ip, rule)| {
                (
                    *ip,
                    format!(
                        "line {}: `-d {ip}` jumps to KUBE-NODEPORTS",
                        node.rule_line(*rule)
                    ),
                )
            })
            .collect(),
        layout: node.layout_description().into(),
        services_not_local: matches!(node.proxy_mode(), ProxyMode::Iptables | ProxyMode::None),
        local_endpoints: node.local_endpoints().to_vec(),
        endpoints: node,
    };
    let (mut inputs, pkt, mut env, origin, traced) = resolve(&known, spec);
    if let Some(state) = &node.file_state {
        env.sets = Some(state.as_ref());
        if spec.node_ips.is_empty() && state.has_ip_addr() {
            node_addresses_from_ip_addr(state, spec, &mut env, &mut inputs);
        }
    }
    let mut walker = Walker {
        node,
        env,
        origin,
        in_given: spec.in_interface.clone(),
        out_given: spec.out_interface.clone(),
        affinity: spec.affinity,
        visits: 0,
        branches: 1,
        forked: 0,
        limits: Vec::new(),
        outcomes: Vec::new(),
        read_facts: Vec::new(),
    };
    let first_hook = match origin {
        Origin::Host => Hook::Output,
        Origin::Pod | Origin::Outside => Hook::Prerouting,
    };
    let mut start = Branch {
        pkt,
        probability: 1.0,
        assumptions: Vec::new(),
        steps: Vec::new(),
        masquerade: None,
        stage: Stage::Hook(first_hook),
        table: 0,
        stack: Vec::new(),
        local: None,
        looped: false,
        facts: Vec::new(),
        redirected: false,
    };
    if spec.state == Some(ConnState::Established) {
        start.assume(
            "the connection is established: conntrack answers, the nat tables are not \
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
            .any(|a| eval::is_affinity_question(&a.question))
    });
    if spec.affinity.is_none() && !met_affinity {
        // No path met a session-affinity list: the line would only be noise.
        inputs.retain(|i| i.field != "affinity");
    }
    NodeTrace {
        inputs,
        packet: traced,
        outcomes: merge(walker.outcomes),
        limits: walker.limits,
    }
}

/// Merges outcomes that agree in everything but probability (summed), then outcomes that an
/// assumption split without deciding anything, and sorts: most probable first.
pub(super) fn merge(outcomes: Vec<Outcome>) -> Vec<Outcome> {
    let outcomes = merge_same(outcomes);
    let outcomes = merge_undecided(outcomes);
    let mut merged = merge_same(outcomes);
    merged.sort_by(|a, b| {
        b.probability
            .total_cmp(&a.probability)
            .then(a.verdict.cmp(&b.verdict))
            .then(a.assumptions.len().cmp(&b.assumptions.len()))
            .then_with(|| a.destination.to_string().cmp(&b.destination.to_string()))
            .then_with(|| a.assumptions.cmp(&b.assumptions))
    });
    merged
}

/// Merges outcomes equal in everything but probability: they are disjoint `statistic`
/// branches under the same assumptions, so their probabilities add up.
fn merge_same(outcomes: Vec<Outcome>) -> Vec<Outcome> {
    let mut merged: Vec<Outcome> = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        match merged.iter_mut().find(|m| {
            m.verdict == o.verdict
                && m.destination == o.destination
                && m.masquerade == o.masquerade
                && m.assumptions == o.assumptions
                && m.stopped == o.stopped
                && m.steps == o.steps
        }) {
            Some(m) => {
                m.probability += o.probability;
                add_facts(&mut m.facts, o.facts);
            }
            None => merged.push(o),
        }
    }
    merged
}

/// Merges two outcomes that end the same way (verdict, destination, masquerade, bound,
/// probability) and rest on the same assumptions but one, which one holds and the other does
/// not: that question decided nothing, so the merged outcome drops it. Its probability is
/// either one's, not their sum: each is the probability given its assumptions, and they are
/// the two answers to one question, not two random branches. The steps both paths took are
/// kept once; the steps only one took are kept, marked with the answer they need. Repeated
/// until nothing merges (an outcome split by two such questions merges twice).
///
/// Two outcomes that differ in more than one assumption are left alone: `-i cali+ -m set
/// --match-set S src -j DROP` forks into {cali+, S} -> drop, {cali+, not S} -> on, {not cali+}
/// -> on, and the last two hold on "not (cali+ and S)", which no single assumption states.
fn merge_undecided(mut outcomes: Vec<Outcome>) -> Vec<Outcome> {
    // Each merge removes an outcome, so this ends; a merged outcome can pair with one passed
    // before, hence the passes.
    let mut merged_any = true;
    while merged_any {
        merged_any = false;
        let mut i = 0;
        while i < outcomes.len() {
            let found = (i + 1..outcomes.len())
                .find_map(|j| undecided(&outcomes[i], &outcomes[j]).map(|k| (j, k)));
            match found {
                Some((j, k)) => {
                    let other = outcomes.remove(j);
                    join_undecided(&mut outcomes[i], other, k);
                    merged_any = true;
                }
                None => i += 1,
            }
        }
    }
    outcomes
}

/// The index of the only assumption `a` and `b` answer differently, when they end the same way
/// and agree on everything else.
fn undecided(a: &Outcome, b: &Outcome) -> Option<usize> {
    let same_end = a.verdict == b.verdict
        && a.destination == b.destination
        && a.masquerade == b.masquerade
        && a.stopped == b.stopped
        && a.assumptions.len() == b.assumptions.len()
        && (a.probability - b.probability).abs() <= 1e-12 * a.probability.max(b.probability);
    if !same_end {
        return None;
    }
    let mut split = None;
    for (k, (x, y)) in a.assumptions.iter().zip(&b.assumptions).enumerate() {
        if x == y {
            continue;
        }
        // Sorted by question first: the split question sits at the same index in both.
        if x.question != y.question || split.is_some() {
            return None;
        }
        split = Some(k);
    }
    split
}

/// Merges `other` into `kept`, which differ only in assumption `k` (see [`merge_undecided`]).
/// The steps are moved, not copied, and each step only one side took gets the answer it needs
/// as a [`Condition`] shared by all of them: a cascade of merges (one per undecided match of a
/// long rule) costs one pointer per step and merge, not a text that grows with each.
fn join_undecided(kept: &mut Outcome, other: Outcome, k: usize) {
    let question = kept.assumptions.remove(k);
    // What the node's sets hold is true on both paths.
    add_facts(&mut kept.facts, other.facts);
    let (holds, holds_not) = if question.holds {
        (std::mem::take(&mut kept.steps), other.steps)
    } else {
        (other.steps, std::mem::take(&mut kept.steps))
    };
    let prefix = holds
        .iter()
        .zip(&holds_not)
        .take_while(|(x, y)| x == y)
        .count();
    let suffix = holds[prefix..]
        .iter()
        .rev()
        .zip(holds_not[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let shared: Arc<str> = question.question.into();
    let needs = |holds: bool| {
        let question = Arc::clone(&shared);
        move |mut s: Step| {
            s.only_when.push(Condition {
                question: Arc::clone(&question),
                holds,
            });
            s
        }
    };
    let (holds_len, holds_not_len) = (holds.len(), holds_not.len());
    let mut steps = Vec::with_capacity(holds_len + holds_not_len - prefix - suffix);
    let mut holds = holds.into_iter();
    steps.extend(holds.by_ref().take(prefix));
    steps.extend(
        holds
            .by_ref()
            .take(holds_len - prefix - suffix)
            .map(needs(true)),
    );
    steps.extend(
        holds_not
            .into_iter()
            .skip(prefix)
            .take(holds_not_len - prefix - suffix)
            .map(needs(false)),
    );
    steps.extend(holds);
    kept.steps = steps;
}

impl<'n, 'a> Walker<'n, 'a> {
    /// Counts a fork of `b`: the bound it would pass ([`MAX_BRANCHES`], [`MAX_FORKED`]), if any.
    fn fork(&mut self, b: &Branch) -> Option<Limit> {
        self.forked += b.assumptions.len() + b.steps.len();
        fork_limit(&mut self.branches, self.forked)
    }

    /// Sets the interfaces the packet has on its current hook.
    fn set_interfaces(&self, b: &mut Branch) {
        let Stage::Hook(hook) = b.stage else {
            return;
        };
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
        // Delivered locally to an address:port IPVS serves: what ipvsadm lists for it.
        let ipvs = match (verdict, &self.node.file_state, b.pkt.dport) {
            (Verdict::Accept, Some(state), Some(port)) => {
                state.virtual_server(b.pkt.dst, b.pkt.protocol, port)
            }
            _ => None,
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
            facts: b.facts,
            ipvs,
        });
    }

    /// Walks one branch to its end; forks go onto `work`.
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
            // Enter the next table of the hook when no chain is being walked.
            if b.stack.is_empty() {
                match self.next_table(b, hook) {
                    Some(chain) => b.stack.push(Frame { chain, pos: 0 }),
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
            let frame = *b.stack.last().expect("a frame");
            let chain = set.chain(frame.chain);
            let ids = chain.rule_ids();
            let index = if self.node.use_index {
                self.node.index.get(set, frame.chain)
            } else {
                None
            };
            let pos = match index {
                Some(ix) => ix.next(frame.pos, b.pkt.dst),
                None => ((frame.pos as usize) < ids.len()).then_some(frame.pos),
            };
            let Some(pos) = pos else {
                // Fell off the chain: return to the caller, or the built-in chain's policy.
                if let Some(end) = self.ret(b) {
                    return end;
                }
                continue;
            };
            b.stack.last_mut().expect("a frame").pos = pos;
            let rule = set.rule(ids[pos as usize]);
            let answer = eval::rule(
                rule,
                &b.pkt,
                &self.env,
                &|q| b.known(q),
                &mut self.read_facts,
            );
            if !self.read_facts.is_empty() {
                add_facts(&mut b.facts, self.read_facts.drain(..));
            }
            match answer {
                Eval::No => b.stack.last_mut().expect("a frame").pos = pos + 1,
                Eval::Yes => {
                    if let Some(end) = self.apply(b, rule, None) {
                        return end;
                    }
                }
                Eval::Ask(question)
                    if self.affinity == Some(Affinity::Miss)
                        && eval::is_affinity_question(&question) =>
                {
                    // No list holds the source: answer and read the rule again.
                    b.assume(question, false);
                }
                Eval::Ask(question) => {
                    if let Some(limit) = self.fork(b) {
                        return End::Stopped(limit);
                    }
                    let mut other = b.clone();
                    other.assume(question.clone(), false);
                    work.push(other);
                    b.assume(question, true);
                }
                Eval::Random(p) if p >= 1.0 => {
                    if let Some(end) = self.apply(b, rule, None) {
                        return end;
                    }
                }
                Eval::Random(p) if p <= 0.0 => {
                    b.stack.last_mut().expect("a frame").pos = pos + 1;
                }
                Eval::Random(p) => {
                    if let Some(limit) = self.fork(b) {
                        return End::Stopped(limit);
                    }
                    let mut other = b.clone();
                    other.probability *= 1.0 - p;
                    other.stack.last_mut().expect("a frame").pos = pos + 1;
                    b.probability *= p;
                    // A random rule in a loop would halve a branch down to zero: what falls
                    // below the floor is dropped, and the trace says so.
                    if other.probability >= MIN_PROBABILITY {
                        work.push(other);
                    } else {
                        self.limits.push(Limit::Improbable);
                    }
                    if b.probability < MIN_PROBABILITY {
                        return End::Stopped(Limit::Improbable);
                    }
                    if let Some(end) = self.apply(b, rule, Some(p)) {
                        return end;
                    }
                }
            }
        }
    }

    /// The next table on the hook that has the hook's chain; its chain.
    fn next_table(&self, b: &mut Branch, hook: Hook) -> Option<ChainId> {
        let set = self.node.set;
        let tables = hook.tables();
        while b.table < tables.len() {
            let kind = tables[b.table];
            let nat_done = b.pkt.state == ConnState::Established || b.pkt.untracked || b.looped;
            if kind == TableKind::Nat && nat_done {
                b.table += 1;
                continue;
            }
            if let Some(t) = set.table_by_kind(kind)
                && let Some(c) = t.chain(hook.chain())
            {
                return Some(c.id);
            }
            b.table += 1;
        }
        None
    }

    /// After the last table of a hook: the next stage, or the end.
    fn next_stage(&self, b: &mut Branch, hook: Hook) -> Option<End> {
        b.table = 0;
        b.stage = match (hook, self.origin, b.local) {
            // Routed already, on the way out.
            (Hook::Prerouting, _, _) if b.looped => Stage::Hook(Hook::Input),
            (Hook::Prerouting, _, _) | (Hook::Output, _, _) => Stage::Route,
            (Hook::Forward, _, _) => Stage::Hook(Hook::Postrouting),
            // Sent out through `lo`, the packet comes back in through PREROUTING (the kernel
            // runs its hooks again), then INPUT.
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

    /// The routing decision: local delivery or not, from the destination after DNAT.
    fn route(&mut self, b: &mut Branch, work: &mut Vec<Branch>) -> Option<End> {
        let dst = b.pkt.dst;
        // REDIRECT always sends the packet to an address of the node.
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
            (true, false) if b.known(REDIRECT_UNKNOWN_ADDRESS).is_some() => {
                "the address of the input interface REDIRECT chose is local: delivered through INPUT"
                    .to_string()
            }
            (true, false) => format!("{dst} is local: delivered through INPUT"),
            (true, true) => {
                format!(
                    "{dst} is local: delivered through POSTROUTING (lo), then PREROUTING and INPUT (their nat tables do not run again)"
                )
            }
            (false, _) => {
                let service = !b.pkt.dnat && self.node.is_service_ip(dst);
                let leaves = if host {
                    "sent out through POSTROUTING"
                } else {
                    "forwarded through FORWARD and POSTROUTING"
                };
                if service {
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
        b.table = 0;
        self.set_interfaces(b);
        None
    }

    /// Returns from the current chain (RETURN or falling off its end).
    fn ret(&mut self, b: &mut Branch) -> Option<End> {
        let frame = b.stack.pop().expect("a frame");
        if let Some(caller) = b.stack.last_mut() {
            let _ = caller;
            return None;
        }
        // Off a built-in chain (or a chain a built-in chain went to): its policy.
        let Stage::Hook(hook) = b.stage else {
            return None;
        };
        let set = self.node.set;
        let base = set
            .chain(frame.chain)
            .table()
            .chain(hook.chain())
            .map_or(frame.chain, |c| c.id);
        let chain = set.chain(base);
        let policy = chain.policy();
        let (effect, drop) = match policy {
            Some(p) if p.eq_ignore_ascii_case("DROP") => ("policy DROP".to_string(), true),
            Some(p) => (format!("policy {p}"), false),
            None => {
                b.assume(
                    format!(
                        "the policy of {} {} is ACCEPT (the dump does not say)",
                        chain.table().name(),
                        chain.name()
                    ),
                    true,
                );
                ("policy ACCEPT (assumed)".to_string(), false)
            }
        };
        // An ACCEPT policy of a chain without rules changes nothing: not worth a step.
        if drop || policy.is_none() || chain.rule_count() > 0 {
            b.steps.push(Step::new(StepAt::Policy(base), effect));
        }
        if drop {
            return Some(End::Verdict(Verdict::Drop));
        }
        b.table += 1;
        None
    }

    /// Applies a matching rule's target. `probability`: the rule matched by a `statistic`
    /// branch taken with this probability.
    fn apply(
        &mut self,
        b: &mut Branch,
        rule: RuleRef<'_, '_>,
        probability: Option<f64>,
    ) -> Option<End> {
        let step = |b: &mut Branch, effect: String| {
            let effect = match probability {
                Some(p) => format!("{effect} (probability {})", super::report::probability(p)),
                None => effect,
            };
            b.steps.push(Step::new(StepAt::Rule(rule.id), effect));
        };
        let advance = |b: &mut Branch| {
            if let Some(f) = b.stack.last_mut() {
                f.pos += 1;
            }
        };
        let Some(target) = rule.target() else {
            step(b, "matched (no target: counted, continues)".into());
            advance(b);
            return None;
        };
        let name = target.name();
        if let Some(chain) = rule.target_chain() {
            let chain_name = self.node.set.chain(chain).name();
            if target.is_goto() {
                step(b, format!("goto {chain_name}"));
                let top = b.stack.last_mut().expect("a frame");
                *top = Frame { chain, pos: 0 };
            } else {
                step(b, format!("jump {chain_name}"));
                advance(b);
                if b.stack.len() >= MAX_DEPTH {
                    return Some(End::Stopped(Limit::Depth));
                }
                b.stack.push(Frame { chain, pos: 0 });
            }
            return None;
        }
        match name {
            "ACCEPT" => {
                step(
                    b,
                    "ACCEPT: this table is done, the next table of the hook runs".into(),
                );
                b.stack.clear();
                b.table += 1;
                None
            }
            "DROP" => {
                step(b, "DROP".into());
                Some(End::Verdict(Verdict::Drop))
            }
            "REJECT" => {
                let with = target
                    .option_arg("--reject-with")
                    .unwrap_or("icmp-port-unreachable");
                step(b, format!("REJECT with {with}"));
                Some(End::Verdict(Verdict::Reject))
            }
            "RETURN" => {
                step(b, "RETURN".into());
                self.ret(b)
            }
            "DNAT" | "REDIRECT" => {
                let before = Endpoint {
                    ip: b.pkt.dst,
                    port: b.pkt.dport,
                };
                let mut note = "";
                let parsed = if name == "DNAT" {
                    target
                        .option_arg("--to-destination")
                        .and_then(|t| NatAddress::parse(t).ok())
                } else {
                    let ports = target
                        .option_arg("--to-ports")
                        .and_then(rulelint_parser::views::PortRange::parse);
                    let hook = match b.stage {
                        Stage::Hook(hook) => hook,
                        _ => Hook::Prerouting,
                    };
                    let to = redirect_to(
                        hook,
                        b.pkt.dst,
                        b.pkt.in_interface.as_deref(),
                        self.node.file_state.as_deref(),
                    );
                    b.redirected = true;
                    match to {
                        RedirectTo::Address(ip, why) => {
                            note = why;
                            Some(NatAddress {
                                first: Some(ip),
                                last: Some(ip),
                                ports,
                            })
                        }
                        RedirectTo::Drop(why) => {
                            step(b, format!("REDIRECT: {why}"));
                            return Some(End::Verdict(Verdict::Drop));
                        }
                        RedirectTo::Unknown => {
                            b.assume(REDIRECT_UNKNOWN_ADDRESS.into(), true);
                            note = REDIRECT_UNKNOWN_NOTE;
                            Some(NatAddress {
                                first: None,
                                last: None,
                                ports,
                            })
                        }
                    }
                };
                let Some(nat) = parsed else {
                    b.assume(
                        format!(
                            "the {name} target `{}` leaves the destination as it is",
                            rule.text()
                        ),
                        true,
                    );
                    step(b, format!("{name} (not understood: destination kept)"));
                    b.stack.clear();
                    b.table += 1;
                    return None;
                };
                if let Some(ip) = nat.first {
                    b.pkt.dst = ip;
                }
                if let Some(ports) = nat.ports
                    && has_ports(b.pkt.protocol)
                {
                    b.pkt.dport = Some(ports.first);
                }
                b.pkt.dnat = true;
                let after = Endpoint {
                    ip: b.pkt.dst,
                    port: b.pkt.dport,
                };
                let mut effect = format!("{name} {before} -> {after}");
                if nat.first != nat.last || nat.ports.is_some_and(|p| p.first != p.last) {
                    effect.push_str(" (first of a range)");
                }
                effect.push_str(note);
                step(b, effect);
                b.stack.clear();
                b.table += 1;
                None
            }
            "SNAT" | "MASQUERADE" => {
                b.masquerade = Some(StepAt::Rule(rule.id));
                b.pkt.snat = true;
                let effect = match target.option_arg("--to-source").map(NatAddress::parse) {
                    Some(Ok(nat)) if name == "SNAT" => {
                        if let Some(ip) = nat.first {
                            b.pkt.src = Some(ip);
                        }
                        format!(
                            "SNAT: source -> {}",
                            target.option_arg("--to-source").unwrap_or("")
                        )
                    }
                    _ if name == "SNAT" => "SNAT".to_string(),
                    _ => "MASQUERADE: source -> the address of the outgoing interface".to_string(),
                };
                step(b, effect);
                b.stack.clear();
                b.table += 1;
                None
            }
            "MARK" => {
                let before = b.pkt.mark;
                match mark_target(&target, before) {
                    Some(after) => {
                        b.pkt.mark = after;
                        step(b, format!("MARK {before:#x} -> {after:#x}"));
                    }
                    None => {
                        b.assume(
                            format!("the MARK target `{}` leaves the mark as it is", rule.text()),
                            true,
                        );
                        step(b, "MARK (not understood: mark kept)".into());
                    }
                }
                advance(b);
                None
            }
            "NOTRACK" | "CT" if is_notrack(&target) && !b.looped => {
                b.pkt.untracked = true;
                step(b, format!("{name} --notrack: {UNTRACKED}"));
                advance(b);
                None
            }
            "LOG" | "NFLOG" | "ULOG" | "TRACE" | "CT" | "NOTRACK" | "CONNMARK" | "TCPMSS"
            | "CHECKSUM" | "CLASSIFY" | "DSCP" | "TOS" | "TTL" | "HL" | "AUDIT" | "SET"
            | "NFACCT" | "IDLETIMER" | "LED" | "SECMARK" | "CONNSECMARK" | "TEE" => {
                step(b, format!("{name} (non-terminating: continues)"));
                advance(b);
                None
            }
            other => {
                b.assume(
                    format!("the target `{other}` lets the packet continue (not modelled)"),
                    true,
                );
                step(b, format!("{other} (not modelled: assumed to continue)"));
                advance(b);
                None
            }
        }
    }
}

/// What a notrack does to the rest of the walk, in a step's words (both walkers).
pub(super) const UNTRACKED: &str =
    "not tracked from here (conntrack state untracked: no NAT), continues";

/// `-j NOTRACK` or `-j CT --notrack`. A packet that comes back through `lo` keeps the
/// connection it had on the way out, and a notrack leaves it tracked (the caller checks).
fn is_notrack(target: &rulelint_parser::TargetRef<'_, '_>) -> bool {
    target.name() == "NOTRACK" || target.options().any(|o| o.name() == "--notrack")
}

/// The mark after a MARK target: `--set-xmark`, `--set-mark`, `--or-mark`, `--xor-mark`,
/// `--and-mark`.
fn mark_target(target: &rulelint_parser::TargetRef<'_, '_>, mark: u32) -> Option<u32> {
    use rulelint_parser::views::Mark;
    let o = target.options().next()?;
    let value = Mark::parse(o.args().next()?)?;
    Some(match o.name() {
        "--set-xmark" => (mark & !value.mask) ^ value.value,
        "--set-mark" => (mark & !value.mask) | value.value,
        "--or-mark" => mark | value.value,
        "--xor-mark" => mark ^ value.value,
        "--and-mark" => mark & value.value,
        _ => return None,
    })
}

/// Decides every field of the packet on this node: given, default or inferred.
/// What the walk needs to know about a node, whichever backend its dump came from.
pub(super) struct Known<'n> {
    /// The node facts (Service addresses, pod network, endpoints).
    pub facts: &'n super::NodeFacts,
    /// The Service addresses (not the node's own in iptables and nftables modes).
    pub service_ips: &'n dyn super::eval::NotLocal,
    /// The node's addresses the dump shows, each with where it shows it.
    pub addresses: Vec<(IpAddr, String)>,
    /// The proxy mode and layout, in words.
    pub layout: String,
    /// Service addresses are not the node's own (iptables and nftables modes, not IPVS).
    pub services_not_local: bool,
    /// Pod addresses of node-local endpoints (the default source of `--from pod`).
    pub local_endpoints: Vec<IpAddr>,
    /// The endpoints' pod addresses, asked near the default source.
    pub endpoints: &'n dyn EndpointAddresses,
}

/// The endpoints' pod addresses, as far as the default source needs them.
pub(super) trait EndpointAddresses {
    /// The endpoint addresses among the first `count` addresses of `net`, sorted.
    fn near(&self, net: IpNet, count: u32) -> Vec<IpAddr>;
}

impl EndpointAddresses for rustc_hash::FxHashSet<IpAddr> {
    fn near(&self, net: IpNet, count: u32) -> Vec<IpAddr> {
        let mut near: Vec<IpAddr> = (0..count)
            .map(|offset| add(net.network(), offset))
            .filter(|ip| net.contains(ip) && self.contains(ip))
            .collect();
        near.sort_unstable();
        near.dedup();
        near
    }
}

/// The packet's fields: given, defaulted or inferred from `known`, with the inputs to print.
pub(super) fn resolve<'n>(
    known: &Known<'n>,
    spec: &PacketSpec,
) -> (Vec<Input>, Packet, Env<'n>, Origin, TracedPacket) {
    let facts = known.facts;
    let mut inputs = Vec::new();
    let given_or = |given: bool| if given { How::Given } else { How::Default };
    let protocol = spec.protocol.unwrap_or(6);
    inputs.push(Input {
        field: "protocol",
        value: protocol_name(protocol),
        how: given_or(spec.protocol.is_some()),
    });
    let origin = spec.from.unwrap_or(Origin::Pod);
    inputs.push(Input {
        field: "from",
        value: origin.as_str().into(),
        how: given_or(spec.from.is_some()),
    });
    inputs.push(Input {
        field: "dst",
        value: spec.dst.to_string(),
        how: How::Given,
    });
    let v4 = spec.dst.ip.is_ipv4();
    // The node's addresses.
    let mut env = Env {
        complete: !spec.node_ips.is_empty(),
        pod_cidr: facts.pod_cidr.as_ref().map(|(n, _)| *n),
        src_local_default: origin == Origin::Host,
        ..Env::default()
    };
    let mut addresses = Vec::new();
    for ip in &spec.node_ips {
        env.local.insert(*ip);
        addresses.push(format!("{ip} (given)"));
    }
    for (ip, why) in &known.addresses {
        if env.local.insert(*ip) {
            addresses.push(format!("{ip} ({why})"));
        }
    }
    if known.services_not_local {
        env.not_local = Some(known.service_ips);
    }
    let mut node_value = if addresses.is_empty() {
        "none known (the dump shows none; give --node-ip)".to_string()
    } else {
        addresses.join(", ")
    };
    node_value.push_str(if env.complete {
        "; other addresses are taken as not the node's (--node-ip given)"
    } else {
        "; loopback is local; other addresses are local or not as the dump shows, else asked"
    });
    inputs.push(Input {
        field: "node addresses",
        value: node_value,
        how: if spec.node_ips.is_empty() {
            How::Inferred("from the dump".into())
        } else {
            How::Given
        },
    });
    inputs.push(Input {
        field: "pod network",
        value: facts
            .pod_cidr
            .as_ref()
            .map_or_else(|| "unknown".to_string(), |(n, _)| n.to_string()),
        how: match &facts.pod_cidr {
            Some((_, why)) => How::Inferred(why.clone()),
            None => How::Unknown,
        },
    });
    inputs.push(Input {
        field: "proxy mode",
        value: known.layout.clone(),
        how: How::Inferred("from the chains the dump holds".into()),
    });
    // The source.
    let (src, src_how) = match spec.src {
        Some(s) => (Some(s.ip), How::Given),
        None => default_source(known, &env, origin, v4, spec),
    };
    inputs.push(Input {
        field: "src",
        value: match (src, spec.src.and_then(|s| s.port)) {
            (Some(ip), port) => Endpoint { ip, port }.to_string(),
            (None, _) => "unknown".into(),
        },
        how: src_how,
    });
    let state = spec.state.unwrap_or(ConnState::New);
    inputs.push(Input {
        field: "state",
        value: match state {
            ConnState::New => "new".into(),
            ConnState::Established => "established (nat tables not traversed)".into(),
        },
        how: given_or(spec.state.is_some()),
    });
    inputs.push(Input {
        field: "affinity",
        value: match spec.affinity {
            None => "unknown: `recent` (session affinity) matches fork".into(),
            Some(Affinity::Hit) => "hit: the source is in a session-affinity list; each list \
                                    forks, paths on which none holds it are left out"
                .into(),
            Some(Affinity::Miss) => {
                "miss: no session-affinity list holds the source (a first connection)".into()
            }
        },
        how: if spec.affinity.is_some() {
            How::Given
        } else {
            How::Unknown
        },
    });
    let iface = |given: &Option<String>, what: &str| match given {
        Some(i) => (i.clone(), How::Given),
        None => (
            format!("unknown: rules that match on the {what} interface fork"),
            How::Unknown,
        ),
    };
    let (i, ih) = iface(&spec.in_interface, "input");
    inputs.push(Input {
        field: "in",
        value: if origin == Origin::Host && spec.in_interface.is_none() {
            "none (sent by the host; lo when delivered locally)".into()
        } else {
            i
        },
        how: if origin == Origin::Host && spec.in_interface.is_none() {
            How::Default
        } else {
            ih
        },
    });
    let (o, oh) = iface(&spec.out_interface, "output");
    inputs.push(Input {
        field: "out",
        value: o,
        how: oh,
    });
    let ports = has_ports(protocol);
    let pkt = Packet {
        protocol,
        src,
        sport: if ports {
            spec.src.and_then(|s| s.port)
        } else {
            None
        },
        dst: spec.dst.ip,
        dport: if ports { spec.dst.port } else { None },
        in_interface: None,
        out_interface: None,
        mark: 0,
        state,
        dnat: false,
        snat: false,
        untracked: false,
    };
    let traced = TracedPacket {
        protocol: protocol_name(protocol),
        src: src.map(|ip| {
            Endpoint {
                ip,
                port: spec.src.and_then(|s| s.port),
            }
            .to_string()
        }),
        dst: spec.dst.to_string(),
        from: origin,
        in_interface: spec.in_interface.clone(),
        out_interface: spec.out_interface.clone(),
        state,
        affinity: spec.affinity,
    };
    (inputs, pkt, env, origin, traced)
}

/// How many addresses of one interface the `node addresses` input lists; the rest are counted.
const SHOWN_ADDRESSES: usize = 4;

/// The node's addresses from the `ip addr` output in its file (no `--node-ip` given): each is
/// local, and when the listing is whole for the packet's family, no other address is.
fn node_addresses_from_ip_addr(
    state: &super::ipvs::FileState<'_>,
    spec: &PacketSpec,
    env: &mut Env<'_>,
    inputs: &mut [Input],
) {
    let v4 = spec.dst.ip.is_ipv4();
    let addresses = state.addresses(v4);
    let mut listed: Vec<(&str, Vec<IpAddr>)> = Vec::new();
    for (net, interface) in &addresses {
        env.local.insert(net.addr());
        // An interface's addresses come together (`addresses` lists interface by interface):
        // only the last group can be its.
        match listed.last_mut() {
            Some((i, ips)) if i == interface => ips.push(net.addr()),
            _ => listed.push((interface, vec![net.addr()])),
        }
    }
    // A subnet's network or broadcast address is no interface's, yet the kernel delivers it
    // (as broadcast): left to ask.
    let subnet_edge = addresses.iter().any(|(n, _)| {
        n.max_prefix_len() - n.prefix_len() >= 2
            && (n.network() == spec.dst.ip || n.broadcast() == spec.dst.ip)
    });
    env.complete = state.lists_every_address(v4) && !subnet_edge;
    let mut value = listed
        .iter()
        .map(|(interface, ips)| {
            let shown: Vec<String> = ips
                .iter()
                .take(SHOWN_ADDRESSES)
                .map(ToString::to_string)
                .collect();
            let more = ips.len().saturating_sub(SHOWN_ADDRESSES);
            let more = if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            };
            format!("{interface}: {}{more}", shown.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ");
    if value.is_empty() {
        value.push_str("none of this address family");
    }
    value.push_str(if env.complete {
        "; other addresses are not the node's (ip addr lists every interface)"
    } else {
        "; loopback is local; other addresses are local or not as the dump shows, else asked"
    });
    if let Some(input) = inputs.iter_mut().find(|i| i.field == "node addresses") {
        input.value = value;
        input.how = How::Inferred("from ip addr in the dump".into());
    }
}

/// The default pod source is one of the first this many addresses of its network.
const DEFAULT_SOURCE_TRIES: u32 = 2050;

/// The source a user would expect: a pod address, an outside address, or the node's.
fn default_source(
    known: &Known<'_>,
    env: &Env<'_>,
    origin: Origin,
    v4: bool,
    spec: &PacketSpec,
) -> (Option<IpAddr>, How) {
    let facts = known.facts;
    match origin {
        Origin::Pod => {
            // A pod of this node: the /24 (/80) around a node-local endpoint (KUBE-SVL), else
            // the whole pod network.
            let local = known
                .local_endpoints
                .iter()
                .copied()
                .filter(|ip| ip.is_ipv4() == v4)
                .filter(|ip| facts.pod_cidr.as_ref().is_none_or(|(n, _)| n.contains(ip)))
                .min()
                .and_then(|ip| IpNet::new(ip, if v4 { 24 } else { 80 }).ok())
                .map(|n| {
                    (
                        n.trunc(),
                        "this node's pod subnet (around a node-local endpoint)",
                    )
                });
            let Some((net, what)) = local.or_else(|| {
                facts
                    .pod_cidr
                    .as_ref()
                    .map(|(n, _)| (*n, "the pod network"))
                    .filter(|(n, _)| n.addr().is_ipv4() == v4)
            }) else {
                return (None, How::Unknown);
            };
            // The first address of the pod network past its gateway (.1) that no endpoint has,
            // so a default trace is not a hairpin.
            let base = net.network();
            let used = known.endpoints.near(net, DEFAULT_SOURCE_TRIES);
            for offset in 2u32..DEFAULT_SOURCE_TRIES {
                let ip = add(base, offset);
                if net.contains(&ip) && used.binary_search(&ip).is_err() {
                    return (
                        Some(ip),
                        How::Inferred(format!("an address of {what} {net} that no endpoint uses")),
                    );
                }
            }
            (None, How::Unknown)
        }
        Origin::Outside => {
            let ip: IpAddr = if v4 {
                IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1))
            } else {
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0, 0, 0, 0, 1))
            };
            (
                Some(ip),
                How::Inferred(
                    "a benchmarking/documentation address standing for any outside client".into(),
                ),
            )
        }
        Origin::Host => {
            if spec.dst.ip.is_loopback() {
                return (
                    Some(spec.dst.ip),
                    How::Inferred("loopback, as the destination".into()),
                );
            }
            let mut own: Vec<IpAddr> = env
                .local
                .iter()
                .copied()
                .filter(|ip| ip.is_ipv4() == v4 && !ip.is_loopback())
                .collect();
            own.sort();
            match own.first() {
                Some(ip) => (Some(*ip), How::Inferred("the node's address".into())),
                None => (None, How::Unknown),
            }
        }
    }
}

fn add(base: IpAddr, offset: u32) -> IpAddr {
    match base {
        IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(u32::from(v4).wrapping_add(offset))),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(
            u128::from(v6).wrapping_add(u128::from(offset)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{MAX_SHOWN_CONDITIONS, Verdict};

    fn outcome(assumptions: Vec<Assumption>, effect: &str) -> Outcome {
        Outcome {
            probability: 1.0,
            verdict: Verdict::Stopped,
            destination: Destination {
                endpoint: Endpoint {
                    ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                    port: None,
                },
                translated: false,
            },
            masquerade: None,
            assumptions,
            steps: vec![Step::new(StepAt::Route, effect.into())],
            stopped: Some(Limit::Branches),
            facts: Vec::new(),
            ipvs: None,
        }
    }

    /// The outcomes of a rule of `n` undecided matches whose paths all stopped: one on which
    /// all hold, and for each match one on which the ones before it hold and it does not.
    fn cascade(n: usize) -> Vec<Outcome> {
        let q = |i: usize| format!("q{i:05}");
        let holds = |k: usize| {
            (0..k).map(|i| Assumption {
                question: q(i),
                holds: true,
            })
        };
        let mut outcomes = vec![outcome(holds(n).collect(), "all")];
        for k in 0..n {
            let mut a: Vec<Assumption> = holds(k).collect();
            a.push(Assumption {
                question: q(k),
                holds: false,
            });
            outcomes.push(outcome(a, &format!("fails at {k}")));
        }
        outcomes
    }

    #[test]
    fn a_cascade_of_merges_lists_a_few_answers_and_counts_the_rest() {
        let n = 300;
        let merged = merge(cascade(n));
        assert_eq!(merged.len(), 1);
        let o = &merged[0];
        assert!(o.assumptions.is_empty());
        assert_eq!(o.steps.len(), n + 1);
        let all = o
            .steps
            .iter()
            .find(|s| s.effect == "all")
            .expect("the step");
        let text = all.effect_text();
        assert_eq!(text.matches(" (only when: ").count(), MAX_SHOWN_CONDITIONS);
        assert!(
            text.ends_with(&format!(
                " (and {} more conditions)",
                n - MAX_SHOWN_CONDITIONS
            )),
            "{text}"
        );
        // What the report prints grows linearly with the rule, not with its square.
        let bytes = |n: usize| -> usize {
            merge(cascade(n))[0]
                .steps
                .iter()
                .map(|s| s.effect_text().len())
                .sum()
        };
        assert!(
            bytes(2 * n) <= 2 * bytes(n) + 64 * n,
            "{} {}",
            bytes(n),
            bytes(2 * n)
        );
    }

    #[test]
    fn a_few_merges_read_as_before() {
        let merged = merge(cascade(2));
        let texts: Vec<String> = merged[0]
            .steps
            .iter()
            .map(|s| s.effect_text().into_owned())
            .collect();
        assert_eq!(
            texts,
            [
                "all (only when: q00001) (only when: q00000)",
                "fails at 1 (only when not: q00001) (only when: q00000)",
                "fails at 0 (only when not: q00000)",
            ]
        );
    }
}
