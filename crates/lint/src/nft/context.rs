//! What an nftables lint sees: one parsed nft section, its chain graph, what the iptables part
//! of the same file says about kube-proxy, and the sink its findings go to. Also the few names
//! kube-proxy's nftables proxier uses (`pkg/proxy/nftables/proxier.go`), kept small so that
//! they can move onto the shared Kubernetes model later.

use super::NftLint;
use rulelint_nft::{
    Chain, ChainGraph, ChainId, Diagnostic, Expr, Family, Proto, RuleId, Ruleset, Set, SetId, Span,
    Stmt, TableId,
};
use std::sync::OnceLock;

/// kube-proxy's table, in families `ip` and `ip6`.
pub const KUBE_PROXY_TABLE: &str = "kube-proxy";
/// The verdict map of ClusterIP, external IP and load-balancer IP traffic.
pub const SERVICE_IPS: &str = "service-ips";
/// The verdict map of NodePort traffic.
pub const SERVICE_NODEPORTS: &str = "service-nodeports";
/// The verdict map of Service IPs whose Service has no (local) endpoints.
pub const NO_ENDPOINT_SERVICES: &str = "no-endpoint-services";
/// The verdict map of NodePorts whose Service has no (local) endpoints.
pub const NO_ENDPOINT_NODEPORTS: &str = "no-endpoint-nodeports";
/// The verdict map of load-balancer IPs with source ranges.
pub const FIREWALL_IPS: &str = "firewall-ips";

/// The prefixes of kube-proxy's per-Service and per-endpoint chains (`service-HASH-ns/svc/...`).
/// kube-proxy itself treats any chain name holding `/` as one of them.
pub const SERVICE_CHAIN_PREFIXES: &[&str] =
    &["service-", "local-", "external-", "firewall-", "endpoint-"];

/// Whether `name` is one of kube-proxy's per-Service or per-endpoint chains.
pub fn is_service_chain(name: &str) -> bool {
    // The prefixes first: they settle most names without reading them whole.
    // The `memchr` crate's search, with its vector compare over a name of some 50 bytes:
    // `str::contains` took a generic path, several times the cost (a kube-proxy node has one
    // such name per chain).
    SERVICE_CHAIN_PREFIXES.iter().any(|p| name.starts_with(p))
        && memchr::memchr(b'/', name.as_bytes()).is_some()
}

/// What the iptables part of the same file says about kube-proxy.
#[derive(Clone, Debug, Default)]
pub struct IptablesFacts {
    /// A kube-proxy iptables-mode chain with rules (`KUBE-SVC-*`, `KUBE-SEP-*`): its name and
    /// 1-based line in the file.
    pub kube_proxy_chain: Option<(String, u32)>,
}

/// A read-only view of one nft section for the lints.
pub struct NftContext<'r, 'a> {
    set: &'r Ruleset<'a>,
    graph: Graph<'r>,
    iptables: &'r IptablesFacts,
    // Built on first use by the lints that read it; `OnceLock` so the lints may share threads.
    walked: OnceLock<Walked<'a>>,
}

impl<'r, 'a> NftContext<'r, 'a> {
    /// A context over a ruleset, the graph built from it and the iptables facts of its file.
    pub fn new(
        set: &'r Ruleset<'a>,
        graph: &'r ChainGraph,
        iptables: &'r IptablesFacts,
    ) -> NftContext<'r, 'a> {
        NftContext {
            set,
            graph: Graph::Built(graph),
            iptables,
            walked: OnceLock::new(),
        }
    }

    /// A context that builds the chain graph on first use, so that lints which do not read it
    /// can run while another thread builds it.
    pub fn with_lazy_graph(
        set: &'r Ruleset<'a>,
        iptables: &'r IptablesFacts,
    ) -> NftContext<'r, 'a> {
        NftContext {
            set,
            graph: Graph::Lazy(OnceLock::new()),
            iptables,
            walked: OnceLock::new(),
        }
    }

    /// The one walk over the chains and statements that the lints share (built on first use).
    pub fn walked(&self) -> &Walked<'a> {
        self.walked.get_or_init(|| Walked::new(self.set))
    }

    /// The ruleset.
    pub fn ruleset(&self) -> &'r Ruleset<'a> {
        self.set
    }

    /// The chain graph (built on first use by a context [`NftContext::with_lazy_graph`]; a
    /// second thread asking meanwhile waits for it).
    pub fn graph(&self) -> &ChainGraph {
        match &self.graph {
            Graph::Built(graph) => graph,
            Graph::Lazy(cell) => cell.get_or_init(|| ChainGraph::build(self.set)),
        }
    }

    /// What the iptables part of the file says.
    pub fn iptables(&self) -> &'r IptablesFacts {
        self.iptables
    }

    /// A chain by id.
    pub fn chain(&self, id: ChainId) -> &'r Chain<'a> {
        &self.set.chains[id.index()]
    }

    /// A set or map by id.
    pub fn set(&self, id: SetId) -> &'r Set<'a> {
        &self.set.sets[id.index()]
    }

    /// kube-proxy's tables (`table ip kube-proxy`, `table ip6 kube-proxy`), in text order.
    pub fn kube_proxy_tables(&self) -> impl Iterator<Item = TableId> + 'r {
        self.set
            .tables
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                t.name == Some(KUBE_PROXY_TABLE)
                    && matches!(t.family, Some(Family::Ip | Family::Ip6))
            })
            .map(|(i, _)| TableId(i as u32))
    }

    /// Whether a table was read whole: it has its header and its closing `}`, and so do all of
    /// its chains and sets. Lints that conclude from absence (a chain, a rule, an element) read
    /// only such tables: a cut paste leaves out exactly what they look for.
    pub fn is_complete(&self, table: TableId) -> bool {
        self.walked()
            .complete
            .get(table.index())
            .copied()
            .unwrap_or(false)
    }

    /// Whether a table was read from a listing (`nft list ruleset` text or `nft -j` JSON) rather
    /// than a transaction (`add table ...`), which holds what one sync changes: kube-proxy
    /// writes one transaction per family.
    pub fn is_listed(&self, table: TableId) -> bool {
        let t = &self.set.tables[table.index()];
        let at = self.set.text.get(t.span.start as usize..).unwrap_or("");
        at.starts_with("table") || at.starts_with('{')
    }

    /// The named set or map `name` of `table`.
    pub fn set_in(&self, table: TableId, name: &str) -> Option<SetId> {
        self.set.tables[table.index()]
            .sets
            .iter()
            .copied()
            .find(|s| self.set(*s).name == name)
    }

    /// The span of a slice of the text (a name, a literal), or `fallback`.
    pub fn span_or(&self, s: &str, fallback: Span) -> Span {
        self.set.span_of(s).unwrap_or(fallback)
    }

    /// The span of a chain's header line: from `chain` to the end of that line.
    pub fn chain_header(&self, chain: ChainId) -> Span {
        let c = self.chain(chain);
        let (start, end) = (c.span.start as usize, c.span.end as usize);
        let text = self.set.text.as_bytes();
        // Only the chain's own text: a JSON listing is one line of many megabytes.
        let end = text
            .get(start..end.min(text.len()))
            .and_then(|own| memchr::memchr(b'\n', own))
            .map_or(end, |i| start + i);
        Span::new(start, end.max(start))
    }

    /// The 1-based line of a byte offset of the section.
    pub fn line(&self, offset: u32) -> u32 {
        let text = self.set.text.as_bytes();
        let end = (offset as usize).min(text.len());
        1 + text[..end].iter().filter(|&&b| b == b'\n').count() as u32
    }
}

/// The chain graph of a context: given, or built on first use.
enum Graph<'r> {
    Built(&'r ChainGraph),
    Lazy(OnceLock<ChainGraph>),
}

/// Whether a table was read whole (see [`NftContext::is_complete`]).
fn table_is_complete(set: &Ruleset<'_>, table: TableId) -> bool {
    let t = &set.tables[table.index()];
    !t.is_headerless()
        && t.closed
        && t.chains.iter().all(|c| set.chains[c.index()].closed)
        && t.sets.iter().all(|s| set.sets[s.index()].closed)
}

/// A `dnat to LITERAL` statement of a kube-proxy endpoint chain.
#[derive(Clone, Copy, Debug)]
pub struct Dnat<'a> {
    /// The index of its rule within the chain.
    pub rule: usize,
    /// The statement's span.
    pub span: Span,
    /// The literal after `dnat to`.
    pub to: &'a str,
}

/// An `ip saddr LITERAL` (or `ip6 saddr`, `==`) match of a kube-proxy endpoint chain.
#[derive(Clone, Copy, Debug)]
pub struct SaddrMatch<'a> {
    /// The index of its rule within the chain.
    pub rule: usize,
    /// The literal matched.
    pub address: &'a str,
}

/// A kube-proxy endpoint chain (`endpoint-HASH-ns/svc/proto/port__IP/PORT`) of a kube-proxy
/// table, with what its rules hold that the lints read.
#[derive(Clone, Debug)]
pub struct EndpointChain<'a> {
    /// The chain.
    pub chain: ChainId,
    /// Its table.
    pub table: TableId,
    /// Whether the chain was read to its closing `}`.
    pub closed: bool,
    /// The endpoint its name ends in, as written: `(ADDRESS, PORT)` of `__ADDRESS/PORT` (after
    /// the last `__`, split at the last `/`), not parsed.
    pub written: Option<(&'a str, &'a str)>,
    dnats: std::ops::Range<u32>,
    saddrs: std::ops::Range<u32>,
}

/// Whether a chain is one of kube-proxy's per-Service or per-endpoint chains (see
/// [`Walked::is_service_chain`]), and if so whether it has rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ServiceChain {
    No,
    WithRules,
    Empty,
}

/// What one walk over the chains and statements of a section found, for the lints that would
/// otherwise each walk them again (the statements of a 5,000-Service node are tens of
/// megabytes: each walk costs milliseconds in memory traffic alone).
#[derive(Debug, Default)]
pub struct Walked<'a> {
    /// Per table: read whole ([`NftContext::is_complete`]).
    complete: Vec<bool>,
    /// Per chain: one of kube-proxy's per-Service or per-endpoint chains of a kube-proxy table
    /// ([`is_service_chain`]), and whether it has no rule (read here, where the chain is read
    /// anyway, rather than by a lint's random access to each chain a map element names).
    service_chain: Vec<ServiceChain>,
    /// The `endpoint-` chains of kube-proxy's tables, in table then chain order.
    endpoints: Vec<EndpointChain<'a>>,
    dnats: Vec<Dnat<'a>>,
    saddrs: Vec<SaddrMatch<'a>>,
    /// Every rule statement holding an anonymous verdict map (`vmap { ... }`), by chain order.
    anon_vmaps: Vec<(ChainId, RuleId, u32)>,
    /// Every rule statement that looks up a map keyed by `numgen` (in a `vmap`, a `dnat to` or
    /// an assignment), in chain order.
    numgen_lookups: Vec<(RuleId, u32)>,
}

impl<'a> Walked<'a> {
    fn new(set: &Ruleset<'a>) -> Walked<'a> {
        let mut w = Walked {
            complete: (0..set.tables.len())
                .map(|t| table_is_complete(set, TableId(t as u32)))
                .collect(),
            service_chain: vec![ServiceChain::No; set.chains.len()],
            ..Walked::default()
        };
        let kube: Vec<bool> = set
            .tables
            .iter()
            .map(|t| {
                t.name == Some(KUBE_PROXY_TABLE)
                    && matches!(t.family, Some(Family::Ip | Family::Ip6))
            })
            .collect();
        let is_endpoint = |chain: &Chain<'_>| {
            kube.get(chain.table.index()).copied().unwrap_or(false)
                && chain.name.starts_with("endpoint-")
        };
        // Sized once from a count of the endpoint chains (one DNAT and one source match each,
        // in kube-proxy's layout): grown by doubling, each of these vectors was copied into
        // fresh pages several times, about a tenth of the check's page faults. (Sized by the
        // chains' rules, two each, half of both stayed empty.)
        let endpoints = set.chains.iter().filter(|c| is_endpoint(c)).count();
        w.endpoints.reserve_exact(endpoints);
        w.dnats.reserve_exact(endpoints);
        w.saddrs.reserve_exact(endpoints);
        for (c, chain) in set.chains.iter().enumerate() {
            let id = ChainId(c as u32);
            let in_kube = kube.get(chain.table.index()).copied().unwrap_or(false);
            let endpoint = is_endpoint(chain);
            if in_kube && is_service_chain(chain.name) {
                w.service_chain[c] = if chain.rules.is_empty() {
                    ServiceChain::Empty
                } else {
                    ServiceChain::WithRules
                };
            }
            let (dnats, saddrs) = (w.dnats.len() as u32, w.saddrs.len() as u32);
            for (i, &rule_id) in chain.rules.iter().enumerate() {
                let Some(rule) = set.rules.get(rule_id.index()) else {
                    continue;
                };
                for (s, statement) in set.statements_of(rule).iter().enumerate() {
                    match &statement.kind {
                        Stmt::Vmap { key, map } => {
                            if matches!(map, Expr::Set(_)) {
                                w.anon_vmaps.push((id, rule_id, s as u32));
                            }
                            if matches!(key, Expr::Numgen(_)) {
                                w.numgen_lookups.push((rule_id, s as u32));
                            }
                        }
                        Stmt::Nat(nat) => {
                            if endpoint
                                && nat.kind == "dnat"
                                && let Some(Expr::Literal(to)) = &nat.to
                            {
                                w.dnats.push(Dnat {
                                    rule: i,
                                    span: statement.span,
                                    to,
                                });
                            }
                            if nat.to.as_ref().is_some_and(holds_numgen_map) {
                                w.numgen_lookups.push((rule_id, s as u32));
                            }
                        }
                        Stmt::Assign { value, .. } if holds_numgen_map(value) => {
                            w.numgen_lookups.push((rule_id, s as u32));
                        }
                        // `endpoint` first: the pattern compares strings, and most matches
                        // are in other chains.
                        Stmt::Match { left, op, right } if endpoint => {
                            if let (
                                Expr::Payload {
                                    proto: Proto::Ip | Proto::Ip6,
                                    field: "saddr",
                                },
                                None | Some("=="),
                                Expr::Literal(address),
                            ) = (left, op, right)
                            {
                                w.saddrs.push(SaddrMatch { rule: i, address });
                            }
                        }
                        _ => {}
                    }
                }
            }
            if endpoint {
                w.endpoints.push(EndpointChain {
                    chain: id,
                    table: chain.table,
                    closed: chain.closed,
                    written: after_last_double_underscore(chain.name)
                        .and_then(|endpoint| endpoint.rsplit_once('/')),
                    dnats: dnats..w.dnats.len() as u32,
                    saddrs: saddrs..w.saddrs.len() as u32,
                });
            }
        }
        // Chains are in text order, tables' chains too: endpoint chains by table, then text.
        // Nearly always one table holds them all, already in that order; otherwise the chain
        // id breaks ties (a stable sort's scratch buffer was 1.25 MB of fresh pages at 5,000
        // Services).
        if !w.endpoints.is_sorted_by_key(|e| e.table) {
            w.endpoints.sort_unstable_by_key(|e| (e.table, e.chain));
        }
        w
    }

    /// Whether `chain` is one of kube-proxy's per-Service or per-endpoint chains in a
    /// kube-proxy table.
    pub fn is_service_chain(&self, chain: ChainId) -> bool {
        self.service_chain
            .get(chain.index())
            .is_some_and(|&s| s != ServiceChain::No)
    }

    /// Whether `chain` is one of kube-proxy's per-Service or per-endpoint chains in a
    /// kube-proxy table, and has no rule.
    pub fn is_empty_service_chain(&self, chain: ChainId) -> bool {
        self.service_chain.get(chain.index()) == Some(&ServiceChain::Empty)
    }

    /// The endpoint chains of kube-proxy's tables.
    pub fn endpoints(&self) -> &[EndpointChain<'a>] {
        &self.endpoints
    }

    /// An endpoint chain's `dnat to LITERAL` statements, in order.
    pub fn dnats(&self, chain: &EndpointChain<'a>) -> &[Dnat<'a>] {
        self.dnats
            .get(chain.dnats.start as usize..chain.dnats.end as usize)
            .unwrap_or(&[])
    }

    /// An endpoint chain's `ip saddr LITERAL` matches, in order.
    pub fn saddrs(&self, chain: &EndpointChain<'a>) -> &[SaddrMatch<'a>] {
        self.saddrs
            .get(chain.saddrs.start as usize..chain.saddrs.end as usize)
            .unwrap_or(&[])
    }

    /// Every rule statement holding an anonymous verdict map: (chain, rule, statement index).
    pub fn anon_vmaps(&self) -> &[(ChainId, RuleId, u32)] {
        &self.anon_vmaps
    }

    /// Every rule statement that looks up a map keyed by `numgen`: (rule, statement index).
    pub fn numgen_lookups(&self) -> &[(RuleId, u32)] {
        &self.numgen_lookups
    }
}

/// What follows the last `__` of `name` (as `name.rsplit_once("__")`), found by searching
/// `_` from the end: the generic substring search cost a third of the shared walk on 20,000
/// endpoint chains, whose names end in an address without `_`.
fn after_last_double_underscore(name: &str) -> Option<&str> {
    let bytes = name.as_bytes();
    let mut end = bytes.len();
    loop {
        // `i` is an underscore; if one precedes it, it ends the last pair.
        let i = memchr::memrchr(b'_', &bytes[..end])?;
        if i > 0 && bytes[i - 1] == b'_' {
            return name.get(i + 1..);
        }
        end = i;
    }
}

/// Whether an expression holds a map lookup (`KEY map { ... }`) keyed by `numgen`, within
/// concatenations and binary operations. An explicit stack: no recursion on input depth.
fn holds_numgen_map(expr: &Expr<'_>) -> bool {
    // Nearly every expression asked about (a `dnat to` address, a mark) is a leaf: settled
    // without the stack's allocation, which cost as much as the rest of the walk's statements.
    match expr {
        Expr::Map { key, .. } => return matches!(**key, Expr::Numgen(_)),
        Expr::Concat(_) | Expr::Binop(_) => {}
        _ => return false,
    }
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Map { key, .. } if matches!(**key, Expr::Numgen(_)) => return true,
            Expr::Concat(parts) => stack.extend(parts.iter()),
            Expr::Binop(b) => {
                stack.push(&b.left);
                stack.push(&b.right);
            }
            _ => {}
        }
    }
    false
}

/// The canonical text of a set or map key: literals as written, concatenations joined with
/// ` . `. `None` for keys that are not constants.
pub fn key_text(key: &Expr<'_>) -> Option<String> {
    let mut text = String::new();
    push_key_text(key, &mut text).then_some(text)
}

/// Appends [`key_text`] of `key` to `out` without a `String` per part; false (and `out` left
/// partly written) for keys that are not constants. An explicit stack: no recursion on input
/// depth.
pub fn push_key_text(key: &Expr<'_>, out: &mut String) -> bool {
    // kube-proxy's keys: a literal, or a concatenation of literals.
    match key {
        Expr::Literal(s) => {
            out.push_str(s);
            return true;
        }
        Expr::Concat(parts) if parts.iter().all(|p| matches!(p, Expr::Literal(_))) => {
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    out.push_str(" . ");
                }
                if let Expr::Literal(s) = part {
                    out.push_str(s);
                }
            }
            return true;
        }
        _ => {}
    }
    // `None` is the separator between two parts of a concatenation.
    let mut stack: Vec<Option<&Expr<'_>>> = vec![Some(key)];
    while let Some(item) = stack.pop() {
        match item {
            None => out.push_str(" . "),
            Some(Expr::Literal(s)) => out.push_str(s),
            Some(Expr::Concat(parts)) => {
                for (i, part) in parts.iter().enumerate().rev() {
                    stack.push(Some(part));
                    if i > 0 {
                        stack.push(None);
                    }
                }
            }
            Some(_) => return false,
        }
    }
    true
}

/// Whether any statement of the chain's rules satisfies `f`.
pub fn any_statement<'a>(set: &Ruleset<'a>, chain: ChainId, f: impl Fn(&Stmt<'a>) -> bool) -> bool {
    set.rules_of(chain)
        .any(|r| set.statements_of(r).iter().any(|s| f(&s.kind)))
}

/// Where an nft lint's findings go, stamped with the lint's code, name and default severity.
pub struct NftFindings<'s> {
    lint: &'static NftLint,
    out: &'s mut Vec<(Diagnostic, Option<ChainId>)>,
}

impl<'s> NftFindings<'s> {
    pub(crate) fn new(
        lint: &'static NftLint,
        out: &'s mut Vec<(Diagnostic, Option<ChainId>)>,
    ) -> NftFindings<'s> {
        NftFindings { lint, out }
    }

    /// A new finding of this lint at `span`; add label and help, then push it.
    pub fn diagnostic(&self, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(&self.lint.info, span, message)
    }

    /// Records a finding (not about one chain).
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.out.push((diagnostic, None));
    }

    /// Records a finding about a chain (the configuration's allowed chains apply to it).
    pub fn push_in(&mut self, chain: ChainId, diagnostic: Diagnostic) {
        self.out.push((diagnostic, Some(chain)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A concatenation of `items`.
    fn concat(items: Vec<Expr<'_>>) -> Expr<'_> {
        Expr::Concat(items.into())
    }

    /// Key texts: literals, flat and nested concatenations (joined as `join(" . ")` of each
    /// part's text would), and keys that are not constants.
    #[test]
    fn key_texts() {
        let lit = |s| Expr::Literal(s);
        let flat = concat(vec![lit("10.0.0.1"), lit("tcp"), lit("80")]);
        assert_eq!(key_text(&flat).as_deref(), Some("10.0.0.1 . tcp . 80"));
        let nested = concat(vec![
            lit("a"),
            concat(vec![lit("b"), lit("c")]),
            concat(vec![]),
            lit("d"),
        ]);
        assert_eq!(key_text(&nested).as_deref(), Some("a . b . c .  . d"));
        assert_eq!(key_text(&concat(vec![])).as_deref(), Some(""));
        assert_eq!(key_text(&lit("x")).as_deref(), Some("x"));
        let not_constant = concat(vec![lit("a"), Expr::SetRef("s")]);
        assert_eq!(key_text(&not_constant), None);
        // Deep nesting: no recursion.
        let mut deep = lit("z");
        for _ in 0..100_000 {
            deep = concat(vec![deep]);
        }
        assert_eq!(key_text(&deep).as_deref(), Some("z"));
        std::mem::forget(deep);
    }

    /// The walk finds a `numgen` map lookup in a `dnat to`, in an assignment, alone or inside a
    /// binary operation, and nothing in leaves or maps keyed otherwise; and a lookup inside a
    /// concatenation is found too (that expression built by hand from the first rule's).
    #[test]
    fn numgen_lookups_in_every_shape() {
        let text = "table ip t {\n\tchain c {\n\
            \t\tdnat to numgen random mod 2 map { 0 : 10.0.0.1, 1 : 10.0.0.2 }\n\
            \t\tmeta mark set numgen inc mod 2 map { 0 : 0x1, 1 : 0x2 } | 0x10\n\
            \t\tct mark set numgen inc mod 2 map { 0 : 0x1, 1 : 0x2 }\n\
            \t\tdnat to ip saddr map { 10.0.0.9 : 10.0.0.1 }\n\
            \t\tdnat to 10.0.0.3\n\
            \t\tmeta mark set 0x4 | 0x10\n\
            \t}\n}\n";
        let parsed = rulelint_nft::parse(text);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let walked = Walked::new(&parsed.ruleset);
        let rules: Vec<u32> = walked.numgen_lookups().iter().map(|(r, _)| r.0).collect();
        assert_eq!(rules, [0, 1, 2]);
        let first = &parsed.ruleset.rules[0];
        let Some(Stmt::Nat(nat)) = parsed.ruleset.statements_of(first).first().map(|s| &s.kind)
        else {
            panic!("the first rule is a dnat");
        };
        let lookup = nat.to.clone().expect("dnat to");
        assert!(holds_numgen_map(&concat(vec![Expr::Literal("80"), lookup])));
        assert!(!holds_numgen_map(&concat(vec![Expr::Literal("80")])));
        assert!(is_service_chain("service-ULMVA6XW-ns1/svc1/tcp/p80"));
        assert!(!is_service_chain("service-ULMVA6XW"));
        assert!(!is_service_chain("services/x"));
    }

    /// The byte scan splits where `rsplit_once("__")` does, runs of underscores and non-ASCII
    /// names included.
    #[test]
    fn after_last_double_underscore_is_rsplit_once() {
        for name in [
            "",
            "_",
            "__",
            "a__",
            "__b",
            "a___b",
            "a____b",
            "endpoint-X-ns/svc/tcp/p__10.0.0.1/80",
            "endpoint-X-ns/svc/tcp/p__fd00::1/80",
            "é__ü/1",
            "a_b_c",
            "a__b__c",
        ] {
            assert_eq!(
                after_last_double_underscore(name),
                name.rsplit_once("__").map(|(_, rest)| rest),
                "{name:?}"
            );
        }
    }
}
