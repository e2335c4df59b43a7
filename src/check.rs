//! `rulelint check` (the default command): configuration, output formats and the exit status.

use crate::{folders, input};
use rulelint_lint::baseline::Baseline;
use rulelint_lint::report::{CheckDocument, CheckedFile, Summary, Unreadable, github_annotations};
use rulelint_lint::source::check_source;
use rulelint_lint::{Config, ConfigError, FailOn, sarif};
use rulelint_parser::{Diagnostic, LineIndex, Severity};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The file name looked for in the working directory and the folders above it.
pub const CONFIG_FILE: &str = "rulelint.toml";

/// Output formats of `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Rendered diagnostics with source snippets, then a summary per file.
    Human,
    /// One line per finding: `file:line:col: severity CODE name: message`.
    Concise,
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
    /// Findings only: no summary lines.
    pub quiet: bool,
    /// Write the report here instead of standard output.
    pub output_file: Option<String>,
    /// Counts per code instead of the findings.
    pub statistics: bool,
    /// Report only findings this baseline does not hold.
    pub baseline: Option<String>,
    /// Record the findings as a baseline here instead of reporting them.
    pub write_baseline: Option<String>,
}

/// Exit status: nothing reached `--fail-on`.
const EXIT_CLEAN: u8 = 0;
/// Exit status: a finding reached `--fail-on`.
const EXIT_FOUND: u8 = 1;

/// The config file that applies: `rulelint.toml` in the working directory or the nearest folder
/// above it, up to the repository root (the first folder holding `.git`); outside a repository,
/// only the working directory's.
fn discover_config(cwd: &Path) -> Option<PathBuf> {
    let root = repository_root(cwd);
    for dir in cwd.ancestors() {
        let candidate = dir.join(CONFIG_FILE);
        if candidate.is_file() {
            return Some(candidate);
        }
        if root.as_deref().is_none_or(|root| dir == root) {
            break;
        }
    }
    None
}

/// Reads the config file (given, or discovered) and applies the flags over it.
fn configuration(options: &Options) -> Result<Config, String> {
    let path = match (&options.config, options.no_config) {
        (Some(path), _) => Some(PathBuf::from(path)),
        (None, false) => std::env::current_dir()
            .ok()
            .and_then(|cwd| discover_config(&cwd)),
        _ => None,
    };
    let mut config = match &path {
        Some(path) => {
            let shown = path.display();
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read config `{shown}`: {e}"))?;
            Config::from_toml(&text).map_err(|e| format!("{shown}: {e}"))?
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

/// Runs `check` and returns the exit status; the report goes to `--output-file` when given.
pub fn run(options: Options, out: &mut impl Write) -> io::Result<u8> {
    let config = match configuration(&options) {
        Ok(c) => c,
        Err(message) => {
            eprintln!("rulelint: {message}");
            return Ok(crate::EXIT_INPUT);
        }
    };
    if options.statistics && matches!(options.format, Format::Sarif | Format::Github) {
        eprintln!(
            "rulelint: --statistics writes text or JSON (`--format json`), not SARIF or GitHub annotations"
        );
        return Ok(crate::EXIT_INPUT);
    }
    let baseline = match &options.baseline {
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read baseline `{path}`: {e}"))
            .and_then(|text| Baseline::from_json(&text).map_err(|e| format!("{path}: {e}")))
        {
            Ok(b) => Some(b),
            Err(message) => {
                eprintln!("rulelint: {message}");
                return Ok(crate::EXIT_INPUT);
            }
        },
        None => None,
    };
    match &options.output_file {
        // The report is written once the inputs are read, so `-o` naming an input cannot
        // truncate it before it is checked.
        Some(path) => {
            let mut report = Vec::new();
            let status = check_all(&options, &config, baseline.as_ref(), &mut report)?;
            if let Err(e) = std::fs::write(path, report) {
                eprintln!("rulelint: cannot write `{path}`: {e}");
                return Ok(crate::EXIT_INPUT);
            }
            Ok(status)
        }
        None => check_all(&options, &config, baseline.as_ref(), out),
    }
}

fn check_all(
    options: &Options,
    config: &Config,
    baseline: Option<&Baseline>,
    out: &mut impl Write,
) -> io::Result<u8> {
    let entries = match folders::expand(&options.files) {
        Ok(e) => e,
        Err(message) => {
            eprintln!("rulelint: {message}");
            return Ok(crate::EXIT_INPUT);
        }
    };
    let mut status = EXIT_CLEAN;
    let mut inputs = Vec::with_capacity(entries.len());
    let mut unreadable = Vec::new();
    for entry in &entries {
        match input::read(&entry.path) {
            Ok(i) => inputs.push((i, entry.from_folder)),
            // An unreadable file fails the run, but the others are still checked; the reports
            // that are read by machines list it too.
            Err(message) => {
                eprintln!("rulelint: {message}");
                status = crate::EXIT_INPUT;
                unreadable.push(Unreadable {
                    path: entry.path.clone(),
                    error: message,
                });
            }
        }
    }
    // Each file is split into its iptables-save and nftables sections, each read and linted by
    // its own parser; a pure iptables-save file takes exactly the iptables path.
    let mut checked = Vec::with_capacity(inputs.len());
    let mut kept = Vec::with_capacity(inputs.len());
    for (input, from_folder) in &inputs {
        let c = check_source(&input.text, config);
        if c.has_no_content() {
            // A file found in a folder that holds no dump (a README, notes) is skipped.
            if *from_folder {
                eprintln!(
                    "rulelint: skipping `{}`: no iptables-save content and no nftables ruleset",
                    input.name
                );
                continue;
            }
            eprintln!(
                "rulelint: `{}` holds no iptables-save content and no nftables ruleset (no table, chain or rule)",
                input.name
            );
            status = crate::EXIT_INPUT;
        }
        kept.push(input);
        checked.push(c);
    }
    if let Some(path) = &options.write_baseline {
        let mut recorded = Baseline::new();
        for c in &checked {
            recorded.record(&c.iptables.ruleset, &c.diagnostics);
        }
        let count = recorded.findings.len();
        let written = serde_json::to_string_pretty(&recorded)
            .map_err(io::Error::other)
            .and_then(|text| std::fs::write(path, text + "\n"));
        if let Err(e) = written {
            eprintln!("rulelint: cannot write baseline `{path}`: {e}");
            return Ok(crate::EXIT_INPUT);
        }
        eprintln!("rulelint: recorded {count} known findings in `{path}`");
        return Ok(status);
    }
    // Known findings are dropped before anything is reported or counted.
    let reported: Vec<Vec<Diagnostic>> = checked
        .iter()
        .map(|c| match baseline {
            Some(b) => c
                .diagnostics
                .iter()
                .filter(|d| !b.contains(&c.iptables.ruleset, d))
                .cloned()
                .collect(),
            None => c.diagnostics.clone(),
        })
        .collect();
    let files: Vec<CheckedFile<'_, '_>> = kept
        .iter()
        .zip(&checked)
        .zip(&reported)
        .map(|((i, c), diagnostics)| CheckedFile {
            path: &i.name,
            ruleset: &c.iptables.ruleset,
            diagnostics,
        })
        .collect();
    if options.statistics {
        statistics(&files, options.format == Format::Json, out)?;
    } else {
        match options.format {
            Format::Human => human(&files, options.color, options.quiet, out)?,
            Format::Concise => concise(&files, options.quiet, out)?,
            Format::Json => crate::write_json(
                out,
                &CheckDocument::new(&files).with_unreadable(&unreadable),
            )?,
            Format::Sarif => {
                let log = sarif::sarif_log_with(&files, &unreadable, &sarif_options());
                crate::write_json(out, &log)?;
            }
            Format::Github => {
                for f in &files {
                    out.write_all(github_annotations(f).as_bytes())?;
                }
            }
        }
    }
    let mut total = Summary::default();
    for f in &files {
        total.merge(Summary::of(f.diagnostics));
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

/// Counts per code over all files, most frequent first: `  12  RL401  bare-drop  error`.
fn statistics(files: &[CheckedFile<'_, '_>], json: bool, out: &mut impl Write) -> io::Result<()> {
    #[derive(serde::Serialize)]
    struct CodeCount {
        code: &'static str,
        name: &'static str,
        severity: Severity,
        count: usize,
    }
    let mut counts: BTreeMap<(&'static str, &'static str, Severity), usize> = BTreeMap::new();
    for d in files.iter().flat_map(|f| f.diagnostics) {
        *counts.entry((d.code, d.name, d.severity)).or_default() += 1;
    }
    let mut rows: Vec<CodeCount> = counts
        .into_iter()
        .map(|((code, name, severity), count)| CodeCount {
            code,
            name,
            severity,
            count,
        })
        .collect();
    rows.sort_by(|a, b| b.count.cmp(&a.count).then(a.code.cmp(b.code)));
    if json {
        return crate::write_json(out, &rows);
    }
    let width = rows
        .iter()
        .map(|r| r.count.to_string().len())
        .max()
        .unwrap_or(1);
    for r in &rows {
        writeln!(
            out,
            "{:>width$}  {:<6} {:<27} {}",
            r.count, r.code, r.name, r.severity
        )?;
    }
    Ok(())
}

/// One line per finding, for grep and editors' problem matchers. Newlines and other control
/// characters are written out so that a finding never spans two lines.
fn concise(files: &[CheckedFile<'_, '_>], quiet: bool, out: &mut impl Write) -> io::Result<()> {
    let one_line = |s: &str| {
        rulelint_parser::escape_control(s)
            .replace('\n', "\\n")
            .replace('\t', "\\t")
    };
    for f in files {
        let source = f.ruleset.source();
        let lines = LineIndex::new(source);
        for d in f.diagnostics {
            let at = lines.line_col(source, d.span.start);
            writeln!(
                out,
                "{}:{}:{}: {} {} {}: {}",
                one_line(f.path),
                at.line,
                at.column,
                d.severity,
                d.code,
                d.name,
                one_line(&d.message)
            )?;
        }
    }
    if !quiet {
        summaries(files, out)?;
    }
    Ok(())
}

/// Rendered findings, then one summary line per file and a total over several files.
fn human(
    files: &[CheckedFile<'_, '_>],
    color: bool,
    quiet: bool,
    out: &mut impl Write,
) -> io::Result<()> {
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
    if !quiet {
        summaries(files, out)?;
    }
    Ok(())
}

/// One summary line per file, and a total over several files.
fn summaries(files: &[CheckedFile<'_, '_>], out: &mut impl Write) -> io::Result<()> {
    let mut total = Summary::default();
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

/// The first directory from `start` upwards that holds `.git` (a folder, or the file of a
/// worktree): the repository root.
pub fn repository_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// SARIF paths: relative to the repository root holding the working directory (or to the
/// working directory outside a repository), as code scanning resolves them against the checkout.
fn sarif_options() -> sarif::SarifOptions {
    let cwd = std::env::current_dir().ok();
    let root = cwd
        .as_deref()
        .and_then(repository_root)
        .or_else(|| cwd.clone());
    sarif::SarifOptions { cwd, root }
}
