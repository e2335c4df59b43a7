//! Criterion benchmark: parse and parse + chain graph on generated kube-proxy node dumps.
//!
//! `cargo bench -p rulelint-parser --bench parse` (sizes in rules: 1k, 10k, 100k, 250k, 1M).
//! Set `RULELINT_BENCH_MAX=100000` to stop at a smaller size.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rulelint_dumpgen::{Shape, generate};
use rulelint_parser::{ChainGraph, parse};
use std::hint::black_box;
use std::time::Duration;

const SIZES: &[usize] = &[1_000, 10_000, 100_000, 250_000, 1_000_000];

fn max_size() -> usize {
    std::env::var("RULELINT_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("kube-proxy-dump");
    for &rules in SIZES.iter().filter(|&&n| n <= max_size()) {
        let text = generate(&Shape::with_rule_target(rules));
        group.throughput(Throughput::Bytes(text.len() as u64));
        // Large inputs take seconds per iteration: fewer samples keep the run short.
        group.sample_size(if rules >= 250_000 { 10 } else { 30 });
        group.measurement_time(Duration::from_secs(if rules >= 250_000 { 20 } else { 5 }));
        group.bench_with_input(BenchmarkId::new("parse", rules), &text, |b, text| {
            b.iter(|| black_box(parse(black_box(text))))
        });
        group.bench_with_input(BenchmarkId::new("parse+graph", rules), &text, |b, text| {
            b.iter(|| {
                let parsed = parse(black_box(text));
                let graph = ChainGraph::build(&parsed.ruleset);
                black_box((parsed, graph))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
