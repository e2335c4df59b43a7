//! Any bytes in: parse, build the graph, summarise, render diagnostics, print, re-parse. No
//! panic; spans inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rulelint_nft::{ChainGraph, parse, print, summary};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = parse(&text);
    for d in parsed.diagnostics.iter().take(8) {
        assert!(d.span.end as usize <= text.len());
        let _ = d.render("fuzz.nft", &text, false);
    }
    let graph = ChainGraph::build(&parsed.ruleset);
    let _ = graph.reachable_from_roots(&parsed.ruleset);
    for c in 0..parsed.ruleset.chains.len().min(8) {
        let _ = graph.targets_of(rulelint_nft::ChainId(c as u32));
    }
    let _ = serde_json::to_vec(&summary::summarize(&parsed, &graph, &text));
    let printed = print(&parsed.ruleset);
    let again = parse(&printed);
    let _ = print(&again.ruleset);
});
