//! The parse with rule lines read ahead on a second thread (`parse`, from 1 MiB) equals the
//! parse on one thread, wherever the second thread starts: at every line of the corpus dumps,
//! in the middle of lines, and on arbitrary text.

mod common;

use proptest::prelude::*;
use rulelint_parser::{Parsed, parse, parse_on_one_thread, parse_with_prelex_at};
use std::path::Path;

fn same(a: &Parsed<'_>, b: &Parsed<'_>) -> bool {
    format!("{:?}", a.ruleset) == format!("{:?}", b.ruleset)
        && format!("{:?}", a.diagnostics) == format!("{:?}", b.diagnostics)
}

/// Every cut at a line start and a few inside lines.
fn assert_every_cut(text: &str, name: &str) {
    let one = parse_on_one_thread(text);
    let mut cuts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    cuts.extend((0..text.len()).step_by(29));
    for cut in cuts {
        let two = parse_with_prelex_at(text, cut);
        assert!(same(&one, &two), "{name}: cut at {cut}");
    }
}

fn dumps_under(dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            dumps_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "txt")
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            out.push((path.display().to_string(), text));
        }
    }
}

#[test]
fn corpus_dumps_parse_the_same_at_every_cut() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let mut dumps = Vec::new();
    for dir in ["syntax", "lints", "kube"] {
        dumps_under(&root.join(dir), &mut dumps);
    }
    assert!(dumps.len() > 100, "{}", dumps.len());
    for (name, text) in &dumps {
        assert_every_cut(text, name);
    }
}

#[test]
fn lines_the_second_thread_reads_differently_from_the_parser() {
    // Restore verbs, counters, wrapped rules, missing chains, quotes left open, both families
    // (the first address decides), CRLF, rules outside a table and a prefixed paste.
    for text in [
        "*filter\n:INPUT ACCEPT [0:0]\n:X - [0:0]\n-A X -s fd00::1/128 -j ACCEPT\n-A X -s 10.0.0.1/32 -j DROP\n-A\n-A X\n-A X -j\n-I X 1 -j X\n[1:2] -A X -j X\n-A X -p tcp \\\n  --dport 80 -j ACCEPT\n-A X -m comment --comment \"open\n--append X -d 10.1.0.0/16 ! -p udp -j RETURN\n-A Y -j X -j DROP\nCOMMIT\n",
        "-A X -s 10.0.0.1/32 -j DROP\r\n-A X -s fd00::1/128 -j DROP\r\n-A  X  -j  ACCEPT \r\n*nat\r\n-A KUBE-SEP-X -p tcp -m tcp -j DNAT --to-destination 10.0.0.1:80\r\nCOMMIT\r\n",
        "node-a | -A X -j Y\nnode-a | -A X -s 10.0.0.1/32 -j Y\nnode-a | *filter\nnode-a | -A INPUT -j DROP\nnode-a | COMMIT\n",
        "*filter\n-A INPUT -s 1.2.3.4 -m [unsupported revision] -j ACCEPT\n-A INPUT ! ! -s 1.2.3.4 -j DROP\nCOMMIT\n",
    ] {
        assert_every_cut(text, text);
    }
}

#[test]
fn a_large_generated_node_parses_the_same_on_two_threads() {
    let text = rulelint_dumpgen::generate(&rulelint_dumpgen::Shape::with_rule_target(30_000));
    assert!(text.len() >= 1 << 20, "{}", text.len());
    let one = parse_on_one_thread(&text);
    assert!(same(&one, &parse(&text)));
    for cut in (0..text.len()).step_by(text.len() / 40 + 1) {
        assert!(
            same(&one, &parse_with_prelex_at(&text, cut)),
            "cut at {cut}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_parses_the_same_at_any_cut(lines in common::odd_dump_lines(), crlf in any::<bool>(), at in any::<prop::sample::Index>()) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        let cut = at.index(text.len() + 1);
        let one = parse_on_one_thread(&text);
        let two = parse_with_prelex_at(&text, cut);
        prop_assert!(same(&one, &two), "cut at {cut}");
    }
}
