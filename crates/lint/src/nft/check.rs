//! Running the nftables lints on one parsed nft section: its parser diagnostics and every
//! enabled lint's findings, with the configuration applied. Spans are the section's; the caller
//! shifts them into the file ([`crate::source::check_source`]).

use super::context::{IptablesFacts, NftContext, NftFindings};
use crate::config::{Config, Level};
use crate::registry::{CodeEntry, NFT_LINTS, find_code};
use rulelint_nft::{ChainGraph, Diagnostic, Parsed};

/// Checks one nft section: parser diagnostics (`RL151`..) and the nftables lints, with the
/// configuration's selection, severities and allowed chains applied. Not sorted.
pub fn check_nft(
    parsed: &Parsed<'_>,
    iptables: &IptablesFacts,
    config: &Config,
) -> Vec<Diagnostic> {
    let mut out = Vec::with_capacity(parsed.diagnostics.len());
    for d in &parsed.diagnostics {
        let level = find_code(d.code).map_or(Level::At(d.severity), |e| config.level(&e));
        if let Level::At(severity) = level {
            out.push(Diagnostic {
                severity,
                ..d.clone()
            });
        }
    }
    let set = &parsed.ruleset;
    let graph = ChainGraph::build(set);
    let cx = NftContext::new(set, &graph, iptables);
    let mut found = Vec::new();
    for lint in NFT_LINTS {
        let entry = CodeEntry {
            info: &lint.info,
            category: lint.category,
        };
        let Level::At(severity) = config.level(&entry) else {
            continue;
        };
        found.clear();
        (lint.check)(&cx, &mut NftFindings::new(lint, &mut found));
        let overridden = config
            .lints
            .get(lint.info.code)
            .and_then(|s| s.level)
            .is_some();
        for (mut d, chain) in found.drain(..) {
            if chain.is_some_and(|c| config.chain_allowed(d.code, cx.chain(c).name)) {
                continue;
            }
            if overridden {
                d.severity = severity;
            }
            out.push(d);
        }
    }
    out
}
