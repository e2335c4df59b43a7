//! The many-node diff from facts: whatever order nodes are read in, on however many threads,
//! and whether from dumps or from summaries, the report is the same byte for byte.

use rulelint_lint::diff::{
    CollectedFacts, FactOptions, Group, Node, NodeBackend, NodeFacts, NodeInput,
};
use rulelint_lint::diff::{compare, prepare, report};
use rulelint_lint::summary;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// (case, [(path, text)]) of every case folder of `corpus/diff`, sorted.
fn cases() -> Vec<(String, Vec<(String, String)>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/diff");
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus/diff")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir() && !p.ends_with("snapshots"))
        .collect();
    folders.sort();
    folders
        .into_iter()
        .map(|folder| {
            let case = folder.file_name().unwrap().to_string_lossy().into_owned();
            let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
                .expect("case folder")
                .map(|e| e.expect("entry").path())
                .filter(|p| p.extension().is_some_and(|x| x == "txt"))
                .collect();
            files.sort();
            let dumps = files
                .into_iter()
                .map(|f| {
                    let name = f.file_name().unwrap().to_string_lossy().into_owned();
                    let text = std::fs::read_to_string(&f).expect("dump");
                    (format!("{case}/{name}"), text)
                })
                .collect();
            (case, dumps)
        })
        .collect()
}

fn stem(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.trim_end_matches(".txt").to_string()
}

/// The report as `rulelint diff` prints it today: every dump read whole.
fn whole(dumps: &[(String, String)]) -> (String, String) {
    let inputs: Vec<NodeInput<'_>> = dumps.iter().map(|(_, t)| NodeInput::read(t)).collect();
    let nodes: Vec<Node<'_>> = prepare(dumps.iter().map(|(p, _)| stem(p)).zip(&inputs));
    let group = Group::from_nodes(&nodes);
    let comparison = compare(&group, &nodes);
    rendered(&comparison, dumps)
}

fn rendered(
    comparison: &rulelint_lint::diff::Comparison<'_>,
    dumps: &[(String, String)],
) -> (String, String) {
    let paths: Vec<&str> = dumps.iter().map(|(p, _)| p.as_str()).collect();
    let doc = report::document(comparison, &paths);
    (
        report::human(&doc, false),
        serde_json::to_string_pretty(&doc).expect("JSON"),
    )
}

/// One node's facts as the streaming reader takes them: its dump read alone, without knowing
/// the other nodes (the catalogue only when `catalog`).
fn facts_alone(path: &str, text: &str, options: FactOptions) -> NodeFacts {
    let input = NodeInput::read(text);
    let node = Node::from_input(stem(path), &input);
    let node = if options.catalog {
        node.with_catalog()
    } else {
        node
    };
    NodeFacts::from_node(&node, options)
}

/// A permutation of `0..n` from a seed (a small linear congruential shuffle).
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    for i in (1..n).rev() {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        order.swap(i, (state >> 33) as usize % (i + 1));
    }
    order
}

/// Reads the nodes on `threads` threads, each taking the next node of `order`, and inserts
/// their facts in the order they finish.
fn streamed(
    dumps: &[(String, String)],
    order: &[usize],
    threads: usize,
    options: FactOptions,
) -> Group {
    let group = Mutex::new(Group::new(dumps.len()));
    let next = Mutex::new(order.iter());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let Some(&i) = next.lock().unwrap().next() else {
                        break;
                    };
                    let (path, text) = &dumps[i];
                    let facts = facts_alone(path, text, options);
                    group.lock().unwrap().insert(i, facts);
                }
            });
        }
    });
    group.into_inner().unwrap()
}

#[test]
fn thread_count_and_read_order_change_no_byte() {
    let mut compared = 0;
    for (case, dumps) in cases().iter().filter(|(_, d)| d.len() > 2) {
        let expected = whole(dumps);
        let mixed = dumps.iter().any(|(_, t)| t.contains("table ip"));
        for (threads, seed) in [(1, 0), (1, 7), (4, 1), (4, 99), (3, 12345)] {
            let options = FactOptions {
                digests: true,
                catalog: mixed,
            };
            let order = shuffled(dumps.len(), seed);
            let group = streamed(dumps, &order, threads, options);
            assert!(group.missing().is_empty());
            // The streaming reader reads the iptables nodes of a mixed group again for their
            // catalogue; here it was read the first time, or not needed.
            if !group.lacking_catalog().is_empty() {
                continue;
            }
            let got = rendered(&group.compare(), dumps);
            assert_eq!(
                got.0, expected.0,
                "{case}: text, {threads} threads, order {order:?}"
            );
            assert_eq!(
                got.1, expected.1,
                "{case}: JSON, {threads} threads, order {order:?}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 10, "only {compared} group reports compared");
}

/// As `rulelint diff` reads dumps: each node packed into one locked group by a thread of its
/// own, whichever comes first sizing the tables the others follow.
#[test]
fn nodes_packed_by_threads_into_one_group_in_any_order_give_the_report_of_one_group() {
    let mut compared = 0;
    for (case, dumps) in cases() {
        let expected = whole(&dumps);
        let inputs: Vec<NodeInput<'_>> = dumps.iter().map(|(_, t)| NodeInput::read(t)).collect();
        let nodes: Vec<Node<'_>> = prepare(dumps.iter().map(|(p, _)| stem(p)).zip(&inputs));
        let options = FactOptions {
            digests: nodes.len() > 2,
            catalog: nodes.iter().any(|n| n.backend != NodeBackend::Iptables),
        };
        for seed in [0, 3, 42] {
            let order = shuffled(nodes.len(), seed);
            let group = Mutex::new(Group::new(nodes.len()));
            std::thread::scope(|scope| {
                for &i in &order {
                    let (node, group) = (&nodes[i], &group);
                    scope.spawn(move || group.lock().unwrap().insert_node(i, node, options));
                }
            });
            // The threads' order is the scheduler's; the same order inserted in turn is not.
            let mut in_turn = Group::new(nodes.len());
            for &i in &order {
                in_turn.insert_node(i, &nodes[i], options);
            }
            // A thread that finds the group busy collects its node's facts first, then packs
            // them: every other node here, the first included when the seed is odd.
            let mut collected_apart = Group::new(nodes.len());
            for (k, &i) in order.iter().enumerate() {
                if (k as u64 + seed) % 2 == 1 {
                    CollectedFacts::with(&nodes[i], options, |facts| {
                        collected_apart.insert_collected(i, facts);
                    });
                } else {
                    collected_apart.insert_node(i, &nodes[i], options);
                }
            }
            for (how, group) in [
                ("threads", group.into_inner().unwrap()),
                ("in turn", in_turn),
                ("collected apart", collected_apart),
            ] {
                assert!(group.missing().is_empty(), "{case}");
                let got = rendered(&group.compare().with_rules(&nodes), &dumps);
                assert_eq!(got.0, expected.0, "{case}: text, {how}, order {order:?}");
                assert_eq!(got.1, expected.1, "{case}: JSON, {how}, order {order:?}");
                compared += 1;
            }
        }
    }
    assert!(compared >= 15, "only {compared} reports compared");
}

#[test]
fn a_mixed_group_read_without_catalogues_asks_for_them() {
    let (_, dumps) = cases()
        .into_iter()
        .find(|(c, _)| c == "migration-group")
        .expect("case");
    let options = FactOptions {
        digests: true,
        catalog: false,
    };
    let group = streamed(&dumps, &shuffled(dumps.len(), 3), 2, options);
    let iptables_only: Vec<usize> = group
        .infos()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.backend == NodeBackend::Iptables)
        .map(|(i, _)| i)
        .collect();
    assert!(!iptables_only.is_empty());
    assert_eq!(group.lacking_catalog(), iptables_only);
}

#[test]
fn summaries_round_trip_and_give_the_reports_of_dumps() {
    let mut groups = 0;
    for (case, dumps) in cases() {
        let options = FactOptions {
            digests: true,
            catalog: true,
        };
        let mut from_summaries = Group::new(dumps.len());
        for (i, (path, text)) in dumps.iter().enumerate() {
            let facts = facts_alone(path, text, options);
            let json = summary::to_json(&facts);
            assert!(summary::is_summary(&json), "{case}: {path}");
            let read = summary::from_json(&json).expect("a summary reads back");
            assert_eq!(read.info, facts.info, "{case}: {path}");
            assert_eq!(read.services, facts.services, "{case}: {path}");
            assert_eq!(read.catalog, facts.catalog, "{case}: {path}");
            assert_eq!(read.chains, facts.chains, "{case}: {path}");
            from_summaries.insert(i, read);
        }
        let (text, json) = whole(&dumps);
        let (summary_text, summary_json) = rendered(&from_summaries.compare(), &dumps);
        if dumps.len() > 2 {
            assert_eq!(summary_text, text, "{case}: text from summaries");
            assert_eq!(summary_json, json, "{case}: JSON from summaries");
            groups += 1;
        } else {
            // A pair of summaries has no rule level: its differences are those of the dumps.
            let differences = |j: &str| {
                let v: serde_json::Value = serde_json::from_str(j).unwrap();
                v["differences"].clone()
            };
            assert_eq!(differences(&summary_json), differences(&json), "{case}");
        }
    }
    assert!(groups >= 3);
}

#[test]
fn a_damaged_summary_is_an_error_not_a_panic() {
    let (_, dumps) = cases()
        .into_iter()
        .find(|(c, _)| c == "stale-endpoint")
        .expect("case");
    let (path, text) = &dumps[0];
    let json = summary::to_json(&facts_alone(path, text, FactOptions::default()));
    // Every prefix, and a name index past the table.
    for cut in (0..json.len()).step_by(97) {
        let _ = summary::from_json(&json[..cut]);
    }
    let damaged = json.replacen("[0,0,", "[0,999999,", 1);
    assert!(summary::from_json(&damaged).is_err());
    let other_version = json.replacen("\"format_version\":1", "\"format_version\":3", 1);
    assert!(
        summary::from_json(&other_version)
            .unwrap_err()
            .to_string()
            .contains("version 3")
    );
    // A version 1 document claiming version 2 is not read as an empty version 2 summary.
    let claims_two = json.replacen("\"format_version\":1", "\"format_version\":2", 1);
    assert!(summary::from_json(&claims_two).is_err());
    // Messages quote the file: a crafted field cannot reach the terminal as an escape sequence,
    // whether the shape (serde) or a value (a backend, a fact) is wrong.
    for crafted in [
        json.replacen("\"backend\":\"iptables\"", "\"backend\":\"\\u001b[31m\"", 1),
        json.replacen("\"rules\":", "\"rules\":\"\\u001b[31m\",\"was\":", 1),
    ] {
        assert_ne!(crafted, json);
        let message = summary::from_json(&crafted).unwrap_err().to_string();
        assert!(!message.contains('\x1b'), "{message}");
        // Quoted, escaped (serde writes `\u{1b}[31m`, rulelint `\x1b[31m`).
        assert!(
            message.contains("1b}[31m") || message.contains("\\x1b[31m"),
            "{message}"
        );
    }
}

/// The text of a version 2 summary as `zcat` prints it.
fn zcat(bytes: &[u8]) -> String {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_string(&mut text)
        .expect("a version 2 summary is gzip");
    text
}

#[test]
fn version_2_summaries_alone_or_mixed_give_the_reports_of_dumps() {
    let options = FactOptions {
        digests: true,
        catalog: true,
    };
    let mut groups = 0;
    for (case, dumps) in cases() {
        let (text, json) = whole(&dumps);
        let files: Vec<Vec<u8>> = dumps
            .iter()
            .map(|(path, text)| summary::v2::write(&facts_alone(path, text, options)))
            .collect();
        // Every node from its chunks; every node read whole (as `zcat` shows it); and every
        // other node from a version 2 summary, the rest from a version 1 summary or a dump.
        let mut chunked = Group::new(dumps.len());
        let mut read_whole = Group::new(dumps.len());
        let mut mixed = Group::new(dumps.len());
        // Lines left in the files, read back for the report only.
        let mut from_files = Group::new(dumps.len());
        let stored: std::sync::Arc<Vec<(String, Vec<u8>)>> = std::sync::Arc::new(
            dumps
                .iter()
                .map(|(p, _)| p.clone())
                .zip(files.iter().cloned())
                .collect(),
        );
        let read_back = std::sync::Arc::clone(&stored);
        let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&reads);
        from_files.read_lines_with(move |path, offset, len| {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (_, bytes) = read_back.iter().find(|(p, _)| p == path)?;
            bytes
                .get(offset as usize..offset as usize + len as usize)
                .map(<[u8]>::to_vec)
        });
        for (i, ((path, dump), file)) in dumps.iter().zip(&files).enumerate() {
            assert!(summary::v2::is_v2(file), "{case}: {path}");
            let parsed = summary::v2::Summary::parse(file.clone()).expect("reads back");
            chunked.insert_summary(i, &parsed).expect("reads back");
            from_files
                .insert_summary_from(i, &parsed, path)
                .expect("reads back");
            let as_text = zcat(file);
            assert!(summary::is_summary(&as_text), "{case}: {path}");
            read_whole.insert(i, summary::from_json(&as_text).expect("reads back"));
            match i % 3 {
                0 => mixed.insert_summary(i, &parsed).expect("reads back"),
                1 => mixed.insert(
                    i,
                    summary::from_json(&summary::to_json(&facts_alone(path, dump, options)))
                        .expect("reads back"),
                ),
                _ => mixed.insert(i, facts_alone(path, dump, options)),
            }
        }
        for (how, group) in [
            ("chunks", &chunked),
            ("text", &read_whole),
            ("mixed", &mixed),
            ("files", &from_files),
        ] {
            let (got_text, got_json) = rendered(&group.compare(), &dumps);
            if dumps.len() > 2 {
                assert_eq!(got_text, text, "{case}: text from {how}");
                assert_eq!(got_json, json, "{case}: JSON from {how}");
            } else {
                let differences = |j: &str| {
                    let v: serde_json::Value = serde_json::from_str(j).unwrap();
                    v["differences"].clone()
                };
                assert_eq!(differences(&got_json), differences(&json), "{case}: {how}");
            }
        }
        groups += usize::from(dumps.len() > 2);
        // Lines are read back only for chunks that hold a fact the report shows.
        let chunks: usize = files
            .iter()
            .map(|f| {
                summary::v2::Summary::parse(f.clone())
                    .unwrap()
                    .chunks()
                    .count()
            })
            .sum();
        assert!(
            reads.load(std::sync::atomic::Ordering::Relaxed) <= chunks,
            "{case}"
        );
    }
    assert!(groups >= 3);
}

#[test]
fn version_2_summaries_in_any_order_give_one_report() {
    let options = FactOptions {
        digests: true,
        catalog: true,
    };
    for (case, dumps) in cases().iter().filter(|(_, d)| d.len() > 2) {
        let files: Vec<Vec<u8>> = dumps
            .iter()
            .map(|(path, text)| summary::v2::write(&facts_alone(path, text, options)))
            .collect();
        let mut reports = Vec::new();
        for seed in [0, 7, 99] {
            let mut group = Group::new(dumps.len());
            for i in shuffled(dumps.len(), seed) {
                let parsed = summary::v2::Summary::parse(files[i].clone()).expect("reads");
                group.insert_summary(i, &parsed).expect("reads");
            }
            reports.push(rendered(&group.compare(), dumps));
        }
        assert!(reports.windows(2).all(|w| w[0] == w[1]), "{case}");
    }
}

/// The members of a version 2 file: (start, end) of each, by the lengths in their headers.
fn members(file: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 21 <= file.len() {
        let len = u32::from_le_bytes(file[at + 16..at + 20].try_into().unwrap()) as usize;
        out.push((at, at + len));
        at += len;
    }
    out
}

#[test]
fn a_node_holding_a_chunk_twice_counts_once_as_its_facts_do() {
    let options = FactOptions {
        digests: true,
        catalog: true,
    };
    let mut checked = 0;
    for (case, dumps) in cases().iter().filter(|(_, d)| d.len() > 2) {
        let mut files: Vec<Vec<u8>> = dumps
            .iter()
            .map(|(path, text)| summary::v2::write(&facts_alone(path, text, options)))
            .collect();
        // The first node's first chunk (facts and lines) written twice: counting its chunks
        // once each for every node must give what counting fact by fact gives.
        let m = members(&files[0]);
        if m.len() < 3 {
            continue;
        }
        let pair = files[0][m[1].0..m[2].1].to_vec();
        files[0].extend_from_slice(&pair);
        let mut by_chunks = Group::new(dumps.len());
        let mut by_facts = Group::new(dumps.len());
        for (i, file) in files.iter().enumerate() {
            let parsed = summary::v2::Summary::parse(file.clone()).expect("reads");
            by_chunks.insert_summary(i, &parsed).expect("reads");
            by_facts.insert(i, parsed.to_facts().expect("reads"));
        }
        assert_eq!(
            rendered(&by_chunks.compare(), dumps),
            rendered(&by_facts.compare(), dumps),
            "{case}"
        );
        checked += 1;
    }
    assert!(checked >= 3);
}

#[test]
fn a_damaged_version_2_summary_is_an_error_not_a_panic() {
    let (_, dumps) = cases()
        .into_iter()
        .find(|(c, _)| c == "stale-endpoint")
        .expect("case");
    let options = FactOptions {
        digests: true,
        catalog: true,
    };
    let file = summary::v2::write(&facts_alone(&dumps[0].0, &dumps[0].1, options));
    let other = summary::v2::write(&facts_alone(&dumps[1].0, &dumps[1].1, options));
    let read = |bytes: Vec<u8>| -> bool {
        let Ok(parsed) = summary::v2::Summary::parse(bytes) else {
            return false;
        };
        let mut group = Group::new(2);
        let second = summary::v2::Summary::parse(other.clone()).expect("reads");
        if group.insert_summary(0, &parsed).is_err() || group.insert_summary(1, &second).is_err() {
            return false;
        }
        // Lines are read only for the report: a damaged lines part shows no lines.
        let _ = rendered(&group.compare(), &dumps[..2]);
        true
    };
    assert!(read(file.clone()));
    // Every prefix, and every byte flipped in turn (a stride through the file).
    let mut refused = 0;
    for cut in (0..file.len()).step_by(13) {
        refused += usize::from(!read(file[..cut].to_vec()));
    }
    assert!(refused > 0);
    for at in (0..file.len()).step_by(7) {
        let mut damaged = file.clone();
        damaged[at] ^= 0x5a;
        let _ = read(damaged);
    }
    // Text that inflates but does not read: a name reference past the facts above.
    let text = zcat(&file).replacen("\t\\\"", "\t\\9", 1);
    assert!(summary::from_json(&text).is_err());
    // Another version of the header is named in the error.
    let three = zcat(&file).replacen("\"format_version\":2", "\"format_version\":3", 1);
    let error = summary::from_json(&three).unwrap_err().to_string();
    assert!(error.contains("version 3"), "{error}");
}
