//! SARIF 2.1.0 output, as GitHub code scanning reads it: one run, the catalogue of every code as
//! `rules` (with help text and a link to its docs page), one result per finding with its
//! physical location, and each unreadable input as a tool execution notification.

use crate::registry::{CodeEntry, all_codes};
use crate::report::{CheckedFile, LocatedFile, TOOL, Unreadable};
use rulelint_parser::Severity;
use serde_json::{Value, json};
use std::path::{Component, Path, PathBuf};

/// Where the SARIF 2.1.0 schema lives; written as the log's `$schema`.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The project's home, written as the tool's `informationUri`. The repository's public URL is
/// not settled yet: this constant and [`DOCS_BASE_URI`] are the only places that name it.
pub const INFORMATION_URI: &str = "https://github.com/rulelint/rulelint";

/// Where the generated docs pages (`docs/lints/CODE-name.md`) are served; each rule's `helpUri`
/// is this followed by the page's file name.
pub const DOCS_BASE_URI: &str = "https://github.com/rulelint/rulelint/blob/main/docs/lints/";

/// The `uriBaseId` of artifacts under [`SarifOptions::root`] (GitHub code scanning's convention).
pub const SRCROOT: &str = "%SRCROOT%";

/// Where the paths of a log are resolved. The default writes paths as given.
#[derive(Clone, Debug, Default)]
pub struct SarifOptions {
    /// The absolute directory that relative paths were given from (the working directory).
    pub cwd: Option<PathBuf>,
    /// The absolute directory `%SRCROOT%` stands for (the repository root, or the working
    /// directory); files under it get URIs relative to it.
    pub root: Option<PathBuf>,
}

/// The docs page of a code, as linked from SARIF: [`DOCS_BASE_URI`] + `CODE-name.md`.
pub fn help_uri(entry: &CodeEntry) -> String {
    format!("{DOCS_BASE_URI}{}-{}.md", entry.info.code, entry.info.name)
}

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
        "helpUri": help_uri(entry),
        "defaultConfiguration": { "level": level(entry.info.severity) },
        "properties": {
            "category": entry.category.as_str(),
            "tags": [entry.category.as_str()],
        },
    })
}

/// Removes `.` and resolves `..` in a path without reading the file system (symbolic links are
/// taken as written).
fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Percent-encodes what a URI path cannot hold as is (RFC 3986: unreserved characters and `/`
/// stay); each path component joined with `/`.
fn uri_path(path: &Path) -> String {
    let mut parts = Vec::new();
    for part in path.components() {
        if matches!(part, Component::RootDir) {
            continue;
        }
        let mut encoded = String::new();
        for byte in part.as_os_str().to_string_lossy().bytes() {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                encoded.push(byte as char);
            } else {
                encoded.push_str(&format!("%{byte:02X}"));
            }
        }
        parts.push(encoded);
    }
    parts.join("/")
}

/// A file URI for an absolute directory, ending in `/` as `originalUriBaseIds` needs.
fn directory_uri(dir: &Path) -> String {
    let path = uri_path(dir);
    if path.is_empty() {
        "file:///".to_string()
    } else {
        format!("file:///{path}/")
    }
}

/// The `artifactLocation` of a path as given: relative to `%SRCROOT%` when under the root,
/// else a file URI when the absolute path is known, else the path as given.
fn artifact_location(path: &str, options: &SarifOptions) -> Value {
    if matches!(path, "-" | "<stdin>") {
        return json!({ "uri": "stdin" });
    }
    let given = Path::new(path);
    let absolute = if given.is_absolute() {
        Some(lexically_normal(given))
    } else {
        options
            .cwd
            .as_ref()
            .map(|cwd| lexically_normal(&cwd.join(given)))
    };
    let Some(absolute) = absolute else {
        return json!({ "uri": path });
    };
    if let Some(root) = &options.root
        && let Ok(inside) = absolute.strip_prefix(lexically_normal(root))
    {
        return json!({ "uri": uri_path(inside), "uriBaseId": SRCROOT });
    }
    json!({ "uri": format!("file:///{}", uri_path(&absolute)) })
}

/// A SARIF log of the files' findings, paths written as given (see [`sarif_log_with`]).
pub fn sarif_log(files: &[CheckedFile<'_, '_>]) -> Value {
    sarif_log_with(files, &[], &SarifOptions::default())
}

/// A SARIF log of the files' findings and of the inputs that could not be read. Paths under
/// `options.root` are relative to `%SRCROOT%`; standard input becomes `stdin`. An unreadable
/// input is a tool execution notification on that file, and makes the run unsuccessful.
pub fn sarif_log_with(
    files: &[CheckedFile<'_, '_>],
    unreadable: &[Unreadable],
    options: &SarifOptions,
) -> Value {
    let located: Vec<LocatedFile> = files.iter().map(LocatedFile::of).collect();
    sarif_log_located(&located, unreadable, options)
}

/// [`sarif_log_with`] of files already located.
pub fn sarif_log_located(
    files: &[LocatedFile],
    unreadable: &[Unreadable],
    options: &SarifOptions,
) -> Value {
    let entries: Vec<CodeEntry> = all_codes().collect();
    let rules: Vec<Value> = entries.iter().map(rule).collect();
    let mut results = Vec::new();
    for file in files {
        let location = artifact_location(&file.path, options);
        for f in &file.findings {
            let d = &f.diagnostic;
            let (start, end) = (f.start, f.end);
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
                        "artifactLocation": location,
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
    let notifications: Vec<Value> = unreadable
        .iter()
        .map(|u| {
            json!({
                "level": "error",
                "message": { "text": u.error },
                "locations": [{
                    "physicalLocation": { "artifactLocation": artifact_location(&u.path, options) },
                }],
            })
        })
        .collect();
    let mut run = json!({
        "tool": {
            "driver": {
                "name": TOOL.name,
                "version": TOOL.version,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            },
        },
        "invocations": [{
            "executionSuccessful": unreadable.is_empty(),
            "toolExecutionNotifications": notifications,
        }],
        "columnKind": "unicodeCodePoints",
        "results": results,
    });
    if let Some(root) = &options.root {
        run["originalUriBaseIds"] = json!({ SRCROOT: { "uri": directory_uri(root) } });
    }
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [run],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> SarifOptions {
        SarifOptions {
            cwd: Some(PathBuf::from("/repo/nodes")),
            root: Some(PathBuf::from("/repo")),
        }
    }

    #[test]
    fn paths_under_the_root_are_relative_to_srcroot() {
        let o = options();
        assert_eq!(
            artifact_location("a b.txt", &o),
            json!({ "uri": "nodes/a%20b.txt", "uriBaseId": SRCROOT })
        );
        assert_eq!(
            artifact_location("./x/../node.txt", &o),
            json!({ "uri": "nodes/node.txt", "uriBaseId": SRCROOT })
        );
        assert_eq!(
            artifact_location("/repo/other/n.txt", &o),
            json!({ "uri": "other/n.txt", "uriBaseId": SRCROOT })
        );
    }

    #[test]
    fn paths_outside_the_root_are_file_uris_and_stdin_stays_stdin() {
        let o = options();
        assert_eq!(
            artifact_location("../../tmp/n.txt", &o),
            json!({ "uri": "file:///tmp/n.txt" })
        );
        assert_eq!(artifact_location("-", &o), json!({ "uri": "stdin" }));
        assert_eq!(
            artifact_location("n.txt", &SarifOptions::default()),
            json!({ "uri": "n.txt" })
        );
        assert_eq!(directory_uri(Path::new("/repo")), "file:///repo/");
    }
}
