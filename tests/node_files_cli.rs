//! One node given as several files: `check --node NAME a b c` checks the outputs together and
//! shows each finding in its own file; a folder's subfolder is one node for `check` and `diff`;
//! without `--node`, each file is a node as before.

mod common;

use common::{rulelint, rulelint_in, stderr, stdout};
use std::path::{Path, PathBuf};

const PARTS: [&str; 4] = [
    "corpus/ipvs/healthy-node-iptables-save.txt",
    "corpus/ipvs/healthy-node-ipset-save.txt",
    "corpus/ipvs/healthy-node-ipvsadm.txt",
    "corpus/ipvs/healthy-node-ip-addr.txt",
];

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect(path)
}

/// The node names of a `diff --format json` report, in order.
fn node_names(out: &std::process::Output) -> Vec<String> {
    let doc: serde_json::Value = serde_json::from_str(&stdout(out)).expect("JSON");
    doc["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["name"].as_str().expect("name").to_string())
        .collect()
}

/// A fresh folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("rulelint-node-files-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Node `name` in `dir` as four files; `ipset` replaces the ipset output.
fn write_node(dir: &Path, name: &str, ipset: &str, ipvsadm: &str) {
    let node = dir.join(name);
    std::fs::create_dir_all(&node).expect("node folder");
    for (file, text) in [
        ("iptables.txt", read(PARTS[0])),
        ("ipset.txt", ipset.to_string()),
        ("ipvs.txt", ipvsadm.to_string()),
        ("ipaddr.txt", read(PARTS[3])),
    ] {
        std::fs::write(node.join(file), text).expect("write");
    }
}

/// The ipset output without the hairpin entry of the local real server 10.244.1.8:8080.
fn ipset_without_hairpin_entry() -> String {
    let ipset = read(PARTS[1]);
    let broken: String = ipset
        .lines()
        .filter(|l| !l.contains("10.244.1.8,tcp:8080"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(broken, ipset);
    broken
}

#[test]
fn files_of_one_node_are_checked_together_and_findings_point_into_their_file() {
    let dir = scratch("check-node");
    std::fs::write(dir.join("ipset.txt"), ipset_without_hairpin_entry()).expect("write");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let absolute: Vec<String> = PARTS
        .iter()
        .map(|p| root.join(p).to_string_lossy().into_owned())
        .collect();
    let ipset = dir.join("ipset.txt").to_string_lossy().into_owned();
    let args = [
        "check",
        "--format",
        "concise",
        "--node",
        "node-7",
        &absolute[0],
        &ipset,
        &absolute[2],
        &absolute[3],
    ];
    let out = rulelint_in(Some(&dir), &args, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // RL476 needs ipvsadm, ipset and ip addr: only their union shows it, on the real server's
    // line of the ipvsadm file (line 14: `  -> 10.244.1.8:8080`).
    let ipvsadm = &absolute[2];
    assert!(
        text.contains(&format!("{ipvsadm}:14:3: warning RL476")),
        "{text}"
    );
    assert!(!text.contains("RL478"), "no output is missing: {text}");
    // Every file has its summary line, the ones without findings too.
    assert!(text.contains(&format!("{ipset}: no findings")), "{text}");
    assert!(
        text.contains("4 files: 0 errors, 2 warnings, 1 info"),
        "{text}"
    );

    // JSON: findings under their own file, with their line there.
    let json = rulelint_in(
        Some(&dir),
        &[&["check", "--format", "json"], &args[3..]].concat(),
        None,
    );
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let files = doc["files"].as_array().expect("files");
    assert_eq!(files.len(), 4);
    let of_ipvsadm = files
        .iter()
        .find(|f| f["path"] == ipvsadm.as_str())
        .expect("the ipvsadm file");
    let lines: Vec<u64> = of_ipvsadm["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [12, 14, 19], "{of_ipvsadm:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_node_each_file_is_a_node() {
    let out = rulelint(&["check", "--format", "concise", PARTS[1], PARTS[2]], None);
    let text = stdout(&out);
    // Each file alone: the cross-checks say which outputs they lack instead of concluding.
    assert!(
        text.contains("corpus/ipvs/healthy-node-ipset-save.txt:1:1: info RL478"),
        "{text}"
    );
    assert!(
        text.contains("corpus/ipvs/healthy-node-ipvsadm.txt:1:1: info RL478"),
        "{text}"
    );
    assert!(text.contains("2 files:"), "{text}");
}

#[test]
fn a_subfolder_is_one_node_for_check_and_diff() {
    let dir = scratch("folders");
    let nodes = dir.join("nodes");
    write_node(&nodes, "node-7", &read(PARTS[1]), &read(PARTS[2]));
    // node-8 still balances to a pod that is gone (10.244.3.9) and lost a hairpin entry.
    let stale = read(PARTS[2]).replacen(
        "TCP  10.96.120.7:80 rr\n",
        "TCP  10.96.120.7:80 rr\n  -> 10.244.3.9:8080               Masq    1      0          0         \n",
        1,
    );
    write_node(&nodes, "node-8", &ipset_without_hairpin_entry(), &stale);

    let check = rulelint_in(Some(&dir), &["check", "--format", "concise", "nodes"], None);
    let text = stdout(&check);
    assert!(
        text.contains("nodes/node-8/ipvs.txt:15:3: warning RL476"),
        "{text}"
    );
    assert!(
        !text.contains("nodes/node-7/ipvs.txt:15:3: warning"),
        "{text}"
    );
    assert!(text.contains("8 files:"), "{text}");

    let diff = rulelint_in(Some(&dir), &["diff", "nodes"], None);
    assert_eq!(diff.status.code(), Some(1), "{}", stderr(&diff));
    let text = stdout(&diff);
    assert!(
        text.contains("Comparing node-7 (nodes/node-7) with node-8 (nodes/node-8)"),
        "{text}"
    );
    assert!(
        text.contains("10.96.120.7:80/tcp has the real server 10.244.3.9:8080 on node-8 only"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `scripts/collect.sh` writes `DIR/NODE.txt` and `DIR/ipv6/NODE.txt`: the `ipv6` subfolder
/// holds several dumps, so it is a folder of nodes, skipped with a note, not one node made of
/// them all (which would differ from every node). An empty subfolder is skipped too.
#[test]
fn a_subfolder_of_several_dumps_is_skipped_not_a_node() {
    let dir = scratch("collected");
    let dump = read("corpus/kube-pairs/small-cluster/iptables.txt");
    let v6 = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n";
    std::fs::create_dir_all(dir.join("ipv6")).expect("ipv6");
    std::fs::create_dir_all(dir.join("empty")).expect("empty");
    for node in ["node-a", "node-b"] {
        std::fs::write(dir.join(format!("{node}.txt")), &dump).expect("write");
        std::fs::write(dir.join(format!("ipv6/{node}.txt")), v6).expect("write");
    }
    let folder = format!("{}/", dir.display());
    let out = rulelint(&["diff", &folder, "--format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(node_names(&out), ["node-a", "node-b"]);
    assert!(
        stderr(&out).contains("ipv6`: it holds 2 iptables-save dumps"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("empty`: it holds no files"),
        "{}",
        stderr(&out)
    );
    let out = rulelint(&["check", &folder], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A ConfigMap or Secret mounted as a volume shows each key as a symbolic link into a hidden
/// `..data/` folder: the linked dumps are the folder's nodes, and a dangling link is not a file.
/// Before links were followed, `diff` of such a folder found no dump at all.
#[cfg(unix)]
#[test]
fn linked_dumps_in_a_folder_are_read_as_a_mounted_config_map_shows_them() {
    let dir = scratch("linked");
    let dump = read("corpus/kube-pairs/small-cluster/iptables.txt");
    let data = dir.join("..2026_11_26_05_00_00.000000001");
    std::fs::create_dir_all(&data).expect("data folder");
    for node in ["node-a", "node-b"] {
        std::fs::write(data.join(format!("{node}.txt")), &dump).expect("write");
    }
    std::os::unix::fs::symlink(&data, dir.join("..data")).expect("link ..data");
    for node in ["node-a", "node-b"] {
        let file = format!("{node}.txt");
        std::os::unix::fs::symlink(Path::new("..data").join(&file), dir.join(&file))
            .expect("link a dump");
    }
    std::os::unix::fs::symlink("..data/gone.txt", dir.join("gone.txt")).expect("dangling link");
    let folder = format!("{}/", dir.display());
    let out = rulelint(&["diff", &folder, "--format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(node_names(&out), ["node-a", "node-b"]);
    let _ = std::fs::remove_dir_all(&dir);
}
