//! Whether a rule matches a packet, three-valued: yes, no, or a question the dump cannot
//! answer ([`Eval::Ask`]), plus the random matches of `statistic` ([`Eval::Random`]).
//!
//! Matches are read from the rule's tokens with the primitives of [`crate::matchset`]
//! (protocols, networks with `!`, interfaces with `+`, port sets, marks). A definite "no" on any
//! match decides the rule, whatever else is unknown, so no fork is made for a rule that cannot
//! match anyway. Questions already answered on a path (its assumptions) are answered the same
//! way again, so a path never assumes both ways.
//!
//! **Invariant:** nothing is assumed silently. A match that is not understood, or that depends
//! on state the dump does not hold (interfaces not given, the locality of an address, ipsets,
//! `recent`, `physdev`, unknown modules and options), is a question.

use super::{ConnState, SetFact};
use crate::matchset::{InterfacePattern, Ports, protocol_number};
use ipnet::IpNet;
use rulelint_parser::views::{Mark, PortRange, parse_address};
use rulelint_parser::{MatchRef, OptionRef, RuleRef, TokenKind};
use rustc_hash::FxHashSet;
use std::net::IpAddr;

/// The answer for one rule.
#[derive(Clone, Debug, PartialEq)]
pub enum Eval {
    /// The rule does not match.
    No,
    /// The rule matches.
    Yes,
    /// The rule matches if the answer to this question is what the path assumes: fork on it.
    Ask(String),
    /// Every other match holds; `statistic --mode random` matches with this probability.
    Random(f64),
}

/// The packet as the rules see it at one point of the walk.
#[derive(Clone, Debug)]
pub struct Packet {
    /// IP protocol number.
    pub protocol: u8,
    /// Source address; `None` when unknown.
    pub src: Option<IpAddr>,
    /// Source port; `None` when unknown (or the protocol has none).
    pub sport: Option<u16>,
    /// Destination address.
    pub dst: IpAddr,
    /// Destination port; `None` when unknown (or the protocol has none).
    pub dport: Option<u16>,
    /// Input interface: `Some("")` when there is none, `None` when unknown.
    pub in_interface: Option<String>,
    /// Output interface: `Some("")` when there is none yet, `None` when unknown.
    pub out_interface: Option<String>,
    /// The packet mark.
    pub mark: u32,
    /// The conntrack state traced.
    pub state: ConnState,
    /// A DNAT (or REDIRECT) rewrote the destination: conntrack's virtual `DNAT` state.
    pub dnat: bool,
    /// A SNAT or MASQUERADE rewrote the source: conntrack's virtual `SNAT` state.
    pub snat: bool,
    /// A raw-table `NOTRACK` (`notrack`) took the packet out of conntrack: its state is
    /// `UNTRACKED` and the nat tables do not run.
    pub untracked: bool,
}

/// Addresses known not to be the node's: a set, or a node that answers on demand.
pub trait NotLocal {
    /// Whether `ip` is one of them.
    fn contains(&self, ip: IpAddr) -> bool;
}

impl NotLocal for FxHashSet<IpAddr> {
    fn contains(&self, ip: IpAddr) -> bool {
        FxHashSet::contains(self, &ip)
    }
}

impl std::fmt::Debug for dyn NotLocal + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NotLocal")
    }
}

/// The node's ipsets as its file holds them: whether a set holds the packet's key.
pub trait SetContents {
    /// Whether set `name` holds the packet's key under the match's `flags` (`dst,dst`), with
    /// where the file says so; `None` when the file does not answer exactly (no such set, a
    /// set cut short, a type or flags not read): the match stays a question.
    fn lookup(&self, name: &str, flags: &str, p: &Packet) -> Option<SetFact>;
}

impl std::fmt::Debug for dyn SetContents + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SetContents")
    }
}

/// What the node's addresses say about an address.
#[derive(Clone, Debug, Default)]
pub struct Env<'f> {
    /// The node's own addresses (from the dump and `--node-ip`).
    pub local: FxHashSet<IpAddr>,
    /// `--node-ip` was given: the list is taken as complete, other addresses are not local.
    pub complete: bool,
    /// Addresses known not to be the node's: Service addresses in iptables mode (borrowed from
    /// the node's facts: a 250k-rule node has tens of thousands, not to be copied per trace).
    pub not_local: Option<&'f dyn NotLocal>,
    /// The pod network: its addresses are pods', not the node's.
    pub pod_cidr: Option<IpNet>,
    /// Locality of the source when the address alone does not tell (`--from host`: local;
    /// `--from pod`/`outside`: not local).
    pub src_local_default: bool,
    /// The node's ipsets, when its file holds them.
    pub sets: Option<&'f dyn SetContents>,
}

impl Env<'_> {
    /// Whether `ip` is an address of this node: `None` when the dump and flags do not tell.
    pub fn is_local(&self, ip: IpAddr) -> Option<bool> {
        if ip.is_loopback() || self.local.contains(&ip) {
            return Some(true);
        }
        if self.complete
            || self.not_local.is_some_and(|n| n.contains(ip))
            || self.pod_cidr.is_some_and(|n| n.contains(&ip))
        {
            return Some(false);
        }
        None
    }

    /// The question asked when the locality of `ip` is unknown.
    pub fn local_question(ip: IpAddr) -> String {
        format!("{ip} is an address of this node")
    }
}

/// What a session-affinity question ends with (see [`affinity_question`]).
const AFFINITY_QUESTION_END: &str = " holds the source (session affinity)";

/// The question a `recent --rcheck` (or `--update`, `--remove`) match asks.
pub fn affinity_question(list: &str) -> String {
    format!("the `recent` list {list}{AFFINITY_QUESTION_END}")
}

/// What an nftables session-affinity question starts with (see [`nft_affinity_question`]).
const NFT_AFFINITY_QUESTION_START: &str = "the session-affinity set @";

/// The question an nftables `ip saddr @affinity-...` lookup asks.
pub fn nft_affinity_question(set: &str) -> String {
    format!("{NFT_AFFINITY_QUESTION_START}{set}{AFFINITY_QUESTION_END}")
}

/// Whether a question is a session-affinity question (iptables or nftables), which
/// `--affinity` answers.
pub fn is_affinity_question(question: &str) -> bool {
    (question.starts_with("the `recent` list ")
        || question.starts_with(NFT_AFFINITY_QUESTION_START))
        && question.ends_with(AFFINITY_QUESTION_END)
}

/// A match's value before negation.
enum Tri {
    Yes,
    No,
    Ask(String),
}

impl Tri {
    fn of(b: bool) -> Tri {
        if b { Tri::Yes } else { Tri::No }
    }
}

/// The most questions one rule asks one by one. A rule of thousands of undecided matches would
/// otherwise fork once per match, each path carrying the answers before it (quadratic in the
/// rule); from this many on, the rule's remaining undecided matches are one question
/// ([`folded_question`]).
pub const MAX_RULE_QUESTIONS: usize = 16;

/// The one question that stands for a rule's undecided matches from the
/// [`MAX_RULE_QUESTIONS`]th on (two or more): they all let the packet on. Each is a question
/// as asked alone, `not: ` before those of negated matches; the text names the first two,
/// the last and how many there are.
pub fn folded_question(questions: &[(String, bool)]) -> String {
    let n = questions.len();
    let show = |(q, negated): &(String, bool)| {
        if *negated {
            format!("not: {q}")
        } else {
            q.clone()
        }
    };
    let listed = match questions {
        [a, b, .., last] if n > 3 => {
            format!("{}; {}; ({} more); {}", show(a), show(b), n - 3, show(last))
        }
        _ => questions.iter().map(show).collect::<Vec<_>>().join("; "),
    };
    format!(
        "all of the rule's {n} further undecided matches let the packet on (one question: a \
         rule asks at most {MAX_RULE_QUESTIONS} one by one): {listed}"
    )
}

/// Collects the matches of one rule.
struct Acc<'k> {
    known: &'k dyn Fn(&str) -> Option<bool>,
    ask: Option<String>,
    random: Option<f64>,
    /// The questions met so far, answered on the path or not.
    asked: usize,
    /// The unanswered questions from the [`MAX_RULE_QUESTIONS`]th on (with whether the match
    /// is negated), while no earlier one is unanswered.
    rest: Vec<(String, bool)>,
    /// What the node's ipsets answered.
    facts: &'k mut Vec<SetFact>,
}

impl Acc<'_> {
    /// Adds one match; `false` when it decides the rule does not match.
    fn add(&mut self, t: Tri, negated: bool) -> bool {
        let value = match t {
            Tri::Yes => true,
            Tri::No => false,
            Tri::Ask(q) => {
                self.asked += 1;
                match (self.known)(&q) {
                    Some(b) => b,
                    None => {
                        if self.asked <= MAX_RULE_QUESTIONS {
                            self.ask.get_or_insert(q);
                        } else if self.ask.is_none() {
                            self.rest.push((q, negated));
                        }
                        return true;
                    }
                }
            }
        };
        value != negated
    }

    /// The answer once every match has been added.
    fn answer(self) -> Eval {
        let mut rest = self.rest;
        let ask = match (self.ask, rest.len()) {
            (Some(q), _) => Some(q),
            (None, 0) => None,
            // One question left: asked alone, as any other.
            (None, 1) => rest.pop().map(|(q, _)| q),
            (None, _) => {
                let folded = folded_question(&rest);
                match (self.known)(&folded) {
                    Some(true) => None,
                    Some(false) => return Eval::No,
                    None => Some(folded),
                }
            }
        };
        match (ask, self.random) {
            (Some(q), _) => Eval::Ask(q),
            (None, Some(r)) => Eval::Random(r),
            (None, None) => Eval::Yes,
        }
    }
}

/// Evaluates a rule's matches against `p`. `known` answers the questions the path has already
/// assumed; what the node's ipsets answered is pushed onto `facts`.
pub fn rule(
    rule: RuleRef<'_, '_>,
    p: &Packet,
    env: &Env<'_>,
    known: &dyn Fn(&str) -> Option<bool>,
    facts: &mut Vec<SetFact>,
) -> Eval {
    let mut acc = Acc {
        known,
        ask: None,
        random: None,
        asked: 0,
        rest: Vec::new(),
        facts,
    };
    if rule
        .tokens()
        .iter()
        .any(|t| t.kind() == TokenKind::Unsupported)
    {
        let q = format!(
            "the match iptables printed as `[unsupported revision]` in `{}` holds",
            rule.text()
        );
        if !acc.add(Tri::Ask(q), false) {
            return Eval::No;
        }
    }
    for m in rule.matches() {
        let ok = match m.module() {
            None => basic(&mut acc, m, p),
            Some(module) => module_match(&mut acc, module, m, p, env),
        };
        if !ok {
            return Eval::No;
        }
    }
    acc.answer()
}

fn arg<'a>(o: &OptionRef<'_, 'a>) -> &'a str {
    o.args().next().unwrap_or("")
}

/// `-p`, `-s`, `-d`, `-i`, `-o`, `-f`, and port options written without `-m` (restore input).
fn basic(acc: &mut Acc<'_>, m: MatchRef<'_, '_>, p: &Packet) -> bool {
    for o in m.options() {
        let a = arg(&o);
        let t = match o.name() {
            "-p" | "--protocol" => match protocol_number(a) {
                Some(0) => Tri::Yes,
                Some(n) => Tri::of(n == p.protocol),
                None => Tri::Ask(format!("protocol `{a}` is the packet's")),
            },
            "-s" | "--source" => address(a, p.src, "source"),
            "-d" | "--destination" => address(a, Some(p.dst), "destination"),
            "-i" | "--in-interface" => interface(a, p.in_interface.as_deref(), "enters on"),
            "-o" | "--out-interface" => interface(a, p.out_interface.as_deref(), "leaves on"),
            // The packet traced is a whole packet, not a fragment.
            "-f" | "--fragment" => Tri::No,
            name => match port_option(name, false) {
                Some(dst) => ports(a, p, dst),
                None => Tri::Ask(format!("the option `{}` holds", o.token_text_or(name))),
            },
        };
        if !acc.add(t, o.negated()) {
            return false;
        }
    }
    true
}

/// Adds `token_text_or` to option handles: the option's text for messages.
trait OptionText {
    fn token_text_or(&self, name: &str) -> String;
}

impl OptionText for OptionRef<'_, '_> {
    fn token_text_or(&self, name: &str) -> String {
        let args: Vec<&str> = self.args().collect();
        if args.is_empty() {
            name.to_string()
        } else {
            format!("{name} {}", args.join(" "))
        }
    }
}

fn address(text: &str, value: Option<IpAddr>, which: &str) -> Tri {
    let Ok(net) = parse_address(text) else {
        return Tri::Ask(format!("the {which} address is `{text}` (not an address)"));
    };
    match value {
        Some(ip) => Tri::of(net.contains(&ip) || net.prefix_len() == 0 && same_family(&net, ip)),
        None => Tri::Ask(format!("the {which} address is in {net}")),
    }
}

fn same_family(net: &IpNet, ip: IpAddr) -> bool {
    matches!(
        (net, ip),
        (IpNet::V4(_), IpAddr::V4(_)) | (IpNet::V6(_), IpAddr::V6(_))
    )
}

fn interface(text: &str, value: Option<&str>, verb: &str) -> Tri {
    let pattern = InterfacePattern::parse(text);
    if pattern.prefix && pattern.name.is_empty() {
        return Tri::Yes;
    }
    match value {
        Some(name) => Tri::of(pattern.admits(name)),
        None => Tri::Ask(format!("the packet {verb} an interface matching `{text}`")),
    }
}

/// Whether an option names destination (`Some(true)`) or source (`Some(false)`) ports.
fn port_option(name: &str, multiport: bool) -> Option<bool> {
    match (name, multiport) {
        ("--dport" | "--destination-port", false) => Some(true),
        ("--sport" | "--source-port", false) => Some(false),
        ("--dports" | "--destination-ports", true) => Some(true),
        ("--sports" | "--source-ports", true) => Some(false),
        _ => None,
    }
}

fn port_set(text: &str) -> Option<Ports> {
    let ranges = text
        .split(',')
        .map(PortRange::parse)
        .collect::<Option<Vec<_>>>()?;
    Some(Ports::new(&ranges, false))
}

fn ports(text: &str, p: &Packet, destination: bool) -> Tri {
    let Some(set) = port_set(text) else {
        return Tri::Ask(format!("the port is `{text}` (not a port number)"));
    };
    if !super::has_ports(p.protocol) {
        return Tri::No;
    }
    let (value, which) = if destination {
        (p.dport, "destination")
    } else {
        (p.sport, "source")
    };
    match value {
        Some(port) => Tri::of(set.admits(port)),
        None => Tri::Ask(format!("the {which} port is in {text}")),
    }
}

fn module_match(
    acc: &mut Acc<'_>,
    module: &str,
    m: MatchRef<'_, '_>,
    p: &Packet,
    env: &Env<'_>,
) -> bool {
    let whole = || {
        m.options()
            .map(|o| o.token_text_or(o.name()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match module {
        "comment" | "nfacct" => true,
        "tcp" | "udp" | "sctp" | "udplite" | "dccp" => {
            let number = protocol_number(module).unwrap_or(0);
            if !acc.add(Tri::of(p.protocol == number), false) {
                return false;
            }
            for o in m.options() {
                let t = match (o.name(), port_option(o.name(), false)) {
                    (_, Some(dst)) => ports(arg(&o), p, dst),
                    ("--syn", _) => match p.state {
                        ConnState::New => Tri::Yes,
                        ConnState::Established => Tri::No,
                    },
                    (name, None) => Tri::Ask(format!("the packet has `{}`", o.token_text_or(name))),
                };
                if !acc.add(t, o.negated()) {
                    return false;
                }
            }
            true
        }
        "multiport" => {
            for o in m.options() {
                let t = match o.name() {
                    "--ports" => {
                        let a = arg(&o);
                        match (ports(a, p, true), ports(a, p, false)) {
                            (Tri::Yes, _) | (_, Tri::Yes) => Tri::Yes,
                            (Tri::No, Tri::No) => Tri::No,
                            (Tri::Ask(q), _) | (_, Tri::Ask(q)) => Tri::Ask(q),
                        }
                    }
                    name => match port_option(name, true) {
                        Some(dst) => ports(arg(&o), p, dst),
                        None => Tri::Ask(format!("the packet has `{}`", o.token_text_or(name))),
                    },
                };
                if !acc.add(t, o.negated()) {
                    return false;
                }
            }
            true
        }
        "conntrack" | "state" => {
            for o in m.options() {
                let t = match o.name() {
                    "--ctstate" | "--state" => ctstate(arg(&o), p),
                    name => Tri::Ask(format!("the connection has `{}`", o.token_text_or(name))),
                };
                if !acc.add(t, o.negated()) {
                    return false;
                }
            }
            true
        }
        "mark" => {
            for o in m.options() {
                let t = match (o.name(), Mark::parse(arg(&o))) {
                    ("--mark", Some(mark)) => Tri::of(p.mark & mark.mask == mark.value),
                    (name, _) => Tri::Ask(format!("the packet has `{}`", o.token_text_or(name))),
                };
                if !acc.add(t, o.negated()) {
                    return false;
                }
            }
            true
        }
        "addrtype" => {
            for o in m.options() {
                let t = match o.name() {
                    "--dst-type" => addrtype(arg(&o), Some(p.dst), env, false),
                    "--src-type" => addrtype(arg(&o), p.src, env, true),
                    name => Tri::Ask(format!("the packet has `{}`", o.token_text_or(name))),
                };
                if !acc.add(t, o.negated()) {
                    return false;
                }
            }
            true
        }
        "statistic" => {
            let mode = m.options().find(|o| o.name() == "--mode").map(|o| arg(&o));
            let probability = m.options().find(|o| o.name() == "--probability");
            match (mode, probability) {
                (Some("random"), Some(o)) => match arg(&o).parse::<f64>() {
                    Ok(v) if (0.0..=1.0).contains(&v) => {
                        let v = if o.negated() { 1.0 - v } else { v };
                        acc.random = Some(acc.random.unwrap_or(1.0) * v);
                        true
                    }
                    _ => acc.add(
                        Tri::Ask(format!("the `-m statistic {}` match holds", whole())),
                        false,
                    ),
                },
                _ => acc.add(
                    Tri::Ask(format!("the `-m statistic {}` match holds", whole())),
                    false,
                ),
            }
        }
        "recent" => {
            let checks = m
                .options()
                .any(|o| matches!(o.name(), "--rcheck" | "--update" | "--remove"));
            if !checks {
                // `--set` adds the source to the list and always matches.
                return true;
            }
            let name = m
                .options()
                .find(|o| o.name() == "--name")
                .map_or("DEFAULT", |o| arg(&o));
            let negated = m.options().any(|o| o.negated());
            acc.add(Tri::Ask(affinity_question(name)), negated)
        }
        "set" => {
            for o in m.options() {
                let t = match o.name() {
                    "--match-set" | "--set" => {
                        let mut args = o.args();
                        let name = args.next().unwrap_or("");
                        let flags = args.next().unwrap_or("");
                        match env.sets.and_then(|s| s.lookup(name, flags, p)) {
                            Some(fact) => {
                                let holds = fact.holds;
                                acc.facts.push(fact);
                                Tri::of(holds)
                            }
                            None => Tri::Ask(format!("ipset {name} holds the packet's {flags}")),
                        }
                    }
                    name => Tri::Ask(format!("the packet has `{}`", o.token_text_or(name))),
                };
                if !acc.add(t, o.negated()) {
                    return false;
                }
            }
            true
        }
        "icmp" | "icmp6" | "icmpv6" => {
            let number = if module == "icmp" { 1 } else { 58 };
            if !acc.add(Tri::of(p.protocol == number), false) {
                return false;
            }
            for o in m.options() {
                let t = Tri::Ask(format!("the packet has `{}`", o.token_text_or(o.name())));
                if !acc.add(t, o.negated()) {
                    return false;
                }
            }
            true
        }
        other => acc.add(
            Tri::Ask(format!("the `-m {other} {}` match holds", whole())),
            false,
        ),
    }
}

/// `--ctstate`: the packet is in exactly one of NEW / ESTABLISHED; DNAT and SNAT are virtual
/// states known on a new connection, unknown on an established one.
fn ctstate(text: &str, p: &Packet) -> Tri {
    let mut ask = None;
    for word in text.split(',') {
        let word_upper = word.to_ascii_uppercase();
        if p.untracked {
            if word_upper == "UNTRACKED" {
                return Tri::Yes;
            }
            continue;
        }
        let state = match word_upper.as_str() {
            "NEW" => Some(p.state == ConnState::New),
            "ESTABLISHED" => Some(p.state == ConnState::Established),
            "RELATED" | "INVALID" | "UNTRACKED" => Some(false),
            "DNAT" => match p.state {
                ConnState::New => Some(p.dnat),
                ConnState::Established => None,
            },
            "SNAT" => match p.state {
                ConnState::New => Some(p.snat),
                ConnState::Established => None,
            },
            _ => None,
        };
        match state {
            Some(true) => return Tri::Yes,
            Some(false) => {}
            None => {
                ask.get_or_insert_with(|| format!("the connection is in conntrack state {word}"));
            }
        }
    }
    ask.map_or(Tri::No, Tri::Ask)
}

fn addrtype(text: &str, ip: Option<IpAddr>, env: &Env<'_>, source: bool) -> Tri {
    let Some(ip) = ip else {
        return Tri::Ask(format!("the source address is of type {text}"));
    };
    let local = || match env.is_local(ip) {
        Some(b) => Some(b),
        None if source => Some(env.src_local_default),
        None => None,
    };
    let mut ask = None;
    for word in text.split(',') {
        let value = match word.to_ascii_uppercase().as_str() {
            "LOCAL" => local(),
            "UNICAST" => Some(!ip_multicast(ip) && !ip_broadcast(ip)),
            "MULTICAST" => Some(ip_multicast(ip)),
            "BROADCAST" => {
                if ip_broadcast(ip) {
                    Some(true)
                } else {
                    None
                }
            }
            "UNSPEC" => Some(ip.is_unspecified()),
            _ => None,
        };
        match value {
            Some(true) => return Tri::Yes,
            Some(false) => {}
            None if word.eq_ignore_ascii_case("LOCAL") => {
                ask.get_or_insert_with(|| Env::local_question(ip));
            }
            None => {
                ask.get_or_insert_with(|| format!("{ip} is of address type {word}"));
            }
        }
    }
    ask.map_or(Tri::No, Tri::Ask)
}

fn ip_multicast(ip: IpAddr) -> bool {
    ip.is_multicast()
}

fn ip_broadcast(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V4(v4) if v4.is_broadcast())
}
