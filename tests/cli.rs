//! The `rulelint` binary as a user runs it: exit codes, stdin, gzip, JSON.

mod common;

use common::{rulelint, stdout};
use std::io::Write;
use std::process::{Command, Stdio};

const DUMP: &str = "corpus/syntax/ok/kube-proxy-1.29-iptables-nft.txt";

#[test]
fn stats_reads_a_corpus_dump() {
    let out = rulelint(&["stats", DUMP], None);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("nat"), "{text}");
    assert!(text.contains("KUBE-SVC"), "{text}");
}

/// `parse` reads iptables-save only: on an nftables ruleset or IPVS state it says what the file
/// holds and which commands read it, not that it is no dump (exit 2 all the same). `stats`
/// reads them (`tests/stats_cli.rs`).
#[test]
fn parse_names_what_it_does_not_read_and_stats_reads_it() {
    for (file, holds, counted) in [
        (
            "corpus/nft/ok/01-overall-rules.txt",
            "holds an nftables ruleset",
            "nftables tables: 1",
        ),
        (
            "corpus/ipvs/healthy-node-ipvsadm.txt",
            "holds IPVS state",
            "virtual servers: 10",
        ),
    ] {
        let out = rulelint(&["parse", file], None);
        assert_eq!(out.status.code(), Some(2), "parse {file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(holds), "parse {file}: {err}");
        assert!(err.contains("`rulelint parse` does not read yet"), "{err}");
        assert!(err.contains("`stats`"), "{err}");
        assert!(!err.contains("iptables-save output"), "parse {file}: {err}");
        let out = rulelint(&["stats", file], None);
        assert_eq!(out.status.code(), Some(0), "stats {file}");
        assert!(out.stderr.is_empty(), "stats {file}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(counted), "stats {file}: {text}");
    }
    // A file that is none of them is still no dump.
    let out = rulelint(&["stats", "-"], Some(b"hello\n"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no ruleset"));
}

/// `stats` counts what `check` reports (lints included), not only the parser's diagnostics.
#[test]
fn stats_counts_the_findings_of_check() {
    let dump = "corpus/lints/RL401-bare-drop/fail-kube-firewall-bare-drop.txt";
    let stats = rulelint(&["stats", "--format", "json", dump], None);
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).expect("stats JSON");
    let check = rulelint(&["check", "--format", "json", dump], None);
    let check: serde_json::Value = serde_json::from_slice(&check.stdout).expect("check JSON");
    let reported = check["files"][0]["diagnostics"]
        .as_array()
        .expect("findings");
    let errors = reported.iter().filter(|d| d["severity"] == "error").count();
    assert!(errors > 0, "the example has an error: {check:#}");
    let findings = &stats["files"][0]["findings"];
    assert_eq!(findings["error"].as_u64(), Some(errors as u64), "{stats:#}");
    let total = ["error", "warning", "info"]
        .iter()
        .map(|s| findings[s].as_u64().unwrap_or(0))
        .sum::<u64>();
    assert_eq!(total, reported.len() as u64, "{stats:#}");
}

#[test]
fn parse_json_is_versioned_and_complete() {
    let out = rulelint(&["parse", "--format", "json", DUMP], None);
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["format_version"], 1);
    let tables = doc["files"][0]["tables"].as_array().expect("tables");
    assert!(tables.iter().any(|t| t["name"] == "nat"));
    let rules: usize = tables
        .iter()
        .flat_map(|t| t["chains"].as_array().expect("chains"))
        .map(|c| c["rules"].as_array().expect("rules").len())
        .sum();
    let text = std::fs::read_to_string(DUMP).expect("dump");
    assert_eq!(rules, text.lines().filter(|l| l.starts_with("-A ")).count());
}

#[test]
fn stdin_and_gzip_are_read() {
    let text = std::fs::read(DUMP).expect("dump");
    let out = rulelint(&["stats", "--format", "json", "-"], Some(&text));
    assert_eq!(out.status.code(), Some(0));
    let plain: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&text).expect("gzip");
    let dir = std::env::temp_dir().join(format!("rulelint-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("dump.txt.gz");
    std::fs::write(&path, gz.finish().expect("gzip")).expect("write gz");
    let out = rulelint(
        &[
            "stats",
            "--format",
            "json",
            path.to_str().expect("utf-8 path"),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let gzipped: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(plain["files"][0]["rules"], gzipped["files"][0]["rules"]);
    assert!(plain["files"][0]["rules"].as_u64().expect("count") > 0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unreadable_file_exits_2_with_a_message() {
    let out = rulelint(&["stats", "does/not/exist.txt"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read `does/not/exist.txt`"));
}

#[test]
fn input_without_iptables_content_exits_2() {
    let out = rulelint(
        &["parse", "-"],
        Some(b"NAME READY STATUS\ncoredns 1/1 Running\n"),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("RL114"), "{err}");
    assert!(err.contains("holds no iptables-save content"), "{err}");
}

#[test]
fn diagnostics_show_file_line_column_and_snippet() {
    let out = rulelint(
        &[
            "parse",
            "corpus/syntax/err/undeclared-chain-docker-user.txt",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("RL105 undeclared-chain"), "{err}");
    assert!(err.contains("undeclared-chain-docker-user.txt:"), "{err}");
    assert!(err.contains("help:"), "{err}");
}

#[test]
fn canonical_output_parses_back_cleanly() {
    let out = rulelint(
        &[
            "parse",
            "--format",
            "canonical",
            "corpus/syntax/ok/negation-and-quoting.txt",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let again = rulelint(&["parse", "-"], Some(&out.stdout));
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).is_empty());
}

#[test]
fn bad_flags_exit_2_and_help_exits_0() {
    assert_eq!(
        rulelint(&["stats", "--format", "xml", DUMP], None)
            .status
            .code(),
        Some(2)
    );
    let help = rulelint(&["--help"], None);
    assert_eq!(help.status.code(), Some(0));
    assert!(stdout(&help).contains("stats"));
}

#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    // A dump big enough that the JSON does not fit in the pipe buffer.
    let mut text = String::from("*filter\n:INPUT ACCEPT [0:0]\n");
    for i in 0..20_000 {
        text.push_str(&format!(
            "-A INPUT -s 10.{}.{}.0/24 -p tcp -m tcp --dport 443 -j ACCEPT\n",
            i / 256 % 256,
            i % 256
        ));
    }
    text.push_str("COMMIT\n");
    let dir = std::env::temp_dir().join(format!("rulelint-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("big.txt");
    std::fs::write(&path, text).expect("write dump");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rulelint"))
        .args([
            "parse",
            "--format",
            "json",
            path.to_str().expect("utf-8 path"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rulelint runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a line");
    // stdout is dropped here: the reader goes away like `| head -1`.
    let out = child.wait_with_output().expect("rulelint finishes");
    assert_eq!(first.trim(), "{");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn services_lists_each_service_port_with_endpoints() {
    let out = rulelint(&["services", DUMP], None);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("modern kube-proxy layout"), "{text}");
    assert!(text.contains("default/kubernetes:https"), "{text}");
    assert!(text.contains("192.168.50.11:6443"), "{text}");
    assert!(text.contains("has no local endpoints"), "{text}");
}

#[test]
fn services_json_has_addresses_and_probabilities() {
    let out = rulelint(&["services", "--format", "json", DUMP], None);
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["format_version"], 1);
    let file = &doc["files"][0];
    assert_eq!(file["layout"]["generation"], "modern");
    assert_eq!(file["layout"]["masquerade_mark"], "0x4000/0x4000");
    let services = file["services"].as_array().expect("services");
    let api = services
        .iter()
        .find(|s| s["name"] == "default/kubernetes:https")
        .expect("kubernetes service");
    assert_eq!(api["chains"]["cluster"], "KUBE-SVC-NPX46M4PTMTKRN6Y");
    assert_eq!(api["addresses"][0]["kind"], "cluster-ip");
    assert_eq!(api["addresses"][0]["address"], "10.96.0.1/32");
    assert_eq!(api["addresses"][0]["port"], 443);
    let probabilities: Vec<_> = api["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .map(|e| e["probability"].clone())
        .collect();
    assert_eq!(
        probabilities,
        [
            serde_json::json!(0.33333333349),
            serde_json::json!(0.5),
            serde_json::Value::Null
        ]
    );
}

#[test]
fn services_of_a_non_kubernetes_dump_and_of_no_dump() {
    let out = rulelint(&["services", "corpus/syntax/ok/ufw-host.txt"], None);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("no kube-proxy rules; 0 service ports"));
    let out = rulelint(&["services", "-"], Some(b"hello\n"));
    assert_eq!(out.status.code(), Some(2));
}

/// Binary input is refused by name; UTF-16 is read; a gzip bomb stops at the size limit.
#[test]
fn binary_utf16_and_oversized_input() {
    let exe = std::env::var("CARGO_BIN_EXE_rulelint").expect("binary");
    let out = rulelint(&[&exe], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ELF executable"),
        "{out:?}"
    );

    let text = std::fs::read_to_string(DUMP).expect("dump");
    let utf16: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let read = rulelint(&["stats", "--format", "json", "-"], Some(&utf16));
    let plain = rulelint(&["stats", "--format", "json", "-"], Some(text.as_bytes()));
    assert_eq!(read.status.code(), Some(0));
    assert_eq!(read.stdout, plain.stdout);
    assert!(String::from_utf8_lossy(&read.stderr).contains("UTF-16LE"));

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&vec![b'\n'; 3 << 20]).expect("gzip");
    let bomb = gz.finish().expect("gzip");
    let out = Command::new(&exe)
        .args(["stats", "-"])
        .env("RULELINT_MAX_DUMP_MB", "2")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().expect("stdin").write_all(&bomb)?;
            child.wait_with_output()
        })
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("decompresses to more than 2 MiB"),
        "{out:?}"
    );
}

#[test]
fn services_reads_nft_listings_beside_iptables_dumps() {
    let out = rulelint(
        &["services", "corpus/nft/ok/01-overall-rules.txt", DUMP],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("kube-proxy nftables mode"), "{text}");
    assert!(text.contains("ns4/svc4:p80"), "{text}");
    assert!(text.contains("10.180.0.5:80"), "{text}");
    assert!(text.contains("default/kubernetes:https"), "{text}");
    let out = rulelint(&["services", "-"], Some(b"# a comment\ntable ip t {\n"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "a cut listing still has a table"
    );
    let out = rulelint(
        &[
            "services",
            "--format",
            "json",
            "corpus/nft/ok/02-stale-chains-after-service-delete.txt",
        ],
        None,
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let file = &doc["files"][0];
    assert_eq!(file["services"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        file["stale_chains"][0],
        "service-MHHHYRWA-ns2/svc2/tcp/p8080"
    );
}

/// `services` reads the three forms of one nftables ruleset alike.
#[test]
fn services_reads_every_nft_form_alike() {
    let services = |file: &str| -> serde_json::Value {
        let out = rulelint(&["services", "--format", "json", file], None);
        assert_eq!(out.status.code(), Some(0), "{file}");
        let mut doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let file = &mut doc["files"][0];
        file["path"] = serde_json::Value::Null;
        // Lines differ between the forms; what the Services are does not.
        strip_lines(file);
        doc
    };
    let listing = services("corpus/nft/ok/01-overall-rules.txt");
    assert!(
        listing["files"][0]["services"]
            .as_array()
            .is_some_and(|s| s.len() == 6)
    );
    assert_eq!(services("corpus/nft/forms/01-overall-rules.json"), listing);
    assert_eq!(
        services("corpus/nft/forms/01-overall-rules.transaction.nft"),
        listing
    );
}

/// Without line numbers, and with a Service's addresses in one order: the listing prints map
/// elements in the kernel's order, the transaction in kube-proxy's.
fn strip_lines(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("line");
            if let Some(serde_json::Value::Array(addresses)) = map.get_mut("addresses") {
                addresses.sort_by_key(|a| a.to_string());
            }
            map.values_mut().for_each(strip_lines);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_lines),
        _ => {}
    }
}

/// `stats --format prometheus`: the exposition format, with the figures of the JSON document.
#[test]
fn stats_in_the_prometheus_format() {
    let out = rulelint(&["stats", "--format", "prometheus", DUMP], None);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let json = rulelint(&["stats", "--format", "json", DUMP], None);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let file = &doc["files"][0];
    let mut samples = std::collections::BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            assert!(rest.ends_with(" gauge"), "{line}");
            continue;
        }
        if line.starts_with("# HELP rulelint_") {
            continue;
        }
        // name{labels} value, every label quoted.
        let (series, value) = line.rsplit_once(' ').expect(line);
        let value: u64 = value.parse().expect(line);
        let (name, labels) = series.split_once('{').expect(line);
        assert!(
            name.starts_with("rulelint_") && labels.ends_with('}'),
            "{line}"
        );
        assert!(labels.starts_with(&format!("file=\"{DUMP}\"")), "{line}");
        samples.insert(series.to_string(), value);
    }
    for table in file["tables"].as_array().expect("tables") {
        let name = table["name"].as_str().unwrap();
        let key = format!("rulelint_rules{{file=\"{DUMP}\",table=\"{name}\"}}");
        assert_eq!(samples.get(&key).copied(), table["rules"].as_u64(), "{key}");
    }
    let svc = format!("rulelint_kube_proxy_chains{{file=\"{DUMP}\",prefix=\"KUBE-SVC\"}}");
    assert_eq!(
        samples.get(&svc).copied(),
        file["kube"]["svc_chains"].as_u64()
    );
    let errors = format!("rulelint_findings{{file=\"{DUMP}\",severity=\"error\"}}");
    assert_eq!(
        samples.get(&errors).copied(),
        file["findings"]["error"].as_u64()
    );
    assert!(samples.keys().any(|k| k.starts_with("rulelint_services{")));
}

#[test]
fn services_of_a_file_without_services_says_what_it_holds() {
    for (file, says) in [
        (
            "corpus/ipvs/healthy-node-ipset-save.txt",
            "holds IPVS state (ipvsadm, ipset, ip addr) but no Service",
        ),
        (
            "corpus/syntax/err/no-content-kubectl-get-pods.txt",
            "holds no ruleset",
        ),
    ] {
        let out = rulelint(&["services", file], None);
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{file}: {err}");
    }
}
