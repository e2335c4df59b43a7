//! `rulelint stats`: the size and shape of a dump.

use rulelint_parser::{Parsed, Severity};
use serde::Serialize;

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
    pub table: &'a str,
    pub chain: &'a str,
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

pub fn collect<'a>(path: &'a str, parsed: &'a Parsed<'a>) -> FileStats<'a> {
    let set = &parsed.ruleset;
    let graph = rulelint_parser::ChainGraph::build(set);
    let findings =
        rulelint_lint::check_with_graph(parsed, &graph, &rulelint_lint::Config::default());
    let model = rulelint_lint::kube::KubeModel::build(set, &graph);
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
            table: c.table().name(),
            chain: c.name(),
            rules: c.rule_count(),
        })
        .filter(|c| c.rules > 0)
        .collect();
    largest.sort_by(|a, b| b.rules.cmp(&a.rules).then(a.chain.cmp(b.chain)));
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
        diagnostics: SeverityCounts::of(&parsed.diagnostics),
        findings: SeverityCounts::of(&findings),
        findings_by_code: findings.iter().fold(Default::default(), |mut by_code, d| {
            *by_code.entry(d.code).or_default() += rulelint_parser::cap::stands_for(d);
            by_code
        }),
        services: model.services.len(),
        endpoints: model.services.iter().map(|s| s.endpoints.len()).sum(),
    }
}

pub fn human(stats: &FileStats<'_>) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let family = match stats.family {
        Some(rulelint_parser::Family::Ipv4) => "ipv4",
        Some(rulelint_parser::Family::Ipv6) => "ipv6",
        None => "family unknown",
    };
    let _ = write!(out, "{}: {family}", stats.path);
    if let Some(g) = &stats.generator {
        let _ = write!(out, ", {g}");
    }
    let _ = writeln!(out);
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

/// The Prometheus text exposition format of the files' figures, for node_exporter's textfile
/// collector: one gauge family per figure, a `file` label per dump.
pub fn prometheus(files: &[FileStats<'_>]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut family =
        |name: &str, help: &str, samples: &mut dyn Iterator<Item = (String, usize)>| {
            let _ = writeln!(
                out,
                "# HELP rulelint_{name} {help}\n# TYPE rulelint_{name} gauge"
            );
            for (labels, value) in samples {
                let _ = writeln!(out, "rulelint_{name}{{{labels}}} {value}");
            }
        };
    let file = |f: &FileStats<'_>| format!("file=\"{}\"", label_value(f.path));
    family(
        "rules",
        "Rules per table.",
        &mut files.iter().flat_map(|f| {
            f.tables.iter().map(move |t| {
                (
                    format!("{},table=\"{}\"", file(f), label_value(t.name)),
                    t.rules,
                )
            })
        }),
    );
    family(
        "chains",
        "Chains per table.",
        &mut files.iter().flat_map(|f| {
            f.tables.iter().map(move |t| {
                (
                    format!("{},table=\"{}\"", file(f), label_value(t.name)),
                    t.chains,
                )
            })
        }),
    );
    family(
        "kube_proxy_chains",
        "kube-proxy chains by prefix.",
        &mut files.iter().flat_map(|f| {
            let k = &f.kube;
            [
                ("KUBE-SVC", k.svc_chains),
                ("KUBE-SEP", k.sep_chains),
                ("KUBE-SVL", k.svl_chains),
                ("KUBE-EXT", k.ext_chains),
                ("KUBE-FW", k.fw_chains),
            ]
            .into_iter()
            .map(move |(prefix, n)| (format!("{},prefix=\"{prefix}\"", file(f)), n))
        }),
    );
    family(
        "services",
        "Service ports kube-proxy programs.",
        &mut files.iter().map(|f| (file(f), f.services)),
    );
    family(
        "endpoints",
        "Endpoint jumps of those Service ports.",
        &mut files.iter().map(|f| (file(f), f.endpoints)),
    );
    family(
        "findings",
        "Findings of rulelint check (default settings) by severity.",
        &mut files.iter().flat_map(|f| {
            let c = &f.findings;
            [("error", c.error), ("warning", c.warning), ("info", c.info)]
                .into_iter()
                .map(move |(s, n)| (format!("{},severity=\"{s}\"", file(f)), n))
        }),
    );
    family(
        "findings_by_code",
        "Findings of rulelint check (default settings) by code.",
        &mut files.iter().flat_map(|f| {
            f.findings_by_code
                .iter()
                .map(move |(code, &n)| (format!("{},code=\"{code}\"", file(f)), n))
        }),
    );
    family(
        "largest_chain_rules",
        "Rules of the largest chain.",
        &mut files.iter().filter_map(|f| {
            f.largest_chains.first().map(|c| {
                (
                    format!(
                        "{},table=\"{}\",chain=\"{}\"",
                        file(f),
                        label_value(c.table),
                        label_value(c.chain)
                    ),
                    c.rules,
                )
            })
        }),
    );
    out
}

/// A label value as the exposition format writes it: `\`, `"` and newlines escaped; other
/// control characters (from a file or chain name) written out.
fn label_value(text: &str) -> String {
    rulelint_parser::escape_control(
        &text
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n"),
    )
    .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_value("a\"b\\c\nd\x1be"), "a\\\"b\\\\c\\nd\\x1be");
    }
}
