//! `rulelint check` (the default command): configuration, output formats and the exit status.

use crate::{folders, input};
use rulelint_lint::baseline::{self, Baseline, BaselineEntry};
use rulelint_lint::report::{
    CheckDocument, LocatedFile, Summary, Unreadable, github_annotations_located,
};
use rulelint_lint::source::{
    cap_findings, check_source, check_source_every_finding, check_source_unfreed,
};
use rulelint_lint::{Config, ConfigError, FailOn, sarif};
use rulelint_parser::{LineIndex, Severity};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, PoisonError, mpsc};

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
    /// Files checked at once (`--jobs`); `None`: one per core.
    pub jobs: Option<usize>,
    /// All files are one node's outputs, checked together (`--node NAME`).
    pub node: Option<String>,
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
    // Buffers of the parse and the lints freed before the peak are given back, not kept
    // resident (1M-chain cycle: 151 -> 144 MB, issue 16).
    crate::diff::map_large_buffers_apart();
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

/// What `check` keeps of one file once it is checked: owned and small (findings, not the text
/// or its parse), so that many large files never sit in memory at once.
struct Outcome {
    /// Why the file could not be read.
    unreadable: Option<String>,
    /// The file holds no ruleset (`NO_RULESET`).
    no_content: bool,
    /// The findings the baseline does not hold, located.
    file: LocatedFile,
    /// Human output: the findings rendered.
    rendered: String,
    /// A node read from several files: its findings per file, in place of `file`.
    split: Vec<LocatedFile>,
    /// With `--write-baseline`: the findings as baseline entries.
    recorded: Vec<BaselineEntry>,
}

/// Reads, checks and reduces one file. Runs on a worker thread. With `skip_drop` (the only
/// file of the run) the text and its parsed model are left to the process exit instead of
/// being freed one node at a time: a 5,000-Service node spends about 6% of its time there.
fn check_one(
    options: &Options,
    config: &Config,
    baseline: Option<&Baseline>,
    entry: &folders::Entry,
    input: Result<(input::Input, Vec<input::Part>), String>,
    skip_drop: bool,
) -> Outcome {
    let (input, parts) = match input {
        Ok(i) => i,
        Err(message) => {
            let mut outcome = empty_outcome();
            outcome.unreadable = Some(message);
            return outcome;
        }
    };
    // Each file is split into its iptables-save and nftables sections, each read and linted by
    // its own parser; a pure iptables-save file takes exactly the iptables path.
    // A baseline drops findings before the report caps them, and records every one.
    let every_finding = options.baseline.is_some() || options.write_baseline.is_some();
    if every_finding {
        rulelint_parser::cap::keep_every_finding();
    }
    let check = || {
        if every_finding {
            check_source_every_finding(&input.text, config, skip_drop)
        } else if skip_drop {
            check_source_unfreed(&input.text, config)
        } else {
            check_source(&input.text, config)
        }
    };
    let (mut checked, lines) = if skip_drop && LINES_AHEAD_BYTES.contains(&input.text.len()) {
        // The only file of the run: its line index (for locating and rendering the findings)
        // is built on a second thread meanwhile, which the parse leaves idle.
        std::thread::scope(|scope| {
            let lines = scope.spawn(|| LineIndex::new(&input.text));
            let checked = check();
            (checked, lines.join().ok())
        })
    } else {
        (check(), None)
    };
    let outcome = reduce(
        options,
        baseline,
        entry,
        &input,
        &parts,
        &mut checked,
        lines.as_ref(),
    );
    if skip_drop {
        std::mem::forget(checked);
        std::mem::forget(input);
    }
    outcome
}

/// The sizes at which the only file of a run has its line index built beside its check. Not
/// above: the index (2 bytes a line) is then alive during the lints, which keep one of their
/// own, and a huge file of short lines would hold both at its peak (200 MB of `-A X -j X`:
/// 3.35x -> 3.56x the input, issue 16).
const LINES_AHEAD_BYTES: std::ops::Range<usize> = (1 << 20)..(64 << 20);

fn empty_outcome() -> Outcome {
    Outcome {
        unreadable: None,
        no_content: false,
        file: LocatedFile {
            path: String::new(),
            findings: Vec::new(),
        },
        rendered: String::new(),
        split: Vec::new(),
        recorded: Vec::new(),
    }
}

/// One checked file's findings as the run reports them: baseline applied, rendered, located.
/// `lines`: the line index of the input's text, when it was built already.
fn reduce(
    options: &Options,
    baseline: Option<&Baseline>,
    entry: &folders::Entry,
    input: &input::Input,
    parts: &[input::Part],
    checked: &mut rulelint_lint::source::CheckedSource<'_>,
    lines: Option<&LineIndex>,
) -> Outcome {
    let mut outcome = empty_outcome();
    outcome.file.path.clone_from(&input.name);
    outcome.no_content = checked.has_no_content();
    if outcome.no_content && entry.from_folder {
        return outcome; // skipped
    }
    let ruleset = &checked.iptables.ruleset;
    if options.write_baseline.is_some() {
        outcome.recorded = checked
            .diagnostics
            .iter()
            .map(|d| baseline::entry(ruleset, d))
            .collect();
        return outcome;
    }
    // Known findings are dropped before anything is reported, counted or capped.
    let mut diagnostics = std::mem::take(&mut checked.diagnostics);
    if let Some(b) = baseline {
        diagnostics.retain(|d| !b.contains(ruleset, d));
        cap_findings(&mut diagnostics);
    }
    if !parts.is_empty() {
        // One node in several files: findings go back into their files.
        if options.format == Format::Human && !options.statistics {
            outcome.rendered =
                crate::node_files::render(&diagnostics, &input.text, parts, options.color);
        }
        let union = LocatedFile::new(input.name.clone(), ruleset, diagnostics);
        outcome.split = crate::node_files::split(union, &input.text, parts);
        return outcome;
    }
    // The index built beside the check is of the input's text: usable when the findings'
    // spans are into that same text.
    let source = ruleset.source();
    let lines = lines
        .filter(|_| source.as_ptr() == input.text.as_ptr() && source.len() == input.text.len());
    let built;
    let lines = match lines {
        Some(lines) => Some(lines),
        None if !diagnostics.is_empty() => {
            built = LineIndex::new(source);
            Some(&built)
        }
        None => None,
    };
    // A file with findings always has its line index here.
    if let Some(lines) = lines
        && options.format == Format::Human
        && !options.statistics
        && !diagnostics.is_empty()
    {
        // One line index per file: each finding's snippet is then found in O(log n).
        for d in &diagnostics {
            outcome
                .rendered
                .push_str(&d.render_indexed(&input.name, source, lines, options.color));
            outcome.rendered.push('\n');
        }
    }
    outcome.file = match lines {
        Some(lines) => LocatedFile::with_index(input.name.clone(), ruleset, diagnostics, lines),
        None => LocatedFile::new(input.name.clone(), ruleset, diagnostics),
    };
    outcome
}

/// The number of files checked at once: `--jobs`, else one per core.
fn jobs(options: &Options, files: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    options.jobs.unwrap_or(cores).clamp(1, files.max(1))
}

fn check_all(
    options: &Options,
    config: &Config,
    baseline: Option<&Baseline>,
    out: &mut impl Write,
) -> io::Result<u8> {
    let mut entries = match folders::expand(&options.files) {
        Ok(e) => e,
        Err(message) => {
            eprintln!("rulelint: {message}");
            return Ok(crate::EXIT_INPUT);
        }
    };
    // `--node NAME`: every file given is an output of that one node.
    let node_paths: Vec<String> = match &options.node {
        Some(name) => {
            let paths = entries.drain(..).map(|e| e.path).collect();
            entries.push(folders::Entry {
                path: name.clone(),
                from_folder: false,
            });
            paths
        }
        None => Vec::new(),
    };
    // Standard input is read here, in order, so that a second `-` reads what the first left
    // (nothing), whichever worker comes first.
    let stdin: Mutex<BTreeMap<usize, Result<input::Input, String>>> = Mutex::new(
        entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.path == "-" && options.node.is_none())
            .map(|(i, e)| (i, input::read(&e.path)))
            .collect(),
    );
    let mut status = EXIT_CLEAN;
    let mut read_errors = Vec::new();
    let mut content_notes = Vec::new();
    let mut unreadable = Vec::new();
    let mut files: Vec<LocatedFile> = Vec::with_capacity(entries.len());
    let mut rendered: Vec<String> = Vec::new();
    let mut recorded = Baseline::new();
    // One file: its model lives until the process exits anyway; with more, each is freed so
    // that memory stays bounded by the files in flight.
    let skip_drop = entries.len() == 1;
    in_order(
        entries.len(),
        jobs(options, entries.len()),
        |i| {
            let entry = &entries[i];
            let prefetched = stdin
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&i);
            let input = match prefetched {
                Some(read) => read.map(|i| (i, Vec::new())),
                None if options.node.is_some() => input::read_node(&entry.path, &node_paths),
                // A subfolder: one node's outputs in files of their own.
                None if entry.path != "-" && Path::new(&entry.path).is_dir() => {
                    folders::node_files(&entry.path)
                        .and_then(|files| input::read_node(&entry.path, &files))
                }
                None => input::read(&entry.path).map(|i| (i, Vec::new())),
            };
            check_one(options, config, baseline, entry, input, skip_drop)
        },
        |i, outcome| {
            let entry = &entries[i];
            // An unreadable file fails the run, but the others are still checked; the reports
            // that are read by machines list it too.
            if let Some(message) = outcome.unreadable {
                read_errors.push(format!("rulelint: {message}"));
                status = crate::EXIT_INPUT;
                unreadable.push(Unreadable {
                    path: entry.path.clone(),
                    error: message,
                });
                return;
            }
            if outcome.no_content {
                // A file found in a folder that holds no dump (a README, notes) is skipped.
                if entry.from_folder {
                    content_notes.push(format!(
                        "rulelint: skipping `{}`: {}",
                        outcome.file.path,
                        crate::NO_RULESET_SHORT
                    ));
                    return;
                }
                content_notes.push(format!(
                    "rulelint: `{}` holds {}",
                    outcome.file.path,
                    crate::NO_RULESET
                ));
                status = crate::EXIT_INPUT;
            }
            recorded.findings.extend(outcome.recorded);
            if outcome.split.is_empty() {
                files.push(outcome.file);
            } else {
                files.extend(outcome.split);
            }
            rendered.push(outcome.rendered);
        },
    );
    for message in read_errors.iter().chain(&content_notes) {
        eprintln!("{message}");
    }
    if let Some(path) = &options.write_baseline {
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
    if options.statistics {
        statistics(&files, options.format == Format::Json, out)?;
    } else {
        match options.format {
            Format::Human => {
                for r in &rendered {
                    out.write_all(r.as_bytes())?;
                }
                if !options.quiet {
                    summaries(&files, out)?;
                }
            }
            Format::Concise => concise(&files, options.quiet, out)?,
            Format::Json => crate::write_json(
                out,
                &CheckDocument::located(&files).with_unreadable(&unreadable),
            )?,
            Format::Sarif => {
                let log = sarif::sarif_log_located(&files, &unreadable, &sarif_options());
                crate::write_json(out, &log)?;
            }
            Format::Github => {
                for f in &files {
                    out.write_all(github_annotations_located(f).as_bytes())?;
                }
            }
        }
    }
    let mut total = Summary::default();
    for f in &files {
        total.merge(f.summary());
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

/// Runs `work` on `0..count` on up to `jobs` threads and hands each result to `take` on this
/// thread, in index order, so that the output does not depend on which file finishes first.
/// A worker starts file `i` only once fewer than `2 * jobs` results wait for their turn: the
/// files in memory at once are bounded whatever their number and sizes.
fn in_order<T: Send>(
    count: usize,
    jobs: usize,
    work: impl Fn(usize) -> T + Sync,
    mut take: impl FnMut(usize, T),
) {
    if jobs <= 1 || count <= 1 {
        for i in 0..count {
            take(i, work(i));
        }
        return;
    }
    struct Progress {
        next: usize,
        taken: usize,
        stop: bool,
    }
    // A worker that panics stops the others (they would wait for its result forever); the
    // scope then passes the panic on.
    struct StopOnPanic<'s>(&'s Mutex<Progress>, &'s Condvar);
    impl Drop for StopOnPanic<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.lock().unwrap_or_else(PoisonError::into_inner).stop = true;
                self.1.notify_all();
            }
        }
    }
    let window = 2 * jobs;
    let progress = Mutex::new(Progress {
        next: 0,
        taken: 0,
        stop: false,
    });
    let turn = Condvar::new();
    let (sender, results) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let sender = sender.clone();
            let (progress, turn, work) = (&progress, &turn, &work);
            scope.spawn(move || {
                let _guard = StopOnPanic(progress, turn);
                loop {
                    let i = {
                        let mut p = progress.lock().unwrap_or_else(PoisonError::into_inner);
                        while !p.stop && p.next < count && p.next >= p.taken + window {
                            p = turn.wait(p).unwrap_or_else(PoisonError::into_inner);
                        }
                        if p.stop || p.next >= count {
                            return;
                        }
                        p.next += 1;
                        p.next - 1
                    };
                    if sender.send((i, work(i))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        let mut waiting = BTreeMap::new();
        let mut next = 0;
        for (i, result) in results {
            waiting.insert(i, result);
            while let Some(result) = waiting.remove(&next) {
                take(next, result);
                next += 1;
                progress
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .taken = next;
                turn.notify_all();
            }
        }
    });
}

/// Counts per code over all files, most frequent first: `  12  RL401  bare-drop  error`.
fn statistics(files: &[LocatedFile], json: bool, out: &mut impl Write) -> io::Result<()> {
    #[derive(serde::Serialize)]
    struct CodeCount {
        code: &'static str,
        name: &'static str,
        severity: Severity,
        count: usize,
    }
    let mut counts: BTreeMap<(&'static str, &'static str, Severity), usize> = BTreeMap::new();
    for d in files
        .iter()
        .flat_map(|f| &f.findings)
        .map(|f| &f.diagnostic)
    {
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
fn concise(files: &[LocatedFile], quiet: bool, out: &mut impl Write) -> io::Result<()> {
    let one_line = |s: &str| {
        rulelint_parser::escape_control(s)
            .replace('\n', "\\n")
            .replace('\t', "\\t")
    };
    for f in files {
        for located in &f.findings {
            let (d, at) = (&located.diagnostic, located.start);
            writeln!(
                out,
                "{}:{}:{}: {} {} {}: {}",
                one_line(&f.path),
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

/// One summary line per file, and a total over several files.
fn summaries(files: &[LocatedFile], out: &mut impl Write) -> io::Result<()> {
    let mut total = Summary::default();
    for f in files {
        let s = f.summary();
        total.merge(s);
        if f.findings.is_empty() {
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
