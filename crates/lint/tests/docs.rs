//! `docs/lints/` is generated from the same text as `rulelint explain`: this test fails when a
//! page is missing, stale or left over. `UPDATE_DOCS=1 cargo test -p rulelint-lint --test docs`
//! rewrites the pages.

use rulelint_lint::{all_codes, docs_page};
use std::fmt::Write as _;
use std::path::PathBuf;

fn docs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/lints")
}

fn expected_pages() -> Vec<(String, String)> {
    let mut index = String::from(
        "# rulelint codes\n\nGenerated from the lint declarations (`crates/lint/src/lints/`) and the parser's \
         catalogue (`crates/parser/src/codes.rs`); `rulelint explain CODE` prints the same text.\n\n\
         | code | name | severity | category | summary |\n|---|---|---|---|---|\n",
    );
    let mut pages = Vec::new();
    for entry in all_codes() {
        let file = format!("{}-{}.md", entry.info.code, entry.info.name);
        let _ = writeln!(
            index,
            "| [{}]({file}) | {} | {} | {} | {} |",
            entry.info.code,
            entry.info.name,
            entry.info.severity,
            entry.category.as_str(),
            entry.info.summary.replace('|', "\\|")
        );
        pages.push((file, docs_page(&entry)));
    }
    pages.push(("README.md".to_string(), index));
    pages
}

#[test]
fn docs_pages_match_the_catalogue() {
    let dir = docs_dir();
    let pages = expected_pages();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(&dir).expect("create docs/lints");
        for entry in std::fs::read_dir(&dir).expect("read docs/lints") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "md") {
                std::fs::remove_file(path).expect("remove stale page");
            }
        }
        for (file, text) in &pages {
            std::fs::write(dir.join(file), text).expect("write page");
        }
    }
    let mut problems = Vec::new();
    for (file, text) in &pages {
        match std::fs::read_to_string(dir.join(file)) {
            Ok(on_disk) if on_disk == *text => {}
            Ok(_) => problems.push(format!("{file} is stale")),
            Err(_) => problems.push(format!("{file} is missing")),
        }
    }
    for entry in std::fs::read_dir(&dir).expect("read docs/lints") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if !pages.iter().any(|(f, _)| *f == name) {
            problems.push(format!("{name} is not generated from any code"));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nrun `UPDATE_DOCS=1 cargo test -p rulelint-lint --test docs` to regenerate docs/lints",
        problems.join("\n")
    );
}
