//! The light target (issue 16): any bytes in, parse, chain graph and Kubernetes model only, with
//! no rendering, printing or re-parsing, so that it runs thousands of inputs a second. The heavy
//! targets (`parse` in the parser, `check`, `diff`, `trace`) cover the rest. No panic; every
//! span inside the text; the graph agrees with the rules.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rulelint_lint::kube::KubeModel;
use rulelint_parser::{ChainGraph, parse};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = parse(&text);
    let set = &parsed.ruleset;
    for d in &parsed.diagnostics {
        assert!(d.span.start <= d.span.end && d.span.end as usize <= text.len());
    }
    let graph = ChainGraph::build(set);
    let cycles = graph.cycles();
    assert_eq!(cycles.is_empty(), graph.is_acyclic());
    let reached = graph.reachable_from_hooks(set);
    assert_eq!(reached.len(), set.chains.len());
    let mut jumps = 0;
    for chain in set.iter_chains() {
        for (from, jump) in graph.jumps_into(chain.id) {
            assert_eq!(set.rule(jump.rule).target_chain(), Some(chain.id));
            assert_eq!(set.rule(jump.rule).chain().id, from);
        }
        jumps += graph.jumps_from(set, chain.id).count();
    }
    assert_eq!(jumps, graph.jump_count());
    for rule in set.iter_rules() {
        let _ = (rule.text(), rule.target(), rule.is_unconditional());
        for m in rule.matches() {
            for option in m.options() {
                let _ = (option.name(), option.negated());
            }
        }
    }
    let model = KubeModel::build(set, &graph);
    for service in &model.services {
        let _ = (service.display_name(set), service.is_live(&graph));
    }
});
