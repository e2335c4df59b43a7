//! # rulelint-nft
//!
//! Reads the text that `nft list ruleset` (and `nft -a list ruleset`, `nft list table ...`,
//! partial copies of them) prints into a [`Ruleset`] of tables, chains, sets, maps and rules,
//! where every block, rule, statement and element carries a byte [`Span`] into the original
//! text; prints rulesets back ([`print()`]); and builds the [`ChainGraph`] of jumps and gotos,
//! including those written as verdict-map elements.
//!
//! Parsing never fails as a whole: [`parse`] returns the ruleset *and* its diagnostics
//! (`RL151`..`RL169`, see [`codes`]). A statement the parser does not model is kept as
//! [`Stmt::Opaque`] tokens.
//!
//! The two other forms of a ruleset read into the same [`Ruleset`]: `nft -j list ruleset` JSON
//! ([`parse_json`], with a [`Strings`] side store for text the JSON does not hold as one string)
//! and the `add table/chain/rule/element ...` transaction kube-proxy pipes to `nft -f`
//! ([`parse_transaction`]). [`parse_any`] picks the reader from the text ([`detect_form`]);
//! [`canon::content`] compares rulesets the way `nft` would list them, whatever their form.
//!
//! ```
//! use rulelint_nft::{parse, ChainGraph, Family};
//! let text = "table ip kube-proxy {
//! \tmap service-ips {
//! \t\ttype ipv4_addr . inet_proto . inet_service : verdict
//! \t\telements = { 172.30.0.41 . tcp . 80 : goto service-A }
//! \t}
//! \tchain nat-prerouting {
//! \t\ttype nat hook prerouting priority dstnat; policy accept;
//! \t\tip daddr . meta l4proto . th dport vmap @service-ips
//! \t}
//! \tchain service-A {
//! \t\tmeta l4proto tcp dnat to 10.180.0.1:80
//! \t}
//! }
//! ";
//! let parsed = parse(text);
//! assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
//! let set = &parsed.ruleset;
//! let graph = ChainGraph::build(set);
//! let t = set.table(Family::Ip, "kube-proxy").unwrap();
//! let entry = set.chain_in(t, "nat-prerouting").unwrap();
//! let service = set.chain_in(t, "service-A").unwrap();
//! assert!(graph.reachable_from(entry).any(|c| c == service));
//! assert_eq!(graph.roots(set), vec![entry]);
//! ```

#![warn(missing_docs)]

pub mod canon;
pub mod codes;
pub mod extent;
mod form;
mod graph;
mod json;
mod lexer;
mod model;
mod parse;
mod print;
mod script;
mod split;
mod stmt;
pub mod summary;
mod transaction;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod wide;

pub use form::{Form, detect_form, parse_any};
pub use graph::{ChainGraph, Edge, EdgeKind, Node, Via};
pub use json::{Strings, parse_json, parse_json_with_extent};
pub use model::{
    BaseChain, Binop, Chain, ChainId, CtDir, Element, Expr, Family, Fib, Nat, Numgen, Object,
    Priority, Proto, Rule, RuleId, RuleList, Ruleset, STATEMENT_CHUNK, Set, SetId, SetType,
    Statement, StatementRange, Stmt, Table, TableId, Value, Verdict, VerdictKind,
    standard_priority,
};
pub use parse::{Parsed, parse, parse_knowing_tables};
pub use print::print;
pub use rulelint_parser::{CodeInfo, Diagnostic, LineIndex, Severity, Span};
pub use script::is_command_line;
pub use transaction::parse_transaction;

/// [`parse`] on the calling thread only, whatever the text's size (for tests and benchmarks).
#[doc(hidden)]
pub fn parse_on_one_thread(text: &str) -> Parsed<'_> {
    parse::parse_on_one_thread(text)
}

/// [`parse`] on two threads when the text has a cut it accepts, else on one, whatever the
/// text's size (`parse` takes two threads from 512 KiB up; for tests).
#[doc(hidden)]
pub fn parse_on_two_threads(text: &str) -> Parsed<'_> {
    split::parse_in_two(text, &[]).unwrap_or_else(|| parse::parse_on_one_thread(text))
}

/// The two-thread [`parse`] cut at byte `at` (a line start), whatever the text's size; `None`
/// when the cut is declined (for tests comparing it with [`parse_on_one_thread`]).
#[doc(hidden)]
pub fn parse_split_at(text: &str, at: usize) -> Option<Parsed<'_>> {
    split::parse_split_at(text, at)
}

/// [`parse`] on one thread, a window of about `window` bytes at a time (0: the text whole;
/// `parse` reads parts of 1 MiB or more in windows of 256 KiB); `None` when a window's cut is
/// declined (for tests comparing it with the whole read).
#[doc(hidden)]
pub fn parse_in_windows(text: &str, window: usize) -> Option<Parsed<'_>> {
    parse::parse_in_windows(text, window)
}

/// [`parse_split_at`] with each part read in windows of about `window` bytes (for tests).
#[doc(hidden)]
pub fn parse_split_at_in_windows(text: &str, at: usize, window: usize) -> Option<Parsed<'_>> {
    split::parse_split_at_in_windows(text, at, window)
}
