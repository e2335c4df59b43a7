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
//! the nft / iptables ratio of bytes per second (above 1: nft is faster per byte). The three
//! inputs are checked back to back in each round (best of each over the rounds, and the median
//! of the per-round ratios), so load drift on a shared machine moves them alike.
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

/// `check_source` on the nft text, the nft JSON and the iptables dump of each cluster.
///
/// The three inputs run back to back in each round, so load drift on a shared machine moves
/// them alike: each row is the best of its rounds, and the ratio line gives the best-over-best
/// ratio and the median of the per-round ratios.
fn end_to_end(max: usize) {
    let config = rulelint_lint::Config::default();
    println!();
    println!(
        "{:>9} {:>8} {:>10} {:>9} {:>7} {:>8} {:>9}",
        "check", "services", "bytes", "ms", "MB/s", "peak/in", "findings"
    );
    for services in [500usize, 5_000, 20_000].into_iter().filter(|&n| n <= max) {
        let shape = Shape::with_services(services);
        let rounds = match services {
            0..=500 => 30,
            501..=5_000 => 15,
            _ => 3,
        };
        let inputs = [
            ("nft", generate_nft(&shape, NftForm::List)),
            ("nft-json", generate_nft(&shape, NftForm::Json)),
            ("iptables", generate(&shape)),
        ];
        let mut best = [f64::MAX; 3];
        let mut peaks = [0usize; 3];
        let mut findings = [0usize; 3];
        let mut text_ratios = Vec::with_capacity(rounds);
        let mut json_ratios = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let mut round = [0.0; 3];
            for (i, (_, text)) in inputs.iter().enumerate() {
                let m = measure(1, || {
                    let checked = rulelint_lint::source::check_source(black_box(text), &config);
                    findings[i] = checked.diagnostics.len();
                    black_box(&checked);
                    (0, 0.0)
                });
                round[i] = m.total;
                best[i] = best[i].min(m.total);
                peaks[i] = m.peak;
            }
            // Bytes per second relative to iptables: (len / t) / (len_ipt / t_ipt).
            let per_byte = |i: usize| {
                (inputs[i].1.len() as f64 / round[i]) / (inputs[2].1.len() as f64 / round[2])
            };
            text_ratios.push(per_byte(0));
            json_ratios.push(per_byte(1));
        }
        let mut speeds = [0.0; 3];
        for (i, (kind, text)) in inputs.iter().enumerate() {
            speeds[i] = text.len() as f64 / best[i] / 1e6;
            println!(
                "{kind:>9} {services:>8} {:>10} {:>9.2} {:>7.0} {:>8.2} {:>9}",
                text.len(),
                best[i] * 1e3,
                speeds[i],
                (peaks[i] + text.len()) as f64 / text.len() as f64,
                findings[i],
            );
        }
        println!(
            "{:>9} {services:>8} nft / iptables per byte: text {:.2}x, json {:.2}x \
             (best of {rounds} interleaved rounds; median of the per-round ratios: text {:.2}x, json {:.2}x)",
            "ratio",
            speeds[0] / speeds[2],
            speeds[1] / speeds[2],
            median(&mut text_ratios),
            median(&mut json_ratios)
        );
    }
}
