//! What an nftables lint sees: one parsed nft section, its chain graph, what the iptables part
//! of the same file says about kube-proxy, and the sink its findings go to. Also the few names
//! kube-proxy's nftables proxier uses (`pkg/proxy/nftables/proxier.go`), kept small so that
//! they can move onto the shared Kubernetes model later.

use super::NftLint;
use rulelint_nft::{
    Chain, ChainGraph, ChainId, Diagnostic, Expr, Family, Ruleset, Set, SetId, Span, Stmt, TableId,
};

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
    SERVICE_CHAIN_PREFIXES.iter().any(|p| name.starts_with(p)) && name.contains('/')
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
    graph: &'r ChainGraph,
    iptables: &'r IptablesFacts,
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
            graph,
            iptables,
        }
    }

    /// The ruleset.
    pub fn ruleset(&self) -> &'r Ruleset<'a> {
        self.set
    }

    /// The chain graph.
    pub fn graph(&self) -> &'r ChainGraph {
        self.graph
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
        let t = &self.set.tables[table.index()];
        !t.is_headerless()
            && t.closed
            && t.chains.iter().all(|c| self.chain(*c).closed)
            && t.sets.iter().all(|s| self.set(*s).closed)
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

/// The canonical text of a set or map key: literals as written, concatenations joined with
/// ` . `. `None` for keys that are not constants.
pub fn key_text(key: &Expr<'_>) -> Option<String> {
    match key {
        Expr::Literal(s) => Some((*s).to_string()),
        Expr::Concat(parts) => {
            let parts: Option<Vec<String>> = parts.iter().map(key_text).collect();
            Some(parts?.join(" . "))
        }
        _ => None,
    }
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
