//! `rulelint stats --format prometheus`: the text exposition format, for node_exporter's
//! textfile collector.
//!
//! The gauges of an iptables-save dump are those of the first release, byte for byte. An
//! nftables table is one more `table` of `rulelint_rules` and `rulelint_chains`, labelled
//! `family name` as `nft list tables` prints it (`table="ip kube-proxy"`): nft table names are
//! unique only within a family (`ip kube-proxy` and `ip6 kube-proxy` on a dual-stack node), and
//! a separate `family` label would give one gauge two label sets, iptables' without it. No
//! iptables table name holds a space, so the values never meet. Gauges only nftables or IPVS
//! state has are written only when some file has a sample of them.

use super::FileStats;
use std::fmt::Write;

/// One gauge family: its name (after `rulelint_`), help and samples (labels, value).
struct Family {
    name: &'static str,
    help: &'static str,
    samples: Vec<(String, usize)>,
}

fn write_family(out: &mut String, family: &Family) {
    let name = family.name;
    let _ = writeln!(
        out,
        "# HELP rulelint_{name} {}\n# TYPE rulelint_{name} gauge",
        family.help
    );
    for (labels, value) in &family.samples {
        let _ = writeln!(out, "rulelint_{name}{{{labels}}} {value}");
    }
}

fn file(f: &FileStats<'_>) -> String {
    format!("file=\"{}\"", label_value(f.path))
}

/// The iptables-save tables the gauges show: a table whose block a later block of the same
/// table replaces (what `iptables-restore` keeps) is left out, so each label set has one series;
/// node_exporter drops a textfile that holds one twice.
fn iptables_tables<'s>(f: &'s FileStats<'_>) -> impl Iterator<Item = &'s super::TableStats<'s>> {
    f.tables.iter().filter(|t| !t.superseded)
}

/// The tables of a file's nftables sections that the gauges show: a table listed again later
/// in the file is shown once, as last listed (one series per label set).
fn nft_tables<'s>(f: &'s FileStats<'_>) -> impl Iterator<Item = &'s super::nft::NftTableStats> {
    f.nft
        .iter()
        .flat_map(|n| n.tables.iter().filter(|t| !t.superseded))
}

/// The Prometheus text exposition format of the files' figures, for node_exporter's textfile
/// collector: one gauge family per figure, a `file` label per dump.
pub fn prometheus(files: &[FileStats<'_>]) -> String {
    let mut out = String::new();
    let table =
        |f: &FileStats<'_>, table: &str| format!("{},table=\"{}\"", file(f), label_value(table));
    let always = [
        Family {
            name: "rules",
            help: "Rules per table.",
            samples: files
                .iter()
                .flat_map(|f| {
                    iptables_tables(f)
                        .map(move |t| (table(f, t.name), t.rules))
                        .chain(nft_tables(f).map(move |t| (table(f, &t.table), t.rules)))
                })
                .collect(),
        },
        Family {
            name: "chains",
            help: "Chains per table.",
            samples: files
                .iter()
                .flat_map(|f| {
                    iptables_tables(f)
                        .map(move |t| (table(f, t.name), t.chains))
                        .chain(nft_tables(f).map(move |t| (table(f, &t.table), t.chains)))
                })
                .collect(),
        },
        Family {
            name: "kube_proxy_chains",
            help: "kube-proxy chains by prefix.",
            samples: files
                .iter()
                .flat_map(|f| {
                    let k = &f.kube;
                    let nft = f.nft.iter().flat_map(|n| n.kube.chains_by_prefix());
                    [
                        ("KUBE-SVC", k.svc_chains),
                        ("KUBE-SEP", k.sep_chains),
                        ("KUBE-SVL", k.svl_chains),
                        ("KUBE-EXT", k.ext_chains),
                        ("KUBE-FW", k.fw_chains),
                    ]
                    .into_iter()
                    .chain(nft)
                    .map(move |(prefix, n)| (format!("{},prefix=\"{prefix}\"", file(f)), n))
                })
                .collect(),
        },
        Family {
            name: "services",
            help: "Service ports kube-proxy programs.",
            samples: files.iter().map(|f| (file(f), f.services)).collect(),
        },
        Family {
            name: "endpoints",
            help: "Endpoint jumps of those Service ports.",
            samples: files.iter().map(|f| (file(f), f.endpoints)).collect(),
        },
        Family {
            name: "findings",
            help: "Findings of rulelint check (default settings) by severity.",
            samples: files
                .iter()
                .flat_map(|f| {
                    let c = &f.findings;
                    [("error", c.error), ("warning", c.warning), ("info", c.info)]
                        .into_iter()
                        .map(move |(s, n)| (format!("{},severity=\"{s}\"", file(f)), n))
                })
                .collect(),
        },
        Family {
            name: "findings_by_code",
            help: "Findings of rulelint check (default settings) by code.",
            samples: files
                .iter()
                .flat_map(|f| {
                    f.findings_by_code
                        .iter()
                        .map(move |(code, &n)| (format!("{},code=\"{code}\"", file(f)), n))
                })
                .collect(),
        },
        Family {
            name: "largest_chain_rules",
            help: "Rules of the largest chain.",
            samples: files
                .iter()
                .filter_map(|f| {
                    // The iptables part's largest chain, unless an nftables chain has more
                    // rules.
                    let iptables = f.largest_chains.first();
                    let nft = f.nft.as_ref().and_then(|n| n.largest_chains.first());
                    let largest = match (iptables, nft) {
                        (Some(i), Some(n)) if n.rules > i.rules => n,
                        (Some(i), _) => i,
                        (None, n) => n?,
                    };
                    Some((
                        format!(
                            "{},chain=\"{}\"",
                            table(f, &largest.table),
                            label_value(&largest.chain)
                        ),
                        largest.rules,
                    ))
                })
                .collect(),
        },
    ];
    for family in &always {
        write_family(&mut out, family);
    }
    let when_sampled = [
        Family {
            name: "sets",
            help: "Named sets and maps per nftables table.",
            samples: files
                .iter()
                .flat_map(|f| nft_tables(f).map(move |t| (table(f, &t.table), t.sets.len())))
                .collect(),
        },
        Family {
            name: "set_elements",
            help: "Elements of each named nftables set or map.",
            samples: files
                .iter()
                .flat_map(|f| {
                    nft_tables(f).flat_map(move |t| {
                        t.sets.iter().map(move |s| {
                            (
                                format!("{},set=\"{}\"", table(f, &t.table), label_value(&s.name)),
                                s.elements,
                            )
                        })
                    })
                })
                .collect(),
        },
        Family {
            name: "ipvs_virtual_servers",
            help: "IPVS virtual servers.",
            samples: files
                .iter()
                .filter_map(|f| Some((file(f), f.ipvs.as_ref()?.virtual_servers)))
                .collect(),
        },
        Family {
            name: "ipvs_real_servers",
            help: "Real servers of the IPVS virtual servers.",
            samples: files
                .iter()
                .filter_map(|f| Some((file(f), f.ipvs.as_ref()?.real_servers)))
                .collect(),
        },
        Family {
            name: "ipset_members",
            help: "Members of each ipset.",
            samples: files
                .iter()
                .flat_map(|f| {
                    f.ipvs.iter().flat_map(move |i| {
                        i.ipsets.iter().map(move |s| {
                            (
                                format!("{},set=\"{}\"", file(f), label_value(&s.name)),
                                s.members,
                            )
                        })
                    })
                })
                .collect(),
        },
    ];
    for family in when_sampled.iter().filter(|f| !f.samples.is_empty()) {
        write_family(&mut out, family);
    }
    out
}

/// A label value as the exposition format writes it: `\`, `"` and newlines escaped. Other
/// control characters (from a file or chain name) are written out as `\x1b` with the backslash
/// escaped: node_exporter's parser (`expfmt.TextParser`) knows no other escape and drops a
/// whole textfile that has one.
fn label_value(text: &str) -> String {
    rulelint_parser::escape_control(text)
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_value("a\"b\\c\nd\x1be"), "a\\\"b\\\\c\\nd\\\\x1be");
        // Names without control characters are written as they always were.
        assert_eq!(label_value("KUBE-SVC-X \"y\""), "KUBE-SVC-X \\\"y\\\"");
    }
}
