//! Scale report: parse + graph time, throughput, time per Service and peak heap of
//! `rulelint-nft` on `dumpgen` nodes in nftables mode (`nft list ruleset` text of 50 to 20,000
//! Service ports), next to the iptables parser on the iptables-save dump of the *same* cluster
//! (same Services, endpoints and node). It asserts nothing but that the nft text parses
//! cleanly: it measures and prints. `nft-1thr` is the nft text parsed on one thread (`parse`
//! takes two from 512 KiB up: see `split.rs`).
//!
//! Then, for the same clusters, what users feel: `rulelint check` without its file reading and
//! printing (`check_source`: sections, parse, graph, Kubernetes model, every lint, suppressions,
//! sorting) on the nft text, on its `nft -j` JSON and on the iptables dump, in ms and MB/s, and
//! the nft / iptables ratio of bytes per second (above 1: nft is faster per byte).
//!
//! `cargo bench -p rulelint-nft --bench scale` (`RULELINT_BENCH_MAX=5000` to stop earlier).

use rulelint_dumpgen::{NftForm, Shape, generate, generate_nft};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

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

struct Measure {
    parse: f64,
    total: f64,
    peak: usize,
    rules: usize,
}

fn measure<F: FnMut() -> (usize, f64)>(runs: usize, mut f: F) -> Measure {
    let mut m = Measure {
        parse: f64::MAX,
        total: f64::MAX,
        peak: 0,
        rules: 0,
    };
    for _ in 0..runs {
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let start = Instant::now();
        let (rules, parsed_at) = f();
        m.total = m.total.min(start.elapsed().as_secs_f64());
        m.parse = m.parse.min(parsed_at);
        m.peak = PEAK.load(Ordering::Relaxed) - base;
        m.rules = rules;
    }
    m
}

fn row(kind: &str, services: usize, bytes: usize, m: &Measure) {
    println!(
        "{kind:>9} {services:>8} {:>8} {:>10} {:>9.2} {:>10.2} {:>6.0} {:>9.2} {:>8.0} {:>8.2}",
        m.rules,
        bytes,
        m.parse * 1e3,
        m.total * 1e3,
        bytes as f64 / m.total / 1e6,
        m.total * 1e6 / services.max(1) as f64,
        m.total * 1e9 / m.rules.max(1) as f64,
        (m.peak + bytes) as f64 / bytes as f64
    );
}

fn main() {
    let max: usize = std::env::var("RULELINT_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    println!(
        "{:>9} {:>8} {:>8} {:>10} {:>9} {:>10} {:>6} {:>9} {:>8} {:>8}",
        "parser",
        "services",
        "rules",
        "bytes",
        "parse ms",
        "+graph ms",
        "MB/s",
        "us/svc",
        "ns/rule",
        "peak/in"
    );
    // Both families' text must parse cleanly, or the figures measure error recovery.
    for ipv6 in [false, true] {
        let shape = Shape {
            ipv6,
            ..Shape::with_services(500)
        };
        let text = generate_nft(&shape, NftForm::List);
        let parsed = rulelint_nft::parse(&text);
        assert!(
            parsed.diagnostics.is_empty(),
            "dumpgen's nft text (ipv6: {ipv6}) should parse cleanly: {:?}",
            parsed.diagnostics.first()
        );
    }
    for services in [50usize, 500, 5_000, 20_000]
        .into_iter()
        .filter(|&n| n <= max)
    {
        // One cluster, seen from the same node in both modes.
        let shape = Shape::with_services(services);
        let runs = match services {
            0..=500 => 50,
            501..=5_000 => 10,
            _ => 3,
        };
        let text = generate_nft(&shape, NftForm::List);
        let m = measure(runs, || {
            let start = Instant::now();
            let parsed = rulelint_nft::parse(black_box(&text));
            let at = start.elapsed().as_secs_f64();
            assert!(
                parsed.diagnostics.is_empty(),
                "dumpgen's nft text should parse cleanly: {:?}",
                parsed.diagnostics.first()
            );
            let graph = rulelint_nft::ChainGraph::build(&parsed.ruleset);
            black_box(&graph);
            (parsed.ruleset.rules.len(), at)
        });
        row("nft", services, text.len(), &m);
        // The same on one thread: what the two-thread parse of a large text saves in wall time.
        let m = measure(runs, || {
            let start = Instant::now();
            let parsed = rulelint_nft::parse_on_one_thread(black_box(&text));
            let at = start.elapsed().as_secs_f64();
            let graph = rulelint_nft::ChainGraph::build(&parsed.ruleset);
            black_box(&graph);
            (parsed.ruleset.rules.len(), at)
        });
        row("nft-1thr", services, text.len(), &m);
        let ipt = generate(&shape);
        let m = measure(runs, || {
            let start = Instant::now();
            let parsed = rulelint_parser::parse(black_box(&ipt));
            let at = start.elapsed().as_secs_f64();
            let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
            black_box(&graph);
            (parsed.ruleset.rules.len(), at)
        });
        row("iptables", services, ipt.len(), &m);
    }
    end_to_end(max);
}

/// `check_source` on the nft text, the nft JSON and the iptables dump of each cluster.
fn end_to_end(max: usize) {
    let config = rulelint_lint::Config::default();
    println!();
    println!(
        "{:>9} {:>8} {:>10} {:>9} {:>7} {:>8} {:>9}",
        "check", "services", "bytes", "ms", "MB/s", "peak/in", "findings"
    );
    for services in [500usize, 5_000, 20_000].into_iter().filter(|&n| n <= max) {
        let shape = Shape::with_services(services);
        let runs = if services <= 5_000 { 10 } else { 3 };
        let inputs = [
            ("nft", generate_nft(&shape, NftForm::List)),
            ("nft-json", generate_nft(&shape, NftForm::Json)),
            ("iptables", generate(&shape)),
        ];
        let mut speeds = Vec::new();
        for (kind, text) in &inputs {
            let mut findings = 0;
            let m = measure(runs, || {
                let checked = rulelint_lint::source::check_source(black_box(text), &config);
                findings = checked.diagnostics.len();
                black_box(&checked);
                (0, 0.0)
            });
            let speed = text.len() as f64 / m.total / 1e6;
            speeds.push(speed);
            println!(
                "{kind:>9} {services:>8} {:>10} {:>9.2} {:>7.0} {:>8.2} {findings:>9}",
                text.len(),
                m.total * 1e3,
                speed,
                (m.peak + text.len()) as f64 / text.len() as f64,
            );
        }
        println!(
            "{:>9} {services:>8} nft / iptables per byte: text {:.2}x, json {:.2}x",
            "ratio",
            speeds[0] / speeds[2],
            speeds[1] / speeds[2]
        );
    }
}
