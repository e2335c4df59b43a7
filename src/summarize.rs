//! `rulelint summarize`: a node's dump reduced to what `rulelint diff` compares, as a small
//! versioned file made where the dump is taken: format version 2 (gzip members of text
//! chunks, always compressed), or 1 (one JSON document, gzip-compressed with `-o FILE.gz`).

use crate::EXIT_INPUT;
use crate::diff::facts_of_dump;
use flate2::Compression;
use flate2::write::GzEncoder;
use rulelint_lint::diff::FactOptions;
use rulelint_lint::summary;
use std::io::{self, IsTerminal, Write};

/// Runs `rulelint summarize DUMP [-o FILE] [--node NAME]`.
pub fn run(
    dump: &str,
    output: Option<&str>,
    node: Option<&str>,
    format_version: u32,
    out: &mut impl Write,
) -> io::Result<u8> {
    let input = match crate::input::read(dump) {
        Ok(i) => i,
        Err(message) => {
            eprintln!("rulelint: {message}");
            return Ok(EXIT_INPUT);
        }
    };
    if summary::is_summary(&input.text) {
        eprintln!("rulelint: `{}` is a summary already", input.name);
        return Ok(EXIT_INPUT);
    }
    let name = node.map_or_else(|| crate::diff::name_from_path(&input.name), str::to_string);
    // Everything any comparison may read: chain digests (groups) and the Service catalogue
    // (comparisons with nftables nodes).
    let options = FactOptions {
        digests: true,
        catalog: true,
    };
    let Some((facts, _)) = facts_of_dump(&input.text, name, options) else {
        eprintln!("rulelint: `{}` holds {}", input.name, crate::NO_RULESET,);
        return Ok(EXIT_INPUT);
    };
    drop(input);
    if format_version == summary::v2::VERSION {
        let bytes = summary::v2::write(&facts);
        match output {
            // As gzip does: compressed bytes would only garble a terminal.
            None | Some("-") if std::io::stdout().is_terminal() => {
                eprintln!(
                    "rulelint: a summary is compressed: give `-o NODE.sum.gz`, or redirect the output (`> NODE.sum.gz`)"
                );
                return Ok(EXIT_INPUT);
            }
            None | Some("-") => out.write_all(&bytes)?,
            Some(path) => {
                if let Err(e) = std::fs::write(path, &bytes) {
                    eprintln!("rulelint: cannot write `{path}`: {e}");
                    return Ok(EXIT_INPUT);
                }
            }
        }
        return Ok(0);
    }
    let json = summary::to_json(&facts);
    match output {
        None | Some("-") => out.write_all(json.as_bytes())?,
        Some(path) => {
            let written = std::fs::File::create(path).and_then(|file| {
                let mut file = io::BufWriter::new(file);
                if path.ends_with(".gz") {
                    let mut gz = GzEncoder::new(file, Compression::default());
                    gz.write_all(json.as_bytes())?;
                    gz.finish()?.flush()
                } else {
                    file.write_all(json.as_bytes())?;
                    file.flush()
                }
            });
            if let Err(e) = written {
                eprintln!("rulelint: cannot write `{path}`: {e}");
                return Ok(EXIT_INPUT);
            }
        }
    }
    Ok(0)
}
