//! The Kubernetes corpus, `corpus/kube/`: healthy nodes of every kube-proxy layout generation
//! (`healthy/`) must get no error or warning from any lint, and the Kubernetes model of every
//! dump (`rulelint services` as text and JSON) is pinned in `corpus/kube/snapshots/`.

use rulelint_lint::kube::KubeModel;
use rulelint_lint::kube::catalog::Catalog;
use rulelint_lint::kube::doc::{human, services_file};
use rulelint_lint::{ChainGraph, Config, Severity, check};
use rulelint_parser::{json, parse};
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/kube")
}

/// (folder/stem, text) of every dump in `corpus/kube/<folder>/`, sorted.
fn dumps() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(corpus_dir()).expect("corpus/kube") {
        let folder = entry.expect("entry").path();
        if !folder.is_dir() || folder.ends_with("snapshots") {
            continue;
        }
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        for f in std::fs::read_dir(&folder).expect("folder") {
            let f = f.expect("entry").path();
            if f.extension().is_some_and(|x| x == "txt") {
                let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(&f).expect("dump");
                out.push((format!("{name}/{stem}"), text));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn healthy_nodes_have_no_error_or_warning() {
    let mut found = Vec::new();
    let mut healthy = 0;
    for (name, text) in dumps().iter().filter(|(n, _)| n.starts_with("healthy/")) {
        healthy += 1;
        assert!(
            text.starts_with("# case: "),
            "{name}: first line must be `# case: ...`"
        );
        for d in check(&parse(text), &Config::default()) {
            if d.severity >= Severity::Warning {
                found.push(format!("{name}: {} {} {}", d.code, d.name, d.message));
            }
        }
    }
    assert!(healthy >= 5, "only {healthy} healthy Kubernetes dumps");
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn healthy_nodes_have_services_with_endpoints() {
    for (name, text) in dumps().iter().filter(|(n, _)| n.starts_with("healthy/")) {
        let parsed = parse(text);
        let graph = ChainGraph::build(&parsed.ruleset);
        let model = KubeModel::build(&parsed.ruleset, &graph);
        assert!(
            model.layout.is_kubernetes(),
            "{name}: no kube-proxy layout detected"
        );
        assert!(
            model.services.iter().any(|s| !s.endpoints.is_empty()),
            "{name}: no Service with endpoints"
        );
        assert!(
            model.services.iter().all(|s| s.name.is_some()),
            "{name}: a Service without a name"
        );
    }
}

#[test]
fn snapshots_of_the_model() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(corpus_dir().join("snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for (name, text) in dumps() {
            let parsed = parse(&text);
            let graph = ChainGraph::build(&parsed.ruleset);
            let model = KubeModel::build(&parsed.ruleset, &graph);
            let path = format!("{name}.txt");
            let catalog = Catalog::from_iptables(&parsed.ruleset, &graph, &model);
            let file = services_file(&path, &catalog);
            let mut out = human(&file);
            out.push_str("--- json ---\n");
            out.push_str(
                &serde_json::to_string_pretty(&json::Document::new(vec![file])).expect("JSON"),
            );
            insta::assert_snapshot!(name.replace('/', "-"), out);
        }
    });
}
