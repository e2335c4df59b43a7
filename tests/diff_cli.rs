//! `rulelint diff` as a user runs it: exit status by verdict, folders, JSON, bad input.

mod common;

use common::{TempDir, rulelint, stderr, stdout};

#[test]
fn healthy_nodes_exit_0_and_list_expected_differences() {
    let out = rulelint(
        &[
            "diff",
            "corpus/diff/healthy-pair/node-a.txt",
            "corpus/diff/healthy-pair/node-b.txt",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("no drift"), "{text}");
    assert!(text.contains("Expected differences"), "{text}");
    assert!(!text.contains('\x1b'), "no colour when not on a terminal");
}

#[test]
fn drift_exits_1_and_names_the_service() {
    let out = rulelint(&["diff", "corpus/diff/stale-endpoint"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "KUBE-SVC-I5LIAMPLWKMBJ54B (shop/cart:http) DNATs to 10.244.3.9:8080 on node-b only"
        ),
        "{text}"
    );
    // The folder's CASE.md is skipped with a note.
    assert!(stderr(&out).contains("skipping"), "{}", stderr(&out));
}

#[test]
fn json_is_versioned_and_a_group_names_its_odd_node() {
    let out = rulelint(
        &["diff", "--format", "json", "corpus/diff/group-odd-node"],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["mode"], "group");
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 12);
    assert_eq!(doc["odd_nodes"][0]["node"], "node-07");
    assert_eq!(doc["odd_nodes"].as_array().unwrap().len(), 1);
}

#[test]
fn colour_on_request() {
    let out = rulelint(
        &["diff", "--color", "always", "corpus/diff/missing-hook-jump"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains('\x1b'));
}

#[test]
fn bad_input_exits_2() {
    let one = rulelint(&["diff", "corpus/diff/healthy-pair/node-a.txt"], None);
    assert_eq!(one.status.code(), Some(2));
    assert!(
        stderr(&one).contains("at least two dumps"),
        "{}",
        stderr(&one)
    );

    let missing = rulelint(
        &[
            "diff",
            "corpus/diff/healthy-pair/node-a.txt",
            "no/such/file.txt",
        ],
        None,
    );
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read `no/such/file.txt`"));

    let prose = rulelint(
        &["diff", "corpus/diff/healthy-pair/node-a.txt", "-"],
        Some(b"kubectl get pods\nNAME READY\n"),
    );
    assert_eq!(prose.status.code(), Some(2));
    assert!(stderr(&prose).contains("holds no ruleset"));
}

#[test]
fn an_iptables_node_and_an_nftables_node_compare_at_the_service_level() {
    let out = rulelint(
        &["diff", "--format", "json", "corpus/diff/migration-pair"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let backends: Vec<&str> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["backend"].as_str().unwrap())
        .collect();
    assert_eq!(backends, ["iptables", "nftables"]);
    assert_eq!(doc["nodes"][1]["nft_generation"], "pre-dnat-filter");
    assert!(
        doc["notes"][0]
            .as_str()
            .unwrap()
            .contains("node-01 is in nftables mode")
    );

    let out = rulelint(&["diff", "corpus/diff/migration-stale-endpoint"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("on node-01 only; node-00 has no endpoint at"),
        "{text}"
    );
    assert!(
        text.contains("migration-stale-endpoint/node-01.txt:"),
        "{text}"
    );
}

/// `iptables-save; nft list ruleset` of one node in one file is one node with both backends.
#[test]
fn a_file_with_both_backends_is_one_node() {
    let iptables = std::fs::read_to_string("corpus/diff/migration-pair/node-00.txt").unwrap();
    let nft = std::fs::read_to_string("corpus/diff/migration-pair/node-01.txt").unwrap();
    let both = format!(
        "{}{}",
        iptables.replace("# node: node-00", "# node: both"),
        nft
    );
    let out = rulelint(
        &[
            "diff",
            "--format",
            "json",
            "corpus/diff/migration-pair/node-00.txt",
            "-",
        ],
        Some(both.as_bytes()),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["nodes"][1]["backend"], "iptables+nftables");
    assert_eq!(doc["nodes"][1]["name"], "both");
    assert_eq!(doc["nodes"][1]["parse_errors"], 0);
}

/// The three forms of one nftables ruleset are one node three times: no drift.
#[test]
fn the_three_nft_forms_of_one_node_agree() {
    let out = rulelint(
        &[
            "diff",
            "corpus/nft/ok/01-overall-rules.txt",
            "corpus/nft/forms/01-overall-rules.json",
            "corpus/nft/forms/01-overall-rules.transaction.nft",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("Comparing 3 nodes"),
        "{}",
        stdout(&out)
    );
}

/// Runs `rulelint` with `RULELINT_THREADS` set.
fn with_threads(threads: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rulelint"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RULELINT_THREADS", threads)
        .output()
        .expect("rulelint runs")
}

#[test]
fn the_thread_count_changes_no_byte_of_a_group_report() {
    for case in [
        "group-odd-node",
        "group-rejected-service",
        "migration-group",
    ] {
        let folder = format!("corpus/diff/{case}");
        for format in ["json", "human"] {
            let args = ["diff", "--format", format, folder.as_str()];
            let one = with_threads("1", &args);
            for threads in ["2", "5", "16"] {
                let many = with_threads(threads, &args);
                assert_eq!(one.status.code(), many.status.code(), "{case}");
                assert_eq!(
                    one.stdout, many.stdout,
                    "{case} {format}: {threads} threads"
                );
                assert_eq!(
                    one.stderr, many.stderr,
                    "{case} {format}: {threads} threads"
                );
            }
        }
    }
}

#[test]
fn summaries_and_dumps_mixed_give_the_report_of_dumps() {
    let dir = std::env::temp_dir().join(format!("rulelint-summaries-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let case = "corpus/diff/group-odd-node";
    let mut files: Vec<_> = std::fs::read_dir(case)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    let mut inputs = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        // Every other node as a summary (version 2, or version 1 plain), the rest as dumps.
        let input = if i % 2 == 0 {
            let (ext, version) = if i % 4 == 0 {
                ("sum.gz", "2")
            } else {
                ("json", "1")
            };
            let out = dir.join(format!("{stem}.{ext}"));
            let made = rulelint(
                &[
                    "summarize",
                    file.to_str().unwrap(),
                    "-o",
                    out.to_str().unwrap(),
                    "--format-version",
                    version,
                ],
                None,
            );
            assert_eq!(made.status.code(), Some(0), "{}", stderr(&made));
            out
        } else {
            file.clone()
        };
        inputs.push(input.to_string_lossy().into_owned());
    }
    let dumps = rulelint(&["diff", "--format", "json", case], None);
    let mut args = vec!["diff", "--format", "json"];
    args.extend(inputs.iter().map(String::as_str));
    let mixed = rulelint(&args, None);
    assert_eq!(
        mixed.status.code(),
        dumps.status.code(),
        "{}",
        stderr(&mixed)
    );
    let without_paths = |o: &std::process::Output| {
        let mut doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        for n in doc["nodes"].as_array_mut().unwrap() {
            n.as_object_mut().unwrap().remove("path");
        }
        doc
    };
    assert_eq!(without_paths(&mixed), without_paths(&dumps));
    // Version 2 is what `summarize` writes unless told.
    let head = std::fs::read(&inputs[0]).unwrap();
    assert!(rulelint_lint::summary::v2::is_v2(&head[..32]));
    // A pair of summaries (version 2 and 1, read whole) says where the rule level is.
    let pair = rulelint(&["diff", &inputs[0], &inputs[2]], None);
    assert!(
        stdout(&pair).contains("rule level left out"),
        "{}",
        stdout(&pair)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A summary is gzip: like `gzip`, `summarize` does not write it to a terminal, and says how to
/// save it; piped, it writes it. The terminal is a pseudo-terminal from util-linux's `script`.
#[test]
fn summarize_does_not_write_compressed_bytes_to_a_terminal() {
    let bin = env!("CARGO_BIN_EXE_rulelint");
    let dump = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/corpus/kube-pairs/small-cluster/iptables.txt"
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &format!("{bin} summarize {dump}"), "/dev/null"])
        .output()
        .expect("util-linux `script` runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("a summary is compressed: give `-o NODE.sum.gz`"),
        "{shown}"
    );
    assert!(
        !out.stdout.contains(&0x1f),
        "gzip bytes reached the terminal"
    );
    let piped = rulelint(&["summarize", dump], None);
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    assert!(rulelint_lint::summary::v2::is_v2(&piped.stdout));
}

/// Two large dumps are compared without holding both parses (from `RULELINT_DIFF_BOUNDED_BYTES`
/// bytes read): the first is read again with only the rules of the chains that differ. The
/// report must be the one the whole pair gives, byte for byte, in both formats.
#[test]
fn the_bounded_pair_path_writes_the_same_report() {
    let dir = common::TempDir::new("bounded-pair");
    // Counters before a rule (blanked with it), a chain only its rules name (kept whole), a
    // superseded table, a chain only one node has, one changed rule.
    let a = dir.write(
        "node-a.txt",
        "*filter\n:INPUT ACCEPT [0:0]\n:KEEP - [0:0]\n-A KEEP -j DROP\nCOMMIT\n\
         *filter\n:INPUT ACCEPT [0:0]\n:KEEP - [0:0]\n:CHANGED - [0:0]\n:ONLY-A - [0:0]\n\
         -A INPUT -j KEEP\n[5:300] -A KEEP -s 10.0.0.1/32 -j ACCEPT\n\
         -A CHANGED -s 10.0.0.2/32 -j DROP\n-A CHANGED -p tcp --dport 22 -j ACCEPT\n\
         -A UNDECLARED -j RETURN\n-A INPUT -j UNDECLARED\n-A ONLY-A -j RETURN\nCOMMIT\n",
    );
    let b = dir.write(
        "node-b.txt",
        "*filter\n:INPUT ACCEPT [0:0]\n:KEEP - [0:0]\n:CHANGED - [0:0]\n\
         -A INPUT -j KEEP\n[9:999] -A KEEP -s 10.0.0.1/32 -j ACCEPT\n\
         -A CHANGED -s 10.0.0.3/32 -j DROP\n-A CHANGED -p tcp --dport 22 -j ACCEPT\n\
         -A UNDECLARED -j RETURN\n-A INPUT -j UNDECLARED\nCOMMIT\n",
    );
    let mut pairs = vec![(a.clone(), b.clone()), (b, a.clone()), (a.clone(), a)];
    for case in std::fs::read_dir("corpus/diff").expect("corpus/diff") {
        let case = case.expect("entry").path();
        let mut nodes: Vec<_> = std::fs::read_dir(&case)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
        nodes.sort();
        if nodes.len() >= 2 {
            pairs.push((nodes[0].clone(), nodes[1].clone()));
        }
    }
    let run = |a: &std::path::Path, b: &std::path::Path, format: &str, bounded: bool| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rulelint"))
            .args(["diff", "--format", format])
            .arg(a)
            .arg(b)
            .env(
                "RULELINT_DIFF_BOUNDED_BYTES",
                if bounded { "0" } else { "" },
            )
            .env_remove("NO_COLOR")
            .output()
            .expect("rulelint runs")
    };
    let mut with_rule_changes = 0;
    for (a, b) in &pairs {
        for format in ["human", "json"] {
            let whole = run(a, b, format, false);
            let bounded = run(a, b, format, true);
            let what = format!("{} {} ({format})", a.display(), b.display());
            assert_eq!(stdout(&bounded), stdout(&whole), "{what}");
            assert_eq!(stderr(&bounded), stderr(&whole), "{what}");
            assert_eq!(bounded.status.code(), whole.status.code(), "{what}");
            if format == "json" {
                let doc: serde_json::Value = serde_json::from_slice(&whole.stdout).expect("JSON");
                if doc["rules"].as_array().is_some_and(|r| !r.is_empty()) {
                    with_rule_changes += 1;
                }
            }
        }
    }
    // Pairs whose first dump is read again with some chains' rules, not only agreeing pairs.
    assert!(
        with_rule_changes >= 4,
        "{with_rule_changes} pairs with rule changes"
    );
}

/// Standard input among many inputs is read once, before the others, and held while they
/// stream past (a mixed cluster reads every input twice): the report is the one of the same
/// text in a file, for an iptables group, a group in migration (iptables and nftables nodes)
/// and a summary piped in, wherever `-` stands.
#[test]
fn standard_input_in_a_group_gives_the_report_of_its_file() {
    let dir = TempDir::new("diff-stdin");
    for (case, node) in [
        ("group-odd-node", 3),
        ("migration-group", 0),
        ("migration-group", 1),
        ("migration-group", 3),
    ] {
        let folder = format!("corpus/diff/{case}");
        let mut files: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path().to_string_lossy().into_owned())
            .filter(|p| p.ends_with(".txt"))
            .collect();
        files.sort();
        let text = std::fs::read_to_string(&files[node]).unwrap();
        let summary = dir.0.join(format!("{case}-{node}.sum"));
        let made = rulelint(
            &["summarize", &files[node], "-o", summary.to_str().unwrap()],
            None,
        );
        assert_eq!(made.status.code(), Some(0), "{}", stderr(&made));
        // The dump named in its text, so that the file and standard input name one node.
        let named = dir.write(
            &format!("{case}-{node}.txt"),
            &format!("# node: piped\n{text}"),
        );
        let piped_summary = std::fs::read(&summary).unwrap();
        for (file, piped) in [
            (
                named.to_string_lossy().into_owned(),
                format!("# node: piped\n{text}").into_bytes(),
            ),
            (summary.to_string_lossy().into_owned(), piped_summary),
        ] {
            for format in ["human", "json"] {
                let mut from_file = files.clone();
                from_file[node] = file.clone();
                let mut from_stdin = files.clone();
                from_stdin[node] = "-".to_string();
                let run = |inputs: &[String], stdin: Option<&[u8]>| {
                    let mut args = vec!["diff", "--format", format];
                    args.extend(inputs.iter().map(String::as_str));
                    rulelint(&args, stdin)
                };
                let want = run(&from_file, None);
                let got = run(&from_stdin, Some(&piped));
                let case = format!("{case}, node {node} from {file}, {format}");
                assert_eq!(
                    got.status.code(),
                    want.status.code(),
                    "{case}: {}",
                    stderr(&got)
                );
                assert_eq!(
                    stdout(&got),
                    stdout(&want).replace(&file, "<stdin>"),
                    "{case}"
                );
                assert_eq!(
                    stderr(&got),
                    stderr(&want).replace(&file, "<stdin>"),
                    "{case}"
                );
            }
        }
    }
}
