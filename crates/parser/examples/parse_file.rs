//! Parses a dump file several times and prints the best parse and parse + graph times: a handle
//! for profilers (`perf record`, `valgrind --tool=callgrind`) on a real or generated dump.
//!
//! `cargo run --release -p rulelint-parser --example parse_file -- node.txt [runs]`

use rulelint_parser::{ChainGraph, parse};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: parse_file FILE [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            std::process::exit(2);
        }
    };
    let (mut best_parse, mut best_graph) = (f64::MAX, f64::MAX);
    let mut rules = 0;
    for _ in 0..runs {
        let start = Instant::now();
        let parsed = parse(black_box(&text));
        let parsed_at = start.elapsed().as_secs_f64();
        let graph = ChainGraph::build(&parsed.ruleset);
        let total = start.elapsed().as_secs_f64();
        rules = parsed.ruleset.rules.len();
        black_box((&parsed, &graph));
        best_parse = best_parse.min(parsed_at);
        best_graph = best_graph.min(total - parsed_at);
    }
    println!(
        "{path}: {rules} rules, {} bytes; parse {:.2} ms ({:.0} MB/s), graph {:.2} ms",
        text.len(),
        best_parse * 1e3,
        text.len() as f64 / best_parse / 1e6,
        best_graph * 1e3
    );
}
