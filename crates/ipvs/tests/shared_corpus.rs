//! The IPVS samples of `../shared/corpus/ipvs/` (beside the checkout; not part of the project).
//! Ignored by default: run with `--ignored`; fails if the folder is missing.
//!
//! Every real and synthetic paste there is read without an error, with what each holds.

use rulelint_ipvs::{Severity, parse};
use std::path::{Path, PathBuf};

fn shared_dir() -> PathBuf {
    std::env::var_os("RULELINT_IPVS_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/ipvs"),
        PathBuf::from,
    )
}

#[test]
#[ignore = "needs ../shared/corpus/ipvs beside the checkout"]
fn shared_ipvs_samples_read_without_errors() {
    let dir = shared_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 7,
        "expected the IPVS samples in {}",
        dir.display()
    );
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).expect("readable");
        let parsed = parse(&text);
        let codes: Vec<&str> = parsed.diagnostics.iter().map(|d| d.code).collect();
        assert!(
            parsed
                .diagnostics
                .iter()
                .all(|d| d.severity != Severity::Error),
            "{name}: {codes:?}"
        );
        let ipvs = &parsed.ipvs;
        let vs = ipvs.virtual_servers.len();
        let rs: usize = ipvs
            .virtual_servers
            .iter()
            .map(|v| v.real_servers.len())
            .sum();
        let members: usize = ipvs.sets.iter().map(|s| s.members.len()).sum();
        let expected: (usize, usize, usize, usize, &[&str]) = match &name[..2] {
            // (virtual servers, real servers, sets, members, codes)
            "01" => (5, 10, 0, 0, &[]),
            "02" => (7, 13, 0, 0, &[]),
            // Resolved names: read, and said once.
            "03" => (8, 14, 0, 0, &["RL173"]),
            // Cut after the eighth set's header.
            "04" => (0, 0, 7, 0, &[]),
            "05" | "06" => (0, 0, 6, 8, &[]),
            // 50 of 143 members shown.
            "07" => (0, 0, 1, 50, &["RL174"]),
            other => panic!("unexpected sample {other}: {name}"),
        };
        assert_eq!(
            (vs, rs, ipvs.sets.len(), members, codes.as_slice()),
            expected,
            "{name}"
        );
    }
}
