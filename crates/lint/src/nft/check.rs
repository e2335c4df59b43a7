//! Running the nftables lints on one parsed nft section: its parser diagnostics and every
//! enabled lint's findings, with the configuration applied. Spans are the section's; the caller
//! shifts them into the file ([`crate::source::check_source`]).

use super::context::{IptablesFacts, NftContext, NftFindings};
use crate::check::{at_configured_level, lint_level};
use crate::config::Config;
use crate::registry::NFT_LINTS;
use rulelint_nft::{ChainGraph, Diagnostic, Parsed};

/// Checks one nft section: parser diagnostics (`RL151`..) and the nftables lints, with the
/// configuration's selection, severities and allowed chains applied. Not sorted.
pub fn check_nft(
    parsed: &Parsed<'_>,
    iptables: &IptablesFacts,
    config: &Config,
) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = parsed
        .diagnostics
        .iter()
        .filter_map(|d| at_configured_level(config, d))
        .collect();
    let set = &parsed.ruleset;
    let graph = ChainGraph::build(set);
    let cx = NftContext::new(set, &graph, iptables);
    let mut found = Vec::new();
    for lint in NFT_LINTS {
        let Some((severity, overridden)) = lint_level(config, &lint.info, lint.category) else {
            continue;
        };
        found.clear();
        (lint.check)(&cx, &mut NftFindings::new(lint, &mut found));
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
