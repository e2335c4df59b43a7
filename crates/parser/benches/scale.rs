//! Scale report: for generated kube-proxy node dumps of 1k to 1M rules, measures parse + graph
//! time (best of several runs), throughput, time per rule and peak heap, and prints a table.
//! It asserts nothing: it measures and prints.
//!
//! `cargo bench -p rulelint-parser --bench scale` (`RULELINT_BENCH_MAX=250000` to stop earlier).

use rulelint_dumpgen::{Shape, generate};
use rulelint_parser::{ChainGraph, parse};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Counts live heap bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            if new_size > layout.size() {
                let live = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                    - layout.size();
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters nothing here.
    let max: usize = std::env::var("RULELINT_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    println!(
        "{:>9} {:>11} {:>10} {:>10} {:>9} {:>9} {:>11} {:>8}",
        "rules", "bytes", "parse ms", "+graph ms", "MB/s", "ns/rule", "peak heap", "peak/in"
    );
    for rules in [1_000usize, 10_000, 100_000, 250_000, 1_000_000]
        .into_iter()
        .filter(|&n| n <= max)
    {
        let text = generate(&Shape::with_rule_target(rules));
        let runs = if rules >= 250_000 { 5 } else { 20 };
        let mut best_parse = f64::MAX;
        let mut best_total = f64::MAX;
        let mut peak_over_input = 0usize;
        let mut rule_count = 0;
        for _ in 0..runs {
            let base = LIVE.load(Ordering::Relaxed);
            PEAK.store(base, Ordering::Relaxed);
            let start = Instant::now();
            let parsed = parse(black_box(&text));
            let parsed_at = start.elapsed().as_secs_f64();
            let graph = ChainGraph::build(&parsed.ruleset);
            let total = start.elapsed().as_secs_f64();
            rule_count = parsed.ruleset.rules.len();
            black_box(&graph);
            drop((graph, parsed));
            best_parse = best_parse.min(parsed_at);
            best_total = best_total.min(total);
            peak_over_input = PEAK.load(Ordering::Relaxed) - base;
        }
        // Peak counts the input text too: it is what a caller holds while parsing.
        let peak = peak_over_input + text.len();
        println!(
            "{:>9} {:>11} {:>10.2} {:>10.2} {:>9.0} {:>9.1} {:>11} {:>8.2}",
            rule_count,
            text.len(),
            best_parse * 1e3,
            best_total * 1e3,
            text.len() as f64 / best_total / 1e6,
            best_total * 1e9 / rule_count as f64,
            peak,
            peak as f64 / text.len() as f64
        );
    }
}
