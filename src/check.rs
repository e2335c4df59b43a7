//! `rulelint check` (the default command): configuration, output formats and the exit status.

use crate::input;
use rulelint_lint::report::{CheckDocument, CheckedFile, Summary, github_annotations};
use rulelint_lint::source::check_source;
use rulelint_lint::{Config, ConfigError, FailOn, sarif};
use rulelint_parser::LineIndex;
use std::io::{self, Write};
use std::path::Path;

/// The file name looked for in the working directory.
pub const CONFIG_FILE: &str = "rulelint.toml";

/// Output formats of `check`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// Rendered diagnostics with source snippets, then a summary per file.
    Human,
    /// The stable JSON document (see README).
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.
    Sarif,
    /// GitHub Actions annotation lines (`::error file=...`).
    Github,
}

/// The flags of `check`, as given.
pub struct Options {
    pub files: Vec<String>,
    pub format: Format,
    pub fail_on: Option<String>,
    pub select: Option<Vec<String>>,
    pub ignore: Option<Vec<String>>,
    pub config: Option<String>,
    pub no_config: bool,
    pub color: bool,
}

/// Exit status: nothing reached `--fail-on`.
const EXIT_CLEAN: u8 = 0;
/// Exit status: a finding reached `--fail-on`.
const EXIT_FOUND: u8 = 1;

/// Reads the config file (given, or `rulelint.toml` in the working directory) and applies the
/// flags over it.
fn configuration(options: &Options) -> Result<Config, String> {
    let path = match (&options.config, options.no_config) {
        (Some(path), _) => Some(path.clone()),
        (None, false) if Path::new(CONFIG_FILE).is_file() => Some(CONFIG_FILE.to_string()),
        _ => None,
    };
    let mut config = match &path {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read config `{path}`: {e}"))?;
            Config::from_toml(&text).map_err(|e| format!("{path}: {e}"))?
        }
        None => Config::default(),
    };
    let flag = |e: ConfigError| e.to_string();
    if let Some(fail_on) = &options.fail_on {
        config.fail_on = FailOn::parse(fail_on).map_err(flag)?;
    }
    if let Some(select) = &options.select {
        config.set_select(select.clone()).map_err(flag)?;
    }
    if let Some(ignore) = &options.ignore {
        config.set_ignore(ignore.clone()).map_err(flag)?;
    }
    Ok(config)
}

/// Runs `check` and returns the exit status.
pub fn run(options: Options, out: &mut impl Write) -> io::Result<u8> {
    let config = match configuration(&options) {
        Ok(c) => c,
        Err(message) => {
            eprintln!("rulelint: {message}");
            return Ok(crate::EXIT_INPUT);
        }
    };
    let mut status = EXIT_CLEAN;
    let mut inputs = Vec::with_capacity(options.files.len());
    for path in &options.files {
        match input::read(path) {
            Ok(i) => inputs.push(i),
            // An unreadable file fails the run, but the others are still checked.
            Err(message) => {
                eprintln!("rulelint: {message}");
                status = crate::EXIT_INPUT;
            }
        }
    }
    // Each file is split into its iptables-save and nftables sections, each read and linted by
    // its own parser; a pure iptables-save file takes exactly the iptables path.
    let checked: Vec<_> = inputs
        .iter()
        .map(|i| check_source(&i.text, &config))
        .collect();
    let files: Vec<CheckedFile<'_, '_>> = inputs
        .iter()
        .zip(&checked)
        .map(|(i, c)| CheckedFile {
            path: &i.name,
            ruleset: &c.iptables.ruleset,
            diagnostics: &c.diagnostics,
        })
        .collect();
    match options.format {
        Format::Human => human(&files, options.color, out)?,
        Format::Json => crate::write_json(out, &CheckDocument::new(&files))?,
        Format::Sarif => crate::write_json(out, &sarif::sarif_log(&files))?,
        Format::Github => {
            for f in &files {
                out.write_all(github_annotations(f).as_bytes())?;
            }
        }
    }
    let mut total = Summary::default();
    for f in &files {
        total.merge(Summary::of(f.diagnostics));
    }
    for (i, c) in inputs.iter().zip(&checked) {
        if c.has_no_content() {
            eprintln!(
                "rulelint: `{}` holds no iptables-save content and no nftables ruleset (no table, chain or rule)",
                i.name
            );
            status = crate::EXIT_INPUT;
        }
    }
    // The threshold is monotonic, so the highest severity found decides.
    let reached = total
        .highest()
        .is_some_and(|s| config.fail_on.is_reached_by(s));
    if status == EXIT_CLEAN && reached {
        status = EXIT_FOUND;
    }
    Ok(status)
}

/// Rendered findings, then one summary line per file and a total over several files.
fn human(files: &[CheckedFile<'_, '_>], color: bool, out: &mut impl Write) -> io::Result<()> {
    let mut total = Summary::default();
    for f in files {
        if f.diagnostics.is_empty() {
            continue;
        }
        // One line index per file: each finding's snippet is then found in O(log n).
        let source = f.ruleset.source();
        let lines = LineIndex::new(source);
        for d in f.diagnostics {
            out.write_all(d.render_indexed(f.path, source, &lines, color).as_bytes())?;
            writeln!(out)?;
        }
    }
    for f in files {
        let s = Summary::of(f.diagnostics);
        total.merge(s);
        if f.diagnostics.is_empty() {
            writeln!(out, "{}: no findings", f.path)?;
        } else {
            writeln!(out, "{}: {}", f.path, s.to_text())?;
        }
    }
    if files.len() > 1 {
        writeln!(out, "{} files: {}", files.len(), total.to_text())?;
    }
    Ok(())
}
