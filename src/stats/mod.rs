//! `rulelint stats`: the size and shape of a dump: iptables-save, nftables rulesets (`nft list
//! ruleset` text, `nft -j` JSON, the `add ...` form) and kube-proxy's IPVS state, alone or
//! several in one file.
//!
//! A file that is all iptables-save takes the path it always took (same figures, same output,
//! byte for byte). A file with any other section is read as `check` reads it
//! (`rulelint_lint::source::check_source`): the iptables figures from its iptables part, each
//! nftables section and the IPVS state counted under its own kind, the Services from the
//! catalogue `rulelint services` prints.

mod ipvs;
mod nft;
mod prometheus;

pub use prometheus::prometheus;

use crate::{EXIT_INPUT, Loaded, StatsOutput, write_json};
use rulelint_lint::source::{PARSE_BESIDE_SECTIONS_BYTES, Section, SectionKind, opens_with_table};
use rulelint_parser::{Parsed, Severity, json};
use serde::Serialize;
use std::borrow::Cow;
use std::io::{self, Write};

/// How many of the largest chains to list.
const LARGEST: usize = 10;

/// Statistics of one file (the JSON shape of `rulelint stats --format json`).
#[derive(Serialize)]
pub struct FileStats<'a> {
    pub path: &'a str,
    pub family: Option<rulelint_parser::Family>,
    pub generator: Option<String>,
    pub tables: Vec<TableStats<'a>>,
    pub chains: usize,
    pub rules: usize,
    pub largest_chains: Vec<ChainStats<'a>>,
    /// Jumps and gotos between chains (edges of the chain graph).
    pub jumps: usize,
    /// User chains that no built-in chain of their table reaches.
    pub unreachable_chains: usize,
    /// Groups of chains that jump to each other in a cycle.
    pub cycles: usize,
    pub kube: KubeStats,
    /// The parser's diagnostics only (RL1xx).
    pub diagnostics: SeverityCounts,
    /// Everything `rulelint check` reports with default settings: the parser's diagnostics and
    /// the lints' findings.
    pub findings: SeverityCounts,
    /// The same findings counted per code.
    pub findings_by_code: std::collections::BTreeMap<&'static str, usize>,
    /// Service ports and endpoints kube-proxy programs (`rulelint services`).
    pub services: usize,
    pub endpoints: usize,
    /// What the file holds, section by section: only for a file that holds more than
    /// iptables-save (the fields above then count its iptables part, findings and Services the
    /// whole file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<SectionStats>>,
    /// Its nftables sections, when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nft: Option<nft::NftStats>,
    /// Its IPVS state, when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipvs: Option<ipvs::IpvsStats>,
}

/// One section of a file.
#[derive(Serialize)]
pub struct SectionStats {
    /// `iptables`, `nft`, `nft-json`, `nft-transaction` or `ipvs`.
    pub kind: &'static str,
    /// Its first line (1-based).
    pub line: usize,
}

#[derive(Serialize)]
pub struct TableStats<'a> {
    pub name: &'a str,
    pub chains: usize,
    pub rules: usize,
    pub superseded: bool,
    pub implicit: bool,
}

#[derive(Serialize)]
pub struct ChainStats<'a> {
    pub table: Cow<'a, str>,
    pub chain: Cow<'a, str>,
    pub rules: usize,
}

/// Counts of kube-proxy chains by prefix.
#[derive(Serialize, Default)]
pub struct KubeStats {
    pub svc_chains: usize,
    pub sep_chains: usize,
    pub svl_chains: usize,
    pub ext_chains: usize,
    pub fw_chains: usize,
}

#[derive(Serialize, Default)]
pub struct SeverityCounts {
    pub error: usize,
    pub warning: usize,
    pub info: usize,
}

impl SeverityCounts {
    pub fn of<'d>(
        diagnostics: impl IntoIterator<Item = &'d rulelint_parser::Diagnostic>,
    ) -> SeverityCounts {
        let mut counts = SeverityCounts::default();
        for d in diagnostics {
            // A parser's capped list counts as the findings it stands for.
            let n = rulelint_parser::cap::stands_for(d);
            match d.severity {
                Severity::Error => counts.error += n,
                Severity::Warning => counts.warning += n,
                Severity::Info => counts.info += n,
            }
        }
        counts
    }
}

/// The figures of an iptables-save dump, findings of `check` with default settings included.
pub fn collect<'a>(path: &'a str, parsed: &Parsed<'a>) -> FileStats<'a> {
    let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
    let findings =
        rulelint_lint::check_with_graph(parsed, &graph, &rulelint_lint::Config::default());
    let model = rulelint_lint::kube::KubeModel::build(&parsed.ruleset, &graph);
    let mut stats = shape(path, parsed, &graph);
    stats.diagnostics = SeverityCounts::of(&parsed.diagnostics);
    stats.findings = SeverityCounts::of(&findings);
    stats.findings_by_code = by_code(&findings);
    stats.services = model.services.len();
    stats.endpoints = model.services.iter().map(|s| s.endpoints.len()).sum();
    stats
}

fn by_code(
    findings: &[rulelint_parser::Diagnostic],
) -> std::collections::BTreeMap<&'static str, usize> {
    findings.iter().fold(Default::default(), |mut by_code, d| {
        *by_code.entry(d.code).or_default() += rulelint_parser::cap::stands_for(d);
        by_code
    })
}

/// The iptables figures: tables, chains, rules, the graph's, kube-proxy's chains. Findings and
/// Services are left at zero.
fn shape<'a>(
    path: &'a str,
    parsed: &Parsed<'a>,
    graph: &rulelint_parser::ChainGraph,
) -> FileStats<'a> {
    let set = &parsed.ruleset;
    let reachable = graph.reachable_from_hooks(set);
    let mut kube = KubeStats::default();
    for chain in set.iter_chains() {
        let name = chain.name();
        let counter = if name.starts_with("KUBE-SVC-") {
            &mut kube.svc_chains
        } else if name.starts_with("KUBE-SEP-") {
            &mut kube.sep_chains
        } else if name.starts_with("KUBE-SVL-") {
            &mut kube.svl_chains
        } else if name.starts_with("KUBE-EXT-") {
            &mut kube.ext_chains
        } else if name.starts_with("KUBE-FW-") {
            &mut kube.fw_chains
        } else {
            continue;
        };
        *counter += 1;
    }
    let mut largest: Vec<ChainStats<'a>> = set
        .iter_chains()
        .map(|c| ChainStats {
            table: Cow::Borrowed(c.table().name()),
            chain: Cow::Borrowed(c.name()),
            rules: c.rule_count(),
        })
        .filter(|c| c.rules > 0)
        .collect();
    largest.sort_by(|a, b| b.rules.cmp(&a.rules).then(a.chain.cmp(&b.chain)));
    largest.truncate(LARGEST);
    FileStats {
        path,
        family: set.family,
        generator: set.generator().map(|g| {
            let mut s = format!("{} v{}", set.text(g.tool), set.text(g.version));
            if g.nf_tables {
                s.push_str(" (nf_tables)");
            } else if g.legacy {
                s.push_str(" (legacy)");
            }
            s
        }),
        tables: set
            .iter_tables()
            .map(|t| TableStats {
                name: t.name(),
                chains: t.get().chains.len(),
                rules: t.rule_count(),
                superseded: t.get().superseded,
                implicit: t.get().implicit,
            })
            .collect(),
        chains: set.chains.len(),
        rules: set.rules.len(),
        largest_chains: largest,
        jumps: graph.jump_count(),
        unreachable_chains: reachable.iter().filter(|r| !**r).count(),
        cycles: graph.cycles().len(),
        kube,
        diagnostics: SeverityCounts::default(),
        findings: SeverityCounts::default(),
        findings_by_code: Default::default(),
        services: 0,
        endpoints: 0,
        sections: None,
        nft: None,
        ipvs: None,
    }
}

/// The sections of `text` and, for a large text that opens like an iptables-save dump, its
/// iptables parse made meanwhile (thrown away when another section turns up).
fn sections_beside_parse(text: &str) -> (Vec<Section>, Option<Parsed<'_>>) {
    // As `check` does it (`rulelint_lint::source`): most large texts are one iptables-save dump.
    if text.len() < PARSE_BESIDE_SECTIONS_BYTES || !opens_with_table(text) {
        return (rulelint_lint::source::sections(text), None);
    }
    std::thread::scope(|scope| {
        let split = scope.spawn(|| rulelint_lint::source::sections(text));
        let parsed = rulelint_parser::parse(text);
        match split.join() {
            Ok(sections) => (sections, Some(parsed)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Whether `text` holds anything but iptables-save (the sections `check` reads it by).
fn other_sections(sections: &[Section]) -> bool {
    sections.iter().any(|s| s.kind != SectionKind::Iptables)
}

/// The section kinds' names in the JSON.
fn kind_name(kind: SectionKind) -> &'static str {
    match kind {
        SectionKind::Iptables => "iptables",
        SectionKind::Nft => "nft",
        SectionKind::NftJson => "nft-json",
        SectionKind::NftTransaction => "nft-transaction",
        SectionKind::Ipvs => "ipvs",
        // A kind added later: named by what it holds.
        _ => "other",
    }
}

/// The figures of a file with nftables or IPVS sections (and possibly iptables-save ones):
/// whether it held anything at all, and its figures.
fn collect_sections<'a>(path: &'a str, text: &'a str) -> (FileStats<'a>, bool) {
    // The catalogue first, on its own: it reads the text again, and its model is freed before
    // the check's is built.
    let (services, endpoints) = {
        let strings = rulelint_nft::Strings::new();
        let (catalog, _) = rulelint_lint::kube::doc::catalog_of(text, &strings);
        let endpoints = catalog
            .services
            .iter()
            .map(|s| s.endpoints.iter().filter(|e| !e.affinity_check).count())
            .sum();
        (catalog.services.len(), endpoints)
    };
    let checked = rulelint_lint::source::check_source(text, &rulelint_lint::Config::default());
    let graph = rulelint_parser::ChainGraph::build(&checked.iptables.ruleset);
    let mut stats = shape(path, &checked.iptables, &graph);
    drop(graph);
    let syntax: Vec<&'static str> = rulelint_lint::all_codes()
        .filter(|e| e.category == rulelint_lint::Category::Syntax)
        .map(|e| e.info.code)
        .collect();
    stats.diagnostics = SeverityCounts::of(
        checked
            .diagnostics
            .iter()
            .filter(|d| syntax.contains(&d.code)),
    );
    stats.findings = SeverityCounts::of(&checked.diagnostics);
    stats.findings_by_code = by_code(&checked.diagnostics);
    stats.services = services;
    stats.endpoints = endpoints;
    let mut listed = Vec::new();
    let mut line = 1;
    let mut counted_to = 0;
    let mut nft_stats: Option<nft::NftStats> = None;
    for section in &checked.sections {
        let body = &text[section.range.clone()];
        if section.kind == SectionKind::Iptables && body.trim().is_empty() {
            continue;
        }
        line += bytecount::count(&text.as_bytes()[counted_to..section.range.start], b'\n');
        counted_to = section.range.start;
        listed.push(SectionStats {
            kind: kind_name(section.kind),
            line,
        });
        match section.kind {
            SectionKind::Nft | SectionKind::NftTransaction => {
                if let Some((_, parsed)) = checked
                    .nft
                    .iter()
                    .find(|(offset, _)| *offset == section.range.start)
                {
                    nft_stats.get_or_insert_default().add(&parsed.ruleset);
                }
            }
            SectionKind::NftJson => {
                // `check_source` does not keep a JSON section's model: read it again.
                let strings = rulelint_nft::Strings::new();
                let parsed = rulelint_nft::parse_json(body, &strings);
                nft_stats.get_or_insert_default().add(&parsed.ruleset);
            }
            _ => {}
        }
    }
    if let Some(n) = &mut nft_stats {
        nft::finish(n);
    }
    let ipvs_stats = checked.ipvs.as_ref().map(ipvs::collect);
    let has_content = !checked.iptables.has_no_content()
        || nft_stats.as_ref().is_some_and(|n| !n.tables.is_empty())
        || checked.ipvs.as_ref().is_some_and(|i| !i.is_empty());
    stats.sections = Some(listed);
    stats.nft = nft_stats;
    stats.ipvs = ipvs_stats;
    (stats, has_content)
}

/// `rulelint stats FILE...`: every file's figures in `format`; 2 when a file holds nothing it
/// reads (each such file named on stderr), else 0.
pub(crate) fn run(loaded: &[Loaded], format: StatsOutput, out: &mut impl Write) -> io::Result<u8> {
    let mut status = 0;
    let mut all = Vec::with_capacity(loaded.len());
    for file in loaded {
        let (sections, parsed) = sections_beside_parse(&file.text);
        let (stats, has_content) = if other_sections(&sections) {
            drop(parsed);
            collect_sections(&file.name, &file.text)
        } else {
            let parsed = parsed.unwrap_or_else(|| rulelint_parser::parse(&file.text));
            (collect(&file.name, &parsed), !parsed.has_no_content())
        };
        if !has_content {
            eprintln!("rulelint: `{}` holds {}", file.name, crate::NO_RULESET);
            status = EXIT_INPUT;
        }
        all.push(stats);
    }
    match format {
        StatsOutput::Json => write_json(out, &json::Document::new(all))?,
        StatsOutput::Human => {
            for s in &all {
                out.write_all(human(s).as_bytes())?;
            }
        }
        StatsOutput::Prometheus => out.write_all(prometheus(&all).as_bytes())?,
    }
    Ok(status)
}

pub fn human(stats: &FileStats<'_>) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let family = match stats.family {
        Some(rulelint_parser::Family::Ipv4) => "ipv4",
        Some(rulelint_parser::Family::Ipv6) => "ipv6",
        None => "family unknown",
    };
    let family_and_generator = match &stats.generator {
        Some(g) => format!("{family}, {g}"),
        None => family.to_string(),
    };
    match &stats.sections {
        None => {
            let _ = writeln!(out, "{}: {family_and_generator}", stats.path);
            iptables_lines(&mut out, stats);
        }
        Some(sections) => {
            let mut kinds: Vec<&str> = Vec::new();
            for s in sections {
                let kind = describe(s.kind);
                if !kinds.contains(&kind) {
                    kinds.push(kind);
                }
            }
            let _ = writeln!(out, "{}: {}", stats.path, kinds.join(", "));
            if !stats.tables.is_empty() {
                let _ = writeln!(out, "  iptables-save: {family_and_generator}");
                iptables_lines(&mut out, stats);
            }
            if let Some(n) = &stats.nft {
                nft::human(&mut out, n);
            }
            if let Some(i) = &stats.ipvs {
                ipvs::human(&mut out, i);
            }
            let _ = writeln!(
                out,
                "  Services (ports): {}, endpoints: {}",
                stats.services, stats.endpoints
            );
        }
    }
    let f = &stats.findings;
    let _ = writeln!(
        out,
        "  findings of `rulelint check` (default settings): {} errors, {} warnings, {} info",
        f.error, f.warning, f.info
    );
    let d = &stats.diagnostics;
    let _ = writeln!(
        out,
        "    of which syntax (RL1xx): {} errors, {} warnings, {} info",
        d.error, d.warning, d.info
    );
    out
}

/// A section kind's JSON name for humans.
fn describe(kind: &str) -> &'static str {
    match kind {
        "iptables" => "iptables-save output",
        "nft" => "`nft list ruleset` text",
        "nft-json" => "`nft -j list ruleset` JSON",
        "nft-transaction" => "nft `add ...` (nft -f) text",
        "ipvs" => "IPVS state (ipvsadm, ipset, ip addr)",
        _ => "other text",
    }
}

/// The iptables lines of the human output.
fn iptables_lines(out: &mut String, stats: &FileStats<'_>) {
    use std::fmt::Write;
    let _ = writeln!(out, "  tables: {}", stats.tables.len());
    for t in &stats.tables {
        let mut notes = String::new();
        if t.superseded {
            notes.push_str(" (superseded by a later block)");
        }
        if t.implicit {
            notes.push_str(" (inferred: rules without a table header)");
        }
        let _ = writeln!(
            out,
            "    {:<10} {:>8} chains {:>9} rules{notes}",
            t.name, t.chains, t.rules
        );
    }
    let _ = writeln!(out, "  chains: {}, rules: {}", stats.chains, stats.rules);
    let _ = writeln!(
        out,
        "  jumps: {}, chains unreachable from built-in chains: {}, jump cycles: {}",
        stats.jumps, stats.unreachable_chains, stats.cycles
    );
    if !stats.largest_chains.is_empty() {
        let _ = writeln!(out, "  largest chains:");
        for c in &stats.largest_chains {
            let _ = writeln!(out, "    {:>9} {} ({})", c.rules, c.chain, c.table);
        }
    }
    let k = &stats.kube;
    if k.svc_chains + k.sep_chains + k.svl_chains + k.ext_chains + k.fw_chains > 0 {
        let _ = writeln!(
            out,
            "  kube-proxy chains: {} KUBE-SVC, {} KUBE-SEP, {} KUBE-SVL, {} KUBE-EXT, {} KUBE-FW",
            k.svc_chains, k.sep_chains, k.svl_chains, k.ext_chains, k.fw_chains
        );
    }
}
