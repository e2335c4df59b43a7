//! `nft -f` scripts that mix blocks and commands read as one ruleset, their statements applied
//! in order: what rulelint reads from the script is what `nft list ruleset` prints once nft
//! loaded it. Files: `corpus/nft/scripts/` (one class of script per case, see its README),
//! `corpus/nft/ok/07-*` and `08-*` (script and listed form), `corpus/nft/forms/07-*.json`.

use rulelint_nft::{
    ChainGraph, Form, Parsed, Ruleset, Strings, canon, parse, parse_any, parse_json,
    parse_transaction,
};
use rulelint_parser::LineIndex;
use std::path::{Path, PathBuf};

fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../corpus/nft")
        .join(rel)
}

fn read(rel: &str) -> String {
    let path = corpus(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn assert_clean(what: &str, parsed: &Parsed<'_>) {
    assert!(
        parsed.diagnostics.is_empty(),
        "{what}: {:#?}",
        parsed.diagnostics
    );
    assert!(!parsed.ruleset.tables.is_empty(), "{what}: nothing read");
}

fn assert_same(what: &str, a: &Ruleset<'_>, b: &Ruleset<'_>) {
    let (ca, cb) = (canon::content(a), canon::content(b));
    if let Some(d) = canon::first_difference(&ca, &cb) {
        panic!("{what}: listed content differs at {d}");
    }
}

/// Every reader of a script (the listing reader, the transaction reader, `parse_any`) reads it
/// cleanly into what nft listed.
fn check_script(name: &str, script: &str, listed: &str) {
    let listing = parse(listed);
    assert_clean(&format!("{name} listed"), &listing);
    let strings = Strings::new();
    let (form, any) = parse_any(script, &strings);
    for (reader, parsed) in [
        ("parse", parse(script)),
        ("parse_transaction", parse_transaction(script)),
        ("parse_any", any),
    ] {
        let what = format!("{name} read by {reader}");
        assert_clean(&what, &parsed);
        assert_same(&what, &parsed.ruleset, &listing.ruleset);
        let graph = ChainGraph::build(&parsed.ruleset);
        assert_eq!(
            graph.edges().count(),
            ChainGraph::build(&listing.ruleset).edges().count(),
            "{what}: chain graph"
        );
    }
    assert_ne!(form, Form::Json, "{name}");
}

#[test]
fn each_class_of_script_reads_as_nft_lists_it() {
    let dir = corpus("scripts");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("corpus/nft/scripts")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "nft"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for name in names {
        let script = read(&format!("scripts/{name}.nft"));
        let listed = read(&format!("scripts/{name}.list.txt"));
        check_script(&name, &script, &listed);
    }
}

#[test]
fn a_script_of_blocks_and_commands_reads_as_its_listing_and_json() {
    let script = read("ok/07-script-blocks-and-commands.nft");
    let listed = read("ok/07-script-blocks-and-commands-listed.txt");
    check_script("07", &script, &listed);
    let strings = Strings::new();
    let json_text = read("forms/07-script-blocks-and-commands.json");
    let json = parse_json(&json_text, &strings);
    assert_clean("07 json", &json);
    assert_same("07 json", &parse(&script).ruleset, &json.ruleset);
}

#[test]
fn a_k3s_script_fills_kube_proxy_maps_declared_in_its_blocks() {
    let script = read("ok/08-k3s-kube-proxy-script.nft");
    let listed = read("ok/08-k3s-kube-proxy-script-listed.txt");
    check_script("08", &script, &listed);
    // The elements `add element` gave the map that the `table ip kube-proxy { }` block
    // declared, and their `goto` targets are that block's chains.
    let parsed = parse(&script);
    let set = &parsed.ruleset;
    let table = set.table(rulelint_nft::Family::Ip, "kube-proxy").unwrap();
    let ips = set.tables[table.index()]
        .sets
        .iter()
        .map(|s| &set.sets[s.index()])
        .find(|s| s.name == "service-ips")
        .unwrap();
    assert_eq!(ips.elements.len(), 2);
    let graph = ChainGraph::build(set);
    let targets: Vec<&str> = graph
        .edges()
        .filter_map(|(_, to, _)| match to {
            rulelint_nft::Node::Chain(c) => Some(set.chains[c.index()].name),
            _ => None,
        })
        .filter(|n| n.starts_with("service-"))
        .collect();
    assert!(targets.len() >= 2, "{targets:?}");
}

/// Where a span starts, as `line:column` (1-based).
fn at(text: &str, span: rulelint_parser::Span) -> String {
    let at = LineIndex::new(text).line_col(text, span.start);
    format!("{}:{}", at.line, at.column)
}

#[test]
fn spans_of_blocks_and_commands_point_into_the_script() {
    let script = "flush ruleset\n\
                  table ip t {\n\
                  \tchain c {\n\
                  \t\tjump nowhere\n\
                  \t}\n\
                  }\n\
                  add rule ip t c jump elsewhere\n\
                  table ip t { chain d { type filter hook input priority oops; }; }\n";
    let parsed = parse(script);
    let found: Vec<(String, &str)> = parsed
        .diagnostics
        .iter()
        .map(|d| (at(script, d.span), d.code))
        .collect();
    // The priority of the one-line block, at its place in the file.
    assert_eq!(found, [("8:56".to_string(), "RL157")]);
    let set = &parsed.ruleset;
    let rule = set.rules_of(rulelint_nft::ChainId(0)).nth(1).unwrap();
    assert_eq!(at(script, rule.span), "7:1");
    let d = &set.chains[set.chain_in(rulelint_nft::TableId(0), "d").unwrap().index()];
    assert_eq!(at(script, d.span), "8:14");
}

#[test]
fn an_include_is_an_info_and_the_rest_is_read() {
    let script = "include \"/etc/nftables.d/*.nft\"\n\
                  table ip t {\n\tchain c {\n\t}\n}\n\
                  add rule ip t c accept\n";
    for parsed in [parse(script), parse_transaction(script)] {
        let codes: Vec<&str> = parsed.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["RL166"]);
        assert_eq!(
            parsed.diagnostics[0].severity,
            rulelint_parser::Severity::Info
        );
        assert_eq!(parsed.ruleset.rules.len(), 1);
    }
}

#[test]
fn pasted_text_around_a_script_is_stray_not_a_broken_command() {
    let script = "root@node:~# cat /etc/nftables.conf\n\
                  table ip t {\n\tmap m { type ifname : verdict; }\n\tchain c { }\n}\n\
                  add element ip t m { \"eth0\" : goto c }\n\
                  root@node:~# \n";
    let parsed = parse(script);
    let codes: Vec<&str> = parsed.diagnostics.iter().map(|d| d.code).collect();
    assert!(codes.iter().all(|c| *c == "RL151"), "{codes:?}");
    assert_eq!(parsed.ruleset.sets[0].elements.len(), 1);
    // A transaction without blocks keeps reporting such a line as no command.
    let tx = parse_transaction("add table ip t\nfrobnicate chain ip t c\n");
    assert_eq!(tx.diagnostics[0].code, "RL165");
}

#[test]
fn a_block_cut_short_before_the_commands_keeps_the_commands() {
    // Read as a transaction (it starts so); the listing reader takes the lines after a cut
    // chain for its rules, as it does in a cut listing.
    let script = "add table ip t\n\
                  table ip t {\n\tmap m { type ifname : verdict; }\n\tchain c {\n\t\taccept\n\
                  add element ip t m { \"eth0\" : goto c }\n\
                  add rule ip t c drop\n";
    let parsed = parse_transaction(script);
    let codes: Vec<&str> = parsed.diagnostics.iter().map(|d| d.code).collect();
    assert!(codes.contains(&"RL153"), "{codes:?}");
    let set = &parsed.ruleset;
    assert_eq!(set.sets[0].elements.len(), 1);
    assert_eq!(set.rules.len(), 2);
    assert!(!set.chains[0].closed);
}
