//! Snapshot tests over the IPVS-mode cases of `corpus/lints/<CODE>-<name>/` (`*.ipvs` files:
//! `iptables-save`, `ipset`, `ipvsadm` and `ip addr` output of one node, read by sections as
//! `rulelint check` reads a file): every `fail-*` case triggers the folder's code, no `pass-*`
//! case does, no case has any other error or warning, and the human and JSON output of every
//! case is pinned in `corpus/lints/snapshots/`. Also: the healthy node of `corpus/ipvs/` and
//! the shared IPVS samples.

use rulelint_lint::source::check_source;
use rulelint_lint::{Config, Severity, find_code};

mod common;
use common::corpus_dir;

/// (folder, file stem, text) of every `.ipvs` case, sorted.
fn cases() -> Vec<(String, String, String)> {
    common::lint_cases("ipvs")
}

fn rendered(path: &str, text: &str) -> String {
    common::rendered_source(path, text)
}

/// (code, count) of the findings, sorted by code.
fn counts(text: &str) -> Vec<(&'static str, usize)> {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for d in check_source(text, &Config::default()).diagnostics {
        match counts.iter_mut().find(|(c, _)| *c == d.code) {
            Some((_, n)) => *n += 1,
            None => counts.push((d.code, 1)),
        }
    }
    counts.sort();
    counts
}

#[test]
fn fail_cases_trigger_and_pass_cases_do_not() {
    let cases = cases();
    assert!(cases.len() >= 16, "only {} IPVS lint cases", cases.len());
    let mut failures = Vec::new();
    for (folder, stem, text) in &cases {
        let (code, name) = folder.split_once('-').expect("CODE-name");
        let entry = find_code(code).unwrap_or_else(|| panic!("{folder}: unknown code"));
        assert_eq!(entry.info.name, name, "{folder}");
        assert!(
            text.starts_with("# case: "),
            "{folder}/{stem}: first line must be `# case: ...`"
        );
        let found = check_source(text, &Config::default()).diagnostics;
        let hits = found.iter().filter(|d| d.code == code).count();
        let others: Vec<String> = found
            .iter()
            .filter(|d| d.code != code && d.severity >= Severity::Warning)
            // `ipvsadm -L` without `-n` is said once by the reader.
            .filter(|d| !(stem.contains("resolved") && d.code == "RL173"))
            .map(|d| format!("{} {}", d.code, d.message))
            .collect();
        if stem.starts_with("fail-") && hits == 0 {
            failures.push(format!("{folder}/{stem}: expected {code}, got none"));
        } else if stem.starts_with("pass-") && hits > 0 {
            failures.push(format!("{folder}/{stem}: expected no {code}, got {hits}"));
        } else if !stem.starts_with("fail-") && !stem.starts_with("pass-") {
            failures.push(format!(
                "{folder}/{stem}: name must start with fail- or pass-"
            ));
        }
        if !others.is_empty() {
            failures.push(format!("{folder}/{stem}: other findings {others:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn snapshots_of_human_and_json_output() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(corpus_dir().join("lints/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for (folder, stem, text) in cases() {
            let path = format!("{folder}/{stem}.ipvs");
            insta::assert_snapshot!(format!("{folder}-{stem}"), rendered(&path, &text));
        }
    });
}

/// The healthy node (`corpus/ipvs/`: iptables-save, ipset and ip addr made by the real tools,
/// ipvsadm in its own format) gives no error or warning, however its outputs are pasted:
/// `ipset save` or `ipset list`, in any order. Its Service without endpoints is information.
#[test]
fn healthy_node_has_no_error_or_warning() {
    let dir = corpus_dir().join("ipvs");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).expect(name);
    let iptables = read("healthy-node-iptables-save.txt");
    let save = read("healthy-node-ipset-save.txt");
    let list = read("healthy-node-ipset-list.txt");
    let ipvsadm = read("healthy-node-ipvsadm.txt");
    let addr = read("healthy-node-ip-addr.txt");
    let combined = read("healthy-node.txt");
    assert_eq!(combined, format!("{iptables}{save}{ipvsadm}{addr}"));
    for text in [
        combined.clone(),
        format!("{iptables}{list}\n{ipvsadm}{addr}"),
        format!("{addr}{ipvsadm}{save}{iptables}"),
        format!("{ipvsadm}\n{list}\n{addr}\n{iptables}"),
    ] {
        assert_eq!(counts(&text), [("RL471", 1)], "{text}");
    }
    let checked = check_source(&combined, &Config::default());
    let ipvs = checked.ipvs.expect("IPVS state read");
    assert_eq!(ipvs.virtual_servers.len(), 10);
    assert_eq!(ipvs.sets.len(), 17);
    assert_eq!(
        ipvs.interface("kube-ipvs0").map(|i| i.addresses.len()),
        Some(6)
    );
    assert_eq!(checked.iptables.ruleset.iter_tables().count(), 2);
}

/// What `check` says about the shared IPVS samples (`../shared/corpus/ipvs/`, beside the
/// checkout; skipped when absent): partial pastes, so information on what was skipped, and
/// the reader's own notes; never an error.
#[test]
fn shared_ipvs_corpus() {
    let dir = corpus_dir().join("../../shared/corpus/ipvs");
    if !dir.is_dir() {
        eprintln!("skipped: {} not found", dir.display());
        return;
    }
    let expected: &[(&str, &[(&str, usize)])] = &[
        ("01-ipvsadm-Ln-kubernetes-75443.txt", &[("RL478", 1)]),
        ("02-ipvsadm-Ln-sctp-kubernetes-81477.txt", &[("RL478", 1)]),
        // Names instead of addresses: said once, and the address checks are skipped.
        (
            "03-ipvsadm-L-resolved-names-kube-router-415.txt",
            &[("RL173", 1), ("RL478", 1)],
        ),
        (
            "04-ipset-list-ipv6-truncated-names-kube-proxy-13.txt",
            &[("RL478", 1)],
        ),
        ("05-synthetic-ipset-save-ipset7.17.txt", &[("RL478", 1)]),
        ("06-synthetic-ipset-list-ipset7.17.txt", &[("RL478", 1)]),
        // 50 of 143 members shown.
        (
            "07-ipset-list-KUBE-CLUSTER-IP-sealos-2108.txt",
            &[("RL174", 1), ("RL478", 1)],
        ),
    ];
    for (file, codes) in expected {
        let text = std::fs::read_to_string(dir.join(file)).expect("shared corpus file");
        assert_eq!(&counts(&text)[..], *codes, "{file}");
    }
}

/// Every case cut at every line end and every 7th byte: no panic, spans on character
/// boundaries inside the text, and no IPVS-mode error the whole case lacks; cut inside a line
/// (what the readers can tell), no new warning either. A listing cut at a line end cannot be
/// told from a whole one: `RL473`/`RL474` document it.
#[test]
fn cut_cases_report_no_new_warnings() {
    let config = Config::default();
    for (folder, stem, text) in cases() {
        let whole: Vec<&str> = check_source(&text, &config)
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect();
        let cuts = text
            .char_indices()
            .map(|(i, _)| i)
            .filter(|&i| i % 7 == 0 || text.as_bytes()[i] == b'\n');
        for cut in cuts {
            let part = &text[..cut];
            for d in check_source(part, &config).diagnostics {
                let (start, end) = (d.span.start as usize, d.span.end as usize);
                assert!(
                    start <= end
                        && end <= part.len()
                        && part.is_char_boundary(start)
                        && part.is_char_boundary(end),
                    "{folder}/{stem} cut at {cut}: span {start}..{end} of {}",
                    d.code
                );
                let ipvs_lint = d.code.starts_with("RL47");
                let mid_line = cut > 0 && text.as_bytes()[cut - 1] != b'\n';
                let worst = if mid_line {
                    Severity::Warning
                } else {
                    Severity::Error
                };
                if ipvs_lint && d.severity >= worst {
                    assert!(
                        whole.contains(&d.code),
                        "{folder}/{stem} cut at {cut}: {} {} not in the whole case",
                        d.code,
                        d.message
                    );
                }
            }
        }
    }
}

/// A Service port's addresses (`kind address proto/port`) and endpoints (destination, share).
type ServiceSummary<'a> = (Vec<String>, Vec<(&'a str, Option<f64>)>);

/// `rulelint services` on the healthy node: one Service port per cluster IP port, with its node
/// port and load-balancer IP joined by their shared real servers, kinds from the ipsets.
#[test]
fn services_of_the_healthy_node() {
    let text = std::fs::read_to_string(corpus_dir().join("ipvs/healthy-node.txt")).expect("node");
    rulelint_lint::kube::doc::with_services_file("node", &text, |doc, has_content| {
        assert!(has_content);
        assert_eq!(doc.layout.proxy_mode, "ipvs");
        assert!(doc.layout.ipvs);
        let summary: Vec<ServiceSummary<'_>> = doc
            .services
            .iter()
            .map(|s| {
                (
                    s.addresses
                        .iter()
                        .map(|a| {
                            format!(
                                "{} {} {}/{}",
                                serde_json::to_value(a.kind).unwrap().as_str().unwrap(),
                                a.address.as_deref().unwrap_or("-"),
                                a.protocol.unwrap_or("-"),
                                a.port.unwrap_or(0)
                            )
                        })
                        .collect(),
                    s.endpoints
                        .iter()
                        .map(|e| (e.destination.unwrap_or("-"), e.share))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(summary.len(), 7, "{summary:#?}");
        let lb = summary
            .iter()
            .find(|(a, _)| a[0] == "cluster-ip 10.96.200.20/32 tcp/443")
            .expect("the LoadBalancer Service");
        assert_eq!(
            lb.0,
            [
                "cluster-ip 10.96.200.20/32 tcp/443",
                "node-port 192.168.56.11/32 tcp/31443",
                "load-balancer-ip 203.0.113.10/32 tcp/443"
            ]
        );
        assert_eq!(lb.1, [("10.244.2.12:8443", Some(1.0))]);
        let dns = summary
            .iter()
            .find(|(a, _)| a[0] == "cluster-ip 10.96.0.10/32 udp/53")
            .expect("kube-dns over UDP");
        assert_eq!(
            dns.1,
            [("10.244.1.5:53", Some(0.5)), ("10.244.2.3:53", Some(0.5))]
        );
    });
}
