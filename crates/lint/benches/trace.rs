//! Trace report: on generated nodes of 10k to 250k rules, measures the parse, the preparation
//! (`TraceNode::new`: Kubernetes model, node facts, the index of large chains, the line index) and
//! one trace (a pod to a cluster IP, the last Service dispatched; outside to a node port), best
//! of several runs; then the same trace with the index switched off (a scan of KUBE-SERVICES),
//! to show what the index buys. It asserts nothing: it measures and prints.
//!
//! `cargo bench -p rulelint-lint --bench trace` (`RULELINT_BENCH_MAX=100000` to stop earlier).

use rulelint_dumpgen::{Shape, generate};
use rulelint_lint::kube::{AddressKind, KubeModel};
use rulelint_lint::trace::index::ChainIndexes;
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

fn main() {
    let max: usize = std::env::var("RULELINT_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(250_000);
    println!(
        "{:>8} {:>9} {:>9} {:>10} {:>10} {:>12} {:>9}",
        "rules", "parse ms", "prep ms", "cluster ms", "nodeport ms", "no-index ms", "outcomes"
    );
    for rules in [10_000, 50_000, 250_000] {
        if rules > max {
            break;
        }
        let shape = Shape::with_rule_target(rules);
        let text = generate(&shape);
        let parse_ms = best_ms(3, || {
            black_box(parse(&text));
        });
        let parsed = parse(&text);
        let prep_ms = best_ms(3, || {
            black_box(TraceNode::new("n", &parsed.ruleset));
        });
        // Where the preparation goes.
        let graph_ms = best_ms(3, || {
            black_box(ChainGraph::build(&parsed.ruleset));
        });
        let graph = ChainGraph::build(&parsed.ruleset);
        let model_ms = best_ms(10, || {
            black_box(KubeModel::build(&parsed.ruleset, &graph));
        });
        let index_ms = best_ms(3, || {
            black_box(ChainIndexes::build(&parsed.ruleset));
        });
        let lines_ms = best_ms(3, || {
            black_box(LineIndex::new(parsed.ruleset.source()));
        });
        eprintln!(
            "  {} rules: graph {graph_ms:.1} ms, model {model_ms:.1} ms, index {index_ms:.1} ms, lines {lines_ms:.1} ms",
            parsed.ruleset.rules.len()
        );
        let node = TraceNode::new("n", &parsed.ruleset);
        // The last cluster IP dispatched (the worst place for a scan) and a node port.
        let mut cluster = None;
        let mut nodeport = None;
        for s in node
            .model
            .services
            .iter()
            .filter(|s| !s.endpoints.is_empty())
        {
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
        let cluster_ms = best_ms(20, || {
            black_box(trace(&node, &spec));
        });
        let outcomes = trace(&node, &spec).outcomes.len();
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
        println!(
            "{:>8} {:>9.1} {:>9.1} {:>10.3} {:>10.3} {:>12.3} {:>9}",
            parsed.ruleset.rules.len(),
            parse_ms,
            prep_ms,
            cluster_ms,
            nodeport_ms,
            scan_ms,
            outcomes
        );
    }
}
