//! `rulelint stats` on nftables sections (`nft list ruleset` text, `nft -j` JSON, the `add ...`
//! form): tables with their chains, base chains, rules, sets and maps, the largest chains and
//! sets, and what kube-proxy's nftables mode wrote. Owned strings: a JSON section's names may
//! live in a store that is freed with its model, and a file's figures outlive both.

use super::{ChainStats, LARGEST};
use rulelint_lint::nft::context::{
    FIREWALL_IPS, KUBE_PROXY_TABLE, NO_ENDPOINT_NODEPORTS, NO_ENDPOINT_SERVICES,
    SERVICE_CHAIN_PREFIXES, SERVICE_IPS, SERVICE_NODEPORTS, is_service_chain,
};
use rulelint_nft::{ChainGraph, Family, Node, Ruleset, Table};
use serde::Serialize;
use std::borrow::Cow;
use std::fmt::Write;

/// The figures of every nftables section of a file, tables in text order.
#[derive(Serialize, Default)]
pub struct NftStats {
    pub tables: Vec<NftTableStats>,
    pub chains: usize,
    /// Chains with a hook (where packets enter).
    pub base_chains: usize,
    pub rules: usize,
    /// Named sets (maps not included).
    pub sets: usize,
    /// Named maps (verdict maps and data maps).
    pub maps: usize,
    /// Elements listed in every named set and map.
    pub elements: usize,
    pub largest_chains: Vec<ChainStats<'static>>,
    pub largest_sets: Vec<SetStats>,
    /// Jumps, gotos and verdict-map lookups (edges of the chain graph).
    pub jumps: usize,
    /// Regular chains that no base chain reaches.
    pub unreachable_chains: usize,
    pub kube: NftKubeStats,
}

/// One table as listed.
#[derive(Serialize)]
pub struct NftTableStats {
    /// `ip`, `ip6`, `inet`, ... as written; null for blocks pasted without their `table` line.
    pub family: Option<String>,
    /// Null for blocks pasted without their `table` line.
    pub name: Option<String>,
    /// `family name`, as `nft list tables` prints it: the `table` label of the gauges.
    pub table: String,
    pub chains: usize,
    pub rules: usize,
    pub base_chains: Vec<BaseChainStats>,
    /// Every named set and map, in text order.
    pub sets: Vec<SetStats>,
    /// A later listing of the same table follows in the file (two pastes of one node).
    pub superseded: bool,
    /// This table's part of [`NftStats::kube`], summed once the superseded tables are known.
    #[serde(skip)]
    kube: NftKubeStats,
}

/// A chain with a hook.
#[derive(Serialize)]
pub struct BaseChainStats {
    pub chain: String,
    /// `filter`, `nat`, `route`.
    #[serde(rename = "type")]
    pub kind: String,
    pub hook: String,
    pub device: Option<String>,
    /// The priority's value (named priorities such as `dstnat` resolved as nft resolves them),
    /// null when it cannot be worked out.
    pub priority: Option<i32>,
    /// The priority as written (`dstnat - 10`, `-110`).
    pub priority_text: String,
    /// `accept` or `drop`; `accept` where the text gives none (nft's default, which `nft list`
    /// prints: the `add chain` form and JSON may leave it out).
    pub policy: String,
    pub rules: usize,
}

/// A named set or map.
#[derive(Serialize, Clone)]
pub struct SetStats {
    pub table: String,
    pub name: String,
    /// `set` or `map`.
    pub kind: &'static str,
    pub elements: usize,
}

/// What kube-proxy's nftables mode wrote, over its tables (`ip kube-proxy`, `ip6 kube-proxy`
/// and pasted kube-proxy blocks without their table line) as last listed.
#[derive(Serialize, Default, Clone)]
pub struct NftKubeStats {
    /// Tables of kube-proxy's.
    pub tables: usize,
    /// Per-Service and per-endpoint chains by prefix (`service-HASH-ns/name/proto/port`).
    pub service_chains: usize,
    pub local_chains: usize,
    pub external_chains: usize,
    pub firewall_chains: usize,
    pub endpoint_chains: usize,
    /// Elements of kube-proxy's sets and maps; null when no kube-proxy table declares it.
    pub service_ips: Option<usize>,
    pub service_nodeports: Option<usize>,
    pub no_endpoint_services: Option<usize>,
    pub no_endpoint_nodeports: Option<usize>,
    pub firewall_ips: Option<usize>,
    pub cluster_ips: Option<usize>,
    pub nodeport_ips: Option<usize>,
}

impl NftKubeStats {
    /// The chain counts by prefix, in [`SERVICE_CHAIN_PREFIXES`]' order.
    pub fn chains_by_prefix(&self) -> [(&'static str, usize); 5] {
        [
            (SERVICE_CHAIN_PREFIXES[0], self.service_chains),
            (SERVICE_CHAIN_PREFIXES[1], self.local_chains),
            (SERVICE_CHAIN_PREFIXES[2], self.external_chains),
            (SERVICE_CHAIN_PREFIXES[3], self.firewall_chains),
            (SERVICE_CHAIN_PREFIXES[4], self.endpoint_chains),
        ]
    }

    /// kube-proxy's sets and maps with the elements of those present, by name.
    pub fn elements_by_set(&self) -> impl Iterator<Item = (&'static str, usize)> {
        [
            (SERVICE_IPS, self.service_ips),
            (SERVICE_NODEPORTS, self.service_nodeports),
            (NO_ENDPOINT_SERVICES, self.no_endpoint_services),
            (NO_ENDPOINT_NODEPORTS, self.no_endpoint_nodeports),
            (FIREWALL_IPS, self.firewall_ips),
            (CLUSTER_IPS, self.cluster_ips),
            (NODEPORT_IPS, self.nodeport_ips),
        ]
        .into_iter()
        .filter_map(|(name, n)| Some((name, n?)))
    }

    fn add(&mut self, other: &NftKubeStats) {
        self.tables += other.tables;
        self.service_chains += other.service_chains;
        self.local_chains += other.local_chains;
        self.external_chains += other.external_chains;
        self.firewall_chains += other.firewall_chains;
        self.endpoint_chains += other.endpoint_chains;
        for (name, n) in other.elements_by_set() {
            if let Some(slot) = self.elements_of(name) {
                *slot = Some(slot.unwrap_or(0) + n);
            }
        }
    }

    fn elements_of(&mut self, set: &str) -> Option<&mut Option<usize>> {
        Some(match set {
            SERVICE_IPS => &mut self.service_ips,
            SERVICE_NODEPORTS => &mut self.service_nodeports,
            NO_ENDPOINT_SERVICES => &mut self.no_endpoint_services,
            NO_ENDPOINT_NODEPORTS => &mut self.no_endpoint_nodeports,
            FIREWALL_IPS => &mut self.firewall_ips,
            CLUSTER_IPS => &mut self.cluster_ips,
            NODEPORT_IPS => &mut self.nodeport_ips,
            _ => return None,
        })
    }
}

/// A base chain's policy when none is given.
const DEFAULT_POLICY: &str = "accept";

/// kube-proxy's set of ClusterIPs (`pkg/proxy/nftables/proxier.go`, `clusterIPsSet`).
const CLUSTER_IPS: &str = "cluster-ips";
/// kube-proxy's set of the node addresses NodePorts are accepted on (`nodePortIPsSet`).
const NODEPORT_IPS: &str = "nodeport-ips";

/// `family name` as `nft list tables` prints it.
pub fn table_label(table: &Table<'_>) -> String {
    match (table.family_word, table.name) {
        (Some(family), Some(name)) => format!("{family} {name}"),
        (None, Some(name)) => name.to_string(),
        _ => "(no table line)".to_string(),
    }
}

/// kube-proxy's tables: `ip`/`ip6 kube-proxy`, and blocks pasted without a table line (a
/// fragment of kube-proxy's table is what users paste; its names say whose it is).
fn is_kube_proxy_table(table: &Table<'_>) -> bool {
    (table.name == Some(KUBE_PROXY_TABLE) && matches!(table.family, Some(Family::Ip | Family::Ip6)))
        || table.is_headerless()
}

impl NftStats {
    /// Adds one section's ruleset.
    pub fn add(&mut self, set: &Ruleset<'_>) {
        let graph = ChainGraph::build(set);
        let first_table = self.tables.len();
        for table in &set.tables {
            let label = table_label(table);
            let kube = is_kube_proxy_table(table);
            let mut kube_stats = NftKubeStats::default();
            if kube && !table.is_headerless() {
                kube_stats.tables = 1;
            }
            let mut rules = 0;
            let mut base_chains = Vec::new();
            for &c in &table.chains {
                let chain = &set.chains[c.index()];
                let chain_rules = chain.rules.len();
                rules += chain_rules;
                if let Some(base) = &chain.base {
                    base_chains.push(BaseChainStats {
                        chain: chain.name.to_string(),
                        kind: base.kind.to_string(),
                        hook: base.hook.to_string(),
                        device: base.device.map(str::to_string),
                        priority: base.priority.value,
                        priority_text: base.priority.text.to_string(),
                        policy: base.policy.unwrap_or(DEFAULT_POLICY).to_string(),
                        rules: chain_rules,
                    });
                }
                if chain_rules > 0 {
                    self.largest_chains.push(ChainStats {
                        table: Cow::Owned(label.clone()),
                        chain: Cow::Owned(chain.name.to_string()),
                        rules: chain_rules,
                    });
                    trim_largest(&mut self.largest_chains, |a, b| {
                        b.rules.cmp(&a.rules).then_with(|| a.chain.cmp(&b.chain))
                    });
                }
                if kube && is_service_chain(chain.name) {
                    let counter = match SERVICE_CHAIN_PREFIXES
                        .iter()
                        .position(|p| chain.name.starts_with(p))
                    {
                        Some(0) => &mut kube_stats.service_chains,
                        Some(1) => &mut kube_stats.local_chains,
                        Some(2) => &mut kube_stats.external_chains,
                        Some(3) => &mut kube_stats.firewall_chains,
                        _ => &mut kube_stats.endpoint_chains,
                    };
                    *counter += 1;
                }
            }
            let mut sets = Vec::with_capacity(table.sets.len());
            for &s in &table.sets {
                let named = &set.sets[s.index()];
                let stats = SetStats {
                    table: label.clone(),
                    name: named.name.to_string(),
                    kind: if named.is_map { "map" } else { "set" },
                    elements: named.elements.len(),
                };
                if named.is_map {
                    self.maps += 1;
                } else {
                    self.sets += 1;
                }
                self.elements += stats.elements;
                if kube && let Some(slot) = kube_stats.elements_of(named.name) {
                    *slot = Some(slot.unwrap_or(0) + stats.elements);
                }
                if stats.elements > 0 {
                    self.largest_sets.push(stats.clone());
                    trim_largest(&mut self.largest_sets, |a, b| {
                        b.elements
                            .cmp(&a.elements)
                            .then_with(|| a.name.cmp(&b.name))
                    });
                }
                sets.push(stats);
            }
            self.chains += table.chains.len();
            self.base_chains += base_chains.len();
            self.rules += rules;
            self.tables.push(NftTableStats {
                family: table.family_word.map(str::to_string),
                name: table.name.map(str::to_string),
                table: label,
                chains: table.chains.len(),
                rules,
                base_chains,
                sets,
                superseded: false,
                kube: kube_stats,
            });
        }
        // An earlier listing of a table the file lists again is superseded, as a later
        // iptables-save block supersedes an earlier one.
        for later in first_table..self.tables.len() {
            let (earlier, rest) = self.tables.split_at_mut(later);
            let later = &rest[0];
            if later.name.is_none() {
                continue;
            }
            for t in earlier
                .iter_mut()
                .filter(|t| t.family == later.family && t.name == later.name)
            {
                t.superseded = true;
            }
        }
        // Edges into chains: jumps and gotos of rules and of verdict-map elements (a rule's
        // `vmap @map` lookup is an edge into the map, whose elements are counted instead).
        self.jumps += graph
            .edges()
            .filter(|(_, to, _)| matches!(to, Node::Chain(_)))
            .count();
        let reachable = graph.reachable_from_roots(set);
        self.unreachable_chains += set
            .chains
            .iter()
            .enumerate()
            .filter(|(i, c)| c.base.is_none() && !reachable.get(*i).copied().unwrap_or(false))
            .count();
    }
}

/// Keeps the [`LARGEST`] first of `items` by `order` (one pushed at a time: a sort of at most
/// eleven items, not of every chain of a 250,000-rule node).
fn trim_largest<T>(items: &mut Vec<T>, order: impl Fn(&T, &T) -> std::cmp::Ordering) {
    if items.len() > LARGEST * 4 {
        items.sort_by(&order);
        items.truncate(LARGEST);
    }
}

/// Sums kube-proxy's figures over the tables as last listed, sorts and cuts the largest lists,
/// once every section is in.
pub fn finish(stats: &mut NftStats) {
    let mut kube = NftKubeStats::default();
    for t in stats.tables.iter().filter(|t| !t.superseded) {
        kube.add(&t.kube);
    }
    stats.kube = kube;
    stats.largest_chains.sort_by(|a, b| {
        b.rules
            .cmp(&a.rules)
            .then_with(|| a.chain.cmp(&b.chain))
            .then_with(|| a.table.cmp(&b.table))
    });
    stats.largest_chains.truncate(LARGEST);
    stats.largest_sets.sort_by(|a, b| {
        b.elements
            .cmp(&a.elements)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.table.cmp(&b.table))
    });
    stats.largest_sets.truncate(LARGEST);
}

/// The human lines of the nftables part.
pub fn human(out: &mut String, nft: &NftStats) {
    let _ = writeln!(out, "  nftables tables: {}", nft.tables.len());
    for t in &nft.tables {
        let note = if t.superseded {
            " (superseded by a later listing)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "    {:<20} {:>8} chains {:>9} rules {:>5} sets/maps{note}",
            t.table,
            t.chains,
            t.rules,
            t.sets.len()
        );
        for b in &t.base_chains {
            let device = b
                .device
                .as_deref()
                .map(|d| format!(" device {d}"))
                .unwrap_or_default();
            let priority = match b.priority {
                Some(value) if value.to_string() != b.priority_text => {
                    format!("{} ({value})", b.priority_text)
                }
                _ => b.priority_text.clone(),
            };
            let _ = writeln!(
                out,
                "      base chain {}: type {} hook {}{device} priority {priority}, policy {}, {} rules",
                b.chain, b.kind, b.hook, b.policy, b.rules
            );
        }
    }
    let _ = writeln!(
        out,
        "  nftables chains: {} ({} base), rules: {}, sets: {}, maps: {}, elements: {}",
        nft.chains, nft.base_chains, nft.rules, nft.sets, nft.maps, nft.elements
    );
    let _ = writeln!(
        out,
        "  nftables jumps (verdict-map entries included): {}, chains unreachable from base chains: {}",
        nft.jumps, nft.unreachable_chains
    );
    if !nft.largest_chains.is_empty() {
        let _ = writeln!(out, "  largest nftables chains:");
        for c in &nft.largest_chains {
            let _ = writeln!(out, "    {:>9} {} ({})", c.rules, c.chain, c.table);
        }
    }
    if !nft.largest_sets.is_empty() {
        let _ = writeln!(out, "  largest sets and maps (elements):");
        for s in &nft.largest_sets {
            let _ = writeln!(
                out,
                "    {:>9} {} {} ({})",
                s.elements, s.kind, s.name, s.table
            );
        }
    }
    let k = &nft.kube;
    let chains: usize = k.chains_by_prefix().iter().map(|(_, n)| n).sum();
    if k.tables > 0 || chains > 0 || k.elements_by_set().next().is_some() {
        let by_prefix: Vec<String> = k
            .chains_by_prefix()
            .iter()
            .map(|(prefix, n)| format!("{n} {prefix}"))
            .collect();
        let _ = writeln!(
            out,
            "  kube-proxy nftables chains: {}",
            by_prefix.join(", ")
        );
        let elements: Vec<String> = k
            .elements_by_set()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        if !elements.is_empty() {
            let _ = writeln!(
                out,
                "  kube-proxy sets and maps (elements): {}",
                elements.join(", ")
            );
        }
    }
}
