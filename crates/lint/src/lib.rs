//! The lint engine of rulelint: one file per lint over a read-only view of the parsed ruleset
//! and its chain graph. Being built (issue 3); the parser's diagnostics are already available
//! through `rulelint_parser::parse`.
