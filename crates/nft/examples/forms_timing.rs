//! Prints how fast each reader takes its files: `cargo run --release -p rulelint-nft --example
//! forms_timing -- FILE...` (the form is detected per file; best of 5 runs; figures, no asserts).

use rulelint_nft::{ChainGraph, Strings, parse_any};
use std::time::Instant;

fn main() {
    for path in std::env::args().skip(1) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        let mut best = f64::MAX;
        let mut graph_best = f64::MAX;
        let mut summary = String::new();
        for _ in 0..5 {
            let strings = Strings::new();
            let start = Instant::now();
            let (form, parsed) = parse_any(&text, &strings);
            let parse_s = start.elapsed().as_secs_f64();
            let graph = ChainGraph::build(&parsed.ruleset);
            let total_s = start.elapsed().as_secs_f64();
            best = best.min(parse_s);
            graph_best = graph_best.min(total_s);
            summary = format!(
                "{form:?}: {} tables, {} chains, {} rules, {} sets, {} edges, {} diagnostics, side store {} KiB",
                parsed.ruleset.tables.len(),
                parsed.ruleset.chains.len(),
                parsed.ruleset.rules.len(),
                parsed.ruleset.sets.len(),
                graph.edges().count(),
                parsed.diagnostics.len(),
                strings.allocated_bytes() / 1024,
            );
        }
        let mb = text.len() as f64 / 1e6;
        println!(
            "{path}: {mb:.1} MB, parse {:.1} ms ({:.0} MB/s), +graph {:.1} ms; {summary}",
            best * 1e3,
            mb / best,
            graph_best * 1e3
        );
    }
}
