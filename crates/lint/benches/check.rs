//! Check report: for generated kube-proxy node dumps of 10k, 250k and 1M rules, measures parse
//! time, the whole check (graph + Kubernetes model + every lint) and each lint alone, best of
//! several runs (parse and `check_source` interleaved round by round), and prints them with the
//! ratio check / parse. Each lint's own time is measured
//! over one shared context whose Kubernetes model is already built (as in a real check, where
//! the first Kubernetes lint pays for it). It asserts nothing: it measures and prints.
//!
//! `cargo bench -p rulelint-lint --bench check` (`RULELINT_BENCH_MAX=250000` to stop earlier).

use rulelint_dumpgen::{Shape, generate};
use rulelint_lint::kube::KubeModel;
use rulelint_lint::source::check_source;
use rulelint_lint::{ChainGraph, Config, LINTS, LintContext, check, check_with_graph_on};
use rulelint_parser::parse;
use std::hint::black_box;
use std::time::Instant;

/// Wall time of one call, in milliseconds.
fn time_ms(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64() * 1e3
}

/// Median of a non-empty list (sorts it).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

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

fn main() {
    let max: usize = std::env::var("RULELINT_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    let config = Config::default();
    for rules in [10_000usize, 250_000, 1_000_000]
        .into_iter()
        .filter(|&n| n <= max)
    {
        let text = generate(&Shape::with_rule_target(rules));
        let runs = if rules >= 250_000 { 5 } else { 20 };
        // Parse and check_source run back to back in each round, so load drift on a shared
        // machine moves both alike; the ratio uses the best of each, and the median of the
        // per-round ratios is printed beside it.
        let rounds = if rules >= 250_000 { 15 } else { 30 };
        let (mut parse_ms, mut source_ms) = (f64::MAX, f64::MAX);
        let mut round_ratios = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let round_parse = time_ms(|| {
                black_box(parse(black_box(&text)));
            });
            let round_source = time_ms(|| {
                black_box(check_source(black_box(&text), &config));
            });
            parse_ms = parse_ms.min(round_parse);
            source_ms = source_ms.min(round_source);
            round_ratios.push(round_source / round_parse);
        }
        let parsed = parse(&text);
        let rule_count = parsed.ruleset.rules.len();
        let mut findings = 0;
        let check_ms = best_ms(runs, || {
            findings = black_box(check(&parsed, &config)).len();
        });
        let graph_ms = best_ms(runs, || {
            black_box(ChainGraph::build(&parsed.ruleset));
        });
        let graph = ChainGraph::build(&parsed.ruleset);
        let kube_ms = best_ms(runs, || {
            black_box(KubeModel::build(&parsed.ruleset, &graph));
        });
        println!(
            "{rule_count} rules, {} bytes: parse {parse_ms:.1} ms, check {check_ms:.1} ms \
             (graph {graph_ms:.1} ms, Kubernetes model {kube_ms:.1} ms), check/parse {:.2}, check {:.0} ns/rule, {findings} findings",
            text.len(),
            check_ms / parse_ms,
            check_ms * 1e6 / rule_count as f64
        );
        // What the CLI pays per file: sections, parse, check, suppressions and caps.
        println!(
            "    check_source (parse + check + sections, suppressions, caps): {source_ms:.1} ms, {:.2}x parse \
             (best of {rounds} interleaved rounds; median of the per-round ratios {:.2}x)",
            source_ms / parse_ms,
            median(&mut round_ratios)
        );
        // What check_source adds to parse + check: finding the sections and the suppressions.
        let sections_ms = best_ms(runs, || {
            black_box(rulelint_lint::source::sections(black_box(&text)));
        });
        let suppressions_ms = best_ms(runs, || {
            let mut none = Vec::new();
            rulelint_lint::suppression::apply(black_box(&text), &mut none, &config);
            black_box(none);
        });
        println!("    of which sections {sections_ms:.1} ms, suppressions {suppressions_ms:.1} ms");
        // The same check with every lint on this thread: the CPU time it takes.
        let one_ms = best_ms(runs, || {
            black_box(check_with_graph_on(&parsed, &graph, &config, 1));
        });
        println!(
            "    check with the lints on one thread: {:.1} ms (graph included), {:.2}x parse",
            one_ms + graph_ms,
            (one_ms + graph_ms) / parse_ms
        );
        let cx = LintContext::new(&parsed.ruleset, &graph);
        cx.kube();
        let mut found = Vec::new();
        let mut lints_ms = 0.0;
        for lint in LINTS {
            let ms = best_ms(runs, || {
                found.clear();
                lint.run(&cx, &mut found);
                black_box(&found);
            });
            lints_ms += ms;
            println!(
                "    {:<6} {:<24} {ms:>8.2} ms",
                lint.info.code, lint.info.name
            );
        }
        println!("    all lints over a built model: {lints_ms:.1} ms");
    }
}
