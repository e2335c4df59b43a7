//! The windowed parse (`parse.rs`: a large part is lexed and parsed a window at a time) gives
//! exactly the parse of the whole text: same ruleset (every index and span), same diagnostics
//! in the same order, whatever the window, on the corpus, on generated nodes, on cut-short and
//! broken texts, and inside either part of the two-thread parse.

mod common;

use common::{
    BROKEN, fingerprint, line_starts, node, ok_texts_and_node, shared_dir,
    texts_node_and_two_listings,
};
use rulelint_nft::{parse, parse_in_windows, parse_split_at, parse_split_at_in_windows};

/// Windows from one byte (every member line is a cut) to a few hundred.
const WINDOWS: [usize; 4] = [1, 37, 200, 900];

/// Parses `text` in each of [`WINDOWS`]; asserts every accepted one gives the whole parse.
/// Returns how many were accepted.
fn compare(name: &str, text: &str) -> usize {
    let whole = parse_in_windows(text, 0).expect("the whole text is never declined");
    let whole = fingerprint(&whole);
    let mut accepted = 0;
    for window in WINDOWS {
        if let Some(windowed) = parse_in_windows(text, window) {
            accepted += 1;
            let windowed = fingerprint(&windowed);
            assert_eq!(windowed.1, whole.1, "{name}: diagnostics, window {window}");
            assert_eq!(windowed.0, whole.0, "{name}: ruleset, window {window}");
        }
    }
    accepted
}

#[test]
fn the_corpus_and_a_generated_node_parse_as_whole_in_any_window() {
    let texts = texts_node_and_two_listings();
    let accepted: usize = texts.iter().map(|(name, text)| compare(name, text)).sum();
    assert!(accepted > 30, "only {accepted} windowed parses accepted");
}

#[test]
fn cut_short_texts_parse_as_whole_in_any_window() {
    let texts = ok_texts_and_node();
    let mut accepted = 0;
    for (name, text) in &texts {
        for end in (1..text.len()).step_by(29) {
            let Some(cut) = text.get(..end) else { continue };
            accepted += compare(&format!("{name} cut at {end}"), cut);
        }
    }
    assert!(accepted > 100, "only {accepted} windowed parses accepted");
}

#[test]
fn broken_texts_parse_as_whole_in_any_window() {
    let texts = ok_texts_and_node();
    let mut accepted = 0;
    for (name, text) in &texts {
        for (k, at) in line_starts(text).into_iter().enumerate() {
            if k % 3 != 0 {
                continue;
            }
            let broken = BROKEN[k % BROKEN.len()];
            let t = format!("{}{broken}{}", &text[..at], &text[at..]);
            accepted += compare(&format!("{name} with {broken:?} at {at}"), &t);
        }
    }
    assert!(accepted > 100, "only {accepted} windowed parses accepted");
}

/// A node of more than 1 MiB is read in windows by `parse` (on each thread), and gives the
/// whole read; so does each part of the two-thread parse read in small windows.
#[test]
fn a_large_node_parses_as_whole_in_windows_and_on_two_threads() {
    let text = node(1000);
    assert!(text.len() > 1 << 20, "{} bytes", text.len());
    let whole = fingerprint(&parse_in_windows(&text, 0).expect("whole"));
    let windowed = parse_in_windows(&text, 256 << 10).expect("kube-proxy's listing is cut");
    assert_eq!(fingerprint(&windowed), whole);
    assert_eq!(fingerprint(&parse(&text)), whole);
    let mid = line_starts(&text)
        .into_iter()
        .find(|&i| i > text.len() / 2 && text[i..].starts_with("\tchain "))
        .expect("a chain after the middle");
    assert_eq!(
        fingerprint(&parse_split_at(&text, mid).expect("cut")),
        whole
    );
    for window in [1, 5000] {
        let two = parse_split_at_in_windows(&text, mid, window).expect("cut");
        assert_eq!(fingerprint(&two), whole, "window {window}");
    }
}

#[test]
fn cut_and_broken_texts_parse_as_whole_on_two_threads_in_windows() {
    let text = node(12);
    let mut accepted = 0;
    for (k, at) in line_starts(&text).into_iter().enumerate().step_by(5) {
        let broken = BROKEN[k % BROKEN.len()];
        let t = format!("{}{broken}{}", &text[..at], &text[at..]);
        let whole = fingerprint(&parse_in_windows(&t, 0).expect("whole"));
        for cut in line_starts(&t).into_iter().step_by(7) {
            for window in [1, 300] {
                if let Some(two) = parse_split_at_in_windows(&t, cut, window) {
                    accepted += 1;
                    assert_eq!(fingerprint(&two), whole, "{broken:?} at {at}, cut {cut}");
                }
            }
        }
    }
    assert!(accepted > 100, "only {accepted} cuts accepted");
}

#[test]
#[ignore = "needs ../shared/corpus/nft beside the checkout"]
fn the_shared_corpus_cut_anywhere_parses_as_whole_in_any_window() {
    let dir = shared_dir();
    let mut accepted = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        if path.extension().is_none_or(|x| x != "txt") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        let name = path.display().to_string();
        accepted += compare(&name, &text);
        for end in (1..text.len()).step_by(17) {
            if let Some(cut) = text.get(..end) {
                accepted += compare(&format!("{name} cut at {end}"), cut);
            }
        }
    }
    assert!(accepted > 100, "only {accepted} windowed parses accepted");
}
