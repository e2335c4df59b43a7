//! Trace report: on generated nodes of 1k to 250k rules, iptables-save and `nft list ruleset`
//! of the same cluster, measures the parse, the preparation (`TraceNode::new` /
//! `NftTraceNode::new`), the first trace on a freshly prepared node (what a CLI run pays) and a
//! later one (what the page pays per trace), and prints (preparation + first trace) / parse.
//! The packet: a pod to the cluster IP of the last Service dispatched (the worst place for a
//! scan). Then, for iptables, a node port from outside and the cluster trace with the index
//! switched off (a scan of KUBE-SERVICES), to show what the index buys; and what the parts the
//! preparation leaves to the traces would cost built whole (every large chain's index, a line
//! index, the Kubernetes model). Best of several runs. It asserts nothing: it measures and
//! prints.
//!
//! `cargo bench -p rulelint-lint --bench trace` (`RULELINT_BENCH_MAX=50000` to stop earlier).

use rulelint_dumpgen::{NftForm, Shape, generate, generate_nft};
use rulelint_lint::kube::{AddressKind, KubeModel};
use rulelint_lint::trace::index::ChainIndexes;
use rulelint_lint::trace::nft::{NftTraceNode, trace_nft};
use rulelint_lint::trace::{Endpoint, Origin, PacketSpec, TraceNode, trace};
use rulelint_parser::{ChainGraph, LineIndex, parse};
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

/// Milliseconds of one call.
fn once_ms(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64() * 1e3
}

/// One row: parse, preparation, first and later trace, the ratio, and the outcome count.
struct Row {
    parse: f64,
    prep: f64,
    first: f64,
    later: f64,
    outcomes: usize,
}

fn print_row(backend: &str, rules: usize, r: &Row) {
    println!(
        "{backend:<9} {rules:>8} {:>9.2} {:>9.2} {:>10.3} {:>10.3} {:>16.3} {:>9}",
        r.parse,
        r.prep,
        r.first,
        r.later,
        (r.prep + r.first) / r.parse,
        r.outcomes
    );
}

/// Measures and prints the iptables-save row; returns the packet traced.
fn bench_iptables(shape: &Shape, runs: usize) -> PacketSpec {
    let text = generate(shape);
    let parsed = parse(&text);
    // The packet: from the model, outside the timings.
    let graph = ChainGraph::build(&parsed.ruleset);
    let model = KubeModel::build(&parsed.ruleset, &graph);
    let mut cluster = None;
    let mut nodeport = None;
    for s in model.services.iter().filter(|s| !s.endpoints.is_empty()) {
        for a in &s.addresses {
            let port = a.port.map(|p| p.first);
            match (a.kind, a.address) {
                (AddressKind::ClusterIp, Some(net)) => cluster = Some((net.addr(), port)),
                (AddressKind::NodePort, _) if nodeport.is_none() => nodeport = port,
                _ => {}
            }
        }
    }
    let (ip, port) = cluster.expect("a cluster IP");
    let spec = PacketSpec::to(Endpoint { ip, port });

    let parse_ms = best_ms(runs, || {
        black_box(parse(&text));
    });
    let prep_ms = best_ms(runs, || {
        black_box(TraceNode::new("n", &parsed.ruleset));
    });
    let first_ms = (0..runs)
        .map(|_| {
            let node = TraceNode::new("n", &parsed.ruleset);
            once_ms(|| {
                black_box(trace(&node, &spec));
            })
        })
        .fold(f64::MAX, f64::min);
    let node = TraceNode::new("n", &parsed.ruleset);
    let later_ms = best_ms(20, || {
        black_box(trace(&node, &spec));
    });
    let count = parsed.ruleset.rules.len();
    print_row(
        "iptables",
        count,
        &Row {
            parse: parse_ms,
            prep: prep_ms,
            first: first_ms,
            later: later_ms,
            outcomes: trace(&node, &spec).outcomes.len(),
        },
    );
    let node_ip = "192.168.0.10".parse().unwrap();
    let mut np = PacketSpec::to(Endpoint {
        ip: node_ip,
        port: nodeport,
    });
    np.from = Some(Origin::Outside);
    np.node_ips.push(node_ip);
    let nodeport_ms = best_ms(20, || {
        black_box(trace(&node, &np));
    });
    let mut scan = TraceNode::new("n", &parsed.ruleset);
    scan.disable_index();
    let scan_ms = best_ms(5, || {
        black_box(trace(&scan, &spec));
    });
    let index_ms = best_ms(runs, || {
        black_box(ChainIndexes::build(&parsed.ruleset));
    });
    let lines_ms = best_ms(runs, || {
        black_box(LineIndex::new(parsed.ruleset.source()));
    });
    let model_ms = best_ms(runs, || {
        black_box(KubeModel::build(&parsed.ruleset, &graph));
    });
    eprintln!(
        "  iptables {count} rules: node port {nodeport_ms:.3} ms, cluster without the \
         index {scan_ms:.3} ms; not in the preparation: every large chain's index \
         {index_ms:.2} ms (a trace builds those it reaches), a full line index {lines_ms:.2} ms \
         (a trace counts its steps' lines), the Kubernetes model {model_ms:.1} ms"
    );
    spec
}

fn main() {
    let max: usize = std::env::var("RULELINT_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(250_000);
    println!(
        "{:<9} {:>8} {:>9} {:>9} {:>10} {:>10} {:>16} {:>9}",
        "backend",
        "rules",
        "parse ms",
        "prep ms",
        "first ms",
        "later ms",
        "(prep+1st)/parse",
        "outcomes"
    );
    for rules in [1_000, 10_000, 50_000, 250_000] {
        if rules > max {
            break;
        }
        let shape = Shape::with_rule_target(rules);
        let runs = if rules >= 250_000 { 3 } else { 5 };
        let spec = bench_iptables(&shape, runs);

        // nftables, the same cluster.
        let text = generate_nft(&shape, NftForm::List);
        let parse_ms = best_ms(runs, || {
            black_box(rulelint_nft::parse(&text));
        });
        let parsed = rulelint_nft::parse(&text);
        let prep_ms = best_ms(runs, || {
            black_box(NftTraceNode::new("n", &parsed.ruleset));
        });
        let first_ms = (0..runs)
            .map(|_| {
                let node = NftTraceNode::new("n", &parsed.ruleset);
                once_ms(|| {
                    black_box(trace_nft(&node, &spec));
                })
            })
            .fold(f64::MAX, f64::min);
        let node = NftTraceNode::new("n", &parsed.ruleset);
        let later_ms = best_ms(20, || {
            black_box(trace_nft(&node, &spec));
        });
        print_row(
            "nftables",
            parsed.ruleset.rules.len(),
            &Row {
                parse: parse_ms,
                prep: prep_ms,
                first: first_ms,
                later: later_ms,
                outcomes: trace_nft(&node, &spec).outcomes.len(),
            },
        );
    }
}
