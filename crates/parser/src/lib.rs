//! # rulelint-parser
//!
//! Reads `iptables-save` / `ip6tables-save` dumps (and the iptables-restore input that
//! kube-proxy writes) into a compact [`Ruleset`] where every table, chain, rule, match, option
//! and target carries a byte [`Span`] into the original text; prints rulesets back as canonical
//! text; and builds the [`ChainGraph`] of jumps that analysis runs on.
//!
//! Parsing never fails as a whole: [`parse`] returns the ruleset *and* its diagnostics. A bad
//! line becomes a diagnostic (`RL1xx`, see [`codes`]) and parsing resumes at the next line.
//!
//! ```
//! use rulelint_parser::{parse, ChainGraph, TableKind};
//!
//! let text = "\
//! *nat
//! :PREROUTING ACCEPT [0:0]
//! :KUBE-SERVICES - [0:0]
//! :KUBE-SVC-ERIFXISQEP7F7OF4 - [0:0]
//! -A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES
//! -A KUBE-SERVICES -d 10.96.0.10/32 -p tcp -m comment --comment \"kube-system/kube-dns:dns-tcp cluster IP\" -m tcp --dport 53 -j KUBE-SVC-ERIFXISQEP7F7OF4
//! COMMIT
//! ";
//! let parsed = parse(text);
//! assert!(parsed.diagnostics.is_empty());
//! let set = &parsed.ruleset;
//!
//! // Walk tables, chains and rules.
//! let nat = set.table_by_kind(TableKind::Nat).unwrap();
//! let services = nat.chain("KUBE-SERVICES").unwrap();
//! let rule = services.rules().next().unwrap();
//! assert_eq!(rule.destination().unwrap().value.to_string(), "10.96.0.10/32");
//! assert_eq!(rule.comment().unwrap(), "kube-system/kube-dns:dns-tcp cluster IP");
//! assert_eq!(rule.target().unwrap().name(), "KUBE-SVC-ERIFXISQEP7F7OF4");
//!
//! // Query the chain graph.
//! let graph = ChainGraph::build(set);
//! let prerouting = nat.chain("PREROUTING").unwrap().id;
//! let reached: Vec<&str> = graph.reachable_from(set, prerouting).map(|c| set.chain(c).name()).collect();
//! assert!(reached.contains(&"KUBE-SVC-ERIFXISQEP7F7OF4"));
//! ```

#![warn(missing_docs)]

mod byte_masks;
pub mod cap;
mod chain_index;
pub mod codes;
mod diagnostic;
mod fragment;
mod graph;
pub mod huge_pages;
pub mod json;
mod lexer;
mod model;
mod parse;
pub mod prefetch;
mod prefix;
mod print;
mod rule_tokens;
mod span;
pub mod views;

pub use diagnostic::{CodeInfo, Diagnostic, SNIPPET_REACH, Severity, escape_control};
pub use graph::{ChainGraph, Jump};
pub use model::{
    Chain, ChainId, ChainRef, Command, CommandVerb, Comment, CommentKind, Family, Generator,
    MatchIter, MatchRef, OptionIter, OptionRef, Rule, RuleId, RuleOp, RuleRef, Ruleset, Table,
    TableId, TableKind, TableRef, TargetClass, TargetRef, Token, TokenKind, Tokens,
};
pub use parse::{Parsed, parse};
pub use print::print;
pub use span::{LineCol, LineIndex, Span};
