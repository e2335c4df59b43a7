//! The `rulelint` command line: flags, I/O and exit codes. Analysis lives in the library crates.

mod input;
mod stats;

use clap::{Parser, Subcommand, ValueEnum};
use rulelint_parser::{Parsed, json};
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

/// Offline analyser and linter for iptables-save dumps.
#[derive(Parser)]
#[command(name = "rulelint", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse dumps and print their structure (JSON) or their diagnostics.
    ///
    /// Exit status: 0 when every file was read, 2 when a file is unreadable or holds no
    /// iptables-save content. Parse diagnostics alone do not change the status.
    Parse {
        /// Dump files; `-` reads standard input; `.gz` files are decompressed.
        #[arg(required = true)]
        files: Vec<String>,
        /// `human`: diagnostics and a summary; `json`: the whole ruleset (stable, versioned);
        /// `canonical`: the ruleset printed back as iptables-save text.
        #[arg(long, value_enum, default_value_t = ParseFormat::Human)]
        format: ParseFormat,
    },
    /// Print the size and shape of dumps: tables, chains, rules per table, largest chains,
    /// kube-proxy chain counts.
    Stats {
        /// Dump files; `-` reads standard input; `.gz` files are decompressed.
        #[arg(required = true)]
        files: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = StatsFormat::Human)]
        format: StatsFormat,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ParseFormat {
    Human,
    Json,
    Canonical,
}

#[derive(Clone, Copy, ValueEnum)]
enum StatsFormat {
    Human,
    Json,
}

/// Exit status for unreadable input, bad flags and input with no iptables-save content.
const EXIT_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_INPUT } else { 0 });
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        // A closed pipe (`rulelint ... | head`) is not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rulelint: {e}");
            ExitCode::from(EXIT_INPUT)
        }
    }
}

/// One input, read and parsed; the text is kept for rendering.
struct Loaded {
    name: String,
    text: String,
}

fn load_all(files: &[String]) -> Result<Vec<Loaded>, u8> {
    let mut loaded = Vec::with_capacity(files.len());
    let mut failed = false;
    for path in files {
        match input::read(path) {
            Ok(i) => loaded.push(Loaded {
                name: i.name,
                text: i.text,
            }),
            Err(message) => {
                eprintln!("rulelint: {message}");
                failed = true;
            }
        }
    }
    if failed { Err(EXIT_INPUT) } else { Ok(loaded) }
}

fn color_stderr() -> bool {
    std::env::var_os("NO_COLOR").is_none() && io::stderr().is_terminal()
}

/// Renders the diagnostics of a file to stderr.
fn report(name: &str, parsed: &Parsed<'_>, text: &str) -> io::Result<()> {
    let color = color_stderr();
    let mut err = io::stderr().lock();
    for d in &parsed.diagnostics {
        err.write_all(d.render(name, text, color).as_bytes())?;
    }
    Ok(())
}

fn no_content(name: &str, parsed: &Parsed<'_>) -> bool {
    if parsed.has_no_content() {
        eprintln!("rulelint: `{name}` holds no iptables-save content (no table, chain or rule)");
        true
    } else {
        false
    }
}

/// Writes `value` as pretty JSON, keeping the I/O error kind (a closed pipe stays `BrokenPipe`).
fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(|e| match e.io_error_kind() {
        Some(kind) => io::Error::from(kind),
        None => io::Error::other(e),
    })?;
    writeln!(out)
}

fn run(cli: Cli) -> io::Result<u8> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    let code = run_command(cli, &mut out)?;
    out.flush()?;
    Ok(code)
}

fn run_command(cli: Cli, out: &mut impl Write) -> io::Result<u8> {
    match cli.command {
        Command::Parse { files, format } => {
            let loaded = match load_all(&files) {
                Ok(l) => l,
                Err(code) => return Ok(code),
            };
            let parsed: Vec<Parsed<'_>> = loaded
                .iter()
                .map(|l| rulelint_parser::parse(&l.text))
                .collect();
            let mut code = 0;
            match format {
                ParseFormat::Json => {
                    let docs = loaded
                        .iter()
                        .zip(&parsed)
                        .map(|(l, p)| json::file_doc(&l.name, p))
                        .collect();
                    let doc = json::Document::new(docs);
                    write_json(out, &doc)?;
                }
                ParseFormat::Canonical => {
                    for (l, p) in loaded.iter().zip(&parsed) {
                        report(&l.name, p, &l.text)?;
                        out.write_all(rulelint_parser::print(&p.ruleset).as_bytes())?;
                    }
                }
                ParseFormat::Human => {
                    for (l, p) in loaded.iter().zip(&parsed) {
                        report(&l.name, p, &l.text)?;
                        let s = stats::collect(&l.name, p);
                        writeln!(
                            out,
                            "{}: {} tables, {} chains, {} rules; {} errors, {} warnings",
                            l.name,
                            s.tables.len(),
                            s.chains,
                            s.rules,
                            s.diagnostics.error,
                            s.diagnostics.warning
                        )?;
                    }
                }
            }
            for (l, p) in loaded.iter().zip(&parsed) {
                if no_content(&l.name, p) {
                    code = EXIT_INPUT;
                }
            }
            Ok(code)
        }
        Command::Stats { files, format } => {
            let loaded = match load_all(&files) {
                Ok(l) => l,
                Err(code) => return Ok(code),
            };
            let parsed: Vec<Parsed<'_>> = loaded
                .iter()
                .map(|l| rulelint_parser::parse(&l.text))
                .collect();
            let all: Vec<_> = loaded
                .iter()
                .zip(&parsed)
                .map(|(l, p)| stats::collect(&l.name, p))
                .collect();
            match format {
                StatsFormat::Json => {
                    let doc = json::Document::new(all);
                    write_json(out, &doc)?;
                }
                StatsFormat::Human => {
                    for s in &all {
                        out.write_all(stats::human(s).as_bytes())?;
                    }
                }
            }
            let mut code = 0;
            for (l, p) in loaded.iter().zip(&parsed) {
                if no_content(&l.name, p) {
                    code = EXIT_INPUT;
                }
            }
            Ok(code)
        }
    }
}
