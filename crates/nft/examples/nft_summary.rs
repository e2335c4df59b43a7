//! Prints the summary of an `nft list ruleset` file as JSON, then its diagnostics rendered.
//!
//! `cargo run -p rulelint-nft --example nft_summary -- FILE`

use rulelint_nft::{ChainGraph, parse, summary};

fn main() {
    let path = std::env::args().nth(1).expect("usage: nft_summary FILE");
    let text = std::fs::read_to_string(&path).expect("readable file");
    let parsed = parse(&text);
    let graph = ChainGraph::build(&parsed.ruleset);
    let s = summary::summarize(&parsed, &graph, &text);
    println!(
        "{}",
        serde_json::to_string_pretty(&s).expect("serialisable")
    );
    for d in &parsed.diagnostics {
        eprintln!("{}", d.render(&path, &text, false));
    }
}
