//! Folders given on the command line, expanded into the files they hold.

use std::path::Path;

/// An input path, and whether it was found in a folder (rather than named): a file found in a
/// folder that holds no dump (a README, notes) is skipped with a note, a named one is an error.
/// A subfolder is one node whose outputs are files of their own (`DIR/node-7/iptables.txt`,
/// `ipset.txt`, `ipvs.txt`), read as one text ([`crate::input::read`]).
pub struct Entry {
    pub path: String,
    pub from_folder: bool,
}

/// The files of a node's folder, sorted by name (hidden files and subfolders skipped).
pub fn node_files(path: &str) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
    let mut inside: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path().to_string_lossy().into_owned())
        .collect();
    inside.sort();
    if inside.is_empty() {
        return Err(format!("folder `{path}` holds no files"));
    }
    Ok(inside)
}

/// Expands folders into the files they hold (sorted by name; hidden files skipped); each
/// subfolder is one node's files, an entry of its own. `-` stays standard input.
pub fn expand(paths: &[String]) -> Result<Vec<Entry>, String> {
    let mut files = Vec::new();
    for path in paths {
        let p = Path::new(path);
        if path != "-" && p.is_dir() {
            let entries = std::fs::read_dir(p).map_err(|e| format!("cannot read `{path}`: {e}"))?;
            let mut inside: Vec<String> = entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_dir()))
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path().to_string_lossy().into_owned())
                .collect();
            inside.sort();
            if inside.is_empty() {
                return Err(format!("folder `{path}` holds no files"));
            }
            files.extend(inside.into_iter().map(|path| Entry {
                path,
                from_folder: true,
            }));
        } else {
            files.push(Entry {
                path: path.clone(),
                from_folder: false,
            });
        }
    }
    Ok(files)
}
