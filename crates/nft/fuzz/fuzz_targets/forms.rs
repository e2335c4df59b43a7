//! Any bytes in, read as `nft -j` JSON and as an `add ...` transaction (and by `parse_any`):
//! build the graph, compare contents, print, re-parse. No panic; spans inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rulelint_nft::{
    ChainGraph, Parsed, Strings, canon, parse, parse_any, parse_json, parse_transaction, print,
};

fn exercise(text: &str, parsed: &Parsed<'_>) {
    for d in parsed.diagnostics.iter().take(8) {
        assert!(d.span.start <= d.span.end && d.span.end as usize <= text.len());
        let _ = d.render("fuzz.nft", text, false);
    }
    let graph = ChainGraph::build(&parsed.ruleset);
    let _ = graph.reachable_from_roots(&parsed.ruleset);
    let _ = canon::content(&parsed.ruleset);
    let printed = print(&parsed.ruleset);
    let _ = parse(&printed);
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let strings = Strings::new();
    exercise(&text, &parse_json(&text, &strings));
    exercise(&text, &parse_transaction(&text));
    let (_, parsed) = parse_any(&text, &strings);
    exercise(&text, &parsed);
});
