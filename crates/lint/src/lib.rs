//! # rulelint-lint
//!
//! The lint engine of rulelint: a registry of lints ([`LINTS`], one file per lint under
//! `src/lints/`), each a function over a read-only [`LintContext`] (the parsed [`Ruleset`] and
//! its [`ChainGraph`]). Parser diagnostics and lint findings flow through one pipeline:
//! [`check`] applies the [`Config`] (selection, severities, allowed chains) and returns
//! [`Diagnostic`]s sorted by position, as data. [`report`] and [`sarif`] turn them into the
//! output formats; the CLI and the WASM crate are thin shells over this crate.
//!
//! ```
//! use rulelint_lint::{Config, FailOn, Severity, check};
//!
//! let dump = "\
//! *filter
//! :INPUT ACCEPT [0:0]
//! :KUBE-FIREWALL - [0:0]
//! -A INPUT -j KUBE-FIREWALL
//! -A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -j DROP
//! COMMIT
//! ";
//! let parsed = rulelint_parser::parse(dump);
//! let findings = check(&parsed, &Config::default());
//! assert_eq!(findings.len(), 1);
//! let bare = &findings[0];
//! assert_eq!((bare.code, bare.name, bare.severity), ("RL401", "bare-drop", Severity::Error));
//! assert_eq!(bare.message, "DROP in KUBE-FIREWALL matches every packet");
//! assert!(FailOn::Error.is_reached_by(bare.severity));
//!
//! // Configuration: the same dump with the lint at warning level.
//! let config = Config::from_toml("[lints]\nbare-drop = \"warning\"\n").unwrap();
//! assert_eq!(check(&parsed, &config)[0].severity, Severity::Warning);
//! ```

#![warn(missing_docs)]

pub mod baseline;
mod check;
mod config;
mod context;
pub mod diff;
pub mod ipvs;
pub mod known;
pub mod kube;
pub mod lints;
pub mod matchset;
pub mod nft;
mod registry;
pub mod report;
pub mod sarif;
pub mod source;
pub mod summary;
pub mod suppression;
pub mod trace;

pub use check::{check, check_text, check_with_graph, check_with_graph_on, sort};
pub use config::{Config, ConfigError, FailOn, Level, LintSettings};
pub use context::{ChainWalk, Findings, LintContext, TargetFacts, written_in_order};
pub use registry::{Category, CodeEntry, LINTS, Lint, NFT_LINTS, all_codes, docs_page, find_code};
pub use rulelint_parser::{ChainGraph, Diagnostic, Ruleset, Severity};
