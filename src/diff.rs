//! `rulelint diff`: compares two node dumps, or many (files or folders), and reports drift.
//! A dump is iptables-save, `nft list ruleset` text, or both.

use crate::{EXIT_INPUT, Loaded, load_all, no_content, write_json};
use rulelint_lint::diff::{Node, NodeInput, compare, prepare, report};
use std::io::{self, Write};
use std::path::Path;

/// Exit status when the nodes drift.
const EXIT_DRIFT: u8 = 1;

/// Output formats.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// Grouped text, coloured on a terminal.
    Human,
    /// The stable JSON document (format version 1, documented in the README).
    Json,
}

/// A node's name from its file: the file name without `.gz`, `.txt`, `.save`, `.rules`, `.iptables`.
fn name_from_path(path: &str) -> String {
    let mut name = Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
    for ext in [".gz", ".txt", ".save", ".rules", ".iptables", ".dump"] {
        if let Some(stem) = name.strip_suffix(ext)
            && !stem.is_empty()
        {
            name = stem.to_string();
        }
    }
    name
}

/// Names nodes from their files, falling back to the whole path when two files share a name.
pub(crate) fn node_names(loaded: &[&Loaded]) -> Vec<String> {
    let short: Vec<String> = loaded.iter().map(|l| name_from_path(&l.name)).collect();
    short
        .iter()
        .zip(loaded)
        .map(|(s, l)| {
            if short.iter().filter(|o| *o == s).count() > 1 {
                l.name.clone()
            } else {
                s.clone()
            }
        })
        .collect()
}

/// Runs `rulelint diff`.
pub fn run(paths: &[String], format: Format, color: bool, out: &mut impl Write) -> io::Result<u8> {
    let entries = match crate::folders::expand(paths) {
        Ok(f) => f,
        Err(message) => {
            eprintln!("rulelint: {message}");
            return Ok(EXIT_INPUT);
        }
    };
    let files: Vec<String> = entries.iter().map(|e| e.path.clone()).collect();
    let loaded = match load_all(&files) {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    // Each file is iptables-save, `nft list ruleset` or both (one node with both backends).
    // Each file's store of the strings its nft JSON escapes: the inputs borrow them.
    let strings: Vec<rulelint_nft::Strings> = loaded
        .iter()
        .map(|_| rulelint_nft::Strings::new())
        .collect();
    let inputs: Vec<NodeInput<'_>> = loaded
        .iter()
        .zip(&strings)
        .map(|(l, strings)| NodeInput::read_with(&l.text, strings))
        .collect();
    // A file found in a folder that holds no dump (a README, notes) is skipped; a file named
    // on the command line must be a dump.
    let mut kept = Vec::with_capacity(loaded.len());
    let mut empty = false;
    for (i, (entry, input)) in entries.iter().zip(&inputs).enumerate() {
        if !input.has_no_content() {
            kept.push(i);
        } else if entry.from_folder {
            eprintln!(
                "rulelint: skipping `{}`: no iptables-save content",
                entry.path
            );
        } else {
            empty |= no_content(&loaded[i].name, &input.iptables);
        }
    }
    if empty {
        return Ok(EXIT_INPUT);
    }
    if kept.len() < 2 {
        eprintln!(
            "rulelint: diff needs at least two dumps (files, or a folder holding them); got {}",
            kept.len()
        );
        return Ok(EXIT_INPUT);
    }
    let loaded: Vec<&Loaded> = kept.iter().map(|&i| &loaded[i]).collect();
    let inputs: Vec<&NodeInput<'_>> = kept.iter().map(|&i| &inputs[i]).collect();
    let nodes: Vec<Node<'_>> = prepare(node_names(&loaded).into_iter().zip(inputs));
    let comparison = compare(&nodes);
    let paths: Vec<&str> = loaded.iter().map(|l| l.name.as_str()).collect();
    let doc = report::document(&comparison, &paths);
    match format {
        Format::Json => write_json(out, &doc)?,
        Format::Human => out.write_all(report::human(&doc, color).as_bytes())?,
    }
    Ok(if doc.agree { 0 } else { EXIT_DRIFT })
}

#[cfg(test)]
mod tests {
    use super::name_from_path;

    #[test]
    fn node_names_from_files() {
        assert_eq!(name_from_path("dumps/node-17.txt"), "node-17");
        assert_eq!(name_from_path("node-17.txt.gz"), "node-17");
        assert_eq!(name_from_path("worker-a"), "worker-a");
        assert_eq!(name_from_path(".txt"), ".txt");
    }
}
