//! Scale report: parse + graph time, throughput and peak heap of `rulelint-nft` on generated
//! kube-proxy nftables rulesets (1k to 20k Services, three endpoints each), next to the iptables
//! parser on `dumpgen` dumps of about the same size in bytes. It asserts nothing: it measures
//! and prints.
//!
//! `cargo bench -p rulelint-nft --bench scale` (`RULELINT_BENCH_MAX=5000` to stop earlier).

use rulelint_dumpgen::{Shape, generate};
use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write;
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

/// A kube-proxy (layout L3) `nft list ruleset` for `services` Services with 3 endpoints each.
fn nft_ruleset(services: usize) -> String {
    let mut o = String::with_capacity(services * 1200);
    let ip = |i: usize| format!("172.30.{}.{}", (i / 250) % 250, i % 250 + 1);
    let ep = |i: usize, e: usize| format!("10.{}.{}.{}", 180 + e, (i / 250) % 250, i % 250 + 1);
    o.push_str("table ip kube-proxy {\n\tcomment \"rules for kube-proxy\"\n");
    o.push_str("\tset cluster-ips {\n\t\ttype ipv4_addr\n\t\tcomment \"Active ClusterIPs\"\n\t\telements = { ");
    for i in 0..services {
        let sep = if i + 1 < services {
            if i % 2 == 1 { ",\n\t\t\t     " } else { ", " }
        } else {
            " }\n\t}\n"
        };
        let _ = write!(o, "{}{sep}", ip(i));
    }
    o.push_str("\n\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n\t\tcomment \"ClusterIP, ExternalIP and LoadBalancer IP traffic\"\n\t\telements = { ");
    for i in 0..services {
        let sep = if i + 1 < services {
            ",\n\t\t\t     "
        } else {
            " }\n\t}\n"
        };
        let _ = write!(
            o,
            "{} . tcp . 80 : goto service-H{i:07}-ns{}/svc{i}/tcp/p80{sep}",
            ip(i),
            i % 50
        );
    }
    o.push_str("\n\tchain nat-prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\tjump services\n\t}\n");
    o.push_str("\n\tchain nat-postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\tjump masquerading\n\t}\n");
    o.push_str("\n\tchain masquerading {\n\t\tmeta mark & 0x00004000 == 0x00000000 return\n\t\tmeta mark set meta mark ^ 0x00004000\n\t\tmasquerade fully-random\n\t}\n");
    o.push_str("\n\tchain mark-for-masquerade {\n\t\tmeta mark set meta mark | 0x00004000\n\t}\n");
    o.push_str("\n\tchain services {\n\t\tip daddr . meta l4proto . th dport vmap @service-ips\n\t\tfib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports\n\t}\n");
    for i in 0..services {
        let name = format!("H{i:07}-ns{}/svc{i}/tcp/p80", i % 50);
        let _ = write!(
            o,
            "\n\tchain service-{name} {{\n\t\tip daddr {} ip saddr != 10.0.0.0/8 jump mark-for-masquerade\n\t\tnumgen random mod 3 vmap {{ ",
            ip(i)
        );
        for e in 0..3 {
            let sep = if e < 2 { ", " } else { " }\n\t}\n" };
            let _ = write!(o, "{e} : goto endpoint-{name}__{}/80{sep}", ep(i, e));
        }
        for e in 0..3 {
            let _ = write!(
                o,
                "\n\tchain endpoint-{name}__{}/80 {{\n\t\tip saddr {} jump mark-for-masquerade\n\t\tmeta l4proto tcp dnat to {}:80\n\t}}\n",
                ep(i, e),
                ep(i, e),
                ep(i, e)
            );
        }
    }
    o.push_str("}\n");
    o
}

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

fn row(kind: &str, bytes: usize, m: &Measure) {
    println!(
        "{kind:>9} {:>9} {:>11} {:>10.2} {:>10.2} {:>8.0} {:>9.1} {:>8.2}",
        m.rules,
        bytes,
        m.parse * 1e3,
        m.total * 1e3,
        bytes as f64 / m.total / 1e6,
        m.total * 1e9 / m.rules.max(1) as f64,
        (m.peak + bytes) as f64 / bytes as f64
    );
}

fn main() {
    let max: usize = std::env::var("RULELINT_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    // Bytes per rule of dumpgen dumps, to size the iptables dump like the nft text.
    let sample = generate(&Shape::with_rule_target(10_000));
    let per_rule = sample.len() as f64 / rulelint_dumpgen::rule_count(&sample) as f64;
    println!(
        "{:>9} {:>9} {:>11} {:>10} {:>10} {:>8} {:>9} {:>8}",
        "parser", "rules", "bytes", "parse ms", "+graph ms", "MB/s", "ns/rule", "peak/in"
    );
    for services in [1_000usize, 5_000, 20_000]
        .into_iter()
        .filter(|&n| n <= max)
    {
        let text = nft_ruleset(services);
        let runs = if services >= 20_000 { 5 } else { 15 };
        let m = measure(runs, || {
            let start = Instant::now();
            let parsed = rulelint_nft::parse(black_box(&text));
            let at = start.elapsed().as_secs_f64();
            assert!(parsed.diagnostics.is_empty());
            let graph = rulelint_nft::ChainGraph::build(&parsed.ruleset);
            black_box(&graph);
            (parsed.ruleset.rules.len(), at)
        });
        row("nft", text.len(), &m);
        let ipt = generate(&Shape::with_rule_target(
            (text.len() as f64 / per_rule) as usize,
        ));
        let m = measure(runs, || {
            let start = Instant::now();
            let parsed = rulelint_parser::parse(black_box(&ipt));
            let at = start.elapsed().as_secs_f64();
            let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
            black_box(&graph);
            (parsed.ruleset.rules.len(), at)
        });
        row("iptables", ipt.len(), &m);
    }
}
