//! The two-thread parse (`split.rs`) gives exactly the one-thread parse: same ruleset (every
//! index and span), same diagnostics in the same order, for every cut it accepts, on the
//! corpus, on generated nodes, on cut-short and broken texts.

mod common;

use common::{
    BROKEN, fingerprint, line_starts, member_lines, ok_texts_and_node, shared_dir,
    texts_node_and_two_listings,
};
use rulelint_dumpgen::{NftForm, Shape, generate_nft};
use rulelint_nft::{parse, parse_on_one_thread, parse_on_two_threads, parse_split_at};

/// Parses `text` cut at each of `cuts`; asserts every accepted cut gives the one-thread parse.
/// Returns how many were accepted.
fn compare(name: &str, text: &str, cuts: impl IntoIterator<Item = usize>) -> usize {
    let one = fingerprint(&parse_on_one_thread(text));
    let mut accepted = 0;
    for at in cuts {
        if let Some(two) = parse_split_at(text, at) {
            accepted += 1;
            let two = fingerprint(&two);
            assert_eq!(two.1, one.1, "{name}: diagnostics, cut at byte {at}");
            assert_eq!(two.0, one.0, "{name}: ruleset, cut at byte {at}");
        }
    }
    accepted
}

#[test]
fn every_cut_of_the_corpus_and_a_generated_node_parses_as_on_one_thread() {
    let texts = texts_node_and_two_listings();
    let mut accepted = 0;
    for (name, text) in &texts {
        accepted += compare(name, text, line_starts(text));
    }
    // Cuts must be taken for the comparison to mean anything.
    assert!(accepted > 100, "only {accepted} cuts accepted");
}

#[test]
fn cut_short_texts_parse_as_on_one_thread() {
    let texts = ok_texts_and_node();
    let mut accepted = 0;
    for (name, text) in &texts {
        for end in (1..text.len()).step_by(29) {
            let Some(cut) = text.get(..end) else { continue };
            let name = format!("{name} cut at {end}");
            accepted += compare(&name, cut, member_lines(cut));
        }
    }
    assert!(accepted > 100, "only {accepted} cuts accepted");
}

#[test]
fn broken_texts_parse_as_on_one_thread() {
    let texts = ok_texts_and_node();
    let mut accepted = 0;
    for (name, text) in &texts {
        for (k, at) in line_starts(text).into_iter().enumerate() {
            let broken = BROKEN[k % BROKEN.len()];
            if k % 3 != 0 {
                continue;
            }
            let mut t = String::with_capacity(text.len() + broken.len());
            t.push_str(&text[..at]);
            t.push_str(broken);
            t.push_str(&text[at..]);
            let name = format!("{name} with {broken:?} at {at}");
            accepted += compare(&name, &t, member_lines(&t));
        }
    }
    assert!(accepted > 100, "only {accepted} cuts accepted");
}

/// A node of more than 1 MiB: the cut the two-thread parse takes is accepted and gives the
/// one-thread parse.
#[test]
fn a_large_node_is_cut_and_parses_as_on_one_thread() {
    let shape = Shape {
        services: 1000,
        ..Shape::default()
    };
    let text = generate_nft(&shape, NftForm::List);
    assert!(text.len() > 1 << 20, "{} bytes", text.len());
    let mid = member_lines(&text)
        .into_iter()
        .find(|&i| i > text.len() / 2)
        .expect("a chain after the middle");
    assert_eq!(compare("1000 Services", &text, [mid]), 1);
    let two = parse_on_two_threads(&text);
    assert_eq!(fingerprint(&two), fingerprint(&parse_on_one_thread(&text)));
    assert_eq!(fingerprint(&parse(&text)), fingerprint(&two));
}

#[test]
#[ignore = "needs ../shared/corpus/nft beside the checkout"]
fn every_cut_of_the_shared_corpus_parses_as_on_one_thread() {
    let dir = shared_dir();
    let mut accepted = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        if path.extension().is_none_or(|x| x != "txt") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        let name = path.display().to_string();
        accepted += compare(&name, &text, line_starts(&text));
        for end in (1..text.len()).step_by(17) {
            if let Some(cut) = text.get(..end) {
                accepted += compare(&format!("{name} cut at {end}"), cut, member_lines(cut));
            }
        }
    }
    assert!(accepted > 100, "only {accepted} cuts accepted");
}

/// The table lines a caller passes (`parse_knowing_tables`) are a hint only: right, wrong,
/// out of range or out of order, the parse is the one-thread parse, on a node large enough for
/// two threads, on two listings one after the other, and with a table line in the second half.
#[test]
fn table_lines_passed_in_do_not_change_the_parse() {
    let node = common::node(600);
    assert!(node.len() >= 512 << 10, "{}", node.len());
    let two = format!("{node}{node}");
    let half = node.len() / 2;
    let line = |at: usize| node[at..].find('\n').map_or(node.len(), |n| at + n + 1);
    let inner = format!(
        "{}table ip other {{\n{}",
        &node[..line(half)],
        &node[line(half)..]
    );
    for (name, text) in [
        ("node", &node),
        ("two nodes", &two),
        ("inner table", &inner),
    ] {
        let one = fingerprint(&parse_on_one_thread(text));
        let tables: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices("\ntable ").map(|(i, _)| i + 1))
            .collect();
        let hints: Vec<Vec<usize>> = vec![
            tables.clone(),
            vec![],
            vec![0],
            tables.iter().rev().copied().collect(),
            vec![
                1,
                7,
                half,
                line(half),
                text.len(),
                text.len() + 9,
                usize::MAX,
            ],
            vec![line(half), 0],
            line_starts(text).into_iter().step_by(97).collect(),
        ];
        for hint in hints {
            let parsed = rulelint_nft::parse_knowing_tables(text, &hint);
            assert_eq!(
                fingerprint(&parsed),
                one,
                "{name}: {:?}",
                &hint[..hint.len().min(8)]
            );
        }
    }
}
