//! Any bytes in, as `rulelint check` reads a file: sections (iptables-save, nft listing, JSON,
//! transaction), parsers, lints, suppressions and caps, then every output format the CLI writes
//! (human, JSON, SARIF, GitHub annotations). No panic; every span inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rulelint_lint::report::{CheckDocument, CheckedFile, github_annotations};
use rulelint_lint::{Config, sarif, source};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let checked = source::check_source(&text, &Config::default());
    for d in &checked.diagnostics {
        assert!(d.span.start <= d.span.end && d.span.end as usize <= text.len());
    }
    for d in checked.diagnostics.iter().take(16) {
        let _ = d.render("fuzz.txt", &text, false);
    }
    let file = CheckedFile {
        path: "fuzz.txt",
        ruleset: &checked.iptables.ruleset,
        diagnostics: &checked.diagnostics,
    };
    let files = [file];
    let _ = serde_json::to_vec(&CheckDocument::new(&files));
    let _ = serde_json::to_vec(&sarif::sarif_log(&files));
    let _ = github_annotations(&files[0]);
});
