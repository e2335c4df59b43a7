//! Which of the three forms a text is, and the reader for it.

use crate::json::{Strings, parse_json};
use crate::parse::{Parsed, parse};
use crate::transaction::parse_transaction;
use serde::Serialize;

/// The form of an nftables ruleset text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Form {
    /// `nft list ruleset` (or `-a`, or a part of it): `table ip kube-proxy { ... }`.
    Listing,
    /// `nft -j list ruleset`: `{"nftables": [...]}`.
    Json,
    /// The `add table/chain/rule/element ...` commands of `nft -f` input.
    Transaction,
}

/// How many leading lines [`detect_form`] looks at before it settles on a listing.
const LOOKAHEAD_LINES: usize = 64;

/// The form of `text`, from its first meaningful line: one that starts with `{` or `[` is JSON,
/// one that starts with a command (`add`, `flush`, `delete`, ...) is a transaction, and one that
/// starts with `table`, `chain`, `set` or `map` is a listing. Blank lines, `#` comments and other
/// lines (a shell prompt, prose) are skipped; a text with none of these is read as a listing,
/// whose reader reports stray text.
///
/// ```
/// use rulelint_nft::{Form, detect_form};
/// assert_eq!(detect_form("table ip t {\n}\n"), Form::Listing);
/// assert_eq!(detect_form("$ nft -j list ruleset\n{\"nftables\": []}"), Form::Json);
/// assert_eq!(detect_form("# sync\nadd table ip kube-proxy\n"), Form::Transaction);
/// assert_eq!(detect_form("flush ruleset\ntable inet filter {\n}\n"), Form::Listing);
/// assert_eq!(detect_form("flush ruleset\nadd table inet filter\n"), Form::Transaction);
/// ```
pub fn detect_form(text: &str) -> Form {
    for line in text.lines().take(LOOKAHEAD_LINES) {
        let line = line.trim_start();
        // `nft -f` files of table blocks start so (`/etc/nftables.conf`): decided by what follows.
        if line.trim_end() == "flush ruleset" {
            continue;
        }
        if line.starts_with('{') || line.starts_with('[') {
            return Form::Json;
        }
        match line.split_ascii_whitespace().next() {
            Some("add" | "create" | "insert" | "replace" | "flush" | "delete" | "destroy") => {
                return Form::Transaction;
            }
            Some("table" | "chain" | "set" | "map") => return Form::Listing,
            _ => {}
        }
    }
    Form::Listing
}

/// Reads `text` with the reader of its [`detect_form`]: [`parse`], [`parse_json`] or
/// [`parse_transaction`], into the same [`crate::Ruleset`]. `strings` holds the text the JSON
/// reader builds (keep it as long as the result).
///
/// ```
/// use rulelint_nft::{Form, Strings, canon, parse_any};
/// let strings = Strings::new();
/// let (form, tx) = parse_any("add table ip t\nadd chain ip t c\nadd rule ip t c ip daddr 10.0.0.0/8 drop\n", &strings);
/// assert_eq!(form, Form::Transaction);
/// let json = r#"{"nftables": [{"table": {"family": "ip", "name": "t", "handle": 1}},
///   {"chain": {"family": "ip", "table": "t", "name": "c", "handle": 1}},
///   {"rule": {"family": "ip", "table": "t", "chain": "c", "handle": 2, "expr": [
///     {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}},
///                "right": {"prefix": {"addr": "10.0.0.0", "len": 8}}}}, {"drop": null}]}}]}"#;
/// let (form, js) = parse_any(json, &strings);
/// assert_eq!(form, Form::Json);
/// assert!(tx.diagnostics.is_empty() && js.diagnostics.is_empty());
/// assert_eq!(canon::content(&tx.ruleset), canon::content(&js.ruleset));
/// ```
pub fn parse_any<'a>(text: &'a str, strings: &'a Strings) -> (Form, Parsed<'a>) {
    let form = detect_form(text);
    let parsed = match form {
        Form::Listing => parse(text),
        Form::Json => parse_json(text, strings),
        Form::Transaction => parse_transaction(text),
    };
    (form, parsed)
}
