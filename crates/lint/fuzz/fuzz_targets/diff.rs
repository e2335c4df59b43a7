//! Any bytes in, as `rulelint diff a b c` reads three files: the input is cut into up to three
//! dumps at lines holding only `====`, each read as the CLI reads a file (iptables-save, nft,
//! IPVS sections), then compared as a pair and as a group, with the JSON and human reports.
//! No panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rulelint_lint::diff::{Group, NodeInput, compare, prepare, report};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let texts: Vec<&str> = text.splitn(3, "\n====\n").collect();
    let inputs: Vec<NodeInput<'_>> = texts.iter().map(|t| NodeInput::read(t)).collect();
    let nodes = prepare(inputs.iter().enumerate().map(|(i, input)| (format!("n{i}"), input)));
    let paths = ["a.txt", "b.txt", "c.txt"];
    for group in [&nodes[..nodes.len().min(2)], &nodes[..]] {
        if group.len() < 2 {
            continue;
        }
        let facts = Group::from_nodes(group);
        let comparison = compare(&facts, group);
        let doc = report::document(&comparison, &paths[..group.len()]);
        let _ = serde_json::to_vec(&doc);
        let _ = report::human(&doc, true);
    }
});
