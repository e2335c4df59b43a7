//! What the tests of the two-thread parse (`split.rs`) and of the windowed parse
//! (`windows.rs`) share: a parse's fingerprint, the texts they read, and the broken lines they
//! insert.

// Each test file uses its own subset.
#![allow(dead_code)]

use rulelint_dumpgen::{NftForm, Shape, generate_nft};
use rulelint_nft::Parsed;
use std::path::{Path, PathBuf};

/// The whole ruleset (every index and span) and the diagnostics in order, to compare parses.
pub fn fingerprint(p: &Parsed<'_>) -> (String, String) {
    (
        serde_json::to_string(&p.ruleset).expect("serializable"),
        format!("{:?}", p.diagnostics),
    )
}

pub fn line_starts(text: &str) -> Vec<usize> {
    text.match_indices('\n').map(|(i, _)| i + 1).collect()
}

/// Line starts of lines that open a chain, set or map one tab in (where `parse` would cut).
pub fn member_lines(text: &str) -> Vec<usize> {
    line_starts(text)
        .into_iter()
        .filter(|&i| {
            let rest = &text[i..];
            ["\tchain ", "\tset ", "\tmap "]
                .iter()
                .any(|k| rest.starts_with(k))
        })
        .collect()
}

/// Every `.txt` of `corpus/nft/ok` and `corpus/nft/err`, by path.
pub fn corpus_texts() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/nft");
    let mut out = Vec::new();
    for dir in ["ok", "err"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .expect("corpus/nft")
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).expect("readable");
            out.push((p.display().to_string(), text));
        }
    }
    out
}

/// The corpus's well-formed texts (`corpus/nft/ok`) and a generated node of 12 Services.
pub fn ok_texts_and_node() -> Vec<(String, String)> {
    let mut texts: Vec<(String, String)> = corpus_texts()
        .into_iter()
        .filter(|(n, _)| n.contains("/ok/"))
        .collect();
    texts.push(("generated".into(), node(12)));
    texts
}

/// Every corpus text, a generated node of 12 Services, and two listings one after the other
/// (cuts in the second table, after a closed one).
pub fn texts_node_and_two_listings() -> Vec<(String, String)> {
    let mut texts = corpus_texts();
    texts.push(("generated".into(), node(12)));
    let ok: Vec<&(String, String)> = texts.iter().filter(|(n, _)| n.contains("/ok/")).collect();
    let both = format!("{}{}", ok[0].1, ok[1].1);
    texts.push(("two listings".into(), both));
    texts
}

/// A generated nftables-mode node of `services` Services, as `nft list ruleset` prints it.
pub fn node(services: usize) -> String {
    let shape = Shape {
        services,
        ..Shape::default()
    };
    generate_nft(&shape, NftForm::List)
}

/// The shared corpus (`RULELINT_NFT_CORPUS`, else `../shared/corpus/nft` beside the checkout).
pub fn shared_dir() -> PathBuf {
    std::env::var_os("RULELINT_NFT_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/nft"),
        PathBuf::from,
    )
}

/// Lines that change what comes after them: an unclosed chain, set, element list, anonymous
/// set or object, a stray `}`, an unterminated string, a table line, prose, a quoted brace,
/// a set cut off before the next chain.
pub const BROKEN: &[&str] = &[
    "\tchain cut {\n\t\tip daddr 10.0.0.1 jump x\n",
    "\tmap cut {\n\t\ttype ipv4_addr : verdict\n\t\telements = { 10.0.0.1 : goto a,\n",
    "\t\tip daddr { 10.0.0.1,\n",
    "\t\tip daddr {\n",
    "\tcounter c {\n\t\tpackets 0 bytes 0\n",
    "}\n",
    "\t\tcomment \"no end\n",
    "table ip other {\n",
    "table bogus other {\n",
    "$ nft list ruleset\n",
    "\tflags dormant\n",
    "\tcomment \"later\"\n",
    "\tchain base {\n\t\ttype filter hook input priority bogus; policy accept;\n\t}\n",
    "\tchain \"quoted {\" {\n",
    "\tset s { # handle 7\n\t\ttype ipv4_addr\n\t\telements = { 10.0.0.1,\n\tchain next {\n",
];
