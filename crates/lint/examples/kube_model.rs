//! Builds the Kubernetes model of a dump many times (for profiling): `cargo run --release -p rulelint-lint --example kube_model -- FILE`.
fn main() {
    let path = std::env::args().nth(1).expect("FILE");
    let text = std::fs::read_to_string(path).expect("readable");
    let parsed = rulelint_parser::parse(&text);
    let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
    let start = std::time::Instant::now();
    for _ in 0..20 {
        std::hint::black_box(rulelint_lint::kube::KubeModel::build(
            &parsed.ruleset,
            &graph,
        ));
    }
    println!(
        "{:.1} ms per build",
        start.elapsed().as_secs_f64() * 1e3 / 20.0
    );
}
