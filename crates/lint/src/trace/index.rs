//! The index of large chains: a trace must not read all of a 30,000-rule `KUBE-SERVICES` per
//! packet.
//!
//! For each chain of at least [`INDEX_FROM`] rules, its rules are split into those with an exact
//! destination host (`-d 10.96.0.10/32`, not negated: kube-proxy's dispatch rules) bucketed by
//! that host, and the rest. The rules a packet to `dst` can match are the bucket of `dst` merged,
//! in rule order, with the rest: a rule of another bucket cannot match it, so skipping it is
//! exact, not a guess. Finding the next candidate at or after a position is two binary searches.

use rulelint_parser::{ChainId, Ruleset};
use rustc_hash::FxHashMap;
use std::net::IpAddr;

/// Chains with at least this many rules are indexed; smaller ones are read rule by rule.
pub const INDEX_FROM: usize = 64;

/// One indexed chain: positions (indexes into the chain's rules) by exact destination host.
#[derive(Clone, Debug, Default)]
pub struct ChainIndex {
    by_host: FxHashMap<IpAddr, Vec<u32>>,
    rest: Vec<u32>,
}

impl ChainIndex {
    /// The first position at or after `from` whose rule can match a packet to `dst`.
    pub fn next(&self, from: u32, dst: IpAddr) -> Option<u32> {
        let first_at = |list: &[u32]| {
            let i = list.partition_point(|&p| p < from);
            list.get(i).copied()
        };
        let a = first_at(&self.rest);
        let b = self.by_host.get(&dst).and_then(|l| first_at(l));
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// How many positions are bucketed by host, and how many are not.
    pub fn sizes(&self) -> (usize, usize) {
        (self.by_host.values().map(Vec::len).sum(), self.rest.len())
    }
}

/// The indexes of every large chain of a ruleset.
#[derive(Clone, Debug, Default)]
pub struct ChainIndexes {
    chains: FxHashMap<ChainId, ChainIndex>,
}

impl ChainIndexes {
    /// Indexes every chain of at least [`INDEX_FROM`] rules (linear in their rules).
    pub fn build(set: &Ruleset<'_>) -> ChainIndexes {
        let mut chains = FxHashMap::default();
        for chain in set.iter_chains() {
            if chain.rule_count() < INDEX_FROM {
                continue;
            }
            let mut index = ChainIndex::default();
            for (pos, rule) in chain.rules().enumerate() {
                match rule.destination() {
                    Some(d) if !d.negated && d.value.prefix_len() == d.value.max_prefix_len() => {
                        index
                            .by_host
                            .entry(d.value.addr())
                            .or_default()
                            .push(pos as u32);
                    }
                    _ => index.rest.push(pos as u32),
                }
            }
            chains.insert(chain.id, index);
        }
        ChainIndexes { chains }
    }

    /// The index of a chain, when it is large enough to have one.
    pub fn get(&self, chain: ChainId) -> Option<&ChainIndex> {
        self.chains.get(&chain)
    }

    /// Number of indexed chains.
    pub fn len(&self) -> usize {
        self.chains.len()
    }

    /// No chain is indexed.
    pub fn is_empty(&self) -> bool {
        self.chains.is_empty()
    }
}
