//! SARIF 2.1.0 output, as GitHub code scanning reads it: one run, the catalogue of every code as
//! `rules` (with help text), one result per finding with its physical location.

use crate::registry::{CodeEntry, all_codes};
use crate::report::{CheckedFile, TOOL};
use rulelint_parser::{LineIndex, Severity};
use serde_json::{Value, json};

/// Where the SARIF 2.1.0 schema lives; written as the log's `$schema`.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn rule(entry: &CodeEntry) -> Value {
    json!({
        "id": entry.info.code,
        "name": entry.info.name,
        "shortDescription": { "text": entry.info.summary },
        "fullDescription": { "text": entry.info.summary },
        "help": {
            "text": entry.info.docs,
            "markdown": entry.info.docs,
        },
        "defaultConfiguration": { "level": level(entry.info.severity) },
        "properties": {
            "category": entry.category.as_str(),
            "tags": [entry.category.as_str()],
        },
    })
}

/// A SARIF log of the files' findings. Paths are written as given (relative paths stay
/// relative, which is what code scanning resolves against the checkout); standard input becomes `stdin`.
pub fn sarif_log(files: &[CheckedFile<'_, '_>]) -> Value {
    let entries: Vec<CodeEntry> = all_codes().collect();
    let rules: Vec<Value> = entries.iter().map(rule).collect();
    let mut results = Vec::new();
    for file in files {
        let source = file.ruleset.source();
        let index = LineIndex::new(source);
        let uri = if matches!(file.path, "-" | "<stdin>") {
            "stdin"
        } else {
            file.path
        };
        for d in file.diagnostics {
            let start = index.line_col(source, d.span.start);
            let end = index.line_col(source, d.span.end);
            let mut message = d.message.clone();
            if let Some(help) = &d.help {
                message.push_str("\nhelp: ");
                message.push_str(help);
            }
            let mut result = json!({
                "ruleId": d.code,
                "level": level(d.severity),
                "message": { "text": message },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": uri },
                        "region": {
                            "startLine": start.line,
                            "startColumn": start.column,
                            "endLine": end.line,
                            "endColumn": end.column,
                        },
                    },
                }],
            });
            if let Some(i) = entries.iter().position(|e| e.info.code == d.code) {
                result["ruleIndex"] = json!(i);
            }
            results.push(result);
        }
    }
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": TOOL.name,
                    "version": TOOL.version,
                    "rules": rules,
                },
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    })
}
