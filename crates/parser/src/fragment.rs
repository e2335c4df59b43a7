//! The tables of lines outside any `*table` block: grep output, a partial copy, an
//! `iptables -S` listing. Before the parser reads such a run of lines (up to the next `*table`
//! header), [`plan`] reads its chain names and targets once and decides the table of every
//! rule and declaration in it:
//!
//! - every name and target says which tables it may be in (`DNAT` only in nat, `TPROXY` only
//!   in mangle, `FORWARD` in mangle, filter and security, `KUBE-SVC-*` in nat) and which it is
//!   likely in (`REJECT`: filter, `MARK`: mangle);
//! - a *block* that declares its chains (`:CHAIN`, `-N`, `-P`: a table listing without its
//!   header) is one table: the smallest that has every built-in chain it declares and fits all
//!   its rules. A block ends where declarations start again after rules, or repeat a chain;
//! - in a block without declarations, user chains that jump to each other are one table
//!   (a connected set is never split), and a rule of a built-in chain or of a chain that
//!   several tables have (`KUBE-SERVICES`) goes where its target is.
//!
//! Lines left undecided (no evidence at all) are placed by the parser (the previous rule's
//! table, else filter). The plan is only made for text outside tables, so a dump never pays
//! for it, and each byte is planned at most once.

use crate::lexer;
use crate::model::TableKind;
use crate::prefix::Prefix;
use rustc_hash::{FxHashMap, FxHashSet};

/// A set of tables, one bit per [`KINDS`] entry.
type Mask = u8;
const RAW: Mask = 1;
const MANGLE: Mask = 2;
const NAT: Mask = 4;
const FILTER: Mask = 8;
const SECURITY: Mask = 16;
const ANY: Mask = 31;

const KINDS: [TableKind; 5] = [
    TableKind::Raw,
    TableKind::Mangle,
    TableKind::Nat,
    TableKind::Filter,
    TableKind::Security,
];

/// Tie-break between tables that fit equally: iptables' default table first.
const RANK: [usize; 5] = [3, 2, 1, 0, 4];

/// kube-proxy's per-service chains, all in the nat table.
const KUBE_NAT_CHAIN_PREFIXES: [&str; 5] = [
    "KUBE-SVC-",
    "KUBE-SEP-",
    "KUBE-SVL-",
    "KUBE-EXT-",
    "KUBE-FW-",
];

/// What the names of a line say about its table: where it may be, and where it likely is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Evidence {
    mask: Mask,
    votes: [u16; 5],
}

impl Evidence {
    const NONE: Evidence = Evidence {
        mask: ANY,
        votes: [0; 5],
    };

    fn only(mask: Mask) -> Evidence {
        Evidence {
            mask,
            votes: [0; 5],
        }
    }

    fn vote(mut self, table: Mask) -> Evidence {
        for (k, v) in self.votes.iter_mut().enumerate() {
            if table & (1 << k) != 0 {
                *v = v.saturating_add(1);
            }
        }
        self
    }

    fn and(&mut self, other: Evidence) {
        self.mask &= other.mask;
        for (v, o) in self.votes.iter_mut().zip(other.votes) {
            *v = v.saturating_add(o);
        }
    }

    fn is_none(&self) -> bool {
        *self == Evidence::NONE
    }

    /// The table that fits: allowed, most voted for, then (with `smallest`) the one with the
    /// fewest built-in chains, then the default order. `None` when nothing fits or nothing
    /// is known.
    fn choose(&self, smallest: bool) -> Option<TableKind> {
        if self.mask == 0 || self.is_none() {
            return None;
        }
        (0..KINDS.len())
            .filter(|k| self.mask & (1 << k) != 0)
            .min_by_key(|&k| {
                let size = if smallest {
                    KINDS[k].builtin_chains().len()
                } else {
                    0
                };
                (size, std::cmp::Reverse(self.votes[k]), RANK[k])
            })
            .map(|k| KINDS[k])
    }
}

/// The tables that have `name` as a built-in chain.
fn builtin_mask(name: &str) -> Mask {
    match name {
        "PREROUTING" => RAW | MANGLE | NAT,
        "INPUT" => MANGLE | NAT | FILTER | SECURITY,
        "FORWARD" => MANGLE | FILTER | SECURITY,
        "OUTPUT" => ANY,
        "POSTROUTING" => MANGLE | NAT,
        _ => 0,
    }
}

/// Whether `name` is a built-in chain of some table.
pub(crate) fn is_builtin_anywhere(name: &str) -> bool {
    builtin_mask(name) != 0
}

/// Chains that several tables have under the same name: they join no connected set.
fn in_several_tables(name: &str) -> bool {
    builtin_mask(name) != 0
        || matches!(
            name,
            "KUBE-SERVICES" | "KUBE-NODEPORTS" | "KUBE-PROXY-CANARY" | "KUBE-KUBELET-CANARY"
        )
}

/// What a chain's name says about its table.
fn chain_evidence(name: &str) -> Evidence {
    let builtin = builtin_mask(name);
    if builtin != 0 {
        let e = Evidence::only(builtin);
        return match name {
            "PREROUTING" | "POSTROUTING" => e.vote(NAT),
            _ => e,
        };
    }
    match name {
        "KUBE-MARK-MASQ" | "KUBE-MARK-DROP" | "KUBE-POSTROUTING" => Evidence::only(NAT),
        "KUBE-NODEPORTS" => Evidence::NONE.vote(NAT),
        "KUBE-FIREWALL"
        | "KUBE-PROXY-FIREWALL"
        | "KUBE-FORWARD"
        | "KUBE-EXTERNAL-SERVICES"
        | "DOCKER-USER" => Evidence::only(FILTER),
        n if KUBE_NAT_CHAIN_PREFIXES.iter().any(|p| n.starts_with(p)) => Evidence::only(NAT),
        n if n.starts_with("DOCKER-ISOLATION-") => Evidence::only(FILTER),
        n if named_table(n) != 0 => Evidence::only(named_table(n)),
        _ => Evidence::NONE,
    }
}

/// A chain named after its table: Cilium's `CILIUM_PRE_mangle`, `CILIUM_POST_nat`,
/// `CILIUM_OUTPUT_raw`; `PREROUTING-mangle`, `mangle_fwmark`.
fn named_table(name: &str) -> Mask {
    let bytes = name.as_bytes();
    for (word, mask) in [("mangle", MANGLE), ("nat", NAT), ("raw", RAW)] {
        let n = word.len();
        if bytes.len() <= n + 1 {
            continue;
        }
        // Bytes, not `str` slices: a name may hold any UTF-8.
        let suffix = bytes[bytes.len() - n..].eq_ignore_ascii_case(word.as_bytes())
            && matches!(bytes[bytes.len() - n - 1], b'_' | b'-');
        let prefix =
            bytes[..n].eq_ignore_ascii_case(word.as_bytes()) && matches!(bytes[n], b'_' | b'-');
        if suffix || prefix {
            return mask;
        }
    }
    0
}

/// What a rule's target says about its table.
fn target_evidence(target: &str) -> Evidence {
    match target {
        "DNAT" | "SNAT" | "MASQUERADE" | "REDIRECT" | "NETMAP" => Evidence::only(NAT),
        "TPROXY" | "TOS" | "TTL" | "HL" | "DSCP" | "ECN" | "CHECKSUM" => Evidence::only(MANGLE),
        "NOTRACK" | "CT" => Evidence::only(RAW),
        "SECMARK" | "CONNSECMARK" => Evidence::only(MANGLE | SECURITY),
        "REJECT" => Evidence::NONE.vote(FILTER),
        "MARK" | "CONNMARK" | "TCPMSS" => Evidence::NONE.vote(MANGLE),
        t if builtin_mask(t) != 0 => Evidence::NONE,
        t => chain_evidence(t),
    }
}

fn rule_evidence(line: &Line<'_>) -> Evidence {
    let mut e = chain_evidence(line.chain);
    if let Some(target) = line.target {
        e.and(target_evidence(target));
    }
    e
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// `:CHAIN`, `-N CHAIN`, `-P CHAIN`.
    Declaration,
    /// A rule or another restore command.
    Rule,
}

struct Line<'a> {
    /// Where the parser's span of the line starts (the `:` or the verb).
    pos: u32,
    kind: LineKind,
    chain: &'a str,
    target: Option<&'a str>,
}

/// The tables decided for a run of lines outside any table.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// (start of the line's span, table), in text order.
    entries: Vec<(u32, TableKind)>,
    cursor: usize,
    /// Where the run ends: the next `*table` header, or the end of the text.
    pub(crate) end: usize,
}

impl Plan {
    /// The table decided for the line whose span starts at `pos`. Lines are asked for in text
    /// order.
    pub(crate) fn kind_at(&mut self, pos: u32) -> Option<TableKind> {
        while self.entries.get(self.cursor).is_some_and(|e| e.0 < pos) {
            self.cursor += 1;
        }
        self.entries
            .get(self.cursor)
            .filter(|e| e.0 == pos)
            .map(|e| e.1)
    }
}

/// Reads the lines from `start` (the start of a line) up to the next `*table` header and
/// decides their tables.
pub(crate) fn plan(src: &str, start: usize, prefix: Option<Prefix>) -> Plan {
    let bytes = src.as_bytes();
    let mut lines = Vec::new();
    let mut pos = start;
    let mut end = bytes.len();
    while pos < bytes.len() {
        let line_end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
        let (s, e) = crate::prefix::content(bytes, pos, line_end, prefix).0;
        let text = &src[s..e];
        if text.len() > 1 && text.starts_with('*') && !text.contains([' ', '\t']) {
            end = pos;
            break;
        }
        if let Some(line) = read_line(src, s, e) {
            lines.push(line);
        }
        pos = line_end + 1;
    }
    let mut plan = Plan {
        entries: Vec::with_capacity(lines.len()),
        cursor: 0,
        end,
    };
    let mut blocks = Vec::new();
    let mut block_start = 0;
    let mut declared: FxHashSet<&str> = FxHashSet::default();
    let mut has_rules = false;
    for (i, line) in lines.iter().enumerate() {
        if line.kind == LineKind::Declaration {
            if has_rules || declared.contains(&line.chain) {
                blocks.push(block_start..i);
                block_start = i;
                declared.clear();
                has_rules = false;
            }
            declared.insert(line.chain);
        } else {
            has_rules = true;
        }
    }
    blocks.push(block_start..lines.len());
    decide_blocks(&lines, &blocks, &mut plan.entries);
    plan
}

/// What a block that declares chains says as a whole.
struct Listing {
    evidence: Evidence,
    /// It declares two or more built-in chains: the smallest table with all of them fits best.
    smallest: bool,
    /// Something besides the built-in chain names says where it is.
    telling: bool,
}

/// The evidence of a block that declares chains: a table listing without its header.
fn listing(lines: &[Line<'_>]) -> Listing {
    let mut builtins: Vec<&str> = Vec::new();
    let mut evidence = Evidence::NONE;
    let mut telling = Evidence::NONE;
    for line in lines {
        let builtin = builtin_mask(line.chain) != 0;
        let e = match line.kind {
            LineKind::Declaration => {
                if builtin && !builtins.contains(&line.chain) {
                    builtins.push(line.chain);
                }
                chain_evidence(line.chain)
            }
            LineKind::Rule => rule_evidence(line),
        };
        evidence.and(e);
        if !builtin {
            telling.and(e);
        } else if let Some(target) = line.target {
            telling.and(target_evidence(target));
        }
    }
    Listing {
        evidence,
        smallest: builtins.len() >= 2,
        telling: !telling.is_none(),
    }
}

/// Decides the tables of each block. Blocks that declare chains are each one table: those whose
/// names or targets tell first, then those that only declare built-in chains, which avoid the
/// tables already holding a chain they declare (grep output of `:FORWARD` lists mangle's and
/// filter's declarations one after the other). Other blocks go by connected chains.
fn decide_blocks(
    lines: &[Line<'_>],
    blocks: &[std::ops::Range<usize>],
    out: &mut Vec<(u32, TableKind)>,
) {
    let listings: Vec<Option<Listing>> = blocks
        .iter()
        .map(|r| {
            let block = &lines[r.clone()];
            if block.iter().any(|l| l.kind == LineKind::Declaration) {
                Some(listing(block)).filter(|l| l.evidence.mask != 0)
            } else {
                None
            }
        })
        .collect();
    let mut kinds: Vec<Option<TableKind>> = vec![None; blocks.len()];
    let mut used: FxHashMap<&str, Mask> = FxHashMap::default();
    for telling in [true, false] {
        for (b, listing) in listings.iter().enumerate() {
            let Some(listing) = listing.as_ref().filter(|l| l.telling == telling) else {
                continue;
            };
            let declared = lines[blocks[b].clone()]
                .iter()
                .filter(|l| l.kind == LineKind::Declaration);
            let mut evidence = listing.evidence;
            if !telling {
                let taken = declared
                    .clone()
                    .fold(0, |m, l| m | used.get(l.chain).copied().unwrap_or(0));
                if evidence.mask & !taken != 0 {
                    evidence.mask &= !taken;
                }
            }
            kinds[b] = evidence.choose(listing.smallest);
            if let Some(kind) = kinds[b] {
                for line in declared {
                    *used.entry(line.chain).or_default() |= 1 << kind as usize;
                }
            }
        }
    }
    for (b, range) in blocks.iter().enumerate() {
        let block = &lines[range.clone()];
        match (&listings[b], kinds[b]) {
            (Some(_), Some(kind)) => out.extend(block.iter().map(|l| (l.pos, kind))),
            (Some(_), None) => {}
            (None, _) => decide_by_connected_chains(block, out),
        }
    }
}

/// The chain (and target) of a line outside any table, `s..e` its content.
fn read_line(src: &str, s: usize, e: usize) -> Option<Line<'_>> {
    let text = &src[s..e];
    if let Some(body) = text.strip_prefix(':') {
        let name = body.split([' ', '\t']).next().filter(|n| !n.is_empty())?;
        return Some(Line {
            pos: s as u32,
            kind: LineKind::Declaration,
            chain: name,
            target: None,
        });
    }
    let mut at = s;
    if text.starts_with('[') {
        let (rest, _) = lexer::counters(text).ok()?;
        at = e - rest.len();
    }
    let mut words = Words { src, at, end: e };
    let verb = words.next()?;
    let kind = match verb.1 {
        "-A" | "--append" | "-I" | "--insert" | "-D" | "--delete" | "-R" | "--replace" | "-X"
        | "--delete-chain" | "-F" | "--flush" | "-Z" | "--zero" | "-E" | "--rename-chain" => {
            LineKind::Rule
        }
        "-N" | "--new-chain" | "-P" | "--policy" => LineKind::Declaration,
        _ => return None,
    };
    let chain = words.next()?.1;
    let mut target = None;
    if kind == LineKind::Rule {
        target = match fast_target(&src[words.at..e]) {
            Some(found) => found,
            None => {
                while let Some((_, w)) = words.next() {
                    if matches!(w, "-j" | "--jump" | "-g" | "--goto") {
                        target = words.next().map(|w| w.1);
                    }
                }
                target
            }
        };
    }
    Some(Line {
        pos: verb.0 as u32,
        kind,
        chain,
        target,
    })
}

/// The target of a rule from the text after its chain, found by searching for the last `-j`
/// or `-g` rather than reading every word: `Some(None)` for a rule without one, `None` when
/// the line needs the word by word reading (a backslash, or the flag inside quotes).
fn fast_target(rest: &str) -> Option<Option<&str>> {
    let bytes = rest.as_bytes();
    if memchr::memchr(b'\\', bytes).is_some() {
        return None;
    }
    // The last `-j`/`-g` word: scan back over the `-` bytes, a few per rule.
    let found = memchr::memrchr_iter(b'-', bytes).find_map(|at| {
        if at > 0 && !matches!(bytes[at - 1], b' ' | b'\t') {
            return None;
        }
        [&b"-j"[..], b"-g", b"--jump", b"--goto"]
            .iter()
            .find(|flag| {
                bytes[at..].starts_with(flag)
                    && matches!(bytes.get(at + flag.len()), Some(b' ' | b'\t'))
            })
            .map(|flag| at + flag.len())
    });
    let Some(at) = found else {
        return Some(None);
    };
    let at = at
        + bytes[at..]
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
    if !bytecount::count(&bytes[..at], b'"').is_multiple_of(2) {
        return None;
    }
    let len = bytes[at..]
        .iter()
        .position(|b| matches!(b, b' ' | b'\t' | b'\r'))
        .unwrap_or(bytes.len() - at);
    Some((len > 0).then(|| &rest[at..at + len]))
}

/// The words of a line, quotes kept together as the lexer reads them.
struct Words<'a> {
    src: &'a str,
    at: usize,
    end: usize,
}

impl<'a> Iterator for Words<'a> {
    type Item = (usize, &'a str);

    fn next(&mut self) -> Option<(usize, &'a str)> {
        let bytes = &self.src.as_bytes()[..self.end];
        while matches!(bytes.get(self.at), Some(b' ' | b'\t')) {
            self.at += 1;
        }
        if self.at >= self.end {
            return None;
        }
        let len = lexer::word_len(&bytes[self.at..]).ok()?;
        let word = (self.at, &self.src[self.at..self.at + len]);
        self.at += len;
        Some(word)
    }
}

/// Union-find over the user chains of a block: a chain and the chains it jumps to share a
/// table.
struct Sets {
    parent: Vec<usize>,
}

impl Sets {
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.parent[a.max(b)] = a.min(b);
        }
    }
}

fn decide_by_connected_chains(lines: &[Line<'_>], out: &mut Vec<(u32, TableKind)>) {
    let mut ids: FxHashMap<&str, usize> = FxHashMap::default();
    fn node<'a>(name: &'a str, ids: &mut FxHashMap<&'a str, usize>) -> Option<usize> {
        if in_several_tables(name) {
            return None;
        }
        let next = ids.len();
        Some(*ids.entry(name).or_insert(next))
    }
    let mut nodes: Vec<(Option<usize>, Option<usize>)> = Vec::with_capacity(lines.len());
    for line in lines {
        let chain = node(line.chain, &mut ids);
        let target = line
            .target
            .filter(|t| is_chain_like(t))
            .and_then(|t| node(t, &mut ids));
        nodes.push((chain, target));
    }
    let mut sets = Sets {
        parent: (0..ids.len()).collect(),
    };
    for &(chain, target) in &nodes {
        if let (Some(c), Some(t)) = (chain, target) {
            sets.union(c, t);
        }
    }
    let mut evidence = vec![Evidence::NONE; ids.len()];
    for (line, &(chain, target)) in lines.iter().zip(&nodes) {
        match (chain, target) {
            (Some(c), _) => {
                let root = sets.find(c);
                let e = match line.kind {
                    LineKind::Declaration => chain_evidence(line.chain),
                    LineKind::Rule => rule_evidence(line),
                };
                evidence[root].and(e);
            }
            // A built-in chain that jumps into a set: the set's table has that chain.
            (None, Some(t)) => {
                let root = sets.find(t);
                evidence[root].and(Evidence::only(chain_evidence(line.chain).mask));
            }
            (None, None) => {}
        }
    }
    let tables: Vec<Option<TableKind>> = (0..ids.len())
        .map(|i| {
            let root = sets.find(i);
            evidence[root].choose(false)
        })
        .collect();
    for (line, &(chain, target)) in lines.iter().zip(&nodes) {
        let kind = match chain.and_then(|c| tables[c]) {
            Some(kind) => Some(kind),
            None => {
                let own = match line.kind {
                    LineKind::Declaration => chain_evidence(line.chain),
                    LineKind::Rule => rule_evidence(line),
                };
                target
                    .and_then(|t| tables[t])
                    .filter(|k| own.mask & (1 << *k as usize) != 0)
                    .or_else(|| own.choose(false))
            }
        };
        if let Some(kind) = kind {
            out.push((line.pos, kind));
        }
    }
}

/// Whether a target names a chain rather than an extension (`ACCEPT`, `DNAT`, `MARK`, ...).
fn is_chain_like(target: &str) -> bool {
    !matches!(
        target,
        "ACCEPT"
            | "DROP"
            | "RETURN"
            | "REJECT"
            | "LOG"
            | "NFLOG"
            | "ULOG"
            | "QUEUE"
            | "NFQUEUE"
            | "MARK"
            | "CONNMARK"
            | "DNAT"
            | "SNAT"
            | "MASQUERADE"
            | "REDIRECT"
            | "NETMAP"
            | "TPROXY"
            | "TOS"
            | "TTL"
            | "HL"
            | "DSCP"
            | "ECN"
            | "CHECKSUM"
            | "TCPMSS"
            | "NOTRACK"
            | "CT"
            | "SECMARK"
            | "CONNSECMARK"
            | "SET"
            | "TEE"
            | "TRACE"
            | "CLASSIFY"
            | "AUDIT"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(text: &str) -> Vec<(String, TableKind)> {
        let mut plan = plan(text, 0, None);
        let mut out = Vec::new();
        let mut pos = 0;
        for line in text.split_inclusive('\n') {
            let first = line
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ");
            if let Some(kind) = plan.kind_at(pos as u32) {
                out.push((first, kind));
            }
            pos += line.len();
        }
        out
    }

    #[test]
    fn the_fast_target_search_agrees_with_reading_every_word() {
        for line in [
            "-A X -p tcp -j DNAT --to-destination 10.0.0.1:80",
            "-A X -m comment --comment \"a -j B\" -j ACCEPT",
            "-A X -m comment --comment \"a -j B\"",
            "-A X -j RETURN",
            "-A X  -g   Y",
            "-A X --jump Y --goto Z",
            "-A X -p tcp",
            "-A X -j",
            "-A X -m comment --comment \"x\\\" -j Y\" -j Z",
            "[1:2] -A X-j -j Y",
        ] {
            let words = read_line(line, 0, line.len()).map(|l| l.target);
            let mut slow = None;
            let mut it = Words {
                src: line,
                at: 0,
                end: line.len(),
            };
            while let Some((_, w)) = it.next() {
                if matches!(w, "-j" | "--jump" | "-g" | "--goto") {
                    slow = it.next().map(|w| w.1);
                }
            }
            assert_eq!(words, Some(slow), "{line}");
        }
    }

    #[test]
    fn an_iptables_s_listing_of_mangle_is_one_table() {
        let text = "-P PREROUTING ACCEPT\n-P INPUT ACCEPT\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n\
                    -P POSTROUTING ACCEPT\n-N ISTIO_DIVERT\n-N ISTIO_INBOUND\n-N ISTIO_TPROXY\n\
                    -A PREROUTING -p tcp -j ISTIO_INBOUND\n-A ISTIO_DIVERT -j MARK --set-xmark 0x539/0xffffffff\n\
                    -A ISTIO_DIVERT -j ACCEPT\n-A ISTIO_TPROXY ! -d 127.0.0.1/32 -p tcp -j TPROXY --on-port 15006 --tproxy-mark 0x539/0xffffffff\n";
        let found = tables(text);
        assert_eq!(found.len(), 12);
        assert!(
            found.iter().all(|(_, k)| *k == TableKind::Mangle),
            "{found:?}"
        );
    }

    #[test]
    fn connected_chains_share_a_table_without_declarations() {
        let text = "-A PREROUTING -p tcp -j ISTIO_INBOUND\n-A ISTIO_INBOUND -p tcp -j ISTIO_TPROXY\n\
                    -A ISTIO_INBOUND -p tcp -m conntrack --ctstate RELATED,ESTABLISHED -j ISTIO_DIVERT\n\
                    -A ISTIO_DIVERT -j ACCEPT\n-A ISTIO_TPROXY -p tcp -j TPROXY --on-port 15006\n\
                    -A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-SVC-AAAA\n-A KUBE-SERVICES -d 10.96.0.2/32 -j REJECT\n";
        let kinds: Vec<TableKind> = tables(text).into_iter().map(|(_, k)| k).collect();
        use TableKind::*;
        assert_eq!(kinds, [Mangle, Mangle, Mangle, Mangle, Mangle, Nat, Filter]);
    }

    #[test]
    fn declared_builtins_pick_the_smallest_table() {
        use TableKind::*;
        let kinds =
            |text: &str| -> Vec<TableKind> { tables(text).into_iter().map(|(_, k)| k).collect() };
        assert_eq!(
            kinds(
                ":PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n"
            ),
            [Nat; 4]
        );
        assert_eq!(
            kinds(
                ":INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n:cali-FORWARD - [0:0]\n-A cali-FORWARD -j MARK --set-xmark 0x0/0xe0000\n"
            ),
            [Filter; 5]
        );
        // Declarations after rules start another table.
        assert_eq!(
            kinds(
                ":KUBE-SERVICES - [0:0]\n-A FORWARD -j KUBE-SERVICES\n-A KUBE-SERVICES -j REJECT\n\
                   :KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -j KUBE-SVC-AAAA\n"
            ),
            [Filter, Filter, Filter, Nat, Nat, Nat]
        );
        // grep FORWARD over a whole dump: mangle's declaration, then filter's with its rules.
        assert_eq!(
            kinds(
                ":FORWARD ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:KUBE-FORWARD - [0:0]\n\
                   -A FORWARD -j KUBE-FORWARD\n-A KUBE-FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT\n"
            ),
            [Mangle, Filter, Filter, Filter, Filter]
        );
        assert_eq!(named_table("CILIUM_PRE_mangle"), MANGLE);
        assert_eq!(named_table("mangle-fwmark"), MANGLE);
        assert_eq!(named_table("CILIUM_POST_nat"), NAT);
        assert_eq!(named_table("CILIUM_OUTPUT_raw"), RAW);
        assert_eq!(
            named_table("mangle") | named_table("KUBE-MANGLER") | named_table("natural"),
            0
        );
    }
}
