//! Diff report: for two generated nodes of one cluster (10k to 250k rules each), measures the
//! parse of both, their preparation (chain graph + Kubernetes model), the comparison and the
//! JSON document, best of several runs; then a 50-node drift check of 10k-rule nodes. It
//! asserts nothing: it measures and prints, with time per rule to show how it scales.
//!
//! `cargo bench -p rulelint-lint --bench diff` (`RULELINT_BENCH_MAX=100000` to stop earlier).

use rulelint_dumpgen::{Shape, generate};
use rulelint_lint::diff::{Group, Node, compare, report};
use rulelint_parser::{Parsed, parse};
use std::hint::black_box;
use std::time::Instant;

/// Best wall time of `runs` calls, in milliseconds.
fn best_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::MAX, f64::min)
}

/// Dumps of `nodes` nodes of one cluster sized to about `rules` rules each.
fn cluster(rules: usize, nodes: u32) -> Vec<String> {
    let mut shape = Shape::with_rule_target(rules);
    shape.nodes = shape.nodes.max(nodes);
    (0..nodes)
        .map(|node| {
            let mut s = shape.clone();
            s.node = node;
            generate(&s)
        })
        .collect()
}

/// Parse, prepare and compare `texts`; prints the times and returns the total.
fn measure(label: &str, texts: &[String], runs: usize) {
    let parse_ms = best_ms(runs, || {
        for t in texts {
            black_box(parse(black_box(t)));
        }
    });
    let parsed: Vec<Parsed<'_>> = texts.iter().map(|t| parse(t)).collect();
    let prepare_ms = best_ms(runs, || {
        for (i, p) in parsed.iter().enumerate() {
            black_box(Node::new(format!("node-{i}"), p));
        }
    });
    let nodes: Vec<Node<'_>> = parsed
        .iter()
        .enumerate()
        .map(|(i, p)| Node::new(format!("node-{i}"), p))
        .collect();
    let mut drift = 0;
    let mut expected = 0;
    let compare_ms = best_ms(runs, || {
        let facts_of_c = Group::from_nodes(&nodes);
        let c = black_box(compare(&facts_of_c, &nodes));
        drift = c.drift_count();
        expected = c.expected_count();
    });
    let paths: Vec<String> = (0..nodes.len()).map(|i| format!("node-{i}.txt")).collect();
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let facts_of_comparison = Group::from_nodes(&nodes);
    let comparison = compare(&facts_of_comparison, &nodes);
    let document_ms = best_ms(runs, || {
        let doc = report::document(&comparison, &paths);
        black_box(serde_json::to_string(&doc).expect("JSON"));
    });
    let rules: usize = parsed.iter().map(|p| p.ruleset.rules.len()).sum();
    let bytes: usize = texts.iter().map(String::len).sum();
    let total = parse_ms + prepare_ms + compare_ms + document_ms;
    println!(
        "{label}: {rules} rules, {bytes} bytes: parse {parse_ms:.1} ms, graph+model {prepare_ms:.1} ms, \
         compare {compare_ms:.1} ms, JSON {document_ms:.1} ms; total {total:.1} ms, \
         compare {:.0} ns/rule, total {:.0} ns/rule; {drift} drift, {expected} expected",
        compare_ms * 1e6 / rules as f64,
        total * 1e6 / rules as f64,
    );
}

fn main() {
    let max: usize = std::env::var("RULELINT_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    for rules in [10_000usize, 50_000, 250_000]
        .into_iter()
        .filter(|&n| n <= max)
    {
        let texts = cluster(rules, 2);
        let runs = if rules >= 250_000 { 3 } else { 10 };
        measure(&format!("pair of {rules}-rule nodes"), &texts, runs);
    }
    let group = cluster(10_000, 50);
    measure("50 nodes of 10k rules", &group, 3);
}
