//! `rulelint stats` on every input `check` reads: nftables rulesets in their three forms, IPVS
//! state, files holding several kinds; the Prometheus output read back as node_exporter's
//! parser reads it.

mod common;

use common::{TempDir, rulelint, stderr, stdout};
use serde_json::Value;
use std::collections::BTreeMap;

const IPTABLES: &str = "corpus/kube/healthy/counters-iptables-save-c.txt";
const NFT_LIST: &str = "corpus/nft/ok/01-overall-rules.txt";
const NFT_JSON: &str = "corpus/nft/forms/01-overall-rules.json";
const NFT_ADD: &str = "corpus/nft/forms/01-overall-rules.transaction.nft";
const IPVS_NODE: &str = "corpus/ipvs/healthy-node.txt";
const IPVSADM: &str = "corpus/ipvs/healthy-node-ipvsadm.txt";
const IPSET_SAVE: &str = "corpus/ipvs/healthy-node-ipset-save.txt";

/// `stats --format json` of one file: its entry.
fn stats_json(path: &str) -> Value {
    let out = rulelint(&["stats", "--format", "json", path], None);
    assert_eq!(out.status.code(), Some(0), "{path}: {}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stats JSON");
    assert_eq!(doc["format_version"], 1);
    doc["files"][0].clone()
}

/// Findings of `check --format json` (no configuration) by severity.
fn check_severities(path: &str) -> BTreeMap<String, u64> {
    let out = rulelint(&["check", "--no-config", "--format", "json", path], None);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("check JSON");
    let mut counts = BTreeMap::new();
    for d in doc["files"][0]["diagnostics"]
        .as_array()
        .expect("diagnostics")
    {
        *counts
            .entry(d["severity"].as_str().expect("severity").to_string())
            .or_default() += 1;
    }
    counts
}

/// The Service ports `services --format json` lists, and their endpoints.
fn services_of(path: &str) -> (u64, u64) {
    let out = rulelint(&["services", "--format", "json", path], None);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("services JSON");
    let services = doc["files"][0]["services"].as_array().expect("services");
    let endpoints = services
        .iter()
        .map(|s| {
            s["endpoints"]
                .as_array()
                .expect("endpoints")
                .iter()
                .filter(|e| e["affinity"] != true)
                .count() as u64
        })
        .sum();
    (services.len() as u64, endpoints)
}

/// `stats` counts what `check` and `services` report for the same file.
fn assert_agrees_with_check_and_services(path: &str, stats: &Value) {
    let findings = check_severities(path);
    for severity in ["error", "warning", "info"] {
        assert_eq!(
            stats["findings"][severity].as_u64(),
            Some(findings.get(severity).copied().unwrap_or(0)),
            "{path} {severity}: {stats:#}"
        );
    }
    let by_code: u64 = stats["findings_by_code"]
        .as_object()
        .expect("by code")
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(by_code, findings.values().sum::<u64>(), "{path}");
    let (services, endpoints) = services_of(path);
    assert_eq!(stats["services"].as_u64(), Some(services), "{path}");
    assert_eq!(stats["endpoints"].as_u64(), Some(endpoints), "{path}");
}

/// The nftables figures with what differs between the forms by design taken out: a priority as
/// written (`dstnat` in a listing, `-100` in JSON) and the order sets are declared in.
fn comparable_nft(stats: &Value) -> Value {
    let mut nft = stats["nft"].clone();
    for table in nft["tables"].as_array_mut().expect("tables") {
        for chain in table["base_chains"].as_array_mut().expect("base chains") {
            chain.as_object_mut().unwrap().remove("priority_text");
        }
        let sets = table["sets"].as_array_mut().expect("sets");
        sets.sort_by_key(|s| s["name"].as_str().unwrap().to_string());
    }
    nft
}

#[test]
fn the_three_nft_forms_of_one_ruleset_give_the_same_figures() {
    let list = stats_json(NFT_LIST);
    let kinds = |s: &Value| -> Vec<String> {
        s["sections"]
            .as_array()
            .expect("sections")
            .iter()
            .map(|s| s["kind"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kinds(&list), ["nft"]);
    let nft = &list["nft"];
    // What the listing holds, counted by hand: one table, 32 chains of which 8 base chains,
    // 57 rules, three sets and five maps, 24 elements.
    assert_eq!(nft["tables"][0]["table"], "ip kube-proxy");
    assert_eq!(nft["chains"], 32);
    assert_eq!(nft["base_chains"], 8);
    assert_eq!(nft["rules"], 57);
    assert_eq!(
        (nft["sets"].clone(), nft["maps"].clone()),
        (3.into(), 5.into())
    );
    assert_eq!(nft["elements"], 24);
    assert_eq!(nft["kube"]["service_ips"], 9);
    assert_eq!(nft["kube"]["service_nodeports"], 3);
    assert_eq!(nft["kube"]["no_endpoint_services"], 3);
    assert_eq!(nft["kube"]["service_chains"], 5);
    assert_eq!(nft["kube"]["endpoint_chains"], 6);
    let prerouting = nft["tables"][0]["base_chains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["chain"] == "nat-prerouting")
        .expect("nat-prerouting");
    assert_eq!(prerouting["hook"], "prerouting");
    assert_eq!(prerouting["priority"], -100);
    assert_eq!(prerouting["policy"], "accept");
    // The iptables figures are those of no iptables-save at all.
    assert_eq!(list["tables"], Value::Array(vec![]));
    assert_eq!(list["rules"], 0);
    assert_agrees_with_check_and_services(NFT_LIST, &list);
    for (other, kind) in [(NFT_JSON, "nft-json"), (NFT_ADD, "nft-transaction")] {
        let stats = stats_json(other);
        assert_eq!(kinds(&stats), [kind], "{other}");
        assert_eq!(comparable_nft(&stats), comparable_nft(&list), "{other}");
        for field in ["services", "endpoints", "findings", "findings_by_code"] {
            assert_eq!(stats[field], list[field], "{other} {field}");
        }
        assert_agrees_with_check_and_services(other, &stats);
    }
}

#[test]
fn ipvs_state_is_counted() {
    let stats = stats_json(IPVSADM);
    let text = std::fs::read_to_string(IPVSADM).unwrap();
    let virtual_servers = text
        .lines()
        .filter(|l| {
            ["TCP ", "UDP ", "SCTP ", "FWM "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .count();
    let real_servers = text
        .lines()
        .filter(|l| l.trim_start().starts_with("-> ") && !l.contains("RemoteAddress"))
        .count();
    assert!(virtual_servers > 0 && real_servers > 0);
    let ipvs = &stats["ipvs"];
    assert_eq!(ipvs["virtual_servers"], virtual_servers as u64);
    assert_eq!(ipvs["real_servers"], real_servers as u64);
    assert_eq!(ipvs["outputs"], serde_json::json!(["ipvsadm"]));
    assert_agrees_with_check_and_services(IPVSADM, &stats);

    // `ipset save`: every `create` is a set, every `add` a member of its set.
    let stats = stats_json(IPSET_SAVE);
    let text = std::fs::read_to_string(IPSET_SAVE).unwrap();
    let mut members: BTreeMap<&str, u64> = BTreeMap::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["create", name, ..] => {
                members.entry(name).or_default();
            }
            ["add", name, ..] => *members.entry(name).or_default() += 1,
            _ => {}
        }
    }
    let counted: BTreeMap<&str, u64> = stats["ipvs"]["ipsets"]
        .as_array()
        .expect("ipsets")
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["members"].as_u64().unwrap()))
        .collect();
    assert_eq!(counted, members);
    assert_eq!(
        stats["ipvs"]["ipset_members"].as_u64(),
        Some(members.values().sum())
    );
}

#[test]
fn a_mixed_file_counts_every_section_under_its_kind() {
    let dir = TempDir::new("stats-mixed");
    let read = |p: &str| std::fs::read_to_string(p).unwrap();
    let mixed = dir.write(
        "node.txt",
        &format!("{}{}{}", read(IPTABLES), read(NFT_LIST), read(IPVSADM)),
    );
    let mixed = mixed.to_str().unwrap();
    let stats = stats_json(mixed);
    let kinds: Vec<&str> = stats["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["iptables", "nft", "ipvs"]);
    let iptables_lines = read(IPTABLES).lines().count() as u64;
    assert_eq!(
        stats["sections"][1]["line"].as_u64(),
        Some(iptables_lines + 1)
    );
    // Each part's figures are those of the part alone.
    let alone = stats_json(IPTABLES);
    for field in [
        "family",
        "generator",
        "tables",
        "chains",
        "rules",
        "largest_chains",
        "jumps",
        "unreachable_chains",
        "cycles",
        "kube",
    ] {
        assert_eq!(stats[field], alone[field], "{field}");
    }
    assert_eq!(stats["nft"], stats_json(NFT_LIST)["nft"]);
    assert_eq!(stats["ipvs"], stats_json(IPVSADM)["ipvs"]);
    assert_agrees_with_check_and_services(mixed, &stats);
    let human = stdout(&rulelint(&["stats", mixed], None));
    for part in [
        "iptables-save output, `nft list ruleset` text, IPVS state",
        "  iptables-save: ipv4",
        "  nftables tables: 1",
        "  IPVS state (ipvsadm):",
    ] {
        assert!(human.contains(part), "{part}: {human}");
    }
}

#[test]
fn iptables_dumps_keep_their_json_fields() {
    let stats = stats_json(IPTABLES);
    let mut keys: Vec<&str> = stats
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let mut documented = vec![
        "path",
        "family",
        "generator",
        "tables",
        "chains",
        "rules",
        "largest_chains",
        "jumps",
        "unreachable_chains",
        "cycles",
        "kube",
        "diagnostics",
        "findings",
        "findings_by_code",
        "services",
        "endpoints",
    ];
    documented.sort_unstable();
    assert_eq!(keys, documented);
}

/// Malformed nftables and IPVS input: counted, never a crash; the parse diagnostics are those
/// `check` reports.
#[test]
fn malformed_input_is_counted_not_fatal() {
    let mut files: Vec<_> = std::fs::read_dir("corpus/nft/err")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e != "snap" && e != "md"))
        .collect();
    files.sort();
    assert!(files.len() > 5);
    for path in &files {
        let path = path.to_str().unwrap();
        let out = rulelint(&["stats", "--format", "json", path], None);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{path}: {err}");
        assert!(matches!(out.status.code(), Some(0 | 2)), "{path}: {err}");
        if out.status.code() == Some(0) {
            let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
            assert_agrees_with_check_and_services(path, &doc["files"][0]);
        }
    }
    // A listing cut in the middle of a chain: read, with the parser's findings counted.
    let text = std::fs::read_to_string(NFT_LIST).unwrap();
    let cut = &text[..text.len() / 2];
    let dir = TempDir::new("stats-cut");
    let path = dir.write("cut.txt", cut);
    let path = path.to_str().unwrap();
    let stats = stats_json(path);
    assert!(
        stats["diagnostics"]["error"].as_u64().unwrap() > 0,
        "{stats:#}"
    );
    assert_agrees_with_check_and_services(path, &stats);
}

/// One sample of the exposition format: name and labels (unescaped).
type Series = (String, Vec<(String, String)>);

/// Reads `text` as node_exporter's textfile collector does (`expfmt.TextParser`): `# HELP` and
/// `# TYPE` once per family and before its samples, a family's samples together, names and
/// label names of the allowed characters, label values with no escape but `\\`, `\"` and
/// `\n`, no series twice. Panics on the first violation.
fn parse_exposition(text: &str) -> BTreeMap<Series, u64> {
    let name_ok = |s: &str, colon: bool| {
        !s.is_empty()
            && !s.starts_with(|c: char| c.is_ascii_digit())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
    };
    let mut samples = BTreeMap::new();
    let mut typed: Vec<String> = Vec::new();
    let mut helped: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, _) = rest.split_once(' ').expect(line);
            assert!(!helped.contains(&name.to_string()), "HELP twice: {line}");
            helped.push(name.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect(line);
            assert_eq!(kind, "gauge", "{line}");
            assert!(!typed.contains(&name.to_string()), "TYPE twice: {line}");
            typed.push(name.to_string());
            current = Some(name.to_string());
            continue;
        }
        assert!(!line.starts_with('#') && !line.is_empty(), "{line:?}");
        let open = line.find('{').expect(line);
        let name = &line[..open];
        assert!(name_ok(name, true), "{line}");
        assert_eq!(
            current.as_deref(),
            Some(name),
            "sample outside its family: {line}"
        );
        assert!(helped.contains(&name.to_string()), "{line}");
        let mut labels = Vec::new();
        let mut rest = &line[open + 1..];
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let (label, after) = rest.split_once("=\"").expect(line);
            assert!(name_ok(label, false), "label {label:?}: {line}");
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                let (i, c) = chars.next().expect("closing quote");
                match c {
                    '"' => break i,
                    '\\' => match chars.next().expect("escape").1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        other => panic!("invalid escape sequence '\\{other}': {line}"),
                    },
                    c => value.push(c),
                }
            };
            labels.push((label.to_string(), value));
            rest = &after[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
        let value: u64 = rest.strip_prefix(' ').expect(line).parse().expect(line);
        let series = (name.to_string(), labels);
        assert!(
            samples.insert(series.clone(), value).is_none(),
            "series twice: {series:?}"
        );
    }
    samples
}

fn label(series: &Series, name: &str) -> Option<String> {
    series
        .1
        .iter()
        .find(|(l, _)| l == name)
        .map(|(_, v)| v.clone())
}

#[test]
fn prometheus_output_of_every_kind_parses_and_matches_the_json() {
    let dir = TempDir::new("stats-prom");
    // A file name with every character a label value must escape, and a control character
    // (written out as `\x1b`, its backslash escaped).
    let odd = dir.write(
        "node \"7\" \\ \x1b both.txt",
        &format!(
            "{}{}",
            std::fs::read_to_string(IPTABLES).unwrap(),
            std::fs::read_to_string(NFT_JSON).unwrap()
        ),
    );
    let odd = odd.to_str().unwrap();
    // One listing pasted twice: its gauges once (the later listing's), no series twice.
    let listing = std::fs::read_to_string(NFT_LIST).unwrap();
    let twice = dir.write("twice.txt", &format!("{listing}{listing}"));
    let twice = twice.to_str().unwrap();
    let files = [IPTABLES, NFT_LIST, NFT_ADD, IPVS_NODE, odd, twice];
    let mut args = vec!["stats", "--format", "prometheus"];
    args.extend(files);
    let out = rulelint(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let samples = parse_exposition(&stdout(&out));
    let value = |name: &str, labels: &[(&str, &str)]| -> Option<u64> {
        let key = (
            format!("rulelint_{name}"),
            labels
                .iter()
                .map(|(l, v)| (l.to_string(), v.to_string()))
                .collect(),
        );
        samples.get(&key).copied()
    };
    for path in files {
        let stats = stats_json(path);
        // The name as the label holds it once unescaped.
        let shown = path.replace('\x1b', "\\x1b");
        let file = shown.as_str();
        for t in stats["tables"].as_array().unwrap() {
            let table = t["name"].as_str().unwrap();
            let labels = [("file", file), ("table", table)];
            assert_eq!(
                value("rules", &labels),
                t["rules"].as_u64(),
                "{file} {table}"
            );
            assert_eq!(
                value("chains", &labels),
                t["chains"].as_u64(),
                "{file} {table}"
            );
        }
        for t in stats["nft"]["tables"].as_array().into_iter().flatten() {
            let table = t["table"].as_str().unwrap();
            let labels = [("file", file), ("table", table)];
            assert_eq!(
                value("rules", &labels),
                t["rules"].as_u64(),
                "{file} {table}"
            );
            assert_eq!(
                value("chains", &labels),
                t["chains"].as_u64(),
                "{file} {table}"
            );
            for s in t["sets"].as_array().unwrap() {
                let name = s["name"].as_str().unwrap();
                let labels = [("file", file), ("table", table), ("set", name)];
                assert_eq!(
                    value("set_elements", &labels),
                    s["elements"].as_u64(),
                    "{name}"
                );
            }
        }
        if let Some(n) = stats["nft"]["kube"]["service_ips"].as_u64() {
            let labels = [
                ("file", file),
                ("table", "ip kube-proxy"),
                ("set", "service-ips"),
            ];
            assert_eq!(value("set_elements", &labels), Some(n), "{file}");
            let labels = [("file", file), ("prefix", "service-")];
            assert_eq!(
                value("kube_proxy_chains", &labels),
                stats["nft"]["kube"]["service_chains"].as_u64()
            );
        }
        if let Some(ipvs) = stats.get("ipvs") {
            let labels = [("file", file)];
            assert_eq!(
                value("ipvs_virtual_servers", &labels),
                ipvs["virtual_servers"].as_u64()
            );
            assert_eq!(
                value("ipvs_real_servers", &labels),
                ipvs["real_servers"].as_u64()
            );
            for s in ipvs["ipsets"].as_array().unwrap() {
                let labels = [("file", file), ("set", s["name"].as_str().unwrap())];
                assert_eq!(value("ipset_members", &labels), s["members"].as_u64());
            }
        }
        assert_eq!(
            value("services", &[("file", file)]),
            stats["services"].as_u64()
        );
        for severity in ["error", "warning", "info"] {
            let labels = [("file", file), ("severity", severity)];
            assert_eq!(
                value("findings", &labels),
                stats["findings"][severity].as_u64()
            );
        }
    }
    // Every file, odd name included, has its samples under its own name.
    for file in files {
        let shown = file.replace('\x1b', "\\x1b");
        assert!(
            samples.keys().any(|s| s.0 == "rulelint_services"
                && label(s, "file").as_deref() == Some(shown.as_str())),
            "{file}"
        );
    }
}

/// Gauges only nftables or IPVS state has are not written for iptables-save dumps alone: the
/// textfile of an iptables node is what it was.
#[test]
fn iptables_alone_writes_only_the_iptables_gauges() {
    let out = rulelint(&["stats", "--format", "prometheus", IPTABLES], None);
    let samples = parse_exposition(&stdout(&out));
    let names: std::collections::BTreeSet<&str> = samples.keys().map(|s| s.0.as_str()).collect();
    let expected = [
        "rulelint_chains",
        "rulelint_endpoints",
        "rulelint_findings",
        "rulelint_kube_proxy_chains",
        "rulelint_largest_chain_rules",
        "rulelint_rules",
        "rulelint_services",
    ];
    // findings_by_code has no sample for a dump without findings.
    assert_eq!(names.into_iter().collect::<Vec<_>>(), expected);
}

#[test]
fn an_iptables_table_given_twice_is_one_series_of_the_block_in_effect() {
    // iptables-restore keeps the last block of a table; the JSON lists both, flagged.
    let dir = TempDir::new("stats-twice");
    let file = dir.write(
        "twice.txt",
        "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j ACCEPT\nCOMMIT\n\
         *nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n\
         -A PREROUTING -j KUBE-SERVICES\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n",
    );
    let path = file.to_str().unwrap();
    let out = rulelint(&["stats", "--format", "prometheus", path], None);
    let samples = parse_exposition(&stdout(&out));
    let of = |name: &str| -> Vec<u64> {
        samples
            .iter()
            .filter(|(s, _)| s.0 == name && label(s, "table").as_deref() == Some("nat"))
            .map(|(_, &v)| v)
            .collect()
    };
    assert_eq!(of("rulelint_rules"), [2]);
    assert_eq!(of("rulelint_chains"), [2]);
    let json = stats_json(path);
    let superseded: Vec<bool> = json["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["superseded"].as_bool().unwrap())
        .collect();
    assert_eq!(superseded, [true, false]);
}
