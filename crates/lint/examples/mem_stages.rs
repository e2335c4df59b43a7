//! Heap in use and peak heap after each stage of `check` on one file (issue 16): where a run's
//! peak memory comes from. A counting global allocator; the numbers are bytes asked of the
//! allocator (live, not capacity untouched by the kernel), so they bound the resident set.
//!
//! `cargo run --release -p rulelint-lint --example mem_stages -- node.txt`

use rulelint_lint::Config;
use rulelint_parser::{ChainGraph, parse};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        // SAFETY: forwarded as is to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: forwarded as is to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            let live = LIVE.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
            PEAK.fetch_max(live, Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Relaxed);
        }
        // SAFETY: forwarded as is to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn stage(name: &str, input: usize) {
    let (live, peak) = (LIVE.load(Relaxed), PEAK.load(Relaxed));
    println!(
        "{name:<28} live {:>8.1} MB ({:>5.2}x)  peak {:>8.1} MB ({:>5.2}x)",
        live as f64 / 1e6,
        live as f64 / input as f64,
        peak as f64 / 1e6,
        peak as f64 / input as f64
    );
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: mem_stages FILE");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        eprintln!("cannot read {path}: {e}");
        std::process::exit(2);
    });
    let n = text.len().max(1);
    stage("read", n);
    let parsed = parse(&text);
    stage("parse", n);
    let set = &parsed.ruleset;
    println!(
        "  rules {} ({} B each), tokens {} ({} B), chains {} ({} B), parse diagnostics {}",
        set.rules.len(),
        size_of::<rulelint_parser::Rule>(),
        set.token_count(),
        size_of::<rulelint_parser::Token>(),
        set.chains.len(),
        size_of::<rulelint_parser::Chain>(),
        parsed.diagnostics.len()
    );
    let graph = ChainGraph::build(set);
    stage("graph", n);
    let findings = rulelint_lint::check_with_graph(&parsed, &graph, &Config::default());
    stage("lints", n);
    println!("  findings {}", findings.len());
}
