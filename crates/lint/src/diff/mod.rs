//! Node diff: what one node does differently from another, or from the rest of its cluster.
//!
//! Each node's dump becomes [facts](facts::Fact): its Service ports, their addresses,
//! endpoints and weights, its hook jumps, chains and policies, each keyed by name rather than by
//! position, so counters, timestamps, the order of chains and the order of kube-proxy's dispatch
//! rules never show. Facts on which nodes disagree become [`Difference`]s. For two nodes,
//! [`rules::diff`] adds the rule level: per chain, the rules removed, added or changed, with
//! lines in both files. Differences that healthy nodes have by design (local endpoints,
//! per-pod chains, node addresses) are marked [`Expected`].
//!
//! ```
//! use rulelint_lint::diff::{Group, Node, compare};
//!
//! let a = "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n";
//! let b = "*nat\n:PREROUTING ACCEPT [5:300]\n:KUBE-SERVICES - [0:0]\nCOMMIT\n";
//! let (pa, pb) = (rulelint_parser::parse(a), rulelint_parser::parse(b));
//! let nodes = [Node::new("a", &pa), Node::new("b", &pb)];
//! // Each node reduced to its facts (a summary holds the same), then compared.
//! let group = Group::from_nodes(&nodes);
//! let comparison = compare(&group, &nodes);
//! assert_eq!(comparison.drift_count(), 2); // the hook jump, and the rule that makes it
//! assert_eq!(
//!     comparison.differences[0].messages(&comparison),
//!     ["nat PREROUTING jumps to KUBE-SERVICES on a only"]
//! );
//! ```

pub mod bounded;
pub mod facts;
pub mod group;
pub mod ipvs;
pub mod node_local;
pub mod report;
pub mod rules;

use crate::kube::KubeModel;
use crate::kube::catalog::{Catalog, CatalogService, Origin};
use crate::nft::kube::{NftKubeModel, NftMode};
use crate::source::{SectionKind, parse_iptables_sections, sections};
pub use bounded::RuleTexts;
use facts::{Subject, Value};
pub use group::{CollectedFacts, FactOptions, Group, NodeFacts, NodeInfo};
pub use node_local::Expected;
use rulelint_parser::{
    ChainGraph, ChainId, CommentKind, LineIndex, Parsed, RuleId, Ruleset, Severity, Span,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::OnceCell;
use std::net::IpAddr;

/// One node's file read for comparison: its iptables part and its `nft list ruleset`
/// sections ([`sections`]); a file with both is one node with both backends.
pub struct NodeInput<'a> {
    /// The file's text.
    pub text: &'a str,
    /// The iptables part: the whole text when it has no nftables section, else the iptables
    /// sections read in place (spans and lines are the file's).
    pub iptables: Parsed<'a>,
    /// Each `nft list ruleset` section: its byte offset in the text and what was read from it.
    pub nft: Vec<(usize, rulelint_nft::Parsed<'a>)>,
    /// The IPVS-mode state of its `ipvsadm`/`ipset`/`ip addr` sections (spans into the text),
    /// with the readers' diagnostics.
    pub ipvs: Option<IpvsRead<'a>>,
}

/// What the diff reads of a file's IPVS state (`ipvsadm`, `ipset`, `ip addr`), taken from it
/// as the file is read: the state itself is freed then, not held while the node is compared
/// (a 200k-virtual-server node's is three times its text).
pub struct IpvsRead<'a> {
    /// Its Service ports as the diff compares them ([`ipvs::service_entries`]); `None` when
    /// its listing names hosts (`ipvsadm -L` without `-n`): no addresses to compare.
    services: Option<Vec<ServiceEntry<'a>>>,
    /// Error diagnostics of its readers.
    errors: usize,
    /// Nothing was read.
    empty: bool,
}

impl<'a> IpvsRead<'a> {
    fn new(text: &'a str, (ipvs, diagnostics): IpvsState<'a>) -> IpvsRead<'a> {
        let names_resolved =
            ipvs.outputs.ipvsadm.is_some() && ipvs.outputs.names_resolved.is_some();
        let empty = ipvs.is_empty();
        IpvsRead {
            services: (!names_resolved).then(|| ipvs::service_entries(text, ipvs)),
            errors: diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .map(rulelint_parser::cap::stands_for)
                .sum(),
            empty,
        }
    }

    /// Nothing was read.
    pub fn is_empty(&self) -> bool {
        self.empty
    }
}

/// An IPVS state with the readers' diagnostics.
type IpvsState<'a> = (rulelint_ipvs::Ipvs<'a>, Vec<rulelint_parser::Diagnostic>);

impl<'a> NodeInput<'a> {
    /// Splits and parses a file; a file without nftables is parsed exactly as before. nft JSON
    /// sections need a store for the strings they escape: [`NodeInput::read_with`].
    pub fn read(text: &'a str) -> NodeInput<'a> {
        Self::read_sections(text, None)
    }

    /// [`NodeInput::read`], reading `nft -j` JSON sections too, their escaped strings in
    /// `strings`.
    pub fn read_with(text: &'a str, strings: &'a rulelint_nft::Strings) -> NodeInput<'a> {
        Self::read_sections(text, Some(strings))
    }

    fn read_sections(text: &'a str, strings: Option<&'a rulelint_nft::Strings>) -> NodeInput<'a> {
        let parts = sections(text);
        if parts.iter().all(|s| s.kind == SectionKind::Iptables) {
            return NodeInput {
                text,
                iptables: rulelint_parser::parse(text),
                nft: Vec::new(),
                ipvs: None,
            };
        }
        let nft = parts
            .iter()
            .filter_map(|s| {
                let body = &text[s.range.clone()];
                let parsed = match s.kind {
                    SectionKind::Nft => rulelint_nft::parse(body),
                    SectionKind::NftTransaction => rulelint_nft::parse_transaction(body),
                    SectionKind::NftJson => rulelint_nft::parse_json(body, strings?),
                    _ => return None,
                };
                Some((s.range.start, parsed))
            })
            .collect();
        NodeInput {
            text,
            iptables: parse_iptables_sections(text, &parts),
            nft,
            ipvs: crate::ipvs::check::read_ipvs(text, &parts).map(|read| IpvsRead::new(text, read)),
        }
    }

    /// True when the file holds no iptables-save content and no nftables table or chain.
    pub fn has_no_content(&self) -> bool {
        self.iptables.has_no_content()
            && self
                .nft
                .iter()
                .all(|(_, p)| p.ruleset.tables.is_empty() && p.ruleset.chains.is_empty())
            && self.ipvs.as_ref().is_none_or(IpvsRead::is_empty)
    }
}

/// Which packet filters a node's file shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeBackend {
    /// iptables-save only.
    Iptables,
    /// `nft list ruleset` only.
    Nftables,
    /// Both (`iptables-save; nft list ruleset` of one node).
    Both,
    /// kube-proxy's IPVS mode without iptables-save (`ipvsadm -Ln`, `ipset`).
    Ipvs,
    /// kube-proxy's IPVS mode with its iptables part (`iptables-save; ipset save; ipvsadm -Ln`).
    IptablesIpvs,
}

impl NodeBackend {
    /// Whether iptables chains are compared on this node.
    pub fn has_iptables(self) -> bool {
        !matches!(self, NodeBackend::Nftables | NodeBackend::Ipvs)
    }

    /// Whether the node is in IPVS mode: its Services are IPVS virtual servers, its iptables
    /// chains are compared only with other IPVS nodes'.
    pub fn has_ipvs(self) -> bool {
        matches!(self, NodeBackend::Ipvs | NodeBackend::IptablesIpvs)
    }

    /// The name in the JSON document.
    pub fn name(self) -> &'static str {
        match self {
            NodeBackend::Iptables => "iptables",
            NodeBackend::Nftables => "nftables",
            NodeBackend::Both => "iptables+nftables",
            NodeBackend::Ipvs => "ipvs",
            NodeBackend::IptablesIpvs => "iptables+ipvs",
        }
    }
}

/// A Service port of the catalogue, with its status ([`facts::STATUS_DISPATCHED`] ...) and its
/// origins' lines as lines of the node's file.
#[derive(Clone, Debug)]
pub struct ServiceEntry<'a> {
    /// The Service port.
    pub service: CatalogService<'a>,
    /// Dispatched, orphaned or rejected.
    pub status: &'static str,
}

/// A chain of an nftables section, for chain-level facts.
#[derive(Clone, Debug)]
pub struct NftChain<'a> {
    /// `ip kube-proxy`: family and table name, shared by the table's chains.
    pub table: std::sync::Arc<str>,
    /// The chain's name.
    pub name: &'a str,
    /// A base chain's policy.
    pub policy: Option<&'a str>,
    /// A per-Service-port chain (kube-proxy names them `HASH-ns/name/proto/port`): a fact of
    /// its Service instead.
    pub per_service: bool,
    /// Its line in the node's file.
    pub line: u32,
}

/// One node's dump, with what comparing it needs.
pub struct Node<'a> {
    /// The node's name: from a `# node: NAME` line in the dump, else given by the caller.
    pub name: String,
    /// The parsed dump.
    pub set: &'a Ruleset<'a>,
    /// Its chain graph.
    pub graph: ChainGraph,
    /// What kube-proxy programmed.
    pub model: KubeModel<'a>,
    /// Error diagnostics of the parser (`rulelint check` shows them).
    pub parse_errors: usize,
    /// The packet filters its file shows.
    pub backend: NodeBackend,
    /// The nftables layout generation's name, when the file has nftables sections.
    pub nft_generation: Option<&'static str>,
    /// The chains of its nftables sections.
    pub nft_chains: Vec<NftChain<'a>>,
    /// Rules in its nftables sections.
    pub nft_rules: usize,
    /// Why its Service ports are left out of the comparison (see [`NodeInfo::services_unknown`]).
    pub services_unknown: bool,
    // The Service ports of its nftables sections.
    nft_services: Vec<ServiceEntry<'a>>,
    // The Service ports of its IPVS state, read with the file ([`IpvsRead`]).
    ipvs_services: &'a [ServiceEntry<'a>],
    // Built by `with_catalog` (a lazy cell would make `Node` invariant in `'a`), only where a
    // comparison needs it: iptables-only comparisons read the iptables model.
    iptables_services: Vec<ServiceEntry<'a>>,
    lines: LineIndex,
    // A lock, not a cell: nodes are shared by the threads of a pair's comparison.
    endpoint_ips: std::sync::OnceLock<FxHashSet<IpAddr>>,
    // `graph` is an empty stand-in ([`Node::release_graph`]).
    graph_released: bool,
    // Set on a node re-read with only some chains' rules: the Service key of each chain as the
    // whole dump's model has it ([`Node::chain_services`]), read in place of the model.
    chain_services: Option<ChainServices>,
}

/// The Service key of each chain that belongs to a Service port, by table (its index) and
/// chain name: what the rule level's report reads of a node's model.
pub type ChainServices = FxHashMap<(usize, Box<str>), Box<str>>;

impl<'a> Node<'a> {
    /// Prepares a parsed dump for comparison; `name` is used unless the dump names its node.
    pub fn new(name: impl Into<String>, parsed: &'a Parsed<'a>) -> Node<'a> {
        let set = &parsed.ruleset;
        let graph = ChainGraph::build(set);
        let model = KubeModel::build(set, &graph);
        let name = declared_name(set).map_or_else(|| name.into(), str::to_string);
        Node {
            name,
            set,
            graph,
            model,
            parse_errors: parsed
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .map(rulelint_parser::cap::stands_for)
                .sum(),
            backend: NodeBackend::Iptables,
            nft_generation: None,
            nft_chains: Vec::new(),
            nft_rules: 0,
            services_unknown: false,
            nft_services: Vec::new(),
            ipvs_services: &[],
            iptables_services: Vec::new(),
            lines: LineIndex::new(set.source()),
            endpoint_ips: std::sync::OnceLock::new(),
            graph_released: false,
            chain_services: None,
        }
    }

    /// The Service key of each chain of the dump that belongs to a Service port, from its
    /// model: what [`Node::with_chain_services`] gives a node re-read with part of its rules.
    pub fn chain_services(&self) -> ChainServices {
        let mut map = ChainServices::default();
        for (i, chain) in self.set.chains.iter().enumerate() {
            let id = ChainId(i as u32);
            if let Some(service) = self.model.service_of_chain(id) {
                map.insert(
                    (chain.table.index(), self.set.chain(id).name().into()),
                    facts::service_key(service).into(),
                );
            }
        }
        map
    }

    /// A node re-read from its dump with only some chains' rules (the others blanked out):
    /// its chains' Services are those of the whole dump, not of the rules left.
    pub fn with_chain_services(mut self, services: ChainServices) -> Node<'a> {
        self.chain_services = Some(services);
        self
    }

    /// The Service key of the Service port a chain belongs to.
    pub fn service_key_of_chain(&self, chain: ChainId) -> Option<&str> {
        match &self.chain_services {
            Some(map) => {
                let c = self.set.chain(chain);
                map.get(&(c.get().table.index(), Box::from(c.name())))
                    .map(|s| &**s)
            }
            None => self.model.service_of_chain(chain).map(facts::service_key),
        }
    }

    /// Frees the chain graph once the node's facts are in a group: the rule level and the
    /// report read the rules and the model only, and two 1M-chain nodes' graphs are 24 MB.
    /// Facts collected later need it back: [`Node::restore_graph`].
    pub fn release_graph(&mut self) {
        if !self.graph_released {
            self.graph = ChainGraph::build(&rulelint_parser::parse("").ruleset);
            self.graph_released = true;
        }
    }

    /// Builds the graph [`Node::release_graph`] freed again (the same graph: it depends on the
    /// rules only).
    pub fn restore_graph(&mut self) {
        if self.graph_released {
            self.graph = ChainGraph::build(self.set);
            self.graph_released = false;
        }
    }

    /// Prepares a node's file, iptables, nftables or both; `name` is used unless the file
    /// names its node (`# node: NAME`).
    pub fn from_input(name: impl Into<String>, input: &'a NodeInput<'a>) -> Node<'a> {
        let mut node = Node::new(name, &input.iptables);
        if let Some(ipvs) = &input.ipvs
            && input.nft.is_empty()
        {
            ipvs::add_ipvs(&mut node, input, ipvs);
            return node;
        }
        if input.nft.is_empty() {
            return node;
        }
        node = node.with_catalog();
        node.backend = if input.iptables.has_no_content() {
            NodeBackend::Nftables
        } else {
            NodeBackend::Both
        };
        // "No iptables content" is no error in a file of nftables sections; theirs count.
        let no_content = input
            .iptables
            .diagnostics
            .iter()
            .filter(|d| {
                d.severity == Severity::Error && d.code == rulelint_parser::codes::NO_CONTENT.code
            })
            .count();
        let nft_errors: usize = input
            .nft
            .iter()
            .flat_map(|(_, p)| &p.diagnostics)
            .filter(|d| d.severity == Severity::Error)
            .map(rulelint_parser::cap::stands_for)
            .sum();
        node.parse_errors = node.parse_errors - no_content + nft_errors;
        if declared_name(node.set).is_none()
            && let Some(name) = declared_name_in_text(input.text)
        {
            node.name = name.to_string();
        }
        let mut generation = None;
        // One entry per chain: sized once (a million-chain section doubled its way there).
        node.nft_chains
            .reserve_exact(input.nft.iter().map(|(_, p)| p.ruleset.chains.len()).sum());
        for (offset, parsed) in &input.nft {
            let set = &parsed.ruleset;
            node.nft_rules += set.rules.len();
            // Section lines are 1-based within the section: shift them to the file's.
            let offset = u32::try_from(*offset).unwrap_or(u32::MAX);
            let line_shift = node.lines.line(offset).saturating_sub(1);
            let section_lines = LineIndex::new(set.text);
            let graph = rulelint_nft::ChainGraph::build(set);
            let model = NftKubeModel::build(set, &graph);
            if model.mode == NftMode::Nftables {
                generation.get_or_insert(model.generation.name());
            }
            for table in &set.tables {
                let table_name: std::sync::Arc<str> = format!(
                    "{} {}",
                    table.family_word.unwrap_or("ip"),
                    table.name.unwrap_or("?")
                )
                .into();
                for &chain in &table.chains {
                    let c = &set.chains[chain.index()];
                    node.nft_chains.push(NftChain {
                        table: table_name.clone(),
                        name: c.name,
                        policy: c.base.as_ref().and_then(|b| b.policy),
                        per_service: c.name.contains('/'),
                        line: section_lines.line(c.span.start) + line_shift,
                    });
                }
            }
            let catalog = Catalog::from_nft(&model);
            node.nft_services
                .extend(catalog.services.into_iter().map(|mut service| {
                    shift_origins(&mut service, offset, line_shift);
                    let status = if service.chains.cluster.is_some()
                        || service.chains.local.is_some()
                        || service.chains.external.is_some()
                    {
                        facts::STATUS_DISPATCHED
                    } else {
                        facts::STATUS_REJECTED
                    };
                    ServiceEntry { service, status }
                }));
        }
        node.nft_generation = Some(generation.unwrap_or("none"));
        node
    }

    /// Builds the catalogue of the iptables part, which comparisons with an nftables node read
    /// ([`prepare`] does this when some input has nftables).
    pub fn with_catalog(mut self) -> Node<'a> {
        // An IPVS node's Services are its virtual servers; iptables-mode leftovers are RL411's.
        if self.iptables_services.is_empty() && !self.backend.has_ipvs() {
            self.iptables_services = iptables_catalog(self.set, &self.graph, &self.model);
        }
        self
    }

    /// The Service ports of the backend-neutral catalogue: the iptables part's, then the
    /// nftables sections' or the IPVS state's.
    pub fn catalog_services(&self) -> impl Iterator<Item = &ServiceEntry<'a>> + Clone {
        self.iptables_services
            .iter()
            .chain(&self.nft_services)
            .chain(self.ipvs_services)
    }

    /// The pod IPs this node DNATs to in any Service (built on first use).
    pub fn endpoint_ips(&self) -> &FxHashSet<IpAddr> {
        self.endpoint_ips.get_or_init(|| {
            let nft = self
                .nft_services
                .iter()
                .chain(self.ipvs_services)
                .flat_map(|s| s.service.endpoints.iter().chain(&s.service.local_endpoints))
                .filter_map(|e| e.destination.as_deref());
            self.model
                .endpoints
                .iter()
                .filter_map(|e| e.destination)
                .chain(nft)
                .filter_map(node_local::address_in)
                .collect()
        })
    }

    /// The line of a rule.
    pub fn rule_line(&self, rule: RuleId) -> u32 {
        self.lines.line(self.set.rule(rule).get().span.start)
    }

    /// The line that declares a chain (or its first rule).
    pub fn chain_line(&self, chain: ChainId) -> Option<u32> {
        let c = self.set.chain(chain);
        let start = c
            .get()
            .declaration()
            .map(|d| d.start)
            .or_else(|| c.rules().next().map(|r| r.get().span.start))?;
        Some(self.lines.line(start))
    }
}

/// The node name a dump declares with a `# node: NAME` line (iptables-restore ignores it).
pub fn declared_name<'a>(set: &Ruleset<'a>) -> Option<&'a str> {
    set.comments
        .iter()
        .filter(|c| c.kind == CommentKind::Other)
        .find_map(|c| {
            let text = set.text(c.span).trim_start_matches('#').trim();
            let name = text.strip_prefix("node:")?.trim();
            (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
        })
}

/// Prepares named inputs for [`compare`]: when any has nftables, every node's Service-level
/// facts come from its catalogue, so the iptables nodes get theirs built too.
pub fn prepare<'a>(named: impl IntoIterator<Item = (String, &'a NodeInput<'a>)>) -> Vec<Node<'a>> {
    let nodes: Vec<Node<'a>> = named
        .into_iter()
        .map(|(name, input)| Node::from_input(name, input))
        .collect();
    if nodes.iter().all(|n| n.backend == NodeBackend::Iptables) {
        return nodes;
    }
    nodes.into_iter().map(Node::with_catalog).collect()
}

/// The Service ports of an iptables dump as catalogue entries, with their status.
pub(crate) fn iptables_catalog<'a>(
    set: &Ruleset<'a>,
    graph: &ChainGraph,
    model: &KubeModel<'a>,
) -> Vec<ServiceEntry<'a>> {
    if model.services.is_empty() {
        return Vec::new();
    }
    Catalog::from_iptables(set, graph, model)
        .services
        .into_iter()
        .zip(&model.services)
        .map(|(service, s)| {
            let status = if s.chains.iter().next().is_none() {
                facts::STATUS_REJECTED
            } else if s.is_live(graph) {
                facts::STATUS_DISPATCHED
            } else {
                facts::STATUS_ORPHANED
            };
            ServiceEntry { service, status }
        })
        .collect()
}

/// A `# node: NAME` line anywhere in a file (an nftables section's comments are not read by
/// the iptables parser).
fn declared_name_in_text(text: &str) -> Option<&str> {
    text.lines().find_map(|line| {
        let name = line
            .trim()
            .strip_prefix('#')?
            .trim()
            .strip_prefix("node:")?
            .trim();
        (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
    })
}

/// Moves a Service port's origins from its section into the file: spans by the section's byte
/// offset, lines by the lines before it.
fn shift_origins(service: &mut CatalogService<'_>, offset: u32, lines: u32) {
    let shift = |o: &mut Origin| {
        o.span = Span::new(
            o.span.start.saturating_add(offset) as usize,
            o.span.end.saturating_add(offset) as usize,
        );
        o.line = o.line.saturating_add(lines);
    };
    service
        .addresses
        .iter_mut()
        .for_each(|a| shift(&mut a.origin));
    service
        .endpoints
        .iter_mut()
        .chain(service.local_endpoints.iter_mut())
        .for_each(|e| shift(&mut e.origin));
    if let Some(a) = service.affinity.as_mut() {
        shift(&mut a.origin);
    }
    service
        .source_ranges
        .iter_mut()
        .for_each(|r| shift(&mut r.origin));
    service
        .rejects_without_endpoints
        .iter_mut()
        .chain(service.drops_without_local_endpoints.iter_mut())
        .for_each(shift);
}

/// The nodes that hold a subject with one value.
#[derive(Clone, Debug)]
pub struct Variant<'r> {
    /// The value; `None` for the nodes that lack the subject.
    pub value: Option<Value<'r>>,
    /// The nodes (indexes into the compared nodes, ascending) and the line that shows the fact
    /// in each.
    pub nodes: Vec<(u32, Option<u32>)>,
}

/// A subject on which nodes disagree.
#[derive(Clone, Debug)]
pub struct Difference<'r> {
    /// What.
    pub subject: Subject<'r>,
    /// The values nodes hold it with, most nodes first.
    pub variants: Vec<Variant<'r>>,
    /// Set when healthy nodes differ like this by design.
    pub expected: Option<Expected>,
}

impl Difference<'_> {
    /// The variant most nodes hold, when one holds more than any other (never for two nodes).
    pub fn majority(&self) -> Option<usize> {
        let first = self.variants.first()?.nodes.len();
        let second = self.variants.get(1).map_or(0, |v| v.nodes.len());
        (first > second).then_some(0)
    }
}

/// The outcome of comparing nodes.
pub struct Comparison<'r> {
    /// The nodes compared.
    pub nodes: &'r [NodeInfo],
    /// Subjects on which they disagree, in report order (Kubernetes first, then chains).
    pub differences: Vec<Difference<'r>>,
    /// For two nodes read from dumps: the rule changes of the chains both have.
    pub rules: Vec<rules::ChainChanges<'r>>,
    /// For two nodes read from dumps: the dumps, which the rule level's lines and text are from.
    pub dumps: Option<&'r [Node<'r>]>,
    /// What else the report should say (a pair of summaries has no rule level).
    pub notes: Vec<String>,
    group: Option<&'r Group>,
    endpoint_ips: Vec<OnceCell<FxHashSet<IpAddr>>>,
}

impl<'r> Comparison<'r> {
    /// Differences and rule changes that are not expected between healthy nodes.
    pub fn drift_count(&self) -> usize {
        self.count(false)
    }

    /// Differences and rule changes that healthy nodes have by design.
    pub fn expected_count(&self) -> usize {
        self.count(true)
    }

    fn count(&self, expected: bool) -> usize {
        let differences = self.differences.iter().map(|d| d.expected);
        let changes = self
            .rules
            .iter()
            .flat_map(|c| &c.changes)
            .map(|c| c.expected);
        differences
            .chain(changes)
            .filter(|e| e.is_some() == expected)
            .count()
    }

    /// Adds the rule level of two nodes from their dumps (`dumps` are the compared nodes, in
    /// order); nothing for other comparisons, or when a node has no iptables chains.
    pub fn with_rules(self, dumps: &'r [Node<'r>]) -> Comparison<'r> {
        let changes = rule_changes(dumps);
        self.with_rule_changes(dumps, changes)
    }

    /// [`Comparison::with_rules`] with the rule level already found by [`rule_changes`] (on
    /// another thread, while the facts were compared).
    pub fn with_rule_changes(
        mut self,
        dumps: &'r [Node<'r>],
        changes: Option<Vec<rules::ChainChanges<'r>>>,
    ) -> Comparison<'r> {
        if let Some(changes) = changes
            && self.nodes.len() == 2
        {
            self.rules = changes;
            self.dumps = Some(dumps);
        }
        self
    }

    /// The pod IPs node `index` DNATs to in any Service (built on first use).
    pub fn endpoint_ips(&self, index: usize) -> &FxHashSet<IpAddr> {
        static EMPTY: std::sync::OnceLock<FxHashSet<IpAddr>> = std::sync::OnceLock::new();
        match self.endpoint_ips.get(index) {
            Some(cell) => cell.get_or_init(|| {
                self.group
                    .map(|g| g.endpoint_ips(index))
                    .unwrap_or_default()
            }),
            None => EMPTY.get_or_init(FxHashSet::default),
        }
    }
}

/// The rule level of two nodes from their dumps, which [`Comparison::with_rules`] adds; `None`
/// for other comparisons, or when a node has no iptables chains. Reads the dumps only, so it
/// can run while the facts are compared.
pub fn rule_changes<'r>(dumps: &'r [Node<'r>]) -> Option<Vec<rules::ChainChanges<'r>>> {
    (dumps.len() == 2
        && dumps.iter().all(|n| n.backend.has_iptables())
        // An IPVS node's iptables part is another mode's: nothing to pair rules with.
        && dumps[0].backend.has_ipvs() == dumps[1].backend.has_ipvs())
    .then(|| rules::diff(&dumps[0], &dumps[1], &kube_addresses(dumps)))
}

/// Compares prepared nodes ([`prepare`]) whose facts are in `group` ([`Group::from_nodes`]):
/// two as a pair (with the rule level), three or more against their majority (with
/// whole-chain digests in place of the rule level).
pub fn compare<'r>(group: &'r Group, nodes: &'r [Node<'r>]) -> Comparison<'r> {
    group.compare().with_rules(nodes)
}

/// For a chain whose rules differ on every node but agree once addresses are masked: each node
/// has its own addresses (its IP, its pod CIDR), which is how healthy nodes differ.
fn only_node_addresses(variants: &[Variant<'_>]) -> Option<Expected> {
    let masked = |v: &Variant<'_>| match v.value {
        Some(Value::Digest { masked, .. }) => Some(masked),
        _ => None,
    };
    let first = masked(&variants[0])?;
    let all_alike = variants.iter().all(|v| masked(v) == Some(first));
    let no_agreement = variants.iter().all(|v| v.nodes.len() == 1);
    (all_alike && no_agreement).then_some(Expected::NodeAddress)
}

/// Endpoints added or removed change every endpoint's weight: report the endpoints only.
fn drop_weights_explained_by_endpoints(differences: &mut Vec<Difference<'_>>) {
    let with_endpoint_changes: FxHashSet<&str> = differences
        .iter()
        .filter(|d| matches!(d.subject, Subject::Endpoint { .. }))
        .filter(|d| d.variants.iter().any(|v| v.value.is_none()))
        .filter_map(|d| d.subject.service())
        .collect();
    differences.retain(|d| match d.subject {
        Subject::Weight { service, .. } => !with_endpoint_changes.contains(service),
        _ => true,
    });
}

/// A Service port whose status differs (dispatched on one node, rejected for lack of endpoints
/// on another) naturally differs in its chains and REJECT rule too: report the status only.
fn drop_parts_explained_by_status(differences: &mut Vec<Difference<'_>>) {
    let with_status_changes: FxHashSet<&str> = differences
        .iter()
        .filter(|d| matches!(d.subject, Subject::Service { .. }))
        .filter(|d| d.variants.iter().all(|v| v.value.is_some()))
        .filter_map(|d| d.subject.service())
        .collect();
    differences.retain(|d| match d.subject {
        Subject::ServiceChain { service, .. } | Subject::NoEndpointsReject { service } => {
            !with_status_changes.contains(service)
        }
        _ => true,
    });
}

/// The Service and endpoint addresses of the nodes: a rule that differs in one of these is
/// Kubernetes drift, never a node's own address.
fn kube_addresses(nodes: &[Node<'_>]) -> FxHashSet<IpAddr> {
    let mut addresses = FxHashSet::default();
    for node in nodes {
        addresses.extend(kube_addresses_of(node));
    }
    addresses
}

/// The Service and endpoint addresses of one node (see [`rules::diff`]).
pub fn kube_addresses_of(node: &Node<'_>) -> FxHashSet<IpAddr> {
    let mut addresses = FxHashSet::default();
    for service in &node.model.services {
        addresses.extend(
            service
                .addresses
                .iter()
                .filter_map(|a| a.address)
                .map(|a| a.addr()),
        );
    }
    addresses.extend(node.endpoint_ips());
    addresses
}
