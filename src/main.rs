//! The `rulelint` command line: flags, I/O and exit codes. Analysis lives in the library crates.

mod check;
mod diff;
mod folders;
mod input;
mod node_files;
mod serve;
mod services;
mod stats;
mod summarize;
mod trace;

use clap::{Args, Parser, Subcommand, ValueEnum};
use rulelint_parser::{LineIndex, Parsed, json};
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

/// Offline analyser and linter for the packet filter state of Kubernetes nodes: iptables-save
/// dumps, nftables rulesets (`nft list ruleset`, `-j`, `nft -f` scripts) and IPVS state
/// (`ipvsadm`, `ipset`, `ip addr` beside iptables-save).
///
/// `rulelint FILE...` is `rulelint check FILE...`: it reports what is wrong with each dump and
/// exits 0 when nothing reaches `--fail-on`, 1 when something does, 2 for unreadable input,
/// bad flags or configuration, or input that holds no ruleset.
#[derive(Parser)]
#[command(
    name = "rulelint",
    version,
    about,
    args_conflicts_with_subcommands = true,
    subcommand_help_heading = "Commands",
    after_help = "Examples:\n  rulelint node-a.txt\n  rulelint --format concise nodes/\n  iptables-save | rulelint -\n  rulelint --format sarif nodes/*.txt > rulelint.sarif\n  rulelint explain bare-drop"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    check: CheckArgs,
}

/// The flags of `check`, also accepted without the subcommand.
#[derive(Args)]
struct CheckArgs {
    /// Dump files or folders of dumps; `-` reads standard input; `.gz` files are decompressed.
    files: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = check::Format::Human)]
    format: check::Format,
    /// Print the findings only, without the summary lines.
    #[arg(long, short)]
    quiet: bool,
    /// Write the report to this file instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    output_file: Option<String>,
    /// Print the number of findings per code instead of the findings (JSON with `--format json`).
    #[arg(long)]
    statistics: bool,
    /// Report only the findings that this baseline file does not hold.
    #[arg(long, value_name = "FILE", conflicts_with = "write_baseline")]
    baseline: Option<String>,
    /// Record today's findings in this baseline file instead of reporting them (exit 0 unless
    /// an input is unreadable).
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<String>,
    /// The lowest severity that makes the run fail (exit 1) [default: error, or the config's].
    #[arg(long, value_parser = ["error", "warning", "info", "never"])]
    fail_on: Option<String>,
    /// Report only these codes or names (comma-separated; code prefixes such as `RL2` and `all`
    /// work). Replaces the config file's `select`.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    select: Option<Vec<String>>,
    /// Do not report these codes or names (comma-separated). Replaces the config file's `ignore`.
    #[arg(long, value_delimiter = ',', value_name = "CODES")]
    ignore: Option<Vec<String>>,
    /// Configuration file [default: rulelint.toml in the working directory or the nearest
    /// folder above it, up to the repository root].
    #[arg(long, value_name = "PATH", conflicts_with = "no_config")]
    config: Option<String>,
    /// Do not look for rulelint.toml.
    #[arg(long)]
    no_config: bool,
    /// Colour in human output.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
    /// Files checked at once [default: one per core]. The output is the same whatever the number.
    #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// The files are outputs of this one node (`iptables-save`, `ipset save`, `ipvsadm -Ln`
    /// saved apart): checked together, each finding shown in its own file. Without it, each
    /// file is a node (a folder's subfolder is one node's files).
    #[arg(long, value_name = "NAME")]
    node: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    /// Colour when standard output is a terminal and NO_COLOR is not set.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Check dumps: parser diagnostics and every lint (the default command).
    Check(CheckArgs),
    /// Compare node dumps: what one node does differently from another, or from the majority.
    ///
    /// Two dumps: Services, endpoints, weights, hook jumps, chains, policies, then rule by
    /// rule. Three or more (or folders of dumps): the nodes that disagree with the majority.
    /// Counters, timestamps, chain order and kube-proxy's dispatch order are ignored;
    /// differences healthy nodes have by design (local endpoints, per-pod chains, node
    /// addresses) are listed as expected. A `# node: NAME` line in a dump names its node;
    /// otherwise the file name does.
    ///
    /// Exit status: 0 when the nodes agree but for expected differences, 1 when they drift,
    /// 2 on unreadable input or fewer than two dumps.
    Diff {
        /// Dump files or folders of dumps; `-` reads standard input; `.gz` files are decompressed.
        #[arg(required = true)]
        paths: Vec<String>,
        /// Output format (`json` is stable and documented in the README).
        #[arg(long, value_enum, default_value_t = diff::Format::Human)]
        format: diff::Format,
        /// When to colour the text report.
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
    },
    /// Reduce a node's dump to what `diff` compares: a small versioned JSON summary.
    ///
    /// Made on the node (a Job or DaemonSet), summaries let `rulelint diff` compare thousands
    /// of nodes by moving kilobytes each; `diff` takes summaries and dumps mixed. A summary
    /// holds no rule text: a pair of nodes is compared rule by rule from their dumps.
    Summarize {
        /// The node's dump (iptables-save, `nft list ruleset`, or both); `-` reads standard
        /// input; `.gz` is decompressed.
        dump: String,
        /// Write the summary here (gzip-compressed when the name ends in `.gz`) instead of to
        /// standard output.
        #[arg(long, short, value_name = "FILE")]
        output: Option<String>,
        /// The node's name, unless the dump names it (`# node: NAME`) [default: the file name].
        #[arg(long, value_name = "NAME")]
        node: Option<String>,
        /// The summary format: 2 (chunked gzip, read fastest by `diff`) or 1 (one JSON
        /// document, for readers of version 1).
        #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=2))]
        format_version: u32,
    },
    /// Print the documentation of a code or lint name.
    Explain {
        /// A code (`RL401`) or name (`bare-drop`).
        code: String,
    },
    /// List every code: code, name, default severity, category and summary.
    Lints {
        /// Output format.
        #[arg(long, value_enum, default_value_t = StatsFormat::Human)]
        format: StatsFormat,
    },
    /// Parse iptables-save dumps and print their structure (JSON) or their diagnostics.
    ///
    /// Exit status: 0 when every file was read, 2 when a file is unreadable or holds no
    /// iptables-save content (an nftables ruleset or IPVS state is named as such: `check`,
    /// `stats`, `services`, `diff` and `trace` read those). Parse diagnostics alone do not
    /// change the status.
    Parse {
        /// Dump files; `-` reads standard input; `.gz` files are decompressed.
        #[arg(required = true)]
        files: Vec<String>,
        /// `human`: diagnostics and a summary; `json`: the whole ruleset (stable, versioned);
        /// `canonical`: the ruleset printed back as iptables-save text.
        #[arg(long, value_enum, default_value_t = ParseFormat::Human)]
        format: ParseFormat,
    },
    /// Print what kube-proxy programmed: the layout, and every Service port with its chains,
    /// addresses (cluster IP, external and load-balancer IPs, node ports) and endpoints.
    ///
    /// Exit status: 0 when every file was read, 2 when a file is unreadable or holds no
    /// iptables-save content.
    Services {
        /// Dump files; `-` reads standard input; `.gz` files are decompressed.
        #[arg(required = true)]
        files: Vec<String>,
        /// Output format (`json` is stable and documented in the README).
        #[arg(long, value_enum, default_value_t = StatsFormat::Human)]
        format: StatsFormat,
    },
    /// Serve the web page on 127.0.0.1 (files embedded in this binary; analysis runs in the
    /// browser, nothing is uploaded).
    Serve(serve::ServeArgs),
    /// Trace a packet: where it goes on each node, and why.
    ///
    /// Walks the packet through the hooks in netfilter's order (PREROUTING, the routing
    /// decision, INPUT or FORWARD, POSTROUTING; OUTPUT first for `--from host`), each hook's
    /// tables by priority (raw, mangle, nat, filter, security) and every rule, following jumps,
    /// gotos and returns. A DNAT changes what later rules see. kube-proxy's probability ladders
    /// fork the trace with each endpoint's probability. What the dump cannot tell (an interface
    /// not given, an ipset, `recent`, an address whose locality is unknown, an unknown match)
    /// forks the trace into "matches" and "does not match", each labelled: nothing is assumed
    /// silently. Every default and inference is printed. With several dumps, the same packet
    /// is traced on each node and the first difference is shown.
    ///
    /// Exit status: 0 when the trace ran (whatever its verdicts), 2 on bad flags, unreadable
    /// input or input that holds no ruleset.
    #[command(
        after_help = "Examples:\n  rulelint trace node-7.txt --dst 10.96.0.10:53 --proto udp\n  rulelint trace node-3.txt node-7.txt --dst 192.168.0.17:30080 --from outside --node-ip 192.168.0.17\n  rulelint trace node.txt --dst 10.96.0.1:443 --format json"
    )]
    Trace(trace::TraceArgs),
    /// Print the size and shape of a node's packet filter: tables, chains, rules per table,
    /// largest chains, kube-proxy chain counts, Services and endpoints, findings of `check`.
    ///
    /// Reads what `check` reads: iptables-save dumps, nftables rulesets (`nft list ruleset`
    /// text, `nft -j` JSON, `add ...` lines), with base chains, sets and maps and their
    /// elements, and kube-proxy's IPVS state (virtual and real servers, ipsets); a file holding
    /// several (`iptables-save; nft list ruleset`) is counted section by section.
    ///
    /// Exit status: 0 when every file was read, 2 when a file is unreadable or holds none of
    /// these. Parse diagnostics are counted, not printed, and do not change the status.
    Stats {
        /// Dump files; `-` reads standard input; `.gz` files are decompressed.
        #[arg(required = true)]
        files: Vec<String>,
        /// Output format: `prometheus` is the text exposition format, for node_exporter's
        /// textfile collector: gauges `rulelint_rules`, `rulelint_chains` (label `table`:
        /// `nat`, or `ip kube-proxy` for an nftables table), `rulelint_kube_proxy_chains`
        /// (`prefix`: `KUBE-SVC`, ..., `service-`, ...), `rulelint_services`,
        /// `rulelint_endpoints`, `rulelint_findings` (`severity`), `rulelint_findings_by_code`
        /// (`code`), `rulelint_largest_chain_rules`; for nftables also `rulelint_sets` and
        /// `rulelint_set_elements` (`set`), for IPVS state `rulelint_ipvs_virtual_servers`,
        /// `rulelint_ipvs_real_servers` and `rulelint_ipset_members` (`set`). Every gauge has
        /// a `file` label.
        #[arg(long, value_enum, default_value_t = StatsOutput::Human)]
        format: StatsOutput,
    },
}

/// The formats of `rulelint stats`.
#[derive(Clone, Copy, ValueEnum)]
enum StatsOutput {
    Human,
    Json,
    Prometheus,
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

/// Exit status for unreadable input, bad flags and input that holds no ruleset.
pub(crate) const EXIT_INPUT: u8 = 2;

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
    gather(files.iter().map(|path| input::read(path)))
}

/// The inputs read, in order; each unreadable one's message on standard error, then exit 2.
fn gather(read: impl IntoIterator<Item = Result<input::Input, String>>) -> Result<Vec<Loaded>, u8> {
    let read = read.into_iter();
    let mut loaded = Vec::with_capacity(read.size_hint().0);
    let mut failed = false;
    for r in read {
        match r {
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

impl Color {
    /// Whether to colour standard output.
    fn resolve(self) -> bool {
        match self {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => std::env::var_os("NO_COLOR").is_none() && io::stdout().is_terminal(),
        }
    }
}

/// Parses every loaded dump.
fn parse_all(loaded: &[Loaded]) -> Vec<Parsed<'_>> {
    loaded
        .iter()
        .map(|l| rulelint_parser::parse(&l.text))
        .collect()
}

fn run_check(args: CheckArgs, out: &mut impl Write) -> io::Result<u8> {
    let color = args.color.resolve();
    check::run(
        check::Options {
            files: args.files,
            format: args.format,
            fail_on: args.fail_on,
            select: args.select,
            ignore: args.ignore,
            config: args.config,
            no_config: args.no_config,
            color,
            quiet: args.quiet,
            output_file: args.output_file,
            statistics: args.statistics,
            baseline: args.baseline,
            write_baseline: args.write_baseline,
            jobs: args.jobs.map(usize::from),
            node: args.node,
        },
        out,
    )
}

fn color_stderr() -> bool {
    std::env::var_os("NO_COLOR").is_none() && io::stderr().is_terminal()
}

/// Renders the diagnostics of a file to stderr.
fn report(name: &str, parsed: &Parsed<'_>, text: &str) -> io::Result<()> {
    let color = color_stderr();
    let mut err = io::stderr().lock();
    let lines = LineIndex::new(text);
    for d in &parsed.diagnostics {
        err.write_all(d.render_indexed(name, text, &lines, color).as_bytes())?;
    }
    Ok(())
}

/// Exit status of `command`, which reads iptables-save only: 2 when a file holds no
/// iptables-save content (each such file named on stderr, with what it holds instead when that
/// is an nftables ruleset or IPVS state), else 0.
fn content_status(command: &str, loaded: &[Loaded], parsed: &[Parsed<'_>]) -> u8 {
    let mut code = 0;
    for (l, p) in loaded.iter().zip(parsed) {
        if !p.has_no_content() {
            continue;
        }
        code = EXIT_INPUT;
        match other_backend(&l.text) {
            Some(what) => eprintln!(
                "rulelint: `{}` holds {what}, which `rulelint {command}` does not read yet (it reads iptables-save); `rulelint check`, `stats`, `services`, `diff` and `trace` read it",
                l.name
            ),
            None => {
                no_content(&l.name, p);
            }
        }
    }
    code
}

/// What a text without iptables-save content holds that other commands read: an nftables
/// ruleset or kube-proxy's IPVS state.
pub(crate) fn other_backend(text: &str) -> Option<&'static str> {
    use rulelint_lint::source::{SectionKind, sections};
    let kinds: Vec<SectionKind> = sections(text).iter().map(|s| s.kind).collect();
    if kinds.iter().any(|k| {
        matches!(
            k,
            SectionKind::Nft | SectionKind::NftJson | SectionKind::NftTransaction
        )
    }) {
        Some("an nftables ruleset")
    } else if kinds.contains(&SectionKind::Ipvs) {
        Some("IPVS state (ipvsadm, ipset, ip addr)")
    } else {
        None
    }
}

/// What a file that holds nothing rulelint reads is said to hold.
const NO_RULESET: &str =
    "no ruleset (no iptables-save or nftables table, chain or rule, and no IPVS state)";

/// [`NO_RULESET`] where a file found in a folder is skipped.
const NO_RULESET_SHORT: &str = "no ruleset";

fn no_content(name: &str, parsed: &Parsed<'_>) -> bool {
    if parsed.has_no_content() {
        eprintln!("rulelint: `{name}` holds no iptables-save content (no table, chain or rule)");
        true
    } else {
        false
    }
}

/// Writes `value` as pretty JSON, keeping the I/O error kind (a closed pipe stays `BrokenPipe`).
pub(crate) fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> io::Result<()> {
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
    let Some(command) = cli.command else {
        if cli.check.files.is_empty() {
            eprintln!(
                "rulelint: no dump given (`-` reads standard input)\n\nUsage: rulelint [OPTIONS] FILE...\n       rulelint <COMMAND>\n\nFor more information, try '--help'."
            );
            return Ok(EXIT_INPUT);
        }
        return run_check(cli.check, out);
    };
    match command {
        Command::Check(args) => {
            if args.files.is_empty() {
                eprintln!("rulelint: no dump given (`-` reads standard input)");
                return Ok(EXIT_INPUT);
            }
            run_check(args, out)
        }
        Command::Diff {
            paths,
            format,
            color,
        } => diff::run(&paths, format, color.resolve(), out),
        Command::Summarize {
            dump,
            output,
            node,
            format_version,
        } => summarize::run(
            &dump,
            output.as_deref(),
            node.as_deref(),
            format_version,
            out,
        ),
        Command::Explain { code } => match rulelint_lint::find_code(&code) {
            Some(entry) => {
                out.write_all(rulelint_lint::docs_page(&entry).as_bytes())?;
                Ok(0)
            }
            None => {
                eprintln!("rulelint: unknown code or name `{code}` (`rulelint lints` lists them)");
                Ok(EXIT_INPUT)
            }
        },
        Command::Lints { format } => {
            let entries: Vec<_> = rulelint_lint::all_codes().collect();
            match format {
                StatsFormat::Json => write_json(out, &entries)?,
                StatsFormat::Human => {
                    for e in &entries {
                        writeln!(
                            out,
                            "{:<6} {:<27} {:<8} {:<12} {}",
                            e.info.code,
                            e.info.name,
                            e.info.severity,
                            e.category.as_str(),
                            e.info.summary
                        )?;
                    }
                }
            }
            Ok(0)
        }
        Command::Parse { files, format } => {
            let loaded = match load_all(&files) {
                Ok(l) => l,
                Err(code) => return Ok(code),
            };
            let parsed = parse_all(&loaded);
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
                        // "run iptables-save" is no advice for an nftables ruleset: the
                        // exit status's message says what the file holds instead.
                        if p.has_no_content() && other_backend(&l.text).is_some() {
                            continue;
                        }
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
            Ok(content_status("parse", &loaded, &parsed))
        }
        Command::Services { files, format } => {
            let loaded = match load_all(&files) {
                Ok(l) => l,
                Err(code) => return Ok(code),
            };
            services::run(&loaded, format, out)
        }
        Command::Serve(args) => serve::run(args, out),
        Command::Trace(args) => trace::run(&args, out),
        Command::Stats { files, format } => {
            let loaded = match load_all(&files) {
                Ok(l) => l,
                Err(code) => return Ok(code),
            };
            stats::run(&loaded, format, out)
        }
    }
}
