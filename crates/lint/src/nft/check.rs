//! Running the nftables lints on one parsed nft section: its parser diagnostics and every
//! enabled lint's findings, with the configuration applied. Spans are the section's; the caller
//! shifts them into the file ([`crate::source::check_source`]).

use super::NftLint;
use super::context::{IptablesFacts, NftContext, NftFindings};
use crate::check::{at_configured_level, lint_level, run_queued};
use crate::config::Config;
use crate::registry::NFT_LINTS;
use rulelint_nft::{ChainId, Diagnostic, Parsed, Severity};

/// Below this many rules the lints of a section run on one thread: a second one costs more to
/// start than it saves (as for iptables-save, `crate::check`).
const PARALLEL_LINTS_MIN_RULES: usize = 20_000;

/// The lints that read the chain graph: they are taken last, so that the others run while the
/// graph is built. Only an order: a lint missing here still works (it waits for the graph).
const READS_GRAPH: &[&str] = &["RL451", "RL454", "RL457", "RL460"];

/// Checks one nft section: parser diagnostics (`RL151`..) and the nftables lints, with the
/// configuration's selection, severities and allowed chains applied. Not sorted.
pub fn check_nft(
    parsed: &Parsed<'_>,
    iptables: &IptablesFacts,
    config: &Config,
) -> Vec<Diagnostic> {
    let set = &parsed.ruleset;
    let threads = if cfg!(target_arch = "wasm32") || set.rules.len() < PARALLEL_LINTS_MIN_RULES {
        1
    } else {
        2
    };
    check_nft_on(parsed, iptables, config, threads)
}

/// [`check_nft`] on `threads` threads (1: all on this one): the same findings in the same order.
pub(crate) fn check_nft_on(
    parsed: &Parsed<'_>,
    iptables: &IptablesFacts,
    config: &Config,
    threads: usize,
) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = parsed
        .diagnostics
        .iter()
        .filter_map(|d| at_configured_level(config, d))
        .collect();
    let cx = NftContext::with_lazy_graph(&parsed.ruleset, iptables);
    let enabled: Vec<(&'static NftLint, Severity, bool)> = NFT_LINTS
        .iter()
        .filter_map(|&lint| {
            lint_level(config, &lint.info, lint.category).map(|(s, o)| (lint, s, o))
        })
        .collect();
    let found = run_lints(&cx, &enabled, threads);
    for ((_, severity, overridden), found) in enabled.iter().zip(found) {
        for (mut d, chain) in found {
            if chain.is_some_and(|c| config.chain_allowed(d.code, cx.chain(c).name)) {
                continue;
            }
            if *overridden {
                d.severity = *severity;
            }
            out.push(d);
        }
    }
    out
}

type Found = Vec<(Diagnostic, Option<ChainId>)>;

/// Runs the enabled lints over `cx` and returns each one's findings, in the order of
/// `enabled`. With two threads or more, one starts by building the chain graph and the others
/// by the context's shared walk; then all take lints from one queue, those that read the graph
/// last.
fn run_lints(
    cx: &NftContext<'_, '_>,
    enabled: &[(&'static NftLint, Severity, bool)],
    threads: usize,
) -> Vec<Found> {
    let run = |lint: &'static NftLint| {
        let mut found = Vec::new();
        (lint.check)(cx, &mut NftFindings::new(lint, &mut found));
        found
    };
    let threads = threads.min(enabled.len());
    if threads <= 1 || cfg!(target_arch = "wasm32") {
        return enabled.iter().map(|&(lint, _, _)| run(lint)).collect();
    }
    let mut order: Vec<usize> = (0..enabled.len()).collect();
    order.sort_by_key(|&i| READS_GRAPH.contains(&enabled[i].0.info.code));
    let prepare = |thread: usize| {
        if thread == 1 {
            cx.graph();
        } else {
            cx.walked();
        }
    };
    run_queued(threads, &order, enabled.len(), prepare, |i| {
        run(enabled[i].0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lints of a section on one thread or several: the same findings, in the same order,
    /// on a healthy node and on one with findings of several lints.
    #[test]
    fn lint_threads_do_not_change_the_findings() {
        let shape = rulelint_dumpgen::Shape::with_services(300);
        let healthy = rulelint_dumpgen::generate_nft(&shape, rulelint_dumpgen::NftForm::List);
        // Broken: endpoints without their hairpin rule, DNATs to another address.
        let mut dropped = 0;
        let broken: String = healthy
            .replacen("dnat to 10.", "dnat to 11.", 2)
            .split_inclusive('\n')
            .filter(|line| {
                let hairpin = line.trim_start().starts_with("ip saddr ")
                    && line.trim_end().ends_with("jump mark-for-masquerade");
                dropped += usize::from(hairpin);
                !(hairpin && dropped <= 3)
            })
            .collect();
        let config = Config::default();
        let facts = IptablesFacts::default();
        for text in [&healthy, &broken] {
            let parsed = rulelint_nft::parse(text);
            let one = check_nft_on(&parsed, &facts, &config, 1);
            for threads in [2, 3, 8] {
                let many = check_nft_on(&parsed, &facts, &config, threads);
                assert_eq!(format!("{one:?}"), format!("{many:?}"), "{threads} threads");
            }
            if std::ptr::eq(text, &broken) {
                let codes: std::collections::BTreeSet<&str> = one.iter().map(|d| d.code).collect();
                assert!(codes.len() >= 2, "{one:#?}");
            }
        }
    }
}
