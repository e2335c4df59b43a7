//! The three forms of one ruleset (listing, `nft -j` JSON, `add ...` transaction) read into the
//! same content and the same chain graph; cut and broken inputs keep what comes before the
//! break. Files: `corpus/nft/forms/` (see its README).

use rulelint_nft::{
    ChainGraph, EdgeKind, Form, Node, Parsed, Ruleset, Strings, canon, detect_form, parse,
    parse_json, parse_transaction, print,
};
use std::collections::BTreeSet;
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

/// Every edge as `table chain -kind-> target` by names, so rulesets with different ids compare.
fn edges(set: &Ruleset<'_>) -> BTreeSet<String> {
    let graph = ChainGraph::build(set);
    let name = |n: Node| match n {
        Node::Chain(c) => {
            let c = &set.chains[c.index()];
            let t = &set.tables[c.table.index()];
            format!("{:?} {} {}", t.family, t.name.unwrap_or(""), c.name)
        }
        Node::Set(s) => {
            let s = &set.sets[s.index()];
            let t = &set.tables[s.table.index()];
            format!("{:?} {} @{}", t.family, t.name.unwrap_or(""), s.name)
        }
    };
    graph
        .edges()
        .map(|(from, to, e)| {
            let kind = match e.kind {
                EdgeKind::Jump => "jump",
                EdgeKind::Goto => "goto",
                EdgeKind::Vmap => "vmap",
            };
            format!("{} -{kind}-> {}", name(from), name(to))
        })
        .collect()
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
    assert_eq!(edges(a), edges(b), "{what}: chain graph");
    assert!(!edges(a).is_empty(), "{what}: no edges to compare");
}

/// Listing, JSON (when given) and transaction of one ruleset.
fn check_forms(listing: &str, json: Option<&str>, transaction: &str) {
    let list_text = read(listing);
    let listed = parse(&list_text);
    assert_clean(listing, &listed);
    assert_eq!(detect_form(&list_text), Form::Listing, "{listing}");

    let tx_text = read(transaction);
    let tx = parse_transaction(&tx_text);
    assert_clean(transaction, &tx);
    assert_eq!(detect_form(&tx_text), Form::Transaction, "{transaction}");
    assert_same(transaction, &listed.ruleset, &tx.ruleset);

    if let Some(json) = json {
        let json_text = read(json);
        let strings = Strings::new();
        let js = parse_json(&json_text, &strings);
        assert_clean(json, &js);
        assert_eq!(detect_form(&json_text), Form::Json, "{json}");
        assert_same(json, &listed.ruleset, &js.ruleset);
        // `-j` output carries the handles the plain listing leaves out.
        assert!(
            js.ruleset.rules.iter().all(|r| r.handle.is_some()),
            "{json}"
        );
    }
}

#[test]
fn kube_proxy_overall_rules_read_the_same_in_three_forms() {
    check_forms(
        "ok/01-overall-rules.txt",
        Some("forms/01-overall-rules.json"),
        "forms/01-overall-rules.transaction.nft",
    );
}

#[test]
fn kube_proxy_stale_chains_read_the_same_as_listing_and_transaction() {
    check_forms(
        "ok/02-stale-chains-after-service-delete.txt",
        None,
        "forms/02-stale-chains-after-service-delete.transaction.nft",
    );
}

#[test]
fn every_construct_reads_the_same_in_three_forms() {
    check_forms(
        "forms/constructs.list.txt",
        Some("forms/constructs.json"),
        "forms/constructs.nft",
    );
}

#[test]
fn flush_and_delete_apply_in_order() {
    check_forms(
        "forms/flush-delete.list.txt",
        Some("forms/flush-delete.json"),
        "forms/flush-delete.nft",
    );
    check_forms(
        "forms/flush-table.list.txt",
        Some("forms/flush-table.json"),
        "forms/flush-table.nft",
    );
    let text = read("forms/flush-delete.nft");
    let set = parse_transaction(&text).ruleset;
    let names: Vec<&str> = set.chains.iter().map(|c| c.name).collect();
    assert_eq!(names, ["services", "service-new"]);
    assert_eq!(set.tables.len(), 1, "`delete table ip gone` removes it");
    let services = &set.chains[0];
    assert_eq!(services.rules.len(), 1, "flushed, then one rule added");
}

/// Every name the JSON reader takes from a string without escapes is a slice of the text, so
/// diagnostics can point at it.
#[test]
fn json_names_and_targets_point_into_the_text() {
    let text = read("forms/01-overall-rules.json");
    let strings = Strings::new();
    let parsed = parse_json(&text, &strings);
    let set = &parsed.ruleset;
    for c in &set.chains {
        let span = set
            .span_of(c.name)
            .expect("chain name is a slice of the JSON");
        assert_eq!(&text[span.start as usize..span.end as usize], c.name);
        assert!(text[c.span.start as usize..].starts_with('{'), "{}", c.name);
    }
    for r in &set.rules {
        let object = &text[r.span.start as usize..r.span.end as usize];
        assert!(object.starts_with('{') && object.ends_with('}'));
        for s in set.statements_of(r) {
            assert!(s.span.start >= r.span.start && s.span.end <= r.span.end);
        }
    }
    for s in &set.sets {
        for e in &s.elements {
            assert!(e.span.start >= s.span.start && e.span.end <= s.span.end);
        }
    }
}

#[test]
fn escaped_json_strings_go_to_the_side_store() {
    let text = r#"{"nftables": [{"table": {"family": "ip", "name": "t", "handle": 1}},
        {"chain": {"family": "ip", "table": "t", "name": "c\u002dx", "handle": 2}},
        {"rule": {"family": "ip", "table": "t", "chain": "c-x", "handle": 3,
          "expr": [{"jump": {"target": "c-x"}}], "comment": "say \"hi\""}}]}"#;
    let strings = Strings::new();
    let parsed = parse_json(text, &strings);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let set = &parsed.ruleset;
    assert_eq!(
        set.chains.len(),
        1,
        "the escaped and plain names are one chain"
    );
    assert_eq!(set.chains[0].name, "c-x");
    assert!(
        set.span_of(set.chains[0].name).is_none(),
        "escaped: not a slice"
    );
    let rule = &set.rules[0];
    assert!(matches!(
        set.statements_of(rule).last().map(|s| &s.kind),
        Some(rulelint_nft::Stmt::Comment("say \"hi\""))
    ));
    assert!(strings.allocated_bytes() > 0);
}

/// Cutting the JSON anywhere keeps every object before the cut, marks none of them whole and
/// reports only `RL163`.
#[test]
fn every_cut_of_the_json_keeps_what_precedes_it() {
    let text = read("forms/01-overall-rules.json");
    let full_rules = {
        let strings = Strings::new();
        parse_json(&text, &strings).ruleset.rules.len()
    };
    let mut last_rules = 0;
    let mut cut = 0;
    while cut < text.len() {
        let part = &text[..cut];
        let strings = Strings::new();
        let parsed = parse_json(part, &strings);
        let codes: BTreeSet<&str> = parsed.diagnostics.iter().map(|d| d.code).collect();
        assert!(
            codes.iter().all(|c| *c == "RL163"),
            "cut at {cut}: {codes:?}"
        );
        assert!(cut == 0 || !codes.is_empty(), "cut at {cut}: not reported");
        for d in &parsed.diagnostics {
            assert!(d.span.end as usize <= part.len(), "cut at {cut}");
        }
        // Objects of any table may follow the cut: no table, chain or set is whole.
        let set = &parsed.ruleset;
        assert!(
            set.tables.iter().all(|t| !t.closed)
                && set.chains.iter().all(|c| !c.closed)
                && set.sets.iter().all(|s| !s.closed),
            "cut at {cut}: something is marked closed"
        );
        let rules = parsed.ruleset.rules.len();
        assert!(rules >= last_rules, "cut at {cut}: rules went down");
        last_rules = rules;
        cut += 97;
    }
    assert!(last_rules > full_rules / 2);
}

#[test]
fn broken_json_says_where_it_broke() {
    let cases: &[(&str, &str, &str)] = &[
        // (text, code, text at the span start)
        (
            "{\"nftables\": [{\"table\": {\"family\": \"ip\", \"name\": \"t\"}} {\"x\": 1}]}",
            "RL163",
            "{\"x\"",
        ),
        (
            "{\"nftables\": [{\"table\": {\"family\": \"ip\" \"name\": \"t\"}}]}",
            "RL163",
            "\"name\"",
        ),
        (
            "{\"nftables\": [{\"chain\": {\"family\": \"ip\", \"name\": \"c\"}}]}",
            "RL164",
            "{\"chain\"",
        ),
        ("{\"nftables\": [{\"frobnicate\": {}}]}", "RL164", "{\"frob"),
        ("{\"nftables\": {}}", "RL163", ": {}"),
        ("[1, 2]", "RL163", "[1, 2]"),
        (
            "$ nft -j list ruleset\n{\"nftables\": []}",
            "RL151",
            "$ nft",
        ),
        ("{\"nftables\": []} trailing", "RL151", "trailing"),
    ];
    for (text, code, at) in cases {
        let strings = Strings::new();
        let parsed = parse_json(text, &strings);
        let d = parsed
            .diagnostics
            .iter()
            .find(|d| d.code == *code)
            .unwrap_or_else(|| panic!("{text}: no {code} in {:?}", parsed.diagnostics));
        assert!(
            text[d.span.start as usize..].starts_with(at),
            "{text}: {code} at {:?}",
            &text[d.span.start as usize..]
        );
        assert_eq!(
            parsed.diagnostics.len(),
            1,
            "{text}: {:?}",
            parsed.diagnostics
        );
    }
    // A valid object after a skipped one is still read.
    let text = r#"{"nftables": [{"frobnicate": {}}, {"table": {"family": "ip", "name": "t"}}]}"#;
    let strings = Strings::new();
    assert_eq!(parse_json(text, &strings).ruleset.tables.len(), 1);
}

#[test]
fn unreadable_json_statements_stay_opaque_with_their_span() {
    let text = r#"{"nftables": [{"rule": {"family": "inet", "table": "t", "chain": "c",
        "expr": [{"match": {"op": "==", "left": {"payload": {"base": "nh", "offset": 96, "len": 32}}, "right": 1}},
                 {"accept": null}]}}]}"#;
    let strings = Strings::new();
    let parsed = parse_json(text, &strings);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let statements = parsed.ruleset.statements_of(&parsed.ruleset.rules[0]);
    let rulelint_nft::Stmt::Opaque { words } = &statements[0].kind else {
        panic!("{:?}", statements[0]);
    };
    let span = statements[0].span;
    assert_eq!(words, &[&text[span.start as usize..span.end as usize]]);
    assert!(matches!(statements[1].kind, rulelint_nft::Stmt::Verdict(_)));
}

#[test]
fn broken_transaction_lines_are_reported_and_skipped() {
    let text = "add table ip t\n\
                frobnicate everything\n\
                add rule ip t\n\
                add chain ip t c { type filter hook input priority 0 ;\n\
                add chain ip t d\n\
                add rule ip t d accept\n\
                list ruleset\n";
    let parsed = parse_transaction(text);
    let found: Vec<(&str, &str)> = parsed
        .diagnostics
        .iter()
        .map(|d| (d.code, &text[d.span.start as usize..d.span.end as usize]))
        .collect();
    assert_eq!(
        found,
        [
            ("RL165", "frobnicate everything"),
            ("RL165", "add rule ip t"),
            (
                "RL165",
                "add chain ip t c { type filter hook input priority 0 ;"
            ),
        ],
        "{:#?}",
        parsed.diagnostics
    );
    let set = &parsed.ruleset;
    let names: Vec<&str> = set.chains.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        ["c", "d"],
        "the unclosed body ends at the next command"
    );
    assert_eq!(set.rules.len(), 1);
}

/// Objects may come before their table and chain, as kube-proxy's dumps order them.
#[test]
fn transaction_objects_before_their_table() {
    let text = "add rule ip kube-proxy services jump masquerading\n\
                add element ip kube-proxy cluster-ips { 10.96.0.1 }\n\
                add chain ip kube-proxy masquerading\n\
                add table ip kube-proxy { comment \"late\" ; }\n\
                add set ip kube-proxy cluster-ips { type ipv4_addr ; }\n\
                add chain ip kube-proxy services\n";
    let parsed = parse_transaction(text);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let set = &parsed.ruleset;
    assert_eq!(set.tables.len(), 1);
    assert_eq!(set.tables[0].comment, Some("late"));
    assert_eq!(set.sets[0].elements.len(), 1);
    assert!(set.sets[0].key_type.is_some());
    assert_eq!(edges(set).len(), 1);
    let span = set.tables[0].span;
    assert!(text[span.start as usize..].starts_with("add table"));
}

/// JSON and transaction models print as a listing that reads back to the same content.
#[test]
fn other_forms_print_as_listings_that_read_back() {
    for (rel, json) in [
        ("forms/01-overall-rules.json", true),
        ("forms/constructs.json", true),
        ("forms/01-overall-rules.transaction.nft", false),
        ("forms/constructs.nft", false),
        ("forms/flush-delete.nft", false),
    ] {
        let text = read(rel);
        let strings = Strings::new();
        let parsed = if json {
            parse_json(&text, &strings)
        } else {
            parse_transaction(&text)
        };
        let printed = print(&parsed.ruleset);
        let again = parse(&printed);
        assert!(
            again.diagnostics.is_empty(),
            "{rel}: {:#?}\n{printed}",
            again.diagnostics
        );
        assert!(
            parsed.ruleset.same_content(&again.ruleset),
            "{rel}: {:?}",
            canon::first_difference(&parsed.ruleset.content(), &again.ruleset.content())
        );
    }
}

/// `/etc/nftables.conf` style: `flush ruleset` then table blocks is a listing, read clean.
#[test]
fn flush_ruleset_above_table_blocks_reads_as_a_listing() {
    let text = "#!/usr/sbin/nft -f\nflush ruleset\n\ntable inet filter {\n\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n\t\tct state established,related accept\n\t}\n}\n";
    let strings = Strings::new();
    let (form, parsed) = rulelint_nft::parse_any(text, &strings);
    assert_eq!(form, Form::Listing);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    assert_eq!(parsed.ruleset.rules.len(), 1);
    // Anything else before the tables is still stray text.
    let stray = parse("flush ruleset now\ntable ip t {\n}\n");
    assert_eq!(stray.diagnostics.len(), 1);
    assert_eq!(stray.diagnostics[0].code, "RL151");
}

/// A one-line JSON of many strings read by every reader: the tokenizer once scanned to the
/// line's end for each string (quadratic; minutes at this size). No clock: it must just finish.
#[test]
fn long_one_line_json_reads_in_linear_time() {
    let rule = r#"{"rule": {"family": "ip", "table": "t", "chain": "c", "expr": [{"jump": {"target": "d"}}]}}"#;
    let text = format!(
        "{{\"nftables\": [{}]}}",
        std::iter::repeat_n(rule, 20_000)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let strings = Strings::new();
    assert_eq!(parse_json(&text, &strings).ruleset.rules.len(), 20_000);
    assert_eq!(parse_transaction(&text).diagnostics[0].code, "RL165");
    assert!(!parse(&text).diagnostics.is_empty());
}

/// `;` separates commands on one line, also after a `{ ... }` body.
#[test]
fn transaction_commands_separated_by_semicolons() {
    let text = "add table ip t { comment \"x\" ; } ; add chain ip t c { type filter hook input priority 0 ; policy drop ; } ; add rule ip t c accept\n";
    let parsed = parse_transaction(text);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let set = &parsed.ruleset;
    assert_eq!(set.tables[0].comment, Some("x"));
    let base = set.chains[0].base.as_ref().expect("base chain");
    assert_eq!(
        (base.hook, base.priority.value, base.policy),
        ("input", Some(0), Some("drop"))
    );
    assert_eq!(set.rules.len(), 1);
}

/// `nft -f` files name values with `define`: it declares nothing, and it is not an invalid
/// command; a word that is no nft command still is.
#[test]
fn define_in_a_transaction_declares_nothing() {
    let parsed = parse_transaction(
        "flush ruleset\ndefine LAN = 10.0.0.0/8\nadd table ip t\nadd chain ip t c\nadd rule ip t c ip saddr $LAN accept\n",
    );
    assert_clean("define", &parsed);
    assert_eq!(parsed.ruleset.rules.len(), 1);
    let parsed = parse_transaction("add table ip t\nfrobnicate ip t\n");
    assert_eq!(parsed.diagnostics.len(), 1, "{:?}", parsed.diagnostics);
}
