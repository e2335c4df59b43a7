//! The index of large chains: a trace must not read all of a 30,000-rule `KUBE-SERVICES` per
//! packet.
//!
//! For each chain of at least [`INDEX_FROM`] rules, its rules are split into those with an exact
//! destination host (`-d 10.96.0.10/32`, not negated: kube-proxy's dispatch rules) bucketed by
//! that host, and the rest. The rules a packet to `dst` can match are the bucket of `dst` merged,
//! in rule order, with the rest: a rule of another bucket cannot match it, so skipping it is
//! exact, not a guess. Finding the next candidate at or after a position is two binary searches.
//!
//! A chain is indexed the first time a trace reads it (most of a node's large chains are not
//! on a given packet's path), in one pass over its rules without an allocation per host: the
//! positions of each host are a run of one array.

use rulelint_parser::{ChainId, ChainRef, Ruleset};
use rustc_hash::FxHashMap;
use std::net::IpAddr;
use std::sync::OnceLock;

/// Chains with at least this many rules are indexed; smaller ones are read rule by rule.
pub const INDEX_FROM: usize = 64;

/// One indexed chain: positions (indexes into the chain's rules) by exact destination host.
#[derive(Clone, Debug, Default)]
pub struct ChainIndex {
    /// Each host's run in `positions`: `starts[run]..starts[run + 1]`.
    hosts: FxHashMap<IpAddr, u32>,
    starts: Vec<u32>,
    positions: Vec<u32>,
    rest: Vec<u32>,
}

impl ChainIndex {
    /// Indexes one chain's rules.
    pub fn build(chain: ChainRef<'_, '_>) -> ChainIndex {
        let mut hosts: FxHashMap<IpAddr, u32> = FxHashMap::default();
        let mut counts: Vec<u32> = Vec::new();
        let mut rest = Vec::new();
        // The run of each position, or NONE for the rest.
        const NONE: u32 = u32::MAX;
        let mut run_of: Vec<u32> = Vec::with_capacity(chain.rule_count());
        for (pos, rule) in chain.rules().enumerate() {
            match rule.destination() {
                Some(d) if !d.negated && d.value.prefix_len() == d.value.max_prefix_len() => {
                    let next = counts.len() as u32;
                    let run = *hosts.entry(d.value.addr()).or_insert(next);
                    if run == next {
                        counts.push(0);
                    }
                    counts[run as usize] += 1;
                    run_of.push(run);
                }
                _ => {
                    rest.push(pos as u32);
                    run_of.push(NONE);
                }
            }
        }
        let mut starts = Vec::with_capacity(counts.len() + 1);
        let mut total = 0u32;
        starts.push(0);
        for c in &counts {
            total += c;
            starts.push(total);
        }
        // Fill each run in rule order: positions come out sorted within a run.
        let mut fill: Vec<u32> = starts[..counts.len()].to_vec();
        let mut positions = vec![0u32; total as usize];
        for (pos, &run) in run_of.iter().enumerate() {
            if run != NONE {
                positions[fill[run as usize] as usize] = pos as u32;
                fill[run as usize] += 1;
            }
        }
        ChainIndex {
            hosts,
            starts,
            positions,
            rest,
        }
    }

    /// The positions of the rules with exactly `-d <dst>` (a host, not negated), in order.
    pub fn host_positions(&self, dst: IpAddr) -> &[u32] {
        match self.hosts.get(&dst) {
            Some(&run) => {
                let run = run as usize;
                &self.positions[self.starts[run] as usize..self.starts[run + 1] as usize]
            }
            None => &[],
        }
    }

    /// The positions of the other rules (no exact host destination), in order.
    pub fn rest(&self) -> &[u32] {
        &self.rest
    }

    /// The first position at or after `from` whose rule can match a packet to `dst`.
    pub fn next(&self, from: u32, dst: IpAddr) -> Option<u32> {
        let first_at = |list: &[u32]| {
            let i = list.partition_point(|&p| p < from);
            list.get(i).copied()
        };
        let a = first_at(&self.rest);
        let b = first_at(self.host_positions(dst));
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// How many positions are bucketed by host, and how many are not.
    pub fn sizes(&self) -> (usize, usize) {
        (self.positions.len(), self.rest.len())
    }
}

/// The indexes of the large chains of a ruleset, each built on first use.
#[derive(Debug, Default)]
pub struct ChainIndexes {
    chains: FxHashMap<ChainId, OnceLock<ChainIndex>>,
}

impl ChainIndexes {
    /// Notes the chains of at least [`INDEX_FROM`] rules; indexes none yet.
    pub fn new(set: &Ruleset<'_>) -> ChainIndexes {
        let chains = set
            .iter_chains()
            .filter(|c| c.rule_count() >= INDEX_FROM)
            .map(|c| (c.id, OnceLock::new()))
            .collect();
        ChainIndexes { chains }
    }

    /// Notes the large chains and indexes them all now (benchmarks).
    pub fn build(set: &Ruleset<'_>) -> ChainIndexes {
        let indexes = ChainIndexes::new(set);
        for &chain in indexes.chains.keys() {
            indexes.get(set, chain);
        }
        indexes
    }

    /// The index of a chain of `set` (the ruleset these were noted from), when it is large
    /// enough to have one; built now if this is the first question.
    pub fn get(&self, set: &Ruleset<'_>, chain: ChainId) -> Option<&ChainIndex> {
        self.chains
            .get(&chain)
            .map(|lock| lock.get_or_init(|| ChainIndex::build(set.chain(chain))))
    }

    /// Number of large chains (indexed or to be).
    pub fn len(&self) -> usize {
        self.chains.len()
    }

    /// No chain is large enough.
    pub fn is_empty(&self) -> bool {
        self.chains.is_empty()
    }
}
