//! What a rule matches, as the fields rulelint understands, and whether one rule matches every
//! packet another one does.
//!
//! [`MatchSet::of`] reads a rule's matches into a box of packets: protocol, source and
//! destination networks, input and output interfaces (with `+` and `!`), source and destination
//! ports (`-m tcp`/`-m udp`/`-m multiport`), conntrack states and the packet mark. Anything else
//! (`-m set`, `-m addrtype`, `-m statistic`, `-f`, `--tcp-flags`, a host name, ...) is not
//! understood: it is left out of the box, and the set says it is not [`exact`](MatchSet::exact).
//!
//! So the box always holds every packet the rule can match (an over-approximation), and, when
//! the set is exact, no other packet. [`MatchSet::is_superset_of`] answers `true` only when that
//! is certain: the earlier rule must be exact, while the later one may hold matches that are not
//! understood (they only narrow it). `rulelint trace` is meant to reuse [`MatchSet::admits`].
//!
//! **Invariant:** `a.is_superset_of(&b) && b.admits(p)` implies `a.admits(p)` for every packet
//! `p` (property-tested below on rules written as text).

use ipnet::IpNet;
use rulelint_parser::views::{Mark, PortRange, parse_address};
use rulelint_parser::{RuleRef, TokenKind};
use std::net::IpAddr;

/// The most port ranges a set keeps (multiport takes 15); more make the rule not understood.
const MAX_PORT_RANGES: usize = 32;

/// A set of IP protocol numbers (`-p`), one bit per number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protocols([u64; 4]);

impl Protocols {
    /// Every protocol: no `-p`, or `-p all`.
    pub const ALL: Protocols = Protocols([u64::MAX; 4]);

    /// One protocol.
    pub fn only(number: u8) -> Protocols {
        let mut bits = [0; 4];
        bits[usize::from(number / 64)] = 1 << (number % 64);
        Protocols(bits)
    }

    /// Every protocol but these.
    pub fn complement(self) -> Protocols {
        Protocols(self.0.map(|w| !w))
    }

    /// Protocols in both.
    pub fn intersect(self, other: Protocols) -> Protocols {
        let mut bits = self.0;
        for (b, o) in bits.iter_mut().zip(other.0) {
            *b &= o;
        }
        Protocols(bits)
    }

    /// Whether `number` is in the set.
    pub fn contains(self, number: u8) -> bool {
        self.0[usize::from(number / 64)] & (1 << (number % 64)) != 0
    }

    /// Whether every protocol of `other` is in the set.
    pub fn is_superset_of(self, other: Protocols) -> bool {
        self.0.iter().zip(other.0).all(|(a, b)| b & !a == 0)
    }
}

/// The number of a protocol as `-p` takes it: a name iptables prints, or a number. `all` is 0.
pub fn protocol_number(text: &str) -> Option<u8> {
    if let Ok(n) = text.parse::<u8>() {
        return Some(n);
    }
    const NAMES: &[(&str, u8)] = &[
        ("all", 0),
        ("icmp", 1),
        ("igmp", 2),
        ("tcp", 6),
        ("udp", 17),
        ("dccp", 33),
        ("gre", 47),
        ("esp", 50),
        ("ah", 51),
        ("icmpv6", 58),
        ("ipv6-icmp", 58),
        ("ospf", 89),
        ("pim", 103),
        ("vrrp", 112),
        ("l2tp", 115),
        ("sctp", 132),
        ("udplite", 136),
    ];
    NAMES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(text))
        .map(|&(_, n)| n)
}

/// An address match: `-s`/`-d`, maybe negated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addresses {
    /// No match: every address.
    Any,
    /// Addresses in the network.
    In(IpNet),
    /// Addresses outside the network (`! -s NET`).
    NotIn(IpNet),
}

/// Whether two networks share no address (`false` when the families differ: unsure).
fn disjoint_nets(a: &IpNet, b: &IpNet) -> bool {
    let same_family = matches!(
        (a, b),
        (IpNet::V4(_), IpNet::V4(_)) | (IpNet::V6(_), IpNet::V6(_))
    );
    same_family && !a.contains(b) && !b.contains(a)
}

impl Addresses {
    fn new(net: IpNet, negated: bool) -> Addresses {
        match (net.prefix_len(), negated) {
            // `-s 0.0.0.0/0` is no match at all; `! -s 0.0.0.0/0` stays as written (nothing).
            (0, false) => Addresses::Any,
            (_, false) => Addresses::In(net),
            (_, true) => Addresses::NotIn(net),
        }
    }

    /// Whether `addr` is in the set.
    pub fn admits(&self, addr: IpAddr) -> bool {
        match self {
            Addresses::Any => true,
            Addresses::In(net) => net.contains(&addr),
            Addresses::NotIn(net) => !net.contains(&addr),
        }
    }

    /// Whether every address of `other` is in the set (`false` when unsure).
    pub fn is_superset_of(&self, other: &Addresses) -> bool {
        match (self, other) {
            (Addresses::Any, _) => true,
            (Addresses::In(a), Addresses::In(b)) => a.contains(b),
            (Addresses::NotIn(a), Addresses::In(b)) => disjoint_nets(a, b),
            // The complement of b lies outside a when a lies within b.
            (Addresses::NotIn(a), Addresses::NotIn(b)) => b.contains(a),
            _ => false,
        }
    }
}

/// An interface name as `-i`/`-o` take it: a whole name, or a prefix written with a final `+`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterfacePattern<'a> {
    /// The name, or the prefix without its `+`.
    pub name: &'a str,
    /// Written with a final `+`: every interface whose name starts with `name`.
    pub prefix: bool,
}

impl<'a> InterfacePattern<'a> {
    /// Reads `eth0` or `veth+`.
    pub fn parse(text: &'a str) -> InterfacePattern<'a> {
        match text.strip_suffix('+') {
            Some(prefix) => InterfacePattern {
                name: prefix,
                prefix: true,
            },
            None => InterfacePattern {
                name: text,
                prefix: false,
            },
        }
    }

    /// Whether an interface of this name matches (the empty name: no interface).
    pub fn admits(&self, name: &str) -> bool {
        if self.prefix {
            name.starts_with(self.name)
        } else {
            name == self.name
        }
    }

    fn is_superset_of(&self, other: &InterfacePattern<'_>) -> bool {
        if self.prefix {
            other.name.starts_with(self.name)
        } else {
            !other.prefix && other.name == self.name
        }
    }

    fn is_disjoint_from(&self, other: &InterfacePattern<'_>) -> bool {
        match (self.prefix, other.prefix) {
            (false, false) => self.name != other.name,
            (true, false) => !other.name.starts_with(self.name),
            (false, true) => !self.name.starts_with(other.name),
            (true, true) => {
                !self.name.starts_with(other.name) && !other.name.starts_with(self.name)
            }
        }
    }
}

/// An interface match: `-i`/`-o`, maybe negated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interfaces<'a> {
    /// No match: every interface.
    Any,
    /// Interfaces the pattern matches.
    Is(InterfacePattern<'a>),
    /// Interfaces the pattern does not match (`! -i eth0`).
    Not(InterfacePattern<'a>),
}

impl<'a> Interfaces<'a> {
    fn new(text: &'a str, negated: bool) -> Interfaces<'a> {
        let pattern = InterfacePattern::parse(text);
        match (negated, pattern) {
            (
                false,
                InterfacePattern {
                    name: "",
                    prefix: true,
                },
            ) => Interfaces::Any,
            (false, p) => Interfaces::Is(p),
            (true, p) => Interfaces::Not(p),
        }
    }

    /// Whether a packet on the interface `name` (empty: none) is in the set.
    pub fn admits(&self, name: &str) -> bool {
        match self {
            Interfaces::Any => true,
            Interfaces::Is(p) => p.admits(name),
            Interfaces::Not(p) => !p.admits(name),
        }
    }

    /// Whether every interface of `other` is in the set (`false` when unsure).
    pub fn is_superset_of(&self, other: &Interfaces<'_>) -> bool {
        match (self, other) {
            (Interfaces::Any, _) => true,
            (Interfaces::Is(a), Interfaces::Is(b)) => a.is_superset_of(b),
            (Interfaces::Not(a), Interfaces::Is(b)) => a.is_disjoint_from(b),
            (Interfaces::Not(a), Interfaces::Not(b)) => b.is_superset_of(a),
            _ => false,
        }
    }
}

/// A set of ports: sorted, non-overlapping, non-adjacent ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ports(Vec<PortRange>);

impl Ports {
    /// The set of the given ranges, or its complement.
    pub fn new(ranges: &[PortRange], negated: bool) -> Ports {
        let mut sorted = ranges.to_vec();
        sorted.sort_unstable();
        let mut merged: Vec<PortRange> = Vec::with_capacity(sorted.len());
        for r in sorted {
            match merged.last_mut() {
                Some(last) if u32::from(r.first) <= u32::from(last.last) + 1 => {
                    last.last = last.last.max(r.last);
                }
                _ => merged.push(r),
            }
        }
        let set = Ports(merged);
        if negated { set.complement() } else { set }
    }

    fn complement(&self) -> Ports {
        let mut out = Vec::with_capacity(self.0.len() + 1);
        let mut next: u32 = 0;
        for r in &self.0 {
            if u32::from(r.first) > next {
                out.push(PortRange {
                    first: next as u16,
                    last: r.first - 1,
                });
            }
            next = u32::from(r.last) + 1;
        }
        if next <= u32::from(u16::MAX) {
            out.push(PortRange {
                first: next as u16,
                last: u16::MAX,
            });
        }
        Ports(out)
    }

    fn intersect(&self, other: &Ports) -> Ports {
        let mut out = Vec::new();
        let (mut i, mut j) = (0, 0);
        while let (Some(a), Some(b)) = (self.0.get(i), other.0.get(j)) {
            let first = a.first.max(b.first);
            let last = a.last.min(b.last);
            if first <= last {
                out.push(PortRange { first, last });
            }
            if a.last < b.last {
                i += 1;
            } else {
                j += 1;
            }
        }
        Ports(out)
    }

    /// The ranges.
    pub fn ranges(&self) -> &[PortRange] {
        &self.0
    }

    /// The only port, when the set is one port.
    pub fn single(&self) -> Option<u16> {
        match self.0.as_slice() {
            [r] if r.first == r.last => Some(r.first),
            _ => None,
        }
    }

    /// Whether `port` is in the set.
    pub fn admits(&self, port: u16) -> bool {
        self.0.iter().any(|r| r.first <= port && port <= r.last)
    }

    /// Whether every port of `other` is in the set.
    pub fn is_superset_of(&self, other: &Ports) -> bool {
        other.0.iter().all(|b| {
            self.0
                .iter()
                .any(|a| a.first <= b.first && b.last <= a.last)
        })
    }
}

/// Conntrack states (`--ctstate`, `--state`): one bit per state a packet is in. The virtual
/// states `SNAT` and `DNAT` (which a packet has besides one of these) are not understood.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct States(u8);

impl States {
    /// Every state.
    pub const ALL: States = States(0b1_1111);
    /// `INVALID`.
    pub const INVALID: States = States(1);
    /// `NEW`.
    pub const NEW: States = States(2);
    /// `ESTABLISHED`.
    pub const ESTABLISHED: States = States(4);
    /// `RELATED`.
    pub const RELATED: States = States(8);
    /// `UNTRACKED`.
    pub const UNTRACKED: States = States(16);

    /// Reads `NEW,ESTABLISHED`; `None` for an unknown or virtual state.
    pub fn parse(text: &str, negated: bool) -> Option<States> {
        let mut bits = 0;
        for word in text.split(',') {
            bits |= match word.to_ascii_uppercase().as_str() {
                "INVALID" => States::INVALID.0,
                "NEW" => States::NEW.0,
                "ESTABLISHED" => States::ESTABLISHED.0,
                "RELATED" => States::RELATED.0,
                "UNTRACKED" => States::UNTRACKED.0,
                _ => return None,
            };
        }
        Some(if negated {
            States(!bits & States::ALL.0)
        } else {
            States(bits)
        })
    }

    /// Whether a packet in `state` (one state) is in the set.
    pub fn admits(self, state: States) -> bool {
        self.0 & state.0 != 0
    }

    fn is_superset_of(self, other: States) -> bool {
        other.0 & !self.0 == 0
    }
}

/// A mark match: `-m mark [!] --mark VALUE/MASK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkMatch {
    /// Value and mask.
    pub mark: Mark,
    /// `! --mark`.
    pub negated: bool,
}

impl MarkMatch {
    /// Whether a packet with this mark is in the set.
    pub fn admits(&self, mark: u32) -> bool {
        (mark & self.mark.mask == self.mark.value) != self.negated
    }

    /// Whether every mark of `other` is in the set (`false` when unsure).
    fn is_superset_of(&self, other: &MarkMatch) -> bool {
        let (a, b) = (self.mark, other.mark);
        // Values with bits outside their mask match nothing (or, negated, everything): rare and
        // left alone.
        if a.value & !a.mask != 0 || b.value & !b.mask != 0 {
            return false;
        }
        match (self.negated, other.negated) {
            // Every mark b admits has a's bits as a wants them.
            (false, false) => a.mask & !b.mask == 0 && b.value & a.mask == a.value,
            // b's marks all differ from a's value on a bit both masks hold.
            (true, false) => (a.value ^ b.value) & a.mask & b.mask != 0,
            // The marks a leaves out are all marks b leaves out.
            (true, true) => b.mask & !a.mask == 0 && a.value & b.mask == b.value,
            (false, true) => a.mask == 0,
        }
    }
}

/// A packet as far as [`MatchSet`] looks at it.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'p> {
    /// IP protocol number.
    pub protocol: u8,
    /// Source address.
    pub source: IpAddr,
    /// Destination address.
    pub destination: IpAddr,
    /// Input interface; empty when there is none (locally generated).
    pub in_interface: &'p str,
    /// Output interface; empty when not yet routed.
    pub out_interface: &'p str,
    /// Source port, for protocols with ports.
    pub source_port: Option<u16>,
    /// Destination port, for protocols with ports.
    pub destination_port: Option<u16>,
    /// Conntrack state: exactly one of the [`States`] bits.
    pub state: States,
    /// The packet mark.
    pub mark: u32,
}

/// The packets a rule can match, as the fields rulelint understands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchSet<'a> {
    /// `-p`, and the protocol that `-m tcp`/`-m udp` imply.
    pub protocols: Protocols,
    /// `-s`.
    pub source: Addresses,
    /// `-d`.
    pub destination: Addresses,
    /// `-i`.
    pub in_interface: Interfaces<'a>,
    /// `-o`.
    pub out_interface: Interfaces<'a>,
    /// `--sport`, `--sports`; `None`: no port match.
    pub source_ports: Option<Ports>,
    /// `--dport`, `--dports`; `None`: no port match.
    pub destination_ports: Option<Ports>,
    /// `--ctstate`, `--state`; `None`: no state match.
    pub states: Option<States>,
    /// `-m mark --mark`; `None`: no mark match.
    pub mark: Option<MarkMatch>,
    /// Every match of the rule was understood: the set is exactly the rule's packets. When
    /// false, it holds them and maybe more.
    pub exact: bool,
}

impl Default for MatchSet<'_> {
    fn default() -> Self {
        MatchSet {
            protocols: Protocols::ALL,
            source: Addresses::Any,
            destination: Addresses::Any,
            in_interface: Interfaces::Any,
            out_interface: Interfaces::Any,
            source_ports: None,
            destination_ports: None,
            states: None,
            mark: None,
            exact: true,
        }
    }
}

/// Which port field an option constrains.
enum PortField {
    Source,
    Destination,
}

fn port_field(name: &str, multiport: bool) -> Option<PortField> {
    match (name, multiport) {
        ("--dport" | "--destination-port", false) => Some(PortField::Destination),
        ("--sport" | "--source-port", false) => Some(PortField::Source),
        ("--dports" | "--destination-ports", true) => Some(PortField::Destination),
        ("--sports" | "--source-ports", true) => Some(PortField::Source),
        _ => None,
    }
}

impl<'a> MatchSet<'a> {
    /// Reads a rule's matches. Never fails: what is not understood makes the set not exact.
    pub fn of(rule: RuleRef<'_, 'a>) -> MatchSet<'a> {
        let mut set = MatchSet::default();
        if rule
            .tokens()
            .iter()
            .any(|t| t.kind() == TokenKind::Unsupported)
        {
            set.exact = false;
        }
        for m in rule.matches() {
            match m.module() {
                None => {
                    for o in m.options() {
                        let arg = o.args().next();
                        let understood = match (o.token().kind(), arg) {
                            (TokenKind::Option, Some(arg)) if o.arg_tokens().len() == 1 => {
                                set.basic(o.name(), arg, o.negated())
                            }
                            _ => false,
                        };
                        set.exact &= understood;
                    }
                }
                Some("comment") => {}
                Some(module) => {
                    let mut any_option = false;
                    for o in m.options() {
                        any_option = true;
                        let understood = match (o.token().kind(), o.args().next()) {
                            (TokenKind::Option, Some(arg)) if o.arg_tokens().len() == 1 => {
                                set.module_option(module, o.name(), arg, o.negated())
                            }
                            _ => false,
                        };
                        set.exact &= understood;
                    }
                    let understood = match module {
                        "tcp" => {
                            set.protocols = set.protocols.intersect(Protocols::only(6));
                            true
                        }
                        "udp" => {
                            set.protocols = set.protocols.intersect(Protocols::only(17));
                            true
                        }
                        "multiport" | "conntrack" | "state" | "mark" => any_option,
                        _ => false,
                    };
                    set.exact &= understood;
                }
            }
        }
        set
    }

    /// A basic option (`-p`, `-s`, `-d`, `-i`, `-o`), or a port option written without `-m`
    /// (restore input): whether it was understood.
    fn basic(&mut self, name: &str, arg: &'a str, negated: bool) -> bool {
        match name {
            "-p" | "--protocol" => match protocol_number(arg) {
                Some(0) if !negated => true,
                Some(0) => false,
                Some(n) => {
                    let p = Protocols::only(n);
                    let p = if negated { p.complement() } else { p };
                    self.protocols = self.protocols.intersect(p);
                    true
                }
                None => false,
            },
            "-s" | "--source" | "-d" | "--destination" => {
                let Ok(net) = parse_address(arg) else {
                    return false;
                };
                let field = if name == "-s" || name == "--source" {
                    &mut self.source
                } else {
                    &mut self.destination
                };
                if *field != Addresses::Any {
                    return false;
                }
                *field = Addresses::new(net, negated);
                true
            }
            "-i" | "--in-interface" | "-o" | "--out-interface" => {
                let field = if name == "-i" || name == "--in-interface" {
                    &mut self.in_interface
                } else {
                    &mut self.out_interface
                };
                if *field != Interfaces::Any || arg.is_empty() {
                    return false;
                }
                *field = Interfaces::new(arg, negated);
                true
            }
            _ => match port_field(name, false) {
                Some(field) => self.ports(field, arg, negated),
                None => false,
            },
        }
    }

    /// An option of a `-m` match: whether it was understood.
    fn module_option(&mut self, module: &str, name: &str, arg: &str, negated: bool) -> bool {
        match (module, name) {
            ("tcp" | "udp", _) => match port_field(name, false) {
                Some(field) => self.ports(field, arg, negated),
                None => false,
            },
            ("multiport", _) => match port_field(name, true) {
                Some(field) => self.ports(field, arg, negated),
                None => false,
            },
            ("conntrack", "--ctstate") | ("state", "--state") => {
                let Some(states) = States::parse(arg, negated) else {
                    return false;
                };
                self.states = Some(match self.states {
                    Some(s) => States(s.0 & states.0),
                    None => states,
                });
                true
            }
            ("mark", "--mark") => {
                let Some(mark) = Mark::parse(arg) else {
                    return false;
                };
                if self.mark.is_some() {
                    return false;
                }
                self.mark = Some(MarkMatch { mark, negated });
                true
            }
            _ => false,
        }
    }

    fn ports(&mut self, field: PortField, arg: &str, negated: bool) -> bool {
        let mut ranges = Vec::new();
        for part in arg.split(',') {
            let Some(r) = PortRange::parse(part) else {
                return false;
            };
            if ranges.len() == MAX_PORT_RANGES {
                return false;
            }
            ranges.push(r);
        }
        let ports = Ports::new(&ranges, negated);
        let slot = match field {
            PortField::Source => &mut self.source_ports,
            PortField::Destination => &mut self.destination_ports,
        };
        *slot = Some(match slot.take() {
            Some(old) => old.intersect(&ports),
            None => ports,
        });
        true
    }

    /// Whether the box holds the packet. For an exact set: whether the rule matches it; otherwise
    /// `false` is certain and `true` means "maybe".
    pub fn admits(&self, p: &Packet<'_>) -> bool {
        let ports = |set: &Option<Ports>, port: Option<u16>| match (set, port) {
            (None, _) => true,
            (Some(s), Some(port)) => s.admits(port),
            (Some(_), None) => false,
        };
        self.protocols.contains(p.protocol)
            && self.source.admits(p.source)
            && self.destination.admits(p.destination)
            && self.in_interface.admits(p.in_interface)
            && self.out_interface.admits(p.out_interface)
            && ports(&self.source_ports, p.source_port)
            && ports(&self.destination_ports, p.destination_port)
            && self.states.is_none_or(|s| s.admits(p.state))
            && self.mark.is_none_or(|m| m.admits(p.mark))
    }

    /// Whether this rule matches every packet `other` can match. `false` when unsure: always
    /// when this set is not exact (a match not understood may leave packets out), never
    /// because `other` is not (its other matches only narrow it).
    pub fn is_superset_of(&self, other: &MatchSet<'_>) -> bool {
        fn opt<T>(a: &Option<T>, b: &Option<T>, sup: impl Fn(&T, &T) -> bool) -> bool {
            match (a, b) {
                (None, _) => true,
                (Some(a), Some(b)) => sup(a, b),
                (Some(_), None) => false,
            }
        }
        self.exact
            && self.protocols.is_superset_of(other.protocols)
            && self.source.is_superset_of(&other.source)
            && self.destination.is_superset_of(&other.destination)
            && self.in_interface.is_superset_of(&other.in_interface)
            && self.out_interface.is_superset_of(&other.out_interface)
            && opt(
                &self.source_ports,
                &other.source_ports,
                Ports::is_superset_of,
            )
            && opt(
                &self.destination_ports,
                &other.destination_ports,
                Ports::is_superset_of,
            )
            && opt(&self.states, &other.states, |a, b| a.is_superset_of(*b))
            && opt(&self.mark, &other.mark, MarkMatch::is_superset_of)
    }

    /// Whether the set holds every packet: no understood match at all, and exact.
    pub fn is_everything(&self) -> bool {
        *self == MatchSet::default()
    }
}

/// What a rule that lets packets go on may change in them, of what [`MatchSet`] reads: a rule
/// between two others can make an earlier rule that matches on the mark or the conntrack state
/// stop covering a later one (`RL303 shadowed-rule`, `RL403 shadowed-hook-jump`). NAT targets
/// change addresses and ports, but in nat they end the walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The packet mark or the connection mark (`MARK`, `CONNMARK`, a jump to a chain, ...).
    pub mark: bool,
    /// The conntrack state (`CT --notrack`, `NOTRACK`, a jump to a chain in raw, ...).
    pub state: bool,
}

impl Changes {
    /// What `rule` may change in the packets it lets go on; `raw`: the rule is in the raw
    /// table. A target not known to leave both alone may change both.
    pub fn of(rule: RuleRef<'_, '_>, raw: bool) -> Changes {
        let Some(target) = rule.target() else {
            return Changes::default();
        };
        if rule.target_chain().is_some() {
            // A chain may set the mark (Calico's profile chains do, before the `-m mark` RETURN
            // that follows each jump), and in raw untrack the packet.
            return Changes {
                mark: true,
                state: raw,
            };
        }
        match target.name() {
            "MARK" | "CONNMARK" | "TPROXY" | "HMARK" | "IPMARK" => Changes {
                mark: true,
                state: false,
            },
            "CT" | "NOTRACK" => Changes {
                mark: false,
                state: true,
            },
            "LOG" | "NFLOG" | "ULOG" | "TRACE" | "AUDIT" | "CLASSIFY" | "TCPMSS"
            | "TCPOPTSTRIP" | "DSCP" | "TOS" | "TTL" | "HL" | "ECN" | "CHECKSUM" | "SECMARK"
            | "CONNSECMARK" | "SET" | "IDLETIMER" | "LED" | "RATEEST" | "NETMAP" | "ACCEPT"
            | "DROP" | "REJECT" | "RETURN" | "MASQUERADE" | "SNAT" | "DNAT" | "REDIRECT" => {
                Changes::default()
            }
            // Anything else may change anything.
            _ => Changes {
                mark: true,
                state: true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rulelint_parser::parse;

    /// The match sets of the rules of a filter table holding `rules` (one per line).
    fn sets(rules: &[&str]) -> Vec<(String, MatchSet<'static>)> {
        let mut text = String::from("*filter\n:INPUT ACCEPT [0:0]\n");
        for r in rules {
            text.push_str("-A INPUT ");
            text.push_str(r);
            text.push('\n');
        }
        text.push_str("COMMIT\n");
        let text: &'static str = Box::leak(text.into_boxed_str());
        let parsed = Box::leak(Box::new(parse(text)));
        parsed
            .ruleset
            .iter_rules()
            .map(|r| (r.text().to_string(), MatchSet::of(r)))
            .collect()
    }

    /// Whether rule `a` is found to match every packet of rule `b`.
    fn sup(a: &str, b: &str) -> bool {
        let s = sets(&[a, b]);
        s[0].1.is_superset_of(&s[1].1)
    }

    #[test]
    fn supersets_that_hold() {
        for (a, b) in [
            ("-j ACCEPT", "-p tcp -j DROP"),
            (
                "-m comment --comment \"x\" -j ACCEPT",
                "-s 10.0.0.1 -j DROP",
            ),
            ("-p tcp -j ACCEPT", "-p 6 -m tcp --dport 22 -j DROP"),
            ("-p all -j ACCEPT", "-p udp -j DROP"),
            ("! -p udp -j ACCEPT", "-p tcp -j DROP"),
            ("-s 10.0.0.0/8 -j ACCEPT", "-s 10.1.0.0/16 -j DROP"),
            ("-s 10.0.0.0/255.0.0.0 -j ACCEPT", "-s 10.1.2.3 -j DROP"),
            ("! -d 10.42.0.0/16 -j ACCEPT", "-d 192.168.0.0/16 -j DROP"),
            ("! -d 10.0.0.0/8 -j ACCEPT", "! -d 10.0.0.0/7 -j DROP"),
            ("-i eth+ -j ACCEPT", "-i eth0 -j DROP"),
            ("-i veth+ -j ACCEPT", "-i vethab12+ -j DROP"),
            ("! -i docker0 -j ACCEPT", "-i eth0 -j DROP"),
            ("! -i eth+ -j ACCEPT", "-i wlan0 -j DROP"),
            ("! -o eth0 -j ACCEPT", "! -o eth+ -j DROP"),
            ("-i + -j ACCEPT", "-i eth0 -j DROP"),
            (
                "-p tcp -m multiport --dports 80,443,8000:9000 -j ACCEPT",
                "-p tcp -m tcp --dport 8080 -j DROP",
            ),
            (
                "-p tcp -m tcp --dport 1000:2000 -j ACCEPT",
                "-p tcp -m multiport --dports 1000,1500:1600,2000 -j DROP",
            ),
            (
                "-p tcp -m tcp ! --dport 22 -j ACCEPT",
                "-p tcp -m tcp --dport 80 -j DROP",
            ),
            (
                "-p tcp -m multiport ! --dports 22,80 -j ACCEPT",
                "-p tcp -m multiport ! --dports 1:80 -j DROP",
            ),
            (
                "-m state --state RELATED,ESTABLISHED -j ACCEPT",
                "-m conntrack --ctstate ESTABLISHED -j DROP",
            ),
            (
                "-m conntrack ! --ctstate NEW -j ACCEPT",
                "-m conntrack --ctstate INVALID,RELATED -j DROP",
            ),
            (
                "-m mark --mark 0x4000/0x4000 -j ACCEPT",
                "-m mark --mark 0x4001/0xffff -j DROP",
            ),
            (
                "-m mark ! --mark 0x4000/0x4000 -j ACCEPT",
                "-m mark --mark 0x0/0xc000 -j DROP",
            ),
            (
                "-m mark ! --mark 0x4000/0xc000 -j ACCEPT",
                "-m mark ! --mark 0x4000/0x4000 -j DROP",
            ),
            // An extra match the earlier rule lacks only narrows the later one.
            (
                "-p tcp -j ACCEPT",
                "-p tcp -m set --match-set x src -j DROP",
            ),
            (
                "-p tcp -j ACCEPT",
                "-p tcp -m tcp --tcp-flags SYN SYN -j DROP",
            ),
            (
                "-s 10.42.0.0/16 ! -d 10.42.0.0/16 -j MASQUERADE",
                "-s 10.42.0.0/16 -d 192.168.0.0/16 -j RETURN",
            ),
        ] {
            assert!(sup(a, b), "{a}  should cover  {b}");
        }
    }

    #[test]
    fn supersets_that_do_not_hold() {
        for (a, b) in [
            ("-p tcp -j ACCEPT", "-j DROP"),
            ("-p tcp -j ACCEPT", "-p udp -j DROP"),
            ("-p tcp -j ACCEPT", "! -p udp -j DROP"),
            ("-s 10.1.0.0/16 -j ACCEPT", "-s 10.0.0.0/8 -j DROP"),
            ("! -d 10.0.0.0/8 -j ACCEPT", "-d 10.1.0.0/16 -j DROP"),
            ("! -d 10.0.0.0/8 -j ACCEPT", "-j DROP"),
            ("! -d 10.0.0.0/7 -j ACCEPT", "! -d 10.0.0.0/8 -j DROP"),
            ("-s 10.0.0.0/8 -j ACCEPT", "! -s 10.0.0.0/8 -j DROP"),
            ("-i eth0 -j ACCEPT", "-i eth+ -j DROP"),
            ("! -i eth+ -j ACCEPT", "-i eth0 -j DROP"),
            ("! -i eth0 -j ACCEPT", "-i eth+ -j DROP"),
            ("! -i eth0 -j ACCEPT", "-j DROP"),
            ("-i eth0 -j ACCEPT", "! -i eth1 -j DROP"),
            (
                "-p tcp -m tcp --dport 80 -j ACCEPT",
                "-p tcp -m multiport --dports 80,443 -j DROP",
            ),
            ("-p tcp -m tcp --dport 80 -j ACCEPT", "-p tcp -j DROP"),
            (
                "-p tcp -m multiport --ports 80 -j ACCEPT",
                "-p tcp -m tcp --dport 80 -j DROP",
            ),
            (
                "-m conntrack --ctstate NEW -j ACCEPT",
                "-m conntrack --ctstate NEW,ESTABLISHED -j DROP",
            ),
            (
                "-m conntrack --ctstate DNAT -j ACCEPT",
                "-m conntrack --ctstate DNAT -j DROP",
            ),
            (
                "-m mark --mark 0x4000/0x4000 -j ACCEPT",
                "-m mark --mark 0x0/0x0 -j DROP",
            ),
            (
                "-m mark --mark 0x4000/0xc000 -j ACCEPT",
                "-m mark --mark 0x4000/0x4000 -j DROP",
            ),
            // Not understood on the earlier rule: never a superset.
            (
                "-p tcp -m set --match-set x src -j ACCEPT",
                "-p tcp -j DROP",
            ),
            (
                "-m statistic --mode random --probability 0.5 -j ACCEPT",
                "-j DROP",
            ),
            ("-m limit --limit 5/min -j ACCEPT", "-j DROP"),
            ("-m addrtype --dst-type LOCAL -j ACCEPT", "-j DROP"),
            ("-m physdev --physdev-in eth0 -j ACCEPT", "-j DROP"),
            ("-m recent --rcheck --name x -j ACCEPT", "-j DROP"),
            ("-f -j ACCEPT", "-f -j DROP"),
            ("-s example.org -j ACCEPT", "-s example.org -j DROP"),
            (
                "-p tcp -m tcp --dport ssh -j ACCEPT",
                "-p tcp -m tcp --dport ssh -j DROP",
            ),
            (
                "-m conntrack --ctstate NEW --ctproto tcp -j ACCEPT",
                "-m conntrack --ctstate NEW --ctproto tcp -j DROP",
            ),
            (
                "-m connmark --mark 0x1 -j ACCEPT",
                "-m connmark --mark 0x1 -j DROP",
            ),
            ("-m tcp --syn -j ACCEPT", "-p tcp -m tcp --syn -j DROP"),
            (
                "-s 10.0.0.0/8 -s 10.0.0.0/8 -j ACCEPT",
                "-s 10.0.0.1 -j DROP",
            ),
            (
                "-m mark ! --mark 0x4000/0x4000 -j ACCEPT",
                "-m mark ! --mark 0x4000/0xc000 -j DROP",
            ),
        ] {
            assert!(!sup(a, b), "{a}  should not cover  {b}");
        }
    }

    #[test]
    fn ports_normalise() {
        let r = |first, last| PortRange { first, last };
        let p = Ports::new(&[r(80, 80), r(81, 90), r(10, 20), r(15, 30)], false);
        assert_eq!(p.ranges(), &[r(10, 30), r(80, 90)]);
        let n = Ports::new(&[r(0, 9), r(22, 22)], true);
        assert_eq!(n.ranges(), &[r(10, 21), r(23, u16::MAX)]);
        assert_eq!(Ports::new(&[r(0, u16::MAX)], true).ranges(), &[]);
        assert_eq!(p.intersect(&n).ranges(), &[r(10, 21), r(23, 30), r(80, 90)]);
        assert_eq!(Ports::new(&[r(443, 443)], false).single(), Some(443));
    }

    #[test]
    fn reading_rules() {
        let s = sets(&["-p tcp -m comment --comment \"a b\" -m tcp --dport 22 -j ACCEPT"]);
        let m = &s[0].1;
        assert!(m.exact);
        assert_eq!(m.protocols, Protocols::only(6));
        assert_eq!(
            m.destination_ports.as_ref().and_then(Ports::single),
            Some(22)
        );
        assert!(sets(&["-j ACCEPT"])[0].1.is_everything());
        assert!(!sets(&["-m addrtype --dst-type LOCAL -j ACCEPT"])[0].1.exact);
        assert!(
            !sets(&["-p tcp -m tcp --dport 22 [unsupported revision] -j ACCEPT"])[0]
                .1
                .exact
        );
        assert_eq!(protocol_number("ICMPv6"), Some(58));
        assert_eq!(protocol_number("nonsense"), None);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// One match, as iptables-save writes it.
        fn a_match() -> impl Strategy<Value = String> {
            let net = prop_oneof![
                Just("10.0.0.0/8"),
                Just("10.1.0.0/16"),
                Just("10.1.2.3/32"),
                Just("192.168.0.0/16"),
                Just("0.0.0.0/0"),
            ];
            let iface = prop_oneof![
                Just("eth0"),
                Just("eth1"),
                Just("eth+"),
                Just("e+"),
                Just("+"),
                Just("lo"),
            ];
            let one_range = prop_oneof![Just("80"), Just("443"), Just("1:1024"), Just("100:200")];
            let ports = prop_oneof![
                Just("80"),
                Just("443"),
                Just("1:1024"),
                Just("80,443"),
                Just("100:200,80"),
                Just("0:65535"),
            ];
            let neg = any::<bool>().prop_map(|n| if n { "! " } else { "" });
            prop_oneof![
                (
                    neg.clone(),
                    prop_oneof![Just("tcp"), Just("udp"), Just("6"), Just("all")]
                )
                    .prop_map(|(n, p)| format!("{n}-p {p}")),
                (neg.clone(), prop_oneof![Just("-s"), Just("-d")], net)
                    .prop_map(|(n, o, a)| format!("{n}{o} {a}")),
                (neg.clone(), prop_oneof![Just("-i"), Just("-o")], iface)
                    .prop_map(|(n, o, i)| format!("{n}{o} {i}")),
                (
                    neg.clone(),
                    prop_oneof![Just("--dport"), Just("--sport")],
                    one_range
                )
                    .prop_map(|(n, o, p)| format!("-p tcp -m tcp {n}{o} {p}")),
                (
                    neg.clone(),
                    prop_oneof![Just("--dports"), Just("--sports")],
                    ports
                )
                    .prop_map(|(n, o, p)| format!("-m multiport {n}{o} {p}")),
                (
                    neg.clone(),
                    prop_oneof![
                        Just("NEW"),
                        Just("ESTABLISHED,RELATED"),
                        Just("INVALID,NEW,UNTRACKED")
                    ]
                )
                    .prop_map(|(n, s)| format!("-m conntrack {n}--ctstate {s}")),
                (
                    neg.clone(),
                    prop_oneof![
                        Just("0x4000/0x4000"),
                        Just("0x4001/0xffff"),
                        Just("0x0/0xc000"),
                        Just("0x1")
                    ]
                )
                    .prop_map(|(n, m)| format!("-m mark {n}--mark {m}")),
                Just("-m comment --comment \"x\"".to_string()),
                Just("-m addrtype --dst-type LOCAL".to_string()),
            ]
        }

        fn a_rule() -> impl Strategy<Value = String> {
            proptest::collection::vec(a_match(), 0..4)
                .prop_map(|ms| format!("{} -j ACCEPT", ms.join(" ")))
        }

        type PacketSeed = (u8, u8, u8, u8, u16, u16, u8, u32);

        fn a_packet() -> impl Strategy<Value = PacketSeed> {
            (
                prop_oneof![Just(6u8), Just(17), Just(1)],
                0u8..5,
                0u8..5,
                0u8..6,
                prop_oneof![
                    Just(80u16),
                    Just(443),
                    Just(150),
                    Just(5000),
                    Just(0),
                    Just(1024)
                ],
                prop_oneof![Just(80u16), Just(443), Just(150), Just(5000)],
                0u8..5,
                prop_oneof![
                    Just(0u32),
                    Just(0x4000),
                    Just(0x4001),
                    Just(0x8000),
                    Just(1),
                    Just(0xc000)
                ],
            )
        }

        fn packet(p: PacketSeed) -> Packet<'static> {
            const ADDRS: [&str; 5] = [
                "10.1.2.3",
                "10.1.9.9",
                "10.200.0.1",
                "192.168.1.1",
                "8.8.8.8",
            ];
            const IFACES: [&str; 6] = ["eth0", "eth1", "ens3", "lo", "", "eth10"];
            let ports = p.0 != 1;
            Packet {
                protocol: p.0,
                source: ADDRS[usize::from(p.1)].parse().unwrap(),
                destination: ADDRS[usize::from(p.2)].parse().unwrap(),
                in_interface: IFACES[usize::from(p.3)],
                out_interface: IFACES[usize::from(p.3 + 1) % 6],
                source_port: ports.then_some(p.4),
                destination_port: ports.then_some(p.5),
                state: States(1 << p.6),
                mark: p.7,
            }
        }

        proptest! {
            #[test]
            fn a_superset_admits_what_the_subset_admits(
                a in a_rule(),
                b in a_rule(),
                packets in proptest::collection::vec(a_packet(), 1..40),
            ) {
                let s = sets(&[&a, &b]);
                if s[0].1.is_superset_of(&s[1].1) {
                    for p in packets {
                        let p = packet(p);
                        prop_assert!(!s[1].1.admits(&p) || s[0].1.admits(&p), "{a} / {b}: {p:?}");
                    }
                }
            }

            #[test]
            fn more_matches_narrow_a_rule(
                a in proptest::collection::vec(a_match(), 0..3),
                more in proptest::collection::vec(a_match(), 1..3),
                packets in proptest::collection::vec(a_packet(), 1..40),
            ) {
                let first = format!("{} -j ACCEPT", a.join(" "));
                let second = format!("{} {} -j DROP", a.join(" "), more.join(" "));
                let s = sets(&[&first, &second]);
                prop_assert_eq!(s[0].1.is_superset_of(&s[1].1), s[0].1.exact, "{} / {}", first, second);
                for p in packets {
                    let p = packet(p);
                    prop_assert!(!s[1].1.admits(&p) || s[0].1.admits(&p), "{first} / {second}: {p:?}");
                }
            }

            #[test]
            fn a_set_is_a_superset_of_itself_when_exact(a in a_rule()) {
                let s = sets(&[&a]);
                prop_assert_eq!(s[0].1.is_superset_of(&s[0].1), s[0].1.exact);
            }
        }
    }
}
