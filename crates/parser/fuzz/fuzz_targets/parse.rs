//! Any bytes in: parse, build the graph, print, re-parse, render every diagnostic. No panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rulelint_parser::{ChainGraph, json, parse, print};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = parse(&text);
    for d in &parsed.diagnostics {
        let _ = d.render("fuzz.txt", &text, false);
    }
    let graph = ChainGraph::build(&parsed.ruleset);
    let _ = graph.cycles();
    let _ = graph.reachable_from_hooks(&parsed.ruleset);
    let _ = serde_json::to_vec(&json::file_doc("fuzz", &parsed));
    for rule in parsed.ruleset.iter_rules() {
        let _ = (rule.comment(), rule.source(), rule.destination(), rule.destination_ports());
        let _ = (rule.mark(), rule.probability(), rule.ctstate(), rule.set_matches(), rule.dnat_destination());
    }
    let printed = print(&parsed.ruleset);
    let again = parse(&printed);
    let _ = print(&again.ruleset);
});
