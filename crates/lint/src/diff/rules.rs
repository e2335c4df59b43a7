//! The rule level: per chain present on both nodes, which rules were removed, added or changed.
//!
//! Rules are matched by key first (a hash of their words with counters, spacing, quoting and
//! the position of `!` normalised), then diffed within each chain with `similar`. Dispatch rules
//! of kube-proxy's dispatch chains (`KUBE-SERVICES`, ...) are compared as a multiset: kube-proxy
//! writes them in map order, which differs between nodes and between syncs.

use super::Node;
use super::node_local::{Expected, address_in, has_node_local_rules, is_per_pod_chain};
use crate::kube::names::{
    CommentRole, ServiceChainKind, comments, is_service_port_name, service_chain, service_comment,
};
use rulelint_parser::{ChainId, ChainRef, RuleId, RuleRef, TokenKind, views::unquote};
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};
use serde::Serialize;
use similar::{Algorithm, DiffOp, capture_diff_slices};
use std::hash::{Hash, Hasher};
use std::net::IpAddr;

/// Above this much work (rules times differing rules), a chain's order is not diffed and its
/// rules are compared as a multiset: Myers' diff is O(N x D), and two unrelated 100k-rule
/// chains must not take minutes.
const ORDERED_DIFF_BUDGET: usize = 20_000_000;

/// What happened to a rule between the first node and the second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Only the first node has it.
    Removed,
    /// Only the second node has it.
    Added,
    /// Both have it in a different form: the same words with other addresses.
    Changed,
    /// Both have it, in another place among the chain's rules.
    Moved,
}

/// One rule change.
#[derive(Clone, Copy, Debug)]
pub struct RuleChange {
    /// What happened.
    pub kind: ChangeKind,
    /// The rule in the first dump.
    pub a: Option<RuleId>,
    /// The rule in the second dump.
    pub b: Option<RuleId>,
    /// Set when the change is expected between healthy nodes.
    pub expected: Option<Expected>,
}

/// The changes of one chain.
#[derive(Clone, Debug)]
pub struct ChainChanges<'r> {
    /// The table's name.
    pub table: &'r str,
    /// The chain's name.
    pub chain: &'r str,
    /// The chain in each dump.
    pub chains: (ChainId, ChainId),
    /// The rules were compared as a multiset: their order was not diffed.
    pub unordered: bool,
    /// The changes, by line in the first dump, then in the second.
    pub changes: Vec<RuleChange>,
}

/// Whether kube-proxy writes this chain's dispatch rules in no meaningful order.
fn is_dispatch_chain(chain: &str) -> bool {
    matches!(
        chain,
        "KUBE-SERVICES" | "KUBE-NODEPORTS" | "KUBE-EXTERNAL-SERVICES" | "KUBE-PROXY-FIREWALL"
    )
}

/// A dispatch rule: one that serves one Service port (it jumps to a per-Service chain or its
/// comment starts with a Service port's name, as the health check rules' do). The final
/// `KUBE-NODEPORTS` rule is not one.
fn is_dispatch_rule(rule: RuleRef<'_, '_>) -> bool {
    if let Some(target) = rule.target()
        && service_chain(target.name()).is_some()
    {
        return true;
    }
    comments(rule).any(|c| c.split(' ').next().is_some_and(is_service_port_name))
}

/// The key of a rule's meaning: its words, with addresses blanked out when `mask_addresses`.
fn key_with(rule: RuleRef<'_, '_>, mask_addresses: bool) -> u64 {
    let mut h = FxHasher::default();
    for token in &rule.tokens() {
        let kind = token.kind();
        (kind as u8, token.negated(), token.is_goto()).hash(&mut h);
        let text = rule.token_text(token);
        if kind != TokenKind::Arg {
            text.hash(&mut h);
        } else if mask_addresses && address_in(text).is_some() {
            0xAD_u8.hash(&mut h);
        } else {
            unquote(text).hash(&mut h);
        }
    }
    h.finish()
}

/// The key of a rule's meaning: equal keys, same rule wherever it sits and however it was
/// spaced, quoted or counted.
pub fn rule_key(rule: RuleRef<'_, '_>) -> u64 {
    key_with(rule, false)
}

/// The key of a rule with every address blanked out: its shape.
fn shape_key(rule: RuleRef<'_, '_>) -> u64 {
    key_with(rule, true)
}

/// A digest of a chain's rules, exact and with every address masked, for comparing chains
/// across many nodes at once.
pub fn digest(node: &Node<'_>, chain: ChainId) -> (u64, u64) {
    let chain = node.set.chain(chain);
    let unordered = is_dispatch_chain(chain.name());
    let (mut exact, mut masked) = (FxHasher::default(), FxHasher::default());
    for rule in chain.rules() {
        // Dispatch rules are the Kubernetes level's facts (addresses, REJECTs); rules that
        // depend on the node's own pods differ on every node.
        if (unordered && is_dispatch_rule(rule)) || node_local_rule(rule).is_some() {
            continue;
        }
        rule_key(rule).hash(&mut exact);
        shape_key(rule).hash(&mut masked);
    }
    (exact.finish(), masked.finish())
}

/// The rules of one chain split for comparison: dispatch rules (compared as a multiset) and
/// the rest (compared in order).
struct Split {
    ordered: Vec<(u64, RuleId)>,
    unordered: Vec<(u64, RuleId)>,
}

fn split(node: &Node<'_>, chain: ChainId) -> Split {
    let chain = node.set.chain(chain);
    let dispatch = is_dispatch_chain(chain.name());
    let mut split = Split {
        ordered: Vec::with_capacity(if dispatch { 4 } else { chain.rule_count() }),
        unordered: Vec::new(),
    };
    for rule in chain.rules() {
        let entry = (rule_key(rule), rule.id);
        if dispatch && is_dispatch_rule(rule) {
            split.unordered.push(entry);
        } else {
            split.ordered.push(entry);
        }
    }
    split.unordered.sort_unstable();
    split
}

/// Rules only on one side of a multiset comparison of two key-sorted lists.
fn multiset_diff(a: &[(u64, RuleId)], b: &[(u64, RuleId)], out: &mut Vec<RuleChange>) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                out.push(removed(x.1));
                i += 1;
            }
            (Some(x), None) => {
                out.push(removed(x.1));
                i += 1;
            }
            (_, Some(y)) => {
                out.push(added(y.1));
                j += 1;
            }
            (None, None) => break,
        }
    }
}

fn removed(rule: RuleId) -> RuleChange {
    RuleChange {
        kind: ChangeKind::Removed,
        a: Some(rule),
        b: None,
        expected: None,
    }
}

fn added(rule: RuleId) -> RuleChange {
    RuleChange {
        kind: ChangeKind::Added,
        a: None,
        b: Some(rule),
        expected: None,
    }
}

/// Diffs the ordered rules; falls back to a multiset comparison when the order diff would cost
/// too much. Returns whether it fell back.
fn ordered_diff(a: &[(u64, RuleId)], b: &[(u64, RuleId)], out: &mut Vec<RuleChange>) -> bool {
    // Most chains are alike on both nodes: nothing to do.
    if a.iter().map(|x| x.0).eq(b.iter().map(|x| x.0)) {
        return false;
    }
    // Myers never does more than (rules x rules) work; only larger chains need the estimate.
    let rules = a.len() + b.len();
    if rules.saturating_mul(rules) > ORDERED_DIFF_BUDGET {
        let mut sorted_a = a.to_vec();
        let mut sorted_b = b.to_vec();
        sorted_a.sort_unstable();
        sorted_b.sort_unstable();
        let mut unmatched = Vec::new();
        multiset_diff(&sorted_a, &sorted_b, &mut unmatched);
        // Reordered rules count as differences too: at least one per side.
        let differing = unmatched.len().max(2);
        if rules.saturating_mul(differing) > ORDERED_DIFF_BUDGET {
            out.extend(unmatched);
            return true;
        }
    }
    let keys_a: Vec<u64> = a.iter().map(|x| x.0).collect();
    let keys_b: Vec<u64> = b.iter().map(|x| x.0).collect();
    for op in capture_diff_slices(Algorithm::Myers, &keys_a, &keys_b) {
        match op {
            DiffOp::Equal { .. } => {}
            DiffOp::Delete {
                old_index, old_len, ..
            } => out.extend(
                a[old_index..old_index + old_len]
                    .iter()
                    .map(|x| removed(x.1)),
            ),
            DiffOp::Insert {
                new_index, new_len, ..
            } => out.extend(b[new_index..new_index + new_len].iter().map(|x| added(x.1))),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                out.extend(
                    a[old_index..old_index + old_len]
                        .iter()
                        .map(|x| removed(x.1)),
                );
                out.extend(b[new_index..new_index + new_len].iter().map(|x| added(x.1)));
            }
        }
    }
    false
}

/// The rule changes between two nodes, chain by chain, for chains both have.
/// `kube_addresses` are the Service and endpoint addresses of both nodes: a rule that differs
/// only in other addresses is a node-local change.
pub fn diff<'r>(
    a: &'r Node<'_>,
    b: &'r Node<'_>,
    kube_addresses: &FxHashSet<IpAddr>,
) -> Vec<ChainChanges<'r>> {
    diff_where(a, b, kube_addresses, |_, _| true)
}

/// [`diff`] of the chains of `a` that `wanted(table index, chain name)` picks: the others are
/// known to hold the same rules on both nodes (a node re-read with only the rules of the
/// chains that differ, [`super::bounded`]).
pub fn diff_where<'r>(
    a: &'r Node<'_>,
    b: &'r Node<'_>,
    kube_addresses: &FxHashSet<IpAddr>,
    wanted: impl Fn(usize, &str) -> bool,
) -> Vec<ChainChanges<'r>> {
    // b's chains are found through its tables' own name indexes: a map of every chain of b
    // would cost more than the dump itself on a node of a million chains.
    let live_b: Vec<_> = b
        .set
        .iter_tables()
        .filter(|t| !t.get().superseded)
        .collect();
    let mut result = Vec::new();
    for table in a.set.iter_tables().filter(|t| !t.get().superseded) {
        let same_name: Vec<_> = live_b
            .iter()
            .rev()
            .filter(|t| t.name() == table.name())
            .collect();
        for chain in table.chains() {
            if !wanted(table.id.index(), chain.name()) {
                continue;
            }
            // The last live table of that name that has the chain, as a map filled in order
            // would keep.
            let Some(other) = same_name.iter().find_map(|t| t.chain(chain.name())) else {
                continue;
            };
            let other = other.id;
            if same_text(chain, b.set.chain(other)) {
                continue;
            }
            let (sa, sb) = (split(a, chain.id), split(b, other));
            let mut changes = Vec::new();
            let unordered = ordered_diff(&sa.ordered, &sb.ordered, &mut changes);
            multiset_diff(&sa.unordered, &sb.unordered, &mut changes);
            if changes.is_empty() {
                continue;
            }
            let changes = classify(a, b, chain.name(), changes, kube_addresses);
            result.push(ChainChanges {
                table: table.name(),
                chain: chain.name(),
                chains: (chain.id, other),
                unordered,
                changes,
            });
        }
    }
    result
}

/// Whether two chains hold the same rules, line for line, as written: then no rule differs
/// (a rule's key is read from its text), and most chains of two nodes of one cluster are
/// compared without hashing their rules.
fn same_text(a: ChainRef<'_, '_>, b: ChainRef<'_, '_>) -> bool {
    a.rule_count() == b.rule_count() && a.rules().zip(b.rules()).all(|(x, y)| x.text() == y.text())
}

/// Pairs removed and added rules that differ only in addresses into changes, marks what is
/// expected between healthy nodes, and orders the changes by line.
fn classify(
    a: &Node<'_>,
    b: &Node<'_>,
    chain: &str,
    changes: Vec<RuleChange>,
    kube_addresses: &FxHashSet<IpAddr>,
) -> Vec<RuleChange> {
    let mut removed_by_shape: FxHashMap<u64, Vec<RuleId>> = FxHashMap::default();
    let mut out = Vec::with_capacity(changes.len());
    let mut added_rules = Vec::new();
    for change in &changes {
        match (change.a, change.b) {
            (Some(r), None) => removed_by_shape
                .entry(shape_key(a.set.rule(r)))
                .or_default()
                .push(r),
            (None, Some(r)) => added_rules.push(r),
            _ => {}
        }
    }
    // Each added rule takes the first removed rule of the same shape, in order.
    for list in removed_by_shape.values_mut() {
        list.reverse();
    }
    let mut paired: FxHashSet<RuleId> = FxHashSet::default();
    for rb in added_rules {
        let shape = shape_key(b.set.rule(rb));
        match removed_by_shape.get_mut(&shape).and_then(Vec::pop) {
            Some(ra) => {
                paired.insert(ra);
                let (rule_a, rule_b) = (a.set.rule(ra), b.set.rule(rb));
                let moved = rule_key(rule_a) == rule_key(rule_b);
                let node_local =
                    !moved && only_node_addresses_differ(rule_a, rule_b, kube_addresses);
                out.push(RuleChange {
                    kind: if moved {
                        ChangeKind::Moved
                    } else {
                        ChangeKind::Changed
                    },
                    a: Some(ra),
                    b: Some(rb),
                    expected: node_local.then_some(Expected::NodeAddress),
                });
            }
            None => out.push(added(rb)),
        }
    }
    out.extend(
        changes
            .iter()
            .filter(|c| c.b.is_none() && c.a.is_some_and(|r| !paired.contains(&r)))
            .copied(),
    );
    let chain_is_node_local = has_node_local_rules(chain);
    for change in &mut out {
        let local = |node: &Node<'_>, rule: Option<RuleId>| {
            rule.and_then(|r| node_local_rule(node.set.rule(r)))
        };
        if chain_is_node_local {
            change.expected = Some(match service_chain(chain) {
                Some((ServiceChainKind::Local, _)) => Expected::LocalEndpoints,
                _ => Expected::NodeLocalChain,
            });
        } else if let Some(why) = local(a, change.a).or_else(|| local(b, change.b)) {
            change.expected = Some(why);
        }
    }
    // First node's order, then the second's for rules only it has.
    out.sort_by_key(|c| (c.a.is_none(), c.a.map(|r| r.0), c.b.map(|r| r.0)));
    out
}

/// Why a rule outside node-local chains still depends on the node: it jumps to a per-pod chain,
/// to a local-endpoint chain, or drops a Local-policy Service's traffic for lack of local
/// endpoints.
fn node_local_rule(rule: RuleRef<'_, '_>) -> Option<Expected> {
    if let Some(target) = rule.target() {
        if is_per_pod_chain(target.name()) {
            return Some(Expected::NodeLocalChain);
        }
        if matches!(
            service_chain(target.name()),
            Some((ServiceChainKind::Local, _))
        ) {
            return Some(Expected::LocalEndpoints);
        }
    }
    comments(rule)
        .any(|c| {
            matches!(
                service_comment(&c),
                Some((_, CommentRole::NoLocalEndpoints))
            )
        })
        .then_some(Expected::LocalEndpoints)
}

/// Whether two rules of the same shape differ only in addresses outside `kube_addresses`.
fn only_node_addresses_differ(
    ra: RuleRef<'_, '_>,
    rb: RuleRef<'_, '_>,
    kube_addresses: &FxHashSet<IpAddr>,
) -> bool {
    let (ta, tb) = (ra.tokens(), rb.tokens());
    ta.len() == tb.len()
        && ta.iter().zip(&tb).all(|(x, y)| {
            let (sx, sy) = (ra.token_text(x), rb.token_text(y));
            if sx == sy {
                return true;
            }
            match (address_in(sx), address_in(sy)) {
                (Some(ix), Some(iy)) => {
                    !kube_addresses.contains(&ix) && !kube_addresses.contains(&iy)
                }
                _ => false,
            }
        })
}
