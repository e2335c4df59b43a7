//! Many nodes in bounded memory: each node's dump is reduced to its facts ([`NodeFacts`], owned,
//! small) and dropped; a [`Group`] holds the facts of every node, its names in one table and
//! each node's facts as a few bytes apiece, and compares them.
//!
//! **Architecture Invariant:** a comparison reads facts only, never a ruleset: whatever built
//! the facts (a dump read now, a summary written on the node, in any order, on any thread), the
//! report is the same byte for byte. Facts are collected for every reading a comparison may
//! need (Service chains of one backend, raw address kinds); [`Group::compare`] picks and maps
//! them once it knows every node.

use super::facts::{
    EachFact, Fact, Reading, Scope, Subject, SubjectOf, Value, ValueOf, catalog_fact_count,
    collect_catalog, collect_iptables_chains, collect_iptables_services, collect_nft_chains,
};
use super::node_local::{Expected, address_in};
use super::{Comparison, Difference, Node, NodeBackend, ServiceEntry, Variant, iptables_catalog};
use crate::kube::AddressKind;
use rustc_hash::{FxHashMap, FxHashSet};
use std::net::IpAddr;

/// What a compared node is: what the report says about it besides its facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its name: a `# node: NAME` line in its dump, else given by the caller.
    pub name: String,
    /// Rules in its dump (iptables and nftables).
    pub rules: usize,
    /// Error diagnostics of the parser (`rulelint check` shows them).
    pub parse_errors: usize,
    /// The packet filters its dump shows.
    pub backend: NodeBackend,
    /// The nftables layout generation's name, when the dump has nftables sections.
    pub nft_generation: Option<&'static str>,
    /// Its Service ports are not compared: an `ipvsadm -L` listing without `-n` names no
    /// addresses (the report says so in a per-node note).
    pub services_unknown: bool,
}

/// One fact of one node, its names ids into its [`NodeFacts::strings`].
pub type LocalFact = LocalFactOf<u32>;

/// One fact of one node; `S` is a name: an id into a table, or text borrowed from the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalFactOf<S> {
    /// What.
    pub subject: SubjectOf<S>,
    /// How.
    pub value: ValueOf<S>,
    /// The 1-based line of the node's dump that shows it; 0 when none does.
    pub line: u32,
    /// Whether one rule shows it (rules sort after chains and catalogue lines among the same
    /// fact held twice, as the dump orders them).
    pub by_rule: bool,
    /// Set when a difference in this fact is expected between healthy nodes.
    pub expected: Option<Expected>,
}

impl<S> LocalFactOf<S> {
    /// The same fact with each name replaced by `f(name)`.
    pub fn map<T>(self, mut f: impl FnMut(S) -> T) -> LocalFactOf<T> {
        LocalFactOf {
            subject: self.subject.map(&mut f),
            value: self.value.map(f),
            line: self.line,
            by_rule: self.by_rule,
            expected: self.expected,
        }
    }
}

/// Which facts to collect from a dump.
#[derive(Clone, Copy, Debug, Default)]
pub struct FactOptions {
    /// Digests of chains' rules, which groups of three or more nodes compare.
    pub digests: bool,
    /// The backend-neutral Service catalogue of an iptables-only node, which comparisons with
    /// nftables nodes read (nftables nodes always have theirs).
    pub catalog: bool,
}

/// What one node does, owned: all a comparison needs of its dump, a small fraction of its size.
/// A [summary](crate::summary) is this, written to a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFacts {
    /// What the report says about the node.
    pub info: NodeInfo,
    /// The names its facts use (Service ports, chains, addresses); facts hold their indexes.
    pub strings: Vec<String>,
    /// Service-level facts of the iptables model (iptables-only nodes).
    pub services: Option<Vec<LocalFact>>,
    /// Service-level facts of the backend-neutral catalogue (nftables nodes, and iptables nodes
    /// read with [`FactOptions::catalog`]).
    pub catalog: Option<Vec<LocalFact>>,
    /// Chains, policies, hook jumps, and chain digests when [`NodeFacts::digests`].
    pub chains: Vec<LocalFact>,
    /// Whether chain digests were collected.
    pub digests: bool,
    /// Pod IPs the node DNATs to that no endpoint fact names (chains of endpoints no Service
    /// uses): with the endpoint facts, the addresses a stale-endpoint note looks for.
    pub extra_endpoint_ips: Vec<IpAddr>,
}

impl NodeFacts {
    /// Reduces a node's dump to its facts.
    pub fn from_node(node: &Node<'_>, options: FactOptions) -> NodeFacts {
        Collected::with(node, options, Lists::Both, |collected| {
            let mut strings = Strings::default();
            let services = collected.services.map(|l| strings.own(l));
            let catalog = collected.catalog.map(|l| strings.own(l));
            let mut chains = Vec::new();
            chain_facts(node, options, |f| chains.push(f.map(|s| strings.id(s))));
            // The endpoint facts name most pod IPs the node DNATs to; keep the others.
            let named: FxHashSet<IpAddr> = services
                .iter()
                .chain(&catalog)
                .flatten()
                .filter_map(|f| destination(f.subject))
                .filter_map(|d| address_in(&strings.list[d as usize]))
                .collect();
            let mut extra_endpoint_ips: Vec<IpAddr> = node
                .endpoint_ips()
                .iter()
                .filter(|ip| !named.contains(ip))
                .copied()
                .collect();
            extra_endpoint_ips.sort_unstable();
            NodeFacts {
                info: collected.info,
                strings: strings.list,
                services,
                catalog,
                chains,
                digests: options.digests,
                extra_endpoint_ips,
            }
        })
    }
}

/// A node's Service-level facts collected apart from any group, their names borrowed from the
/// node: what a thread that finds the group busy packing another node collects while it waits,
/// so that the lock is held for packing, not for walking the model and looking up lines. Its
/// chain facts are not collected here but packed as they are found, under the lock
/// ([`Group::insert_collected`]): a list of them costs about 200 bytes a fact (208 MB for a
/// 1M-chain dump, more than its parse), and a chain fact is cheap to find.
pub struct CollectedFacts<'r, 'n> {
    collected: Collected<'r>,
    node: &'n Node<'n>,
    options: FactOptions,
    extra_endpoint_ips: Vec<IpAddr>,
}

impl<'n> CollectedFacts<'_, 'n> {
    /// Collects a node's Service-level facts (those [`Group::insert_node`] takes in) and hands
    /// them to `then`.
    pub fn with<R>(
        node: &'n Node<'n>,
        options: FactOptions,
        then: impl FnOnce(CollectedFacts<'_, 'n>) -> R,
    ) -> R {
        Collected::with(node, options, Lists::Both, |collected| {
            then(CollectedFacts {
                collected,
                node,
                options,
                extra_endpoint_ips: node.endpoint_ips().iter().copied().collect(),
            })
        })
    }
}

/// A node's Service-level facts as collected, their names borrowed from the node: what
/// [`NodeFacts`] owns, or what [`Group::insert_node`] takes in without copying the names
/// first. Chain facts, as many as the dump has chains, are not held: see [`chain_facts`].
struct Collected<'r> {
    info: NodeInfo,
    services: Option<Vec<LocalFactOf<&'r str>>>,
    catalog: Option<Vec<LocalFactOf<&'r str>>>,
}

impl Collected<'_> {
    /// Collects a node's facts and hands them to `then` (an iptables node's catalogue, when
    /// built here, lives only as long as this call). `lists`: which Service facts are
    /// collected into lists here (a caller that packs them as they come takes neither).
    fn with<R>(
        node: &Node<'_>,
        options: FactOptions,
        lists: Lists,
        then: impl FnOnce(Collected<'_>) -> R,
    ) -> R {
        let mut services = None;
        let mut facts = Vec::new();
        let mut built = Vec::new();
        if node.backend == NodeBackend::Iptables && lists == Lists::Both {
            collect_iptables_services(node, 0, &mut facts);
            services = Some(located(node, std::mem::take(&mut facts)));
        }
        let entries = match lists {
            Lists::Both => catalog_entries(node, options, &mut built),
            Lists::Neither => None,
        };
        let catalog = entries.map(|entries| {
            let mut list = Vec::with_capacity(catalog_fact_count(entries.clone(), true));
            // Catalogue facts carry their line: located as they come, no list of `Fact`s.
            collect_catalog(
                entries,
                0,
                true,
                &mut EachFact(|f| list.push(locate(node, f))),
            );
            list
        });
        then(Collected {
            info: NodeInfo {
                name: node.name.clone(),
                rules: node.set.rules.len() + node.nft_rules,
                parse_errors: node.parse_errors,
                backend: node.backend,
                nft_generation: node.nft_generation,
                services_unknown: node.services_unknown,
            },
            services,
            catalog,
        })
    }
}

/// Which of a node's Service facts [`Collected::with`] collects into lists.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lists {
    /// The iptables model's and the catalogue's.
    Both,
    /// None: the caller packs them as they are found.
    Neither,
}

/// The Service ports a node's catalogue facts are read from; `None` when they are not
/// collected (an iptables node without [`FactOptions::catalog`]). An iptables node's catalogue
/// is built into `built` when the caller did not build it.
fn catalog_entries<'n, 'a>(
    node: &'n Node<'a>,
    options: FactOptions,
    built: &'n mut Vec<ServiceEntry<'a>>,
) -> Option<impl Iterator<Item = &'n ServiceEntry<'a>> + Clone> {
    if node.backend == NodeBackend::Iptables && !options.catalog {
        return None;
    }
    if node.backend == NodeBackend::Iptables
        && node.iptables_services.is_empty()
        && !node.model.services.is_empty()
    {
        *built = iptables_catalog(node.set, &node.graph, &node.model);
    }
    Some(built.iter().chain(node.catalog_services()))
}

/// The chain-level facts of a node (chains, policies, hook jumps, digests), each located and
/// handed to `emit` as it is found: a dump of a million chains never has them all in a list.
fn chain_facts<'r>(
    node: &'r Node<'_>,
    options: FactOptions,
    mut emit: impl FnMut(LocalFactOf<&'r str>),
) {
    if node.backend.has_iptables() {
        let ipvs = node.backend.has_ipvs();
        let mut each = EachFact(|mut f: Fact<'r>| {
            if ipvs {
                super::ipvs::rescope(std::slice::from_mut(&mut f));
            }
            emit(locate(node, f));
        });
        collect_iptables_chains(node, 0, options.digests, &mut each);
    }
    if let Some(generation) = node.nft_generation {
        collect_nft_chains(
            node,
            0,
            generation,
            &mut EachFact(|f| emit(locate(node, f))),
        );
    }
}

/// Facts with the line that shows each in the node's dump. Made in the facts' own memory (a
/// `Vec` collected from its `into_iter` reuses it), not beside it.
fn located<'r>(node: &Node<'_>, facts: Vec<Fact<'r>>) -> Vec<LocalFactOf<&'r str>> {
    let mut lines = Lines::new(node);
    facts.into_iter().map(|f| lines.locate(f)).collect()
}

/// [`locate`] remembering the last rule's line: an endpoint's weight fact follows its
/// endpoint fact and is shown by the same rule, and a line lookup is a search of the
/// dump's line index.
struct Lines<'n, 'a> {
    node: &'n Node<'a>,
    last_rule: Option<(rulelint_parser::RuleId, u32)>,
}

impl<'n, 'a> Lines<'n, 'a> {
    fn new(node: &'n Node<'a>) -> Self {
        Lines {
            node,
            last_rule: None,
        }
    }

    fn locate<'r>(&mut self, f: Fact<'r>) -> LocalFactOf<&'r str> {
        let Some(rule) = f.rule else {
            return locate(self.node, f);
        };
        let line = match self.last_rule {
            Some((last, line)) if last == rule => line,
            _ => {
                let line = self.node.rule_line(rule);
                self.last_rule = Some((rule, line));
                line
            }
        };
        LocalFactOf {
            subject: f.subject,
            value: f.value,
            line,
            by_rule: true,
            expected: f.expected,
        }
    }
}

/// A fact with the line that shows it in the node's dump.
fn locate<'r>(node: &Node<'_>, f: Fact<'r>) -> LocalFactOf<&'r str> {
    let line = match (f.rule, f.chain) {
        (Some(rule), _) => Some(node.rule_line(rule)),
        (None, Some(chain)) => node.chain_line(chain),
        (None, None) => f.line,
    };
    LocalFactOf {
        subject: f.subject,
        value: f.value,
        line: line.unwrap_or(0),
        by_rule: f.rule.is_some(),
        expected: f.expected,
    }
}

/// The destination an endpoint fact names.
fn destination<S: Copy>(subject: SubjectOf<S>) -> Option<S> {
    match subject {
        SubjectOf::Endpoint { destination, .. } | SubjectOf::LocalEndpoint { destination, .. } => {
            Some(destination)
        }
        _ => None,
    }
}

/// A node's table of names while its facts are made owned.
#[derive(Default)]
struct Strings<'r> {
    list: Vec<String>,
    ids: FxHashMap<&'r str, u32>,
}

impl<'r> Strings<'r> {
    fn id(&mut self, s: &'r str) -> u32 {
        *self.ids.entry(s).or_insert_with(|| {
            self.list.push(s.to_string());
            (self.list.len() - 1) as u32
        })
    }

    fn own(&mut self, list: Vec<LocalFactOf<&'r str>>) -> Vec<LocalFact> {
        list.into_iter().map(|f| f.map(|s| self.id(s))).collect()
    }
}

/// A node's facts in a [`Group`], as differences from the first node's list of that kind
/// (its [`Reference`]): varints of runs of facts the reference holds in the same order, at
/// its lines shifted as the node's dump is (a few steps where the dumps differ), and of facts
/// written out (subject and value ids with the fact's
/// flags, line). Nodes of a cluster hold nearly the same facts in the same order, their lines
/// shifted by what comes before, so a node costs bytes per fact it differs in, not per fact.
#[derive(Clone, Debug, Default)]
struct Packed {
    /// The list it is a node's ([`SERVICES`] ...), whose reference it is relative to.
    kind: usize,
    /// How the node's lines are shifted from the reference's: from each reference line on
    /// (ascending), by how many lines.
    shifts: Box<[(u32, i64)]>,
    bytes: Vec<u8>,
}

impl Packed {
    /// The line the node holds a reference fact at, when shifted like the facts around it.
    #[cfg(test)]
    fn shifted(&self, line: u32) -> u32 {
        let p = self.shifts.partition_point(|&(from, _)| from <= line);
        let shift = p.checked_sub(1).map_or(0, |p| self.shifts[p].1);
        if line == 0 {
            0
        } else {
            (i64::from(line) + shift) as u32
        }
    }

    /// [`Packed::shifted`], looking first at the shift `near` was left at and the next one:
    /// lines read in the order of a node's facts mostly rise, so the search is rarely needed.
    fn shifted_near(&self, line: u32, near: &mut usize) -> u32 {
        if line == 0 {
            return 0;
        }
        let s = &self.shifts;
        // `p` is the partition point when the shift before it starts at or before `line` and
        // the one at it after.
        let is_point = |p: usize| {
            p <= s.len()
                && (p == 0 || s[p - 1].0 <= line)
                && s.get(p).is_none_or(|&(from, _)| from > line)
        };
        let p = if is_point(*near) {
            *near
        } else if is_point(*near + 1) {
            *near + 1
        } else {
            s.partition_point(|&(from, _)| from <= line)
        };
        *near = p;
        let shift = p.checked_sub(1).map_or(0, |p| s[p].1);
        (i64::from(line) + shift) as u32
    }
}

/// The first node's facts of one list, which the others are packed against.
#[derive(Debug, Default)]
struct Reference {
    entries: Vec<Entry>,
    /// For each subject id, its first position in `entries` (`u32::MAX`: not there).
    positions: Vec<u32>,
}

/// The line shifts of (reference line, line) pairs given in sorted order: where the shift
/// changes, by reference line.
#[derive(Default)]
struct LineShifts {
    shifts: Vec<(u32, i64)>,
    current: i64,
}

impl LineShifts {
    fn push(&mut self, pair: u64) {
        let (from, to) = ((pair >> 32) as u32, pair as u32);
        let shift = i64::from(to) - i64::from(from);
        if shift != self.current {
            self.shifts.push((from, shift));
            self.current = shift;
        }
    }
}

impl Reference {
    fn new(mut entries: Vec<Entry>) -> Reference {
        // Collected into a guessed capacity (doubled when the guess was a little short),
        // then held for the whole comparison.
        entries.shrink_to_fit();
        let size = entries
            .iter()
            .map(|e| e.subject as usize + 1)
            .max()
            .unwrap_or(0);
        let mut positions = vec![u32::MAX; size];
        for (p, e) in entries.iter().enumerate().rev() {
            positions[e.subject as usize] = p as u32;
        }
        Reference { entries, positions }
    }

    /// Where packing goes on after a fact written out: past the subject's place in the
    /// reference (unchanged when the reference lacks it).
    fn resync(&self, e: &Entry, cursor: &mut usize) {
        if let Some(&p) = self.positions.get(e.subject as usize)
            && (p as usize) < self.entries.len()
        {
            *cursor = p as usize + 1;
        }
    }

    /// The reference fact at `cursor` when it is `e` up to its line.
    fn alike(&self, cursor: usize, e: &Entry) -> Option<&Entry> {
        self.entries.get(cursor).filter(|r| {
            (r.subject, r.value, r.by_rule, r.expected)
                == (e.subject, e.value, e.by_rule, e.expected)
        })
    }

    /// [`Reference::pack`] of the reference's own facts, found without reading them: one
    /// run of all of them, unshifted (packing them cost the first node's packing a fifth).
    fn pack_itself(&self, kind: usize) -> Packed {
        let mut bytes = Vec::new();
        if !self.entries.is_empty() {
            put_varint(&mut bytes, (self.entries.len() as u64) << 1);
        }
        bytes.shrink_to_fit();
        Packed {
            kind,
            shifts: Box::new([]),
            bytes,
        }
    }

    fn pack(&self, kind: usize, list: &[Entry]) -> Packed {
        // How lines shift: from the facts alike in both, by reference line.
        // Each pair (reference line, line) as one number, which sorts as the pair does and
        // faster (a third of a 250k-rule pair's packing went to sorting tuples).
        let pairs = || {
            let mut cursor = 0usize;
            list.iter()
                .filter_map(move |e| match self.alike(cursor, e) {
                    Some(r) => {
                        cursor += 1;
                        (r.line != 0 && e.line != 0)
                            .then(|| (u64::from(r.line) << 32) | u64::from(e.line))
                    }
                    None => {
                        self.resync(e, &mut cursor);
                        None
                    }
                })
        };
        // Nodes alike shift every line alike (by 0 when only rules changed in place): then
        // the shifts are known without the pairs in a sorted list (8 bytes a fact at the
        // peak of a 1M-chain pair, issue 16); otherwise they are collected and sorted.
        let shift_of = |pair: u64| i64::from(pair as u32) - (pair >> 32) as i64;
        let mut first: Option<u64> = None;
        let one_shift = pairs().all(|pair| match first {
            None => {
                first = Some(pair);
                true
            }
            Some(f) => {
                first = Some(f.min(pair));
                shift_of(pair) == shift_of(f)
            }
        });
        let mut shifts = LineShifts::default();
        match first {
            Some(f) if one_shift => shifts.push(f),
            None => {}
            Some(_) => {
                let mut pairs: Vec<u64> = pairs().collect();
                pairs.sort_unstable();
                pairs.into_iter().for_each(|pair| shifts.push(pair));
            }
        }
        let shifts = shifts.shifts;
        let mut packed = Packed {
            kind,
            shifts: shifts.into_boxed_slice(),
            bytes: Vec::new(),
        };
        let mut bytes = Vec::new();
        let (mut cursor, mut run) = (0usize, 0u64);
        let mut near = 0usize;
        for e in list {
            if let Some(r) = self.alike(cursor, e)
                && packed.shifted_near(r.line, &mut near) == e.line
            {
                run += 1;
                cursor += 1;
                continue;
            }
            if run > 0 {
                put_varint(&mut bytes, run << 1);
                run = 0;
            }
            put_varint(&mut bytes, 1);
            put_varint(&mut bytes, u64::from(e.subject));
            put_varint(
                &mut bytes,
                (u64::from(e.value) << 3) | (expected_code(e.expected) << 1) | u64::from(e.by_rule),
            );
            put_varint(&mut bytes, u64::from(e.line));
            self.resync(e, &mut cursor);
        }
        if run > 0 {
            put_varint(&mut bytes, run << 1);
        }
        bytes.shrink_to_fit();
        packed.bytes = bytes;
        packed
    }

    /// The facts of a node packed against this reference.
    fn unpack<'g>(&'g self, packed: &'g Packed) -> impl Iterator<Item = Entry> + 'g {
        let bytes = &packed.bytes;
        let mut at = 0usize;
        let (mut cursor, mut run, mut near) = (0usize, 0u64, 0usize);
        let next = move |at: &mut usize| -> Option<u64> {
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let b = *bytes.get(*at)?;
                *at += 1;
                v |= u64::from(b & 0x7f) << shift;
                if b < 0x80 {
                    return Some(v);
                }
                shift += 7;
                if shift > 63 {
                    return None;
                }
            }
        };
        std::iter::from_fn(move || {
            loop {
                if run > 0 {
                    let r = self.entries.get(cursor)?;
                    run -= 1;
                    cursor += 1;
                    return Some(Entry {
                        line: packed.shifted_near(r.line, &mut near),
                        ..*r
                    });
                }
                let op = next(&mut at)?;
                if op & 1 == 0 {
                    run = op >> 1;
                    continue;
                }
                let subject = u32::try_from(next(&mut at)?).ok()?;
                let flags = next(&mut at)?;
                let line = u32::try_from(next(&mut at)?).ok()?;
                let e = Entry {
                    subject,
                    value: u32::try_from(flags >> 3).ok()?,
                    line,
                    by_rule: flags & 1 == 1,
                    expected: expected_of((flags >> 1) & 3),
                };
                self.resync(&e, &mut cursor);
                return Some(e);
            }
        })
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn expected_code(e: Option<Expected>) -> u64 {
    match e {
        None => 0,
        Some(Expected::LocalEndpoints) => 1,
        Some(Expected::NodeLocalChain) => 2,
        Some(Expected::NodeAddress) => 3,
    }
}

fn expected_of(code: u64) -> Option<Expected> {
    match code {
        1 => Some(Expected::LocalEndpoints),
        2 => Some(Expected::NodeLocalChain),
        3 => Some(Expected::NodeAddress),
        _ => None,
    }
}

/// One fact of a [`Packed`] node, ids into the group's tables. 14 bytes rather than 16 (packed
/// to 2-byte alignment): a node's entries are one per fact, a million for a 1M-chain dump.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(2))]
struct Entry {
    subject: u32,
    value: u32,
    line: u32,
    by_rule: bool,
    expected: Option<Expected>,
}

/// A node as a [`Group`] holds it.
#[derive(Clone, Debug, Default)]
struct Stored {
    services: Option<Packed>,
    catalog: Option<Packed>,
    chains: Packed,
    /// A node read from a version 2 summary: its facts are in the group's [`Chunks`].
    chunked: Option<Chunked>,
    extra_endpoint_ips: Vec<IpAddr>,
}

impl Stored {
    fn has_catalog(&self) -> bool {
        self.catalog.is_some() || self.chunked.as_ref().is_some_and(|c| c.has_catalog)
    }
}

/// A node of a version 2 summary: the chunks of facts it holds (shared with every node that
/// holds the same) and where its lines of each are.
#[derive(Clone, Debug, Default)]
struct Chunked {
    has_model: bool,
    has_catalog: bool,
    /// The summary's file when its lines are left there (read back through the group's
    /// [`LineReader`]); else they are in [`Chunks::lines`].
    file: Option<Box<str>>,
    parts: Box<[ChunkPart]>,
}

/// A chunk of a node and where its lines are.
#[derive(Clone, Copy, Debug)]
struct ChunkPart {
    /// Index into [`Chunks::list`].
    chunk: u32,
    /// Index into [`Chunks::lines`], or the offset of the lines member in the node's file.
    lines: u64,
    /// The length of the lines member in the file.
    lines_len: u32,
}

/// Reads `len` bytes at `offset` of a file (the CLI's: the library touches no file).
type ReadBytes = dyn Fn(&str, u64, u32) -> Option<Vec<u8>> + Send + Sync;

/// How a group reads back the lines it left in summary files.
#[derive(Default)]
struct LineReader(Option<Box<ReadBytes>>);

impl std::fmt::Debug for LineReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "LineReader(set)"
        } else {
            "LineReader(none)"
        })
    }
}

impl Chunked {
    /// Which Service facts a reading takes (a bit of [`ChunkEntry::flags`]' lists): the
    /// catalogue's (2) when the comparison reads catalogues and the node has one, or has
    /// nothing else; else the model's (1).
    fn services_mask(&self, by_catalog: bool) -> u8 {
        if self.has_catalog && (by_catalog || !self.has_model) {
            2
        } else if self.has_model {
            1
        } else {
            0
        }
    }
}

/// The chunks of facts of version 2 summaries, each read once however many nodes hold it,
/// and the nodes' lines of them, kept compressed until a report needs them.
#[derive(Debug, Default)]
struct Chunks {
    list: Vec<Chunk>,
    by_hash: FxHashMap<u64, Vec<u32>>,
    lines: Vec<Box<[u8]>>,
    lines_by_hash: FxHashMap<u64, Vec<u32>>,
}

/// A chunk of facts: its gzip member (to tell it from another of the same hash) and its facts.
#[derive(Debug)]
struct Chunk {
    bytes: Box<[u8]>,
    entries: Box<[ChunkEntry]>,
}

/// A fact of a [`Chunk`], ids into the group's tables.
#[derive(Clone, Copy, Debug)]
struct ChunkEntry {
    /// The subject as the iptables model (or, for chain facts, anything) reads it.
    subject: u32,
    /// The subject as the catalogue reads it (an endpoint's chain blank where flagged).
    catalog_subject: u32,
    value: u32,
    /// Bit 0: a rule shows it; bits 1-2: [`expected_code`]; bits 3-4: the lists that hold a
    /// Service fact (1 the model's, 2 the catalogue's), 0 for chain facts.
    flags: u8,
}

impl ChunkEntry {
    /// The fact as a reading with `mask` (see [`Chunked::services_mask`]) takes it, if it does.
    fn read(&self, mask: u8, line: u32, catalog_line: u32) -> Option<Entry> {
        let lists = (self.flags >> 3) & 3;
        let catalog = lists != 0 && mask == 2;
        if lists != 0 && lists & mask == 0 {
            return None;
        }
        Some(Entry {
            subject: if catalog {
                self.catalog_subject
            } else {
                self.subject
            },
            value: self.value,
            line: if catalog { catalog_line } else { line },
            by_rule: !catalog && self.flags & 1 == 1,
            expected: expected_of(u64::from((self.flags >> 1) & 3)),
        })
    }
}

/// How the nodes of a comparison use the chunks of summaries: each (chunk, Service reading)
/// once, with the number of nodes that hold it.
struct ChunkUse {
    /// (chunk, [`Chunked::services_mask`]).
    keys: Vec<(u32, u8)>,
    /// Nodes holding each key.
    uses: Vec<u32>,
    /// Each node's keys, in the order of its parts; `None` for a node not read from chunks,
    /// or holding a chunk twice (read fact by fact).
    nodes: Vec<Option<Vec<u32>>>,
}

impl ChunkUse {
    fn of(group: &Group, by_catalog: bool) -> ChunkUse {
        let mut ids: FxHashMap<(u32, u8), u32> = FxHashMap::default();
        let mut out = ChunkUse {
            keys: Vec::new(),
            uses: Vec::new(),
            nodes: Vec::with_capacity(group.nodes.len()),
        };
        for stored in &group.nodes {
            let Some(c) = stored.as_ref().and_then(|n| n.chunked.as_ref()) else {
                out.nodes.push(None);
                continue;
            };
            let mask = c.services_mask(by_catalog);
            let keys: Vec<u32> = c
                .parts
                .iter()
                .map(|p| {
                    *ids.entry((p.chunk, mask)).or_insert_with(|| {
                        out.keys.push((p.chunk, mask));
                        out.uses.push(0);
                        (out.keys.len() - 1) as u32
                    })
                })
                .collect();
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                out.nodes.push(None);
                continue;
            }
            for &k in &keys {
                out.uses[k as usize] += 1;
            }
            out.nodes.push(Some(keys));
        }
        out
    }

    /// For each key, the indexes of its chunk's entries that its reading takes with a subject
    /// `wanted`.
    fn entries_where(&self, group: &Group, wanted: impl Fn(u32) -> bool) -> Vec<Vec<u32>> {
        self.keys
            .iter()
            .map(|&(chunk, mask)| {
                group.chunks.list[chunk as usize]
                    .entries
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.read(mask, 0, 0).is_some_and(|e| wanted(e.subject)))
                    .map(|(i, _)| i as u32)
                    .collect()
            })
            .collect()
    }
}

/// FxHash of bytes: which stored chunk to compare a chunk with.
fn hash_bytes(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(bytes);
    h.finish()
}

/// FxHash with a final mix, so that subjects differing only in small ids spread over the
/// table. (No gain measured over plain FxHash: the key comparisons profiles show are cache
/// misses, which [`Follow`] avoids.)
#[derive(Default)]
struct Mixed(rustc_hash::FxHasher);

impl std::hash::Hasher for Mixed {
    fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }
    fn write_u8(&mut self, i: u8) {
        self.0.write_u8(i);
    }
    fn write_u16(&mut self, i: u16) {
        self.0.write_u16(i);
    }
    fn write_u32(&mut self, i: u32) {
        self.0.write_u32(i);
    }
    fn write_u64(&mut self, i: u64) {
        self.0.write_u64(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.0.write_usize(i);
    }
    fn write_isize(&mut self, i: isize) {
        self.0.write_isize(i);
    }
    fn finish(&self) -> u64 {
        // murmur3's fmix64.
        let mut h = self.0.finish();
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// A table of distinct things, each with an id. The hash table holds ids only, the things
/// once in `list`: a second copy as hash-map keys would double the table (a 1M-chain dump's
/// names and subjects).
#[derive(Debug)]
struct Table<T> {
    list: Vec<T>,
    ids: hashbrown::HashTable<u32>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table {
            list: Vec::new(),
            ids: hashbrown::HashTable::new(),
        }
    }
}

/// The hash a [`Table`] files a thing under.
fn table_hash<Q: std::hash::Hash + ?Sized>(q: &Q) -> u64 {
    use std::hash::BuildHasher;
    std::hash::BuildHasherDefault::<Mixed>::default().hash_one(q)
}

impl<T: Eq + std::hash::Hash> Table<T> {
    /// The id of the thing hashed `hash` that `is` picks out, if the table holds it.
    fn find(&self, hash: u64, is: impl Fn(&T) -> bool) -> Option<u32> {
        self.ids
            .find(hash, |&id| is(&self.list[id as usize]))
            .copied()
    }

    /// Adds `t`, new, hashed `hash`; its id.
    fn add(&mut self, hash: u64, t: T) -> u32 {
        let id = self.list.len() as u32;
        self.list.push(t);
        let list = &self.list;
        self.ids
            .insert_unique(hash, id, |&id| table_hash(&list[id as usize]));
        id
    }

    /// Room for `more` things without growing.
    fn reserve(&mut self, more: usize) {
        let list = &self.list;
        self.ids.reserve(more, |&id| table_hash(&list[id as usize]));
    }

    fn id(&mut self, t: T) -> u32 {
        let hash = table_hash(&t);
        match self.find(hash, |x| *x == t) {
            Some(id) => id,
            None => self.add(hash, t),
        }
    }
}

/// A subject as a [`Subjects`] table holds it: 16 bytes, where a `SubjectOf<u32>` takes 40
/// (its `Address` variant, and the name in `Scope::Nft`); a 1M-chain pair's million subjects
/// were 42 MB. `kind` is the variant, `ids` its names in field order, `scope` an index into the
/// table's scopes; an address (a few per Service port), or a subject with more scopes than
/// `u16` counts, is held whole in the table's side list, `ids[0]` its index there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct SubjectKey {
    kind: u8,
    scope: u16,
    ids: [u32; 3],
}

/// [`SubjectKey::kind`] of a subject held whole.
const WHOLE: u8 = u8::MAX;
/// [`SubjectKey::kind`] of a [`SubjectOf::ChainRules`].
const CHAIN_RULES: u8 = 11;

/// Distinct subjects, each with an id (in the order they were added), 16 bytes each
/// ([`SubjectKey`]).
#[derive(Debug, Default)]
struct Subjects {
    keys: Table<SubjectKey>,
    /// The subjects held whole: addresses, in the order they were added.
    whole: Table<SubjectOf<u32>>,
    scopes: Vec<Scope>,
}

impl Subjects {
    fn len(&self) -> usize {
        self.keys.list.len()
    }

    fn reserve(&mut self, more: usize) {
        self.keys.reserve(more);
    }

    /// Whether some subject is a [`SubjectOf::ChainRules`] (held whole only when its scope
    /// could not be numbered).
    fn has_chain_rules(&self) -> bool {
        self.keys.list.iter().any(|k| k.kind == CHAIN_RULES)
            || self
                .whole
                .list
                .iter()
                .any(|s| matches!(s, SubjectOf::ChainRules { .. }))
    }

    /// The subject with id `id` (a `Service` of name 0 for an id the table never gave).
    fn get(&self, id: u32) -> SubjectOf<u32> {
        self.keys
            .list
            .get(id as usize)
            .map_or(SubjectOf::Service { service: 0 }, |&k| self.unpack(k))
    }

    fn id(&mut self, subject: SubjectOf<u32>) -> u32 {
        let key = self.pack(subject);
        self.keys.id(key)
    }

    fn pack(&mut self, subject: SubjectOf<u32>) -> SubjectKey {
        let Subjects { whole, scopes, .. } = self;
        let scope = |s: &Scope| {
            Some(match scopes.iter().position(|x| x == s) {
                Some(i) => i,
                None => {
                    scopes.push(*s);
                    scopes.len() - 1
                }
            })
        };
        Self::key_with(subject, scope, |s| Some(whole.id(s))).unwrap_or(SubjectKey {
            kind: WHOLE,
            scope: 0,
            ids: [0; 3],
        })
    }

    /// The key of `subject`, its scope's index and its index among the whole ones given by
    /// `scope` and `whole`.
    fn key_with(
        subject: SubjectOf<u32>,
        mut scope: impl FnMut(&Scope) -> Option<usize>,
        mut whole: impl FnMut(SubjectOf<u32>) -> Option<u32>,
    ) -> Option<SubjectKey> {
        let key = |kind: u8, scope: u16, ids: [u32; 3]| Some(SubjectKey { kind, scope, ids });
        let mut scoped = |kind: u8, s: &Scope, ids: [u32; 3]| match scope(s) {
            Some(i) if i < usize::from(u16::MAX) => key(kind, i as u16, ids),
            _ => key(WHOLE, 0, [whole(subject)?, 0, 0]),
        };
        match subject {
            SubjectOf::Service { service } => key(0, 0, [service, 0, 0]),
            SubjectOf::ServiceChain { service, chain } => key(1, 0, [service, chain, 0]),
            SubjectOf::Address { .. } => key(WHOLE, 0, [whole(subject)?, 0, 0]),
            SubjectOf::NoEndpointsReject { service } => key(3, 0, [service, 0, 0]),
            SubjectOf::Endpoint {
                service,
                chain,
                destination,
            } => key(4, 0, [service, chain, destination]),
            SubjectOf::Weight {
                service,
                destination,
            } => key(5, 0, [service, destination, 0]),
            SubjectOf::LocalEndpoint {
                service,
                destination,
            } => key(6, 0, [service, destination, 0]),
            SubjectOf::NoLocalEndpointsDrop { service } => key(7, 0, [service, 0, 0]),
            SubjectOf::HookJump {
                table,
                hook,
                target,
                scope,
            } => scoped(8, &scope, [table, hook, target]),
            SubjectOf::Chain {
                table,
                chain,
                scope,
            } => scoped(9, &scope, [table, chain, 0]),
            SubjectOf::Policy {
                table,
                chain,
                scope,
            } => scoped(10, &scope, [table, chain, 0]),
            SubjectOf::ChainRules {
                table,
                chain,
                scope,
            } => scoped(CHAIN_RULES, &scope, [table, chain, 0]),
        }
    }

    fn unpack(&self, key: SubjectKey) -> SubjectOf<u32> {
        let [a, b, c] = key.ids;
        let scope = || {
            self.scopes
                .get(usize::from(key.scope))
                .copied()
                .unwrap_or(Scope::Iptables)
        };
        match key.kind {
            0 => SubjectOf::Service { service: a },
            1 => SubjectOf::ServiceChain {
                service: a,
                chain: b,
            },
            3 => SubjectOf::NoEndpointsReject { service: a },
            4 => SubjectOf::Endpoint {
                service: a,
                chain: b,
                destination: c,
            },
            5 => SubjectOf::Weight {
                service: a,
                destination: b,
            },
            6 => SubjectOf::LocalEndpoint {
                service: a,
                destination: b,
            },
            7 => SubjectOf::NoLocalEndpointsDrop { service: a },
            8 => SubjectOf::HookJump {
                table: a,
                hook: b,
                target: c,
                scope: scope(),
            },
            9 => SubjectOf::Chain {
                table: a,
                chain: b,
                scope: scope(),
            },
            10 => SubjectOf::Policy {
                table: a,
                chain: b,
                scope: scope(),
            },
            CHAIN_RULES => SubjectOf::ChainRules {
                table: a,
                chain: b,
                scope: scope(),
            },
            _ => self
                .whole
                .list
                .get(a as usize)
                .copied()
                .unwrap_or(SubjectOf::Service { service: 0 }),
        }
    }
}

/// Distinct names, each with an id, their text in one buffer: a name costs its bytes and an
/// end offset, not an allocation of its own (a 1M-chain dump's names are mostly short).
#[derive(Debug, Default)]
struct Names {
    text: String,
    /// Where each name ends in `text` (it starts where the one before ends).
    ends: Ends,
    ids: hashbrown::HashTable<u32>,
}

impl Names {
    /// The name with id `id`.
    fn get(&self, id: u32) -> Option<&str> {
        let i = id as usize;
        let end = self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends.get(i - 1)? };
        self.text.get(start..end)
    }

    /// The id of a name, copied only when new.
    fn id_str(&mut self, s: &str) -> u32 {
        let hash = table_hash(s);
        if let Some(id) = self.find(hash, s) {
            return id;
        }
        let id = self.ends.len() as u32;
        self.text.push_str(s);
        self.ends.push(self.text.len());
        let Names { text, ends, ids } = self;
        ids.insert_unique(hash, id, |&id| table_hash(name_at(text, ends, id)));
        id
    }

    /// Room for `more` names without growing the hash table.
    fn reserve(&mut self, more: usize) {
        let Names { text, ends, ids } = self;
        ids.reserve(more, |&id| table_hash(name_at(text, ends, id)));
        ends.reserve(more);
    }

    /// The id of a name the table holds.
    fn get_str(&self, s: &str) -> Option<u32> {
        self.find(table_hash(s), s)
    }

    fn find(&self, hash: u64, s: &str) -> Option<u32> {
        self.ids
            .find(hash, |&id| name_at(&self.text, &self.ends, id) == s)
            .copied()
    }
}

/// The ids of names just looked up, by where the name is in memory: facts of one Service
/// repeat its name (the same slice of the dump), found here without hashing it. Lives for one
/// list of facts, while the names it saw are borrowed.
struct SeenNames {
    slots: [(usize, usize, u32); 64],
}

impl Default for SeenNames {
    fn default() -> Self {
        SeenNames {
            slots: [(0, 0, 0); 64],
        }
    }
}

impl SeenNames {
    fn id(&mut self, names: &mut Names, s: &str) -> u32 {
        self.id_or(s, |s| names.id_str(s))
    }

    /// The id of `s` if it was seen, else `find(s)`, remembered.
    fn id_or(&mut self, s: &str, find: impl FnOnce(&str) -> u32) -> u32 {
        let key = (s.as_ptr() as usize, s.len());
        let slot = &mut self.slots[(key.0 ^ (key.0 >> 6) ^ key.1) % 64];
        // A slice at the same address with the same length is the same text (an empty
        // slot holds a null address, which no name has).
        if (slot.0, slot.1) == key {
            return slot.2;
        }
        let id = find(s);
        *slot = (key.0, key.1, id);
        id
    }
}

/// The ids of one node's names, fact by fact, in a list of facts packed from a dump: the first
/// node's are looked up (their order remembered), a later node's found by walking along the
/// first's, which it mostly repeats, reading the names in the order they were added rather
/// than hashing each into a table far larger than the cache.
struct NameWalk<'f> {
    follow: &'f Follow,
    cursor: usize,
    seen: SeenNames,
    /// The ids in order, when this is the first node.
    first: Option<Vec<u32>>,
}

impl<'f> NameWalk<'f> {
    fn new(follow: &'f Follow, expected: usize) -> NameWalk<'f> {
        NameWalk {
            follow,
            cursor: 0,
            seen: SeenNames::default(),
            first: follow.ids.is_empty().then(|| Vec::with_capacity(expected)),
        }
    }

    fn id(&mut self, names: &mut Names, s: &str) -> u32 {
        match &mut self.first {
            Some(first) => {
                let id = self.seen.id(names, s);
                first.push(id);
                id
            }
            None => {
                // A name just seen (a Service port's key, repeated in each of its facts)
                // is known by where it is, not compared with the first node's again; the
                // walk moves on when it is the name expected there.
                let (follow, cursor) = (self.follow, &mut self.cursor);
                let mut walked = false;
                let id = self.seen.id_or(s, |s| {
                    walked = true;
                    follow.id_of(names, s, cursor)
                });
                if !walked && follow.ids.get(*cursor) == Some(&id) {
                    *cursor += 1;
                }
                id
            }
        }
    }
}

/// Name `id` of a [`Names`] by its parts (borrowed apart from its hash table).
fn name_at<'t>(text: &'t str, ends: &Ends, id: u32) -> &'t str {
    let i = id as usize;
    let end = ends.get(i).unwrap_or(0);
    let start = if i == 0 {
        0
    } else {
        ends.get(i - 1).unwrap_or(0)
    };
    text.get(start..end).unwrap_or("")
}

/// Where the names of a [`Names`] end in its text: 4 bytes a name (a 1M-chain pair's names
/// held 8 MB of `usize` ends), widened once to 8 when the text passes 4 GiB.
#[derive(Debug, PartialEq, Eq)]
enum Ends {
    Narrow(Vec<u32>),
    Wide(Vec<usize>),
}

impl Default for Ends {
    fn default() -> Self {
        Ends::Narrow(Vec::new())
    }
}

impl Ends {
    fn len(&self) -> usize {
        match self {
            Ends::Narrow(v) => v.len(),
            Ends::Wide(v) => v.len(),
        }
    }

    fn get(&self, i: usize) -> Option<usize> {
        match self {
            Ends::Narrow(v) => v.get(i).map(|&e| e as usize),
            Ends::Wide(v) => v.get(i).copied(),
        }
    }

    fn push(&mut self, end: usize) {
        if let Ends::Narrow(v) = self {
            match u32::try_from(end) {
                Ok(end) => return v.push(end),
                Err(_) => *self = Ends::Wide(v.iter().map(|&e| e as usize).collect()),
            }
        }
        if let Ends::Wide(v) = self {
            v.push(end);
        }
    }

    fn reserve(&mut self, more: usize) {
        match self {
            Ends::Narrow(v) => v.reserve(more),
            Ends::Wide(v) => v.reserve(more),
        }
    }
}

/// The facts of many nodes, for one comparison. Nodes are inserted by index, in any order.
#[derive(Debug, Default)]
pub struct Group {
    infos: Vec<NodeInfo>,
    nodes: Vec<Option<Stored>>,
    strings: Names,
    subjects: Subjects,
    values: Table<ValueOf<u32>>,
    /// The first node's names and subjects in its order, per list ([`STRINGS`] ...).
    follow: [Follow; 4],
    /// The names of the first node's facts in their order, per list, for nodes packed from
    /// their dumps ([`Group::insert_node`], [`Group::insert_collected`]).
    follow_names: [Follow; 3],
    /// The first node's facts of each list, which nodes are packed against.
    references: [Reference; 3],
    /// The facts of nodes read from version 2 summaries.
    chunks: Chunks,
    line_reader: LineReader,
}

/// A table that [`Follow`] checks and adds to.
trait Lookup<I> {
    /// Whether `id` is `item`.
    fn holds(&self, id: u32, item: &I) -> bool;
    /// The id of `item`, added when new.
    fn lookup(&mut self, item: I) -> u32;
}

impl Lookup<&String> for Names {
    fn holds(&self, id: u32, item: &&String) -> bool {
        self.get(id) == Some(item.as_str())
    }
    fn lookup(&mut self, item: &String) -> u32 {
        self.id_str(item)
    }
}

impl Lookup<&str> for Names {
    fn holds(&self, id: u32, item: &&str) -> bool {
        name_at(&self.text, &self.ends, id) == *item
    }
    fn lookup(&mut self, item: &str) -> u32 {
        self.id_str(item)
    }
}

impl Lookup<SubjectOf<u32>> for Subjects {
    fn holds(&self, id: u32, item: &SubjectOf<u32>) -> bool {
        self.keys
            .list
            .get(id as usize)
            .is_some_and(|&k| self.unpack(k) == *item)
    }
    fn lookup(&mut self, item: SubjectOf<u32>) -> u32 {
        self.id(item)
    }
}

const SERVICES: usize = 0;
const CATALOG: usize = 1;
const CHAINS: usize = 2;
const STRINGS: usize = 3;

/// The ids of the first node's list (names, subjects) in its order: nodes of a cluster list
/// alike things in alike order, so the next node's are mostly found by walking along it,
/// reading memory in order, rather than by a lookup in a table far larger than the cache.
#[derive(Debug, Default)]
struct Follow {
    ids: Vec<u32>,
    /// For each id, its first position in `ids` (`u32::MAX`: not there).
    positions: Vec<u32>,
}

impl Follow {
    /// The ids of `items` in `table`: the same ids as lookups alone would give. The first
    /// list given is remembered.
    fn ids_of<I, T: Lookup<I>>(
        &mut self,
        table: &mut T,
        items: impl Iterator<Item = I>,
    ) -> Vec<u32> {
        let mut out = Vec::with_capacity(items.size_hint().0);
        let mut cursor = 0usize;
        for item in items {
            out.push(self.id_of(table, item, &mut cursor));
        }
        if self.ids.is_empty() && !out.is_empty() {
            self.remember(out.clone());
        }
        out
    }

    /// The id of one item of a list in `table`, `cursor` where the list is along the first
    /// one (0 at its start).
    fn id_of<I, T: Lookup<I>>(&self, table: &mut T, item: I, cursor: &mut usize) -> u32 {
        match self.ids.get(*cursor) {
            Some(&id) if table.holds(id, &item) => {
                *cursor += 1;
                id
            }
            _ => {
                let id = table.lookup(item);
                if let Some(&p) = self.positions.get(id as usize)
                    && p != u32::MAX
                {
                    *cursor = p as usize + 1;
                }
                id
            }
        }
    }

    /// Takes `ids` as the first list, when none was given before.
    fn remember(&mut self, mut ids: Vec<u32>) {
        if !self.ids.is_empty() || ids.is_empty() {
            return;
        }
        // Reserved for three names a fact; a chain fact has two (4 MB on a 1M-chain dump).
        ids.shrink_to_fit();
        let size = ids.iter().max().map_or(0, |&m| m as usize + 1);
        self.positions = vec![u32::MAX; size];
        for (p, &id) in ids.iter().enumerate().rev() {
            self.positions[id as usize] = p as u32;
        }
        self.ids = ids;
    }
}

impl Group {
    /// A group of `count` nodes, none inserted yet.
    pub fn new(count: usize) -> Group {
        Group {
            infos: (0..count)
                .map(|_| NodeInfo {
                    name: String::new(),
                    rules: 0,
                    parse_errors: 0,
                    backend: NodeBackend::Iptables,
                    nft_generation: None,
                    services_unknown: false,
                })
                .collect(),
            nodes: vec![None; count],
            ..Group::default()
        }
    }

    /// The facts of prepared nodes (as [`super::prepare`] returns them).
    pub fn from_nodes(nodes: &[Node<'_>]) -> Group {
        let options = FactOptions {
            digests: nodes.len() > 2,
            catalog: nodes.iter().any(|n| n.backend != NodeBackend::Iptables),
        };
        let mut group = Group::new(nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            group.insert_node(i, node, options);
        }
        group
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the group has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// What the report says about the nodes.
    pub fn infos(&self) -> &[NodeInfo] {
        &self.infos
    }

    /// Takes in the facts of node `index` (an index past the end is ignored).
    pub fn insert(&mut self, index: usize, facts: NodeFacts) {
        if index >= self.nodes.len() {
            return;
        }
        let ids = self.follow[STRINGS].ids_of(&mut self.strings, facts.strings.iter());
        let global = |id: u32| ids.get(id as usize).copied().unwrap_or(0);
        let stored = Stored {
            services: facts.services.map(|l| self.pack(SERVICES, l, global)),
            catalog: facts.catalog.map(|l| self.pack(CATALOG, l, global)),
            chains: self.pack(CHAINS, facts.chains, global),
            chunked: None,
            extra_endpoint_ips: facts.extra_endpoint_ips,
        };
        self.infos[index] = facts.info;
        self.nodes[index] = Some(stored);
    }

    /// Takes in the facts of a node's dump as node `index`: [`Group::insert`] of
    /// [`NodeFacts::from_node`], without copying every name first.
    pub fn insert_node(&mut self, index: usize, node: &Node<'_>, options: FactOptions) {
        if index >= self.nodes.len() {
            return;
        }
        // An iptables node's Service facts are packed as they are collected.
        let services = (node.backend == NodeBackend::Iptables).then(|| {
            let model = &node.model;
            let expected = 4 * model.services.len() + 2 * model.endpoints.len();
            self.pack_each(SERVICES, expected, |emit| {
                let mut lines = Lines::new(node);
                collect_iptables_services(node, 0, &mut EachFact(|f| emit(lines.locate(f))));
            })
        });
        // Catalogue facts too, without a list of them (200k facts of an IPVS node were 34 MB).
        let mut built = Vec::new();
        let catalog = catalog_entries(node, options, &mut built).map(|entries| {
            let expected = catalog_fact_count(entries.clone(), true);
            self.pack_each(CATALOG, expected, |emit| {
                collect_catalog(entries, 0, true, &mut EachFact(|f| emit(locate(node, f))));
            })
        });
        drop(built);
        Collected::with(node, options, Lists::Neither, |c| {
            let stored = Stored {
                services,
                catalog,
                chains: self.pack_chains(node, options),
                chunked: None,
                // All of them: parsing the endpoint facts' addresses to leave those out
                // costs more than holding them for one comparison.
                extra_endpoint_ips: node.endpoint_ips().iter().copied().collect(),
            };
            self.infos[index] = c.info;
            self.nodes[index] = Some(stored);
        });
    }

    /// Takes in facts collected apart as node `index`: the same as [`Group::insert_node`] of
    /// their node.
    pub fn insert_collected(&mut self, index: usize, facts: CollectedFacts<'_, '_>) {
        if index >= self.nodes.len() {
            return;
        }
        let CollectedFacts {
            collected,
            node,
            options,
            extra_endpoint_ips,
        } = facts;
        let stored = Stored {
            services: collected.services.map(|l| self.pack_named(SERVICES, l)),
            catalog: collected.catalog.map(|l| self.pack_named(CATALOG, l)),
            chains: self.pack_chains(node, options),
            chunked: None,
            extra_endpoint_ips,
        };
        self.infos[index] = collected.info;
        self.nodes[index] = Some(stored);
    }

    /// Takes in a version 2 summary as node `index`: chunks another node holds too are found
    /// by their bytes and not read again; the node's lines are kept compressed.
    pub fn insert_summary(
        &mut self,
        index: usize,
        summary: &crate::summary::v2::Summary,
    ) -> Result<(), crate::summary::SummaryError> {
        self.insert_chunks(index, summary, None)
    }

    /// [`Group::insert_summary`] of the summary in file `path`, its lines left there: only
    /// those of the facts a report shows are read back, with the reader given to
    /// [`Group::read_lines_with`]. A node then costs bytes per chunk, not its lines.
    pub fn insert_summary_from(
        &mut self,
        index: usize,
        summary: &crate::summary::v2::Summary,
        path: &str,
    ) -> Result<(), crate::summary::SummaryError> {
        self.insert_chunks(index, summary, Some(path))
    }

    /// How lines left in summary files are read back: `read(path, offset, len)` gives those
    /// bytes of the file, or `None` (then the facts show no line).
    pub fn read_lines_with(
        &mut self,
        read: impl Fn(&str, u64, u32) -> Option<Vec<u8>> + Send + Sync + 'static,
    ) {
        self.line_reader = LineReader(Some(Box::new(read)));
    }

    fn insert_chunks(
        &mut self,
        index: usize,
        summary: &crate::summary::v2::Summary,
        file: Option<&str>,
    ) -> Result<(), crate::summary::SummaryError> {
        if index >= self.nodes.len() {
            return Ok(());
        }
        let mut parts = Vec::new();
        for chunk in summary.chunks() {
            let facts = self.chunk_id(chunk.part, chunk.facts)?;
            let lines_len = chunk.lines.len() as u32;
            let lines = match file {
                Some(_) => chunk.lines_at as u64,
                None => u64::from(self.lines_id(chunk.lines)),
            };
            parts.push(ChunkPart {
                chunk: facts,
                lines,
                lines_len,
            });
        }
        self.infos[index] = summary.info.clone();
        self.nodes[index] = Some(Stored {
            chunked: Some(Chunked {
                has_model: summary.has_model,
                has_catalog: summary.has_catalog,
                file: file.map(Box::from),
                parts: parts.into_boxed_slice(),
            }),
            chains: Packed {
                kind: CHAINS,
                ..Packed::default()
            },
            extra_endpoint_ips: summary.extra_endpoint_ips.clone(),
            ..Stored::default()
        });
        Ok(())
    }

    /// The chunk of a facts member, read when no node had it before.
    fn chunk_id(
        &mut self,
        part: crate::summary::v2::Part,
        bytes: &[u8],
    ) -> Result<u32, crate::summary::SummaryError> {
        use crate::summary::v2;
        let hash = hash_bytes(bytes);
        if let Some(ids) = self.chunks.by_hash.get(&hash)
            && let Some(&id) = ids
                .iter()
                .find(|&&id| *self.chunks.list[id as usize].bytes == *bytes)
        {
            return Ok(id);
        }
        let text = v2::inflate(bytes, part)?;
        let facts = v2::decode_facts(&text, part)?;
        let mut entries = Vec::with_capacity(facts.len());
        for f in facts {
            let flags = u8::from(f.fact.by_rule)
                | ((expected_code(f.fact.expected) as u8) << 1)
                | (f.lists << 3);
            let subject = f.fact.subject.map(|s| self.strings.id_str(&s));
            let mut catalog_subject = subject;
            if f.blank_chain
                && let SubjectOf::Endpoint { chain, .. } = &mut catalog_subject
            {
                *chain = self.strings.id_str("");
            }
            let value = f.fact.value.map(|s| self.strings.id_str(&s));
            entries.push(ChunkEntry {
                subject: self.subjects.id(subject),
                catalog_subject: self.subjects.id(catalog_subject),
                value: self.values.id(value),
                flags,
            });
        }
        let id = self.chunks.list.len() as u32;
        self.chunks.list.push(Chunk {
            bytes: bytes.into(),
            entries: entries.into_boxed_slice(),
        });
        self.chunks.by_hash.entry(hash).or_default().push(id);
        Ok(id)
    }

    /// The stored copy of a lines member (nodes with the same lines share one).
    fn lines_id(&mut self, bytes: &[u8]) -> u32 {
        let hash = hash_bytes(bytes);
        let ids = self.chunks.lines_by_hash.entry(hash).or_default();
        if let Some(&id) = ids
            .iter()
            .find(|&&id| *self.chunks.lines[id as usize] == *bytes)
        {
            return id;
        }
        let id = self.chunks.lines.len() as u32;
        self.chunks.lines.push(bytes.into());
        ids.push(id);
        id
    }

    /// The lines of a chunk as a node holds them; none when they do not read (a damaged
    /// file, or one changed since it was read, shows facts without lines rather than
    /// stopping the comparison).
    fn chunk_lines(&self, file: Option<&str>, part: &ChunkPart) -> Vec<(u32, u32)> {
        use crate::summary::v2;
        let count = self.chunks.list[part.chunk as usize].entries.len();
        let read_back;
        let bytes: Option<&[u8]> = match file {
            None => self.chunks.lines.get(part.lines as usize).map(|b| &b[..]),
            Some(path) => {
                read_back = self
                    .line_reader
                    .0
                    .as_ref()
                    .and_then(|read| read(path, part.lines, part.lines_len));
                read_back.as_deref()
            }
        };
        bytes
            .ok_or_else(|| crate::summary::SummaryError::Damaged("lines not read".into()))
            .and_then(|b| v2::inflate(b, v2::Part::Lines))
            .and_then(|text| v2::decode_lines(&text, count))
            .unwrap_or_else(|_| vec![(0, 0); count])
    }

    /// The facts of a chunked node as a reading takes them, without their lines.
    fn read_chunked<'g>(
        &'g self,
        c: &'g Chunked,
        by_catalog: bool,
    ) -> impl Iterator<Item = Entry> + 'g {
        let mask = c.services_mask(by_catalog);
        c.parts.iter().flat_map(move |part| {
            self.chunks.list[part.chunk as usize]
                .entries
                .iter()
                .filter_map(move |e| e.read(mask, 0, 0))
        })
    }

    /// The facts of node `node` whose subject is `wanted`, with their lines.
    fn read_lined(
        &self,
        node: usize,
        by_catalog: bool,
        wanted: impl Fn(u32) -> bool,
        mut emit: impl FnMut(Entry),
    ) {
        let Some(stored) = self.nodes[node].as_ref() else {
            return;
        };
        let Some(c) = &stored.chunked else {
            self.read(node, by_catalog)
                .filter(|e| wanted(e.subject))
                .for_each(emit);
            return;
        };
        let mask = c.services_mask(by_catalog);
        for part in c.parts.iter() {
            let entries = &self.chunks.list[part.chunk as usize].entries;
            // Lines are inflated only for chunks that hold a fact the report shows.
            if !entries
                .iter()
                .any(|e| e.read(mask, 0, 0).is_some_and(|e| wanted(e.subject)))
            {
                continue;
            }
            let lines = self.chunk_lines(c.file.as_deref(), part);
            for (e, &(line, catalog_line)) in entries.iter().zip(&lines) {
                if let Some(e) = e.read(mask, line, catalog_line)
                    && wanted(e.subject)
                {
                    emit(e);
                }
            }
        }
    }

    fn pack_named(&mut self, kind: usize, list: Vec<LocalFactOf<&str>>) -> Packed {
        // The first node sizes the tables: nodes of a cluster share most facts.
        let more = list.len().saturating_sub(self.subjects.len());
        self.subjects.reserve(more);
        self.strings.reserve(more / 2);
        let mut names = NameWalk::new(&self.follow_names[kind], 3 * list.len());
        let list: Vec<LocalFact> = list
            .into_iter()
            .map(|f| f.map(|s| names.id(&mut self.strings, s)))
            .collect();
        if let Some(first) = names.first {
            self.follow_names[kind].remember(first);
        }
        self.pack(kind, list, |id| id)
    }

    /// Packs a node's facts (a list of `kind`), its names mapped to the group's ids by
    /// `global`.
    fn pack(&mut self, kind: usize, list: Vec<LocalFact>, global: impl Fn(u32) -> u32) -> Packed {
        let ids = self.follow[kind].ids_of(
            &mut self.subjects,
            list.iter().map(|f| f.subject.map(&global)),
        );
        let entries: Vec<Entry> = list
            .into_iter()
            .zip(ids)
            .map(|(f, subject)| Entry {
                subject,
                value: self.values.id(f.value.map(&global)),
                line: f.line,
                by_rule: f.by_rule,
                expected: f.expected,
            })
            .collect();
        self.pack_entries(kind, entries)
    }

    /// [`Group::pack_named`] of a node's chain facts, each turned into ids as it is collected:
    /// the node costs its entries (16 bytes a fact) while it is packed, not a list of facts.
    fn pack_chains(&mut self, node: &Node<'_>, options: FactOptions) -> Packed {
        // A guess from its chains: nodes share most facts.
        let chains = node.set.chains.len() + node.nft_chains.len();
        self.pack_each(CHAINS, chains, |emit| chain_facts(node, options, emit))
    }

    /// Packs the facts `facts` hands out one by one as a node's list of `kind`, each turned
    /// into ids as it comes: the node costs its entries (16 bytes a fact) while it is packed,
    /// never a list of facts (a million-chain dump's, or a 250k-rule node's Service facts at
    /// over 100 bytes each). `expected` is about how many there are.
    fn pack_each<'r>(
        &mut self,
        kind: usize,
        expected: usize,
        facts: impl FnOnce(&mut dyn FnMut(LocalFactOf<&'r str>)),
    ) -> Packed {
        // The first node sizes the tables: nodes of a cluster share most facts.
        let more = expected.saturating_sub(self.subjects.len());
        self.subjects.reserve(more);
        self.strings.reserve(more / 2);
        // A little over the guess: a guess a few facts short (a 1M-chain dump's built-in
        // chains) would double the list.
        let mut entries: Vec<Entry> = Vec::with_capacity(expected + expected / 64 + 64);
        let mut cursor = 0usize;
        let Group {
            strings,
            subjects,
            values,
            follow,
            follow_names,
            ..
        } = self;
        let follow_kind = &follow[kind];
        let mut names = NameWalk::new(&follow_names[kind], 3 * expected);
        facts(&mut |f| {
            let f = f.map(|s| names.id(strings, s));
            entries.push(Entry {
                subject: follow_kind.id_of(subjects, f.subject, &mut cursor),
                value: values.id(f.value),
                line: f.line,
                by_rule: f.by_rule,
                expected: f.expected,
            });
        });
        if let Some(first) = names.first {
            follow_names[kind].remember(first);
        }
        if self.follow[kind].ids.is_empty() {
            self.follow[kind].remember(entries.iter().map(|e| e.subject).collect());
        }
        self.pack_entries(kind, entries)
    }

    /// A node's entries of a list of `kind`, packed against the first node's (which they are
    /// when no node came before).
    fn pack_entries(&mut self, kind: usize, entries: Vec<Entry>) -> Packed {
        let reference = &mut self.references[kind];
        if reference.entries.is_empty() {
            // The first node's entries become the reference, not a copy of them.
            *reference = Reference::new(entries);
            return reference.pack_itself(kind);
        }
        reference.pack(kind, &entries)
    }

    /// The facts of a node's list.
    fn unpack<'g>(&'g self, packed: &'g Packed) -> impl Iterator<Item = Entry> + 'g {
        self.references[packed.kind].unpack(packed)
    }

    /// Renames node `index` (a name from its file, once all files are known).
    pub fn rename(&mut self, index: usize, name: String) {
        if let Some(info) = self.infos.get_mut(index) {
            info.name = name;
        }
    }

    /// Keeps the nodes `indexes` (ascending), in that order, and drops the others (inputs
    /// that turned out to hold no dump).
    pub fn keep(&mut self, indexes: &[usize]) {
        let mut nodes = std::mem::take(&mut self.nodes);
        let mut infos = std::mem::take(&mut self.infos);
        for &i in indexes {
            if i < nodes.len() {
                self.nodes.push(nodes[i].take());
                self.infos.push(std::mem::replace(
                    &mut infos[i],
                    NodeInfo {
                        name: String::new(),
                        rules: 0,
                        parse_errors: 0,
                        backend: NodeBackend::Iptables,
                        nft_generation: None,
                        services_unknown: false,
                    },
                ));
            }
        }
    }

    /// Nodes not inserted yet.
    pub fn missing(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].is_none())
            .collect()
    }

    /// The iptables-only nodes read without their Service catalogue, which a comparison with
    /// nftables nodes needs (read them again with [`FactOptions::catalog`]).
    pub fn lacking_catalog(&self) -> Vec<usize> {
        if self
            .infos
            .iter()
            .all(|n| n.backend == NodeBackend::Iptables)
        {
            return Vec::new();
        }
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].as_ref().is_some_and(|n| !n.has_catalog()))
            .collect()
    }

    /// Bytes held for the nodes' facts (for benchmarks and the memory budget).
    pub fn packed_bytes(&self) -> usize {
        self.nodes
            .iter()
            .flatten()
            .map(|n| {
                [Some(&n.chains), n.services.as_ref(), n.catalog.as_ref()]
                    .into_iter()
                    .flatten()
                    .map(|p| p.bytes.len() + std::mem::size_of_val(&*p.shifts))
                    .sum::<usize>()
                    + n.chunked
                        .as_ref()
                        .map_or(0, |c| std::mem::size_of_val(&*c.parts))
            })
            .sum::<usize>()
            + self.chunks.lines.iter().map(|l| l.len()).sum::<usize>()
    }

    /// Chunks of summaries read, and the bytes of their members (for benchmarks).
    pub fn chunk_stats(&self) -> (usize, usize) {
        (
            self.chunks.list.len(),
            self.chunks.list.iter().map(|c| c.bytes.len()).sum(),
        )
    }

    fn text(&self, id: u32) -> &str {
        self.strings.get(id).unwrap_or("")
    }

    fn value(&self, id: u32) -> Value<'_> {
        self.values.list[id as usize].map(|s| self.text(s))
    }

    /// The facts a comparison of these nodes reads, node by node: the catalogue's Service
    /// facts when some node has nftables (the model's where a node lacks its catalogue), else
    /// the iptables model's; then the chains.
    fn read(&self, node: usize, by_catalog: bool) -> impl Iterator<Item = Entry> + '_ {
        let stored = self.nodes[node].as_ref();
        let services = stored.and_then(|n| {
            if by_catalog {
                n.catalog.as_ref().or(n.services.as_ref())
            } else {
                n.services.as_ref().or(n.catalog.as_ref())
            }
        });
        let chunked = stored
            .and_then(|n| n.chunked.as_ref())
            .into_iter()
            .flat_map(move |c| self.read_chunked(c, by_catalog));
        services
            .into_iter()
            .chain(stored.map(|n| &n.chains))
            .flat_map(|p| self.unpack(p))
            .chain(chunked)
    }

    /// The pod IPs node `index` DNATs to in any Service.
    pub(super) fn endpoint_ips(&self, index: usize) -> FxHashSet<IpAddr> {
        let Some(stored) = self.nodes.get(index).and_then(Option::as_ref) else {
            return FxHashSet::default();
        };
        let mut ips: FxHashSet<IpAddr> = stored.extra_endpoint_ips.iter().copied().collect();
        for packed in stored.services.iter().chain(&stored.catalog) {
            ips.extend(
                self.unpack(packed)
                    .filter_map(|e| destination(self.subjects.get(e.subject)))
                    .filter_map(|d| address_in(self.text(d))),
            );
        }
        if let Some(c) = &stored.chunked {
            let entries = c
                .parts
                .iter()
                .flat_map(|part| self.chunks.list[part.chunk as usize].entries.iter());
            for e in entries {
                for s in [e.subject, e.catalog_subject] {
                    ips.extend(
                        destination(self.subjects.get(s)).and_then(|d| address_in(self.text(d))),
                    );
                }
            }
        }
        ips
    }

    /// Compares the nodes: two as a pair, three or more against their majority (with chain
    /// digests). Nodes not inserted count as having no facts. The rule level of a pair is
    /// added by [`Comparison::with_rules`].
    pub fn compare(&self) -> Comparison<'_> {
        let infos = &self.infos;
        let reading = Reading {
            rule_digests: infos.len() > 2,
            by_catalog: infos.iter().any(|n| n.backend != NodeBackend::Iptables),
            one_backend: infos.windows(2).all(|w| w[0].backend == w[1].backend),
        };
        // How each subject is read here: some are left out (a pair's digests, Service chains
        // across backends), some merged (load-balancer IPs read as external IPs across
        // backends, where nftables cannot tell them apart).
        let mut canonical_table: Table<SubjectOf<u32>> = Table::default();
        // IPVS nodes know Service ports by address, not name (see `ipvs::ServiceKeys`).
        let ipvs = infos.iter().any(|n| n.backend.has_ipvs()).then(|| {
            super::ipvs::ServiceKeys::new(
                &self.subjects.whole.list,
                |id| self.text(id),
                |name| self.strings.get_str(name),
                infos.iter().any(|n| !n.backend.has_ipvs()),
            )
        });
        // Most readings keep every subject as it is: then the group's own table is the
        // canonical one, not copied (a 1M-chain pair's subjects are tens of MB).
        let identity = ipvs.is_none()
            && (!reading.by_catalog || reading.one_backend)
            && (reading.rule_digests || !self.subjects.has_chain_rules());
        let map: Vec<u32> = if identity {
            (0..self.subjects.len() as u32).collect()
        } else {
            (0..self.subjects.len() as u32)
                .map(|id| self.subjects.get(id))
                .map(|s| match ipvs.as_ref().map_or(Some(s), |k| k.read(s)) {
                    None => u32::MAX,
                    Some(s) => match s {
                        SubjectOf::ChainRules { .. } if !reading.rule_digests => u32::MAX,
                        SubjectOf::ServiceChain { .. }
                            if reading.by_catalog && !reading.one_backend =>
                        {
                            u32::MAX
                        }
                        SubjectOf::Address {
                            service,
                            kind: AddressKind::LoadBalancerIp,
                            address,
                            protocol,
                            port,
                        } if reading.by_catalog && !reading.one_backend => {
                            canonical_table.id(SubjectOf::Address {
                                service,
                                kind: AddressKind::ExternalIp,
                                address,
                                protocol,
                                port,
                            })
                        }
                        s => canonical_table.id(s),
                    },
                })
                .collect()
        };
        // The canonical subject with id `c`.
        let canonical = |c: usize| -> SubjectOf<u32> {
            if identity {
                self.subjects.get(c as u32)
            } else {
                canonical_table
                    .list
                    .get(c)
                    .copied()
                    .unwrap_or(SubjectOf::Service { service: 0 })
            }
        };
        let subject_count = if identity {
            self.subjects.len()
        } else {
            canonical_table.list.len()
        };
        // The nodes each subject is compared among.
        let compared = |n: &NodeInfo, scope: Option<Scope>| match scope {
            None => !n.services_unknown,
            Some(Scope::Iptables) => n.backend.has_iptables() && !n.backend.has_ipvs(),
            Some(Scope::Ipvs) => n.backend == NodeBackend::IptablesIpvs,
            Some(Scope::Nft { generation }) => n.nft_generation == Some(generation),
        };
        let mut compared_counts: FxHashMap<Option<Scope>, u32> = FxHashMap::default();
        // First pass: which subjects all compared nodes hold with one value (most of them).
        #[derive(Clone, Copy)]
        struct Tally {
            value: u32,
            holders: u32,
            last_node: u32,
            mixed: bool,
        }
        let mut tallies = vec![
            Tally {
                value: u32::MAX,
                holders: 0,
                last_node: u32::MAX,
                mixed: false,
            };
            subject_count
        ];
        let canonical_of = |subject: u32| {
            map.get(subject as usize)
                .copied()
                .filter(|&c| (c as usize) < subject_count)
        };
        // Chunks of summaries are tallied once each, counted for every node that holds them;
        // the nodes that hold a chunk twice, and nodes not read from chunks, fact by fact.
        let chunked = ChunkUse::of(self, reading.by_catalog);
        let mut last_key = vec![u32::MAX; subject_count];
        let mut ambiguous = vec![false; subject_count];
        for (k, &(chunk, mask)) in chunked.keys.iter().enumerate() {
            let uses = chunked.uses[k];
            if uses == 0 {
                continue;
            }
            for e in self.chunks.list[chunk as usize].entries.iter() {
                let Some(c) = e.read(mask, 0, 0).and_then(|e| canonical_of(e.subject)) else {
                    continue;
                };
                let t = &mut tallies[c as usize];
                if t.value == u32::MAX {
                    t.value = e.value;
                } else if t.value != e.value {
                    t.mixed = true;
                }
                let last = &mut last_key[c as usize];
                if *last == k as u32 {
                    continue; // twice in one chunk: once a node
                }
                // In two chunks: a node holding both would count twice; counted node by node.
                ambiguous[c as usize] |= *last != u32::MAX;
                *last = k as u32;
                t.holders += uses;
            }
        }
        drop(last_key);
        for (t, &a) in tallies.iter_mut().zip(&ambiguous) {
            if a {
                t.holders = 0;
            }
        }
        let ambiguous_entries = chunked.entries_where(self, |s| {
            canonical_of(s).is_some_and(|c| ambiguous[c as usize])
        });
        for node in 0..infos.len() {
            if let Some(keys) = &chunked.nodes[node] {
                for &k in keys {
                    let (chunk, mask) = chunked.keys[k as usize];
                    let entries = &self.chunks.list[chunk as usize].entries;
                    for &i in &ambiguous_entries[k as usize] {
                        let Some(c) = entries[i as usize]
                            .read(mask, 0, 0)
                            .and_then(|e| canonical_of(e.subject))
                        else {
                            continue;
                        };
                        let t = &mut tallies[c as usize];
                        if t.last_node != node as u32 {
                            t.holders += 1;
                            t.last_node = node as u32;
                        }
                    }
                }
                continue;
            }
            for e in self.read(node, reading.by_catalog) {
                let Some(c) = canonical_of(e.subject) else {
                    continue;
                };
                let t = &mut tallies[c as usize];
                if t.value == u32::MAX {
                    t.value = e.value;
                } else if t.value != e.value {
                    t.mixed = true;
                }
                if t.last_node != node as u32 {
                    t.holders += 1;
                    t.last_node = node as u32;
                }
            }
        }
        drop(ambiguous_entries);
        let mut differing: Vec<u32> = vec![u32::MAX; subject_count];
        let mut gathered: Vec<(u32, Vec<(u32, Entry)>)> = Vec::new();
        for (c, t) in tallies.iter().enumerate() {
            let subject = canonical(c);
            let scope = subject.scope();
            let compared_count = *compared_counts
                .entry(scope)
                .or_insert_with(|| infos.iter().filter(|n| compared(n, scope)).count() as u32);
            let agree = !t.mixed && (t.holders == compared_count || !subject.absence_counts());
            // A subject no node reads here (a catalogue's blank-chain endpoint in a reading
            // of models) shows no difference; a Service port's does, through the others.
            let unread = t.holders == 0 && !matches!(subject, SubjectOf::Service { .. });
            if !agree && !unread {
                differing[c] = gathered.len() as u32;
                gathered.push((c as u32, Vec::new()));
            }
        }
        drop(tallies);
        // Second pass: the facts of the subjects nodes disagree on.
        if !gathered.is_empty() {
            let slot_of = |subject: u32| {
                map.get(subject as usize)
                    .and_then(|&c| differing.get(c as usize))
                    .copied()
                    .filter(|&slot| slot != u32::MAX)
            };
            let wanted = chunked.entries_where(self, |s| slot_of(s).is_some());
            for node in 0..infos.len() {
                let (Some(keys), Some(c)) = (
                    &chunked.nodes[node],
                    self.nodes[node].as_ref().and_then(|n| n.chunked.as_ref()),
                ) else {
                    self.read_lined(
                        node,
                        reading.by_catalog,
                        |s| slot_of(s).is_some(),
                        |e| {
                            if let Some(slot) = slot_of(e.subject) {
                                gathered[slot as usize].1.push((node as u32, e));
                            }
                        },
                    );
                    continue;
                };
                for (part, &k) in c.parts.iter().zip(keys) {
                    let wanted = &wanted[k as usize];
                    if wanted.is_empty() {
                        continue;
                    }
                    // Lines are read only for chunks that hold a fact the report shows.
                    let lines = self.chunk_lines(c.file.as_deref(), part);
                    let (_, mask) = chunked.keys[k as usize];
                    let entries = &self.chunks.list[part.chunk as usize].entries;
                    for &i in wanted {
                        let (line, catalog_line) = lines[i as usize];
                        if let Some(e) = entries[i as usize].read(mask, line, catalog_line)
                            && let Some(slot) = slot_of(e.subject)
                        {
                            gathered[slot as usize].1.push((node as u32, e));
                        }
                    }
                }
            }
        }
        let subject_of = |c: u32| canonical(c as usize).map(|s| self.text(s));
        // (Service port, node) for every node that lacks a Service port some other node has.
        let mut without_service: FxHashSet<(&str, u32)> = FxHashSet::default();
        for (c, entries) in &gathered {
            if let Subject::Service { service } = subject_of(*c) {
                let mut has = vec![false; infos.len()];
                for (n, _) in entries {
                    has[*n as usize] = true;
                }
                without_service.extend(
                    (0..infos.len() as u32)
                        .filter(|&n| !has[n as usize])
                        .map(|n| (service, n)),
                );
            }
        }
        let mut differences: Vec<Difference<'_>> = Vec::new();
        for (c, mut entries) in gathered {
            let subject = subject_of(c);
            // The order the facts of one subject are read in: value, node, then the dump's.
            entries.sort_by(|(nx, x), (ny, y)| {
                self.value(x.value)
                    .cmp(&self.value(y.value))
                    .then(nx.cmp(ny))
                    .then((x.by_rule, x.line).cmp(&(y.by_rule, y.line)))
            });
            differences.extend(self.disagreement(subject, &entries, &without_service, |n| {
                compared(&infos[n as usize], subject.scope())
            }));
        }
        differences.sort_by(|x, y| x.subject.cmp(&y.subject));
        super::drop_weights_explained_by_endpoints(&mut differences);
        super::drop_parts_explained_by_status(&mut differences);
        Comparison {
            nodes: infos,
            differences,
            rules: Vec::new(),
            dumps: None,
            notes: Vec::new(),
            group: Some(self),
            endpoint_ips: (0..infos.len()).map(|_| Default::default()).collect(),
        }
    }

    /// The difference among the facts of one subject, sorted by value and node.
    fn disagreement<'g>(
        &'g self,
        subject: Subject<'g>,
        entries: &[(u32, Entry)],
        without_service: &FxHashSet<(&str, u32)>,
        compared: impl Fn(u32) -> bool,
    ) -> Option<Difference<'g>> {
        let mut variants: Vec<Variant<'g>> = Vec::new();
        let mut holders = vec![false; self.infos.len()];
        for &(node, e) in entries {
            if holders[node as usize] {
                continue; // the same fact twice on one node (a duplicated rule): once is enough
            }
            holders[node as usize] = true;
            let line = (e.line != 0).then_some(e.line);
            let value = self.value(e.value);
            match variants.last_mut() {
                Some(v) if v.value == Some(value) => v.nodes.push((node, line)),
                _ => variants.push(Variant {
                    value: Some(value),
                    nodes: vec![(node, line)],
                }),
            }
        }
        if subject.absence_counts() {
            let service = subject.service();
            let absent: Vec<(u32, Option<u32>)> = (0..self.infos.len() as u32)
                .filter(|&n| !holders[n as usize] && compared(n))
                .filter(|&n| {
                    matches!(subject, Subject::Service { .. })
                        || service.is_none_or(|s| !without_service.contains(&(s, n)))
                })
                .map(|n| (n, None))
                .collect();
            if !absent.is_empty() {
                variants.push(Variant {
                    value: None,
                    nodes: absent,
                });
            }
        }
        if variants.len() < 2 {
            return None;
        }
        // Most nodes first; among equals, the one holding the first node given.
        variants.sort_by_key(|v| {
            (
                std::cmp::Reverse(v.nodes.len()),
                v.nodes.first().map(|n| n.0),
            )
        });
        let mut expected = entries.iter().find_map(|(_, e)| e.expected);
        if let Subject::ChainRules { .. } = subject
            && expected.is_none()
        {
            expected = super::only_node_addresses(&variants);
        }
        Some(Difference {
            subject,
            variants,
            expected,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{
        Ends, Entry, Follow, Lookup, Names, Packed, Reference, SeenNames, SubjectKey, Subjects,
    };
    use crate::diff::facts::{Scope, SubjectOf};
    use crate::kube::AddressKind;

    /// The reference packed against itself reads as packing its facts one by one does.
    #[test]
    fn a_reference_packs_itself_as_its_facts_pack() {
        let entry = |subject, line| Entry {
            subject,
            value: subject % 3,
            line,
            by_rule: subject % 2 == 0,
            expected: None,
        };
        for len in [0u32, 1, 5, 300] {
            let reference = Reference::new((0..len).map(|i| entry(i % 7, i % 4 * 9)).collect());
            let (fast, slow) = (
                reference.pack_itself(2),
                reference.pack(2, &reference.entries),
            );
            assert_eq!(
                (fast.kind, &fast.shifts, &fast.bytes),
                (slow.kind, &slow.shifts, &slow.bytes)
            );
        }
    }

    /// A line shifted from a hint gives what a search from scratch gives, however lines go.
    #[test]
    fn shifted_lines_from_a_hint_are_those_of_a_search() {
        let packed = Packed {
            kind: 0,
            shifts: vec![(5, 1), (5, 3), (9, -2), (20, 0), (21, 7)].into_boxed_slice(),
            bytes: Vec::new(),
        };
        let lines: Vec<u32> = (0..30)
            .chain((0..30).rev())
            .chain([7, 25, 1, 21, 4, 5, 9])
            .collect();
        let mut near = 0;
        for line in lines {
            assert_eq!(
                packed.shifted_near(line, &mut near),
                packed.shifted(line),
                "{line}"
            );
        }
    }

    /// Name ends are 4 bytes each until the names' text passes 4 GiB, then read back whole.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn name_ends_widen_past_4_gib() {
        let far = u32::MAX as usize;
        let mut ends = Ends::default();
        ends.push(3);
        assert!(matches!(ends, Ends::Narrow(_)));
        ends.push(far + 5);
        ends.push(far + 9);
        assert!(matches!(ends, Ends::Wide(_)));
        let read: Vec<_> = (0..4).map(|i| ends.get(i)).collect();
        assert_eq!(read, [Some(3), Some(far + 5), Some(far + 9), None]);
        assert_eq!(ends.len(), 3);
    }

    /// Every kind of subject reads back from its 16-byte key as it went in, and alike
    /// subjects get one id.
    #[test]
    fn subjects_read_back_from_their_keys() {
        assert_eq!(std::mem::size_of::<SubjectKey>(), 16);
        let scopes = [
            Scope::Iptables,
            Scope::Ipvs,
            Scope::Nft { generation: "a" },
            Scope::Nft { generation: "b" },
        ];
        let mut all = vec![
            SubjectOf::Service { service: 1 },
            SubjectOf::ServiceChain {
                service: 1,
                chain: 2,
            },
            SubjectOf::NoEndpointsReject { service: 3 },
            SubjectOf::Endpoint {
                service: 1,
                chain: 2,
                destination: 3,
            },
            SubjectOf::Weight {
                service: 4,
                destination: 5,
            },
            SubjectOf::LocalEndpoint {
                service: 4,
                destination: 6,
            },
            SubjectOf::NoLocalEndpointsDrop { service: 7 },
        ];
        for (i, address) in [None, Some("10.0.0.1/32"), Some("fd00::/64")]
            .iter()
            .enumerate()
        {
            all.push(SubjectOf::Address {
                service: i as u32,
                kind: AddressKind::NodePort,
                address: address.map(|a| a.parse().unwrap()),
                protocol: Some(8),
                port: Some(30000),
            });
        }
        for scope in scopes {
            all.push(SubjectOf::HookJump {
                table: 1,
                hook: 2,
                target: u32::MAX,
                scope,
            });
            all.push(SubjectOf::Chain {
                table: 1,
                chain: 2,
                scope,
            });
            all.push(SubjectOf::Policy {
                table: 1,
                chain: 2,
                scope,
            });
            all.push(SubjectOf::ChainRules {
                table: 1,
                chain: 2,
                scope,
            });
        }
        let mut subjects = Subjects::default();
        let ids: Vec<u32> = all.iter().map(|&s| subjects.id(s)).collect();
        assert_eq!(ids, (0..all.len() as u32).collect::<Vec<_>>());
        for (&s, &id) in all.iter().zip(&ids) {
            assert_eq!(subjects.get(id), s);
            assert_eq!(subjects.id(s), id);
            assert!(subjects.holds(id, &s));
        }
        assert!(subjects.has_chain_rules());
        assert_eq!(subjects.whole.list.len(), 3);
    }

    /// Walking along the first list gives the ids plain lookups give, whatever the next
    /// lists insert, drop, repeat or reorder.
    #[test]
    fn following_the_first_list_gives_the_ids_of_lookups() {
        let lists: [&[&str]; 5] = [
            &["a", "b", "c", "d", "e"],
            &["a", "b", "x", "c", "d", "e"],
            &["a", "c", "d", "e", "b"],
            &["e", "d", "c", "b", "a", "a"],
            &["y", "b", "c", "z", "e", "a"],
        ];
        let mut followed = Names::default();
        let mut plain = Names::default();
        let mut follow = Follow::default();
        for list in lists {
            let owned: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            let ids = follow.ids_of(&mut followed, owned.iter());
            let expected: Vec<u32> = owned.iter().map(|s| plain.lookup(s)).collect();
            assert_eq!(ids, expected, "{list:?}");
        }
        assert_eq!(followed.text, plain.text);
        assert_eq!(followed.ends, plain.ends);
    }

    /// Names keep their text apart however they are cut: each id reads back its name.
    #[test]
    fn names_read_back_and_are_found_once() {
        let mut names = Names::default();
        let words = ["ab", "", "a", "b", "ab", "abc", "", "bc"];
        let ids: Vec<u32> = words.iter().map(|w| names.id_str(w)).collect();
        assert_eq!(ids, [0, 1, 2, 3, 0, 4, 1, 5]);
        for (w, id) in words.iter().zip(&ids) {
            assert_eq!(names.get(*id), Some(*w));
            assert_eq!(names.get_str(w), Some(*id));
        }
        assert_eq!(names.get(6), None);
        assert_eq!(names.get_str("ba"), None);
    }

    /// The same text at two places gets one id; the memo never confuses two texts that share
    /// an address (a prefix) but not a length.
    #[test]
    fn seen_names_give_the_ids_of_lookups() {
        let text = String::from("abcabc");
        let mut names = Names::default();
        let mut seen = SeenNames::default();
        let cuts = [
            &text[0..3],
            &text[3..6],
            &text[0..2],
            &text[0..3],
            &text[0..0],
        ];
        let ids: Vec<u32> = cuts.iter().map(|c| seen.id(&mut names, c)).collect();
        assert_eq!(ids, [0, 0, 1, 0, 2]);
    }
}
