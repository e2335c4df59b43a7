//! Property tests over the three forms: one generated ruleset written as a listing, as `nft -j`
//! JSON and as an `add ...` transaction reads clean in each, to the same listed content and
//! chain graph, and each model prints as a listing that reads back to it. Arbitrary text never
//! makes the JSON or transaction reader panic or point outside the text.

use proptest::prelude::*;
use rulelint_nft::{
    ChainGraph, Parsed, Strings, canon, parse, parse_any, parse_json, parse_transaction, print,
};

/// One statement as listing text and as the JSON statements `nft -j` prints for it.
#[derive(Clone, Debug)]
struct Stmt {
    text: String,
    json: String,
}

fn stmt(text: String, json: String) -> Stmt {
    Stmt { text, json }
}

fn payload(proto: &str, field: &str) -> String {
    format!(r#"{{"payload": {{"protocol": "{proto}", "field": "{field}"}}}}"#)
}

fn matches(op: &str, left: &str, right: &str) -> String {
    format!(r#"{{"match": {{"op": "{op}", "left": {left}, "right": {right}}}}}"#)
}

fn ip() -> impl Strategy<Value = String> {
    any::<[u8; 4]>().prop_map(|o| format!("{}.{}.{}.{}", o[0], o[1], o[2], o[3]))
}

fn statement(chains: Vec<String>) -> impl Strategy<Value = Stmt> {
    let goto = |c: &String| format!(r#"{{"goto": {{"target": "{c}"}}}}"#);
    prop_oneof![
        (ip(), 1u8..=32, any::<bool>()).prop_map(|(a, p, neg)| stmt(
            format!("ip daddr {}{a}/{p}", if neg { "!= " } else { "" }),
            matches(
                if neg { "!=" } else { "==" },
                &payload("ip", "daddr"),
                &format!(r#"{{"prefix": {{"addr": "{a}", "len": {p}}}}}"#)
            )
        )),
        ip().prop_map(|a| stmt(
            format!("ip saddr {a}"),
            matches("==", &payload("ip", "saddr"), &format!("\"{a}\""))
        )),
        Just(stmt(
            "ct state established,related".into(),
            matches("in", r#"{"ct": {"key": "state"}}"#, r#"["established", "related"]"#)
        )),
        Just(stmt(
            "ct state new".into(),
            matches("in", r#"{"ct": {"key": "state"}}"#, "\"new\"")
        )),
        (1u16..).prop_map(|p| stmt(
            format!("tcp dport {p}"),
            matches("==", &payload("tcp", "dport"), &p.to_string())
        )),
        Just(stmt(
            "ip daddr @cluster-ips".into(),
            matches("==", &payload("ip", "daddr"), "\"@cluster-ips\"")
        )),
        Just(stmt(
            "meta mark set meta mark | 0x00004000".into(),
            r#"{"mangle": {"key": {"meta": {"key": "mark"}}, "value": {"|": [{"meta": {"key": "mark"}}, 16384]}}}"#.into()
        )),
        Just(stmt(
            "meta mark & 0x00004000 == 0x00000000".into(),
            matches("==", r#"{"&": [{"meta": {"key": "mark"}}, 16384]}"#, "0")
        )),
        (ip(), 1u16..).prop_map(|(a, p)| stmt(
            format!("meta l4proto tcp dnat to {a}:{p}"),
            format!(
                r#"{}, {{"dnat": {{"addr": "{a}", "port": {p}}}}}"#,
                matches("==", r#"{"meta": {"key": "l4proto"}}"#, "\"tcp\"")
            )
        )),
        Just(stmt(
            "masquerade fully-random".into(),
            r#"{"masquerade": {"flags": "fully-random"}}"#.into()
        )),
        Just(stmt(
            "counter packets 0 bytes 0".into(),
            r#"{"counter": {"packets": 0, "bytes": 0}}"#.into()
        )),
        Just(stmt(
            "update @aff { ip saddr }".into(),
            format!(r#"{{"set": {{"op": "update", "elem": {}, "set": "@aff"}}}}"#, payload("ip", "saddr"))
        )),
        Just(stmt(
            "ip daddr . meta l4proto . th dport vmap @svc".into(),
            format!(
                r#"{{"vmap": {{"key": {{"concat": [{}, {{"meta": {{"key": "l4proto"}}}}, {}]}}, "data": "@svc"}}}}"#,
                payload("ip", "daddr"),
                payload("th", "dport")
            )
        )),
        prop::collection::vec(prop::sample::select(chains.clone()), 1..4).prop_map(move |v| {
            let text: Vec<String> = v.iter().enumerate().map(|(i, c)| format!("{i} : goto {c}")).collect();
            let json: Vec<String> = v.iter().enumerate().map(|(i, c)| format!("[{i}, {}]", goto(c))).collect();
            stmt(
                format!("numgen random mod {} vmap {{ {} }}", v.len(), text.join(", ")),
                format!(
                    r#"{{"vmap": {{"key": {{"numgen": {{"mode": "random", "mod": {}, "offset": 0}}}}, "data": {{"set": [{}]}}}}}}"#,
                    v.len(),
                    json.join(", ")
                ),
            )
        }),
        prop_oneof![Just("accept"), Just("drop"), Just("return")]
            .prop_map(|v| stmt(v.into(), format!(r#"{{"{v}": null}}"#))),
        (prop::sample::select(chains), any::<bool>()).prop_map(|(c, jump)| {
            let kind = if jump { "jump" } else { "goto" };
            stmt(format!("{kind} {c}"), format!(r#"{{"{kind}": {{"target": "{c}"}}}}"#))
        }),
    ]
}

/// The three forms of one generated ruleset: (listing, JSON, transaction).
fn forms() -> impl Strategy<Value = (String, String, String)> {
    prop::collection::btree_set("(service|endpoint)-[A-Z0-9]{4}(-ns[0-9]/svc[0-9]/tcp/p80)?", 1..5)
        .prop_flat_map(|set| {
            let chains: Vec<String> = set.into_iter().collect();
            let rules = prop::collection::vec(
                prop::collection::vec(prop::collection::vec(statement(chains.clone()), 1..4), 0..4),
                chains.len(),
            );
            let elements = prop::collection::btree_map(
                (ip(), 1u16..),
                prop::sample::select(chains.clone()),
                0..4,
            );
            (Just(chains), rules, elements, prop::sample::select(vec![-110i32, -100, 0, 100]))
        })
        .prop_map(|(chains, rules, elements, prio)| {
            let (mut list, mut json, mut tx) = (String::new(), Vec::new(), String::new());
            let t = "\"family\": \"ip\", \"table\": \"kube-proxy\"";
            list.push_str("table ip kube-proxy {\n");
            json.push(r#"{"table": {"family": "ip", "name": "kube-proxy", "handle": 1}}"#.to_string());
            tx.push_str("add table ip kube-proxy\n");
            list.push_str("\tset cluster-ips {\n\t\ttype ipv4_addr\n\t\telements = { 172.30.0.41 }\n\t}\n");
            json.push(format!(r#"{{"set": {{{t}, "name": "cluster-ips", "type": "ipv4_addr", "elem": ["172.30.0.41"]}}}}"#));
            tx.push_str("add set ip kube-proxy cluster-ips { type ipv4_addr ; }\nadd element ip kube-proxy cluster-ips { 172.30.0.41 }\n");
            list.push_str("\tset aff {\n\t\ttype ipv4_addr\n\t\tsize 65535\n\t\tflags dynamic,timeout\n\t\ttimeout 3h\n\t}\n");
            json.push(format!(r#"{{"set": {{{t}, "name": "aff", "type": "ipv4_addr", "size": 65535, "flags": ["timeout"], "timeout": 10800}}}}"#));
            tx.push_str("add set ip kube-proxy aff { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }\n");
            let els: Vec<((String, u16), String)> = elements.into_iter().collect();
            list.push_str("\tmap svc {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n");
            tx.push_str("add map ip kube-proxy svc { type ipv4_addr . inet_proto . inet_service : verdict ; }\n");
            if !els.is_empty() {
                let text: Vec<String> = els.iter().map(|((a, p), c)| format!("{a} . tcp . {p} : goto {c}")).collect();
                list.push_str(&format!("\t\telements = {{ {} }}\n", text.join(", ")));
                for e in &text {
                    tx.push_str(&format!("add element ip kube-proxy svc {{ {e} }}\n"));
                }
            }
            let jels: Vec<String> = els
                .iter()
                .map(|((a, p), c)| format!(r#"[{{"concat": ["{a}", "tcp", {p}]}}, {{"goto": {{"target": "{c}"}}}}]"#))
                .collect();
            json.push(format!(
                r#"{{"map": {{{t}, "name": "svc", "type": ["ipv4_addr", "inet_proto", "inet_service"], "map": "verdict"{}}}}}"#,
                if jels.is_empty() { String::new() } else { format!(r#", "elem": [{}]"#, jels.join(", ")) }
            ));
            list.push_str("\t}\n");
            list.push_str(&format!("\tchain nat-prerouting {{\n\t\ttype nat hook prerouting priority {prio}; policy accept;\n\t\tjump {}\n\t}}\n", chains[0]));
            json.push(format!(r#"{{"chain": {{{t}, "name": "nat-prerouting", "type": "nat", "hook": "prerouting", "prio": {prio}, "policy": "accept"}}}}"#));
            json.push(format!(r#"{{"rule": {{{t}, "chain": "nat-prerouting", "expr": [{{"jump": {{"target": "{}"}}}}]}}}}"#, chains[0]));
            tx.push_str(&format!("add chain ip kube-proxy nat-prerouting {{ type nat hook prerouting priority {prio} ; }}\nadd rule ip kube-proxy nat-prerouting jump {}\n", chains[0]));
            for (c, rules) in chains.iter().zip(rules) {
                list.push_str(&format!("\tchain {c} {{\n"));
                json.push(format!(r#"{{"chain": {{{t}, "name": "{c}"}}}}"#));
                tx.push_str(&format!("add chain ip kube-proxy {c}\n"));
                for r in rules {
                    let text: Vec<&str> = r.iter().map(|s| s.text.as_str()).collect();
                    let exprs: Vec<&str> = r.iter().map(|s| s.json.as_str()).collect();
                    list.push_str(&format!("\t\t{}\n", text.join(" ")));
                    json.push(format!(r#"{{"rule": {{{t}, "chain": "{c}", "expr": [{}]}}}}"#, exprs.join(", ")));
                    tx.push_str(&format!("add rule ip kube-proxy {c} {}\n", text.join(" ")));
                }
                list.push_str("\t}\n");
            }
            list.push_str("}\n");
            (list, format!("{{\"nftables\": [{}]}}", json.join(",\n")), tx)
        })
}

fn prints_back(what: &str, parsed: &Parsed<'_>) -> Result<(), TestCaseError> {
    let printed = print(&parsed.ruleset);
    let again = parse(&printed);
    prop_assert!(
        again.diagnostics.is_empty(),
        "{what}: {:?}\n{printed}",
        again.diagnostics
    );
    prop_assert!(
        parsed.ruleset.same_content(&again.ruleset),
        "{what}:\n{printed}"
    );
    Ok(())
}

fn edges(parsed: &Parsed<'_>) -> usize {
    ChainGraph::build(&parsed.ruleset).edges().count()
}

fn check_bounds(text: &str, parsed: &Parsed<'_>) {
    for d in &parsed.diagnostics {
        assert!(d.span.start <= d.span.end && d.span.end as usize <= text.len());
        assert!(text.is_char_boundary(d.span.start as usize));
        assert!(text.is_char_boundary(d.span.end as usize));
        let _ = d.render("x", text, false);
    }
    for r in &parsed.ruleset.rules {
        assert!(r.span.end as usize <= text.len());
    }
    let _ = ChainGraph::build(&parsed.ruleset);
    let _ = parse(&print(&parsed.ruleset));
    let _ = canon::content(&parsed.ruleset);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn one_ruleset_reads_the_same_in_three_forms((list, json, tx) in forms()) {
        let listed = parse(&list);
        let strings = Strings::new();
        let js = parse_json(&json, &strings);
        let txp = parse_transaction(&tx);
        for (what, p) in [("listing", &listed), ("json", &js), ("transaction", &txp)] {
            prop_assert!(p.diagnostics.is_empty(), "{what}: {:?}\n{list}\n{json}\n{tx}", p.diagnostics);
        }
        let want = canon::content(&listed.ruleset);
        for (what, p) in [("json", &js), ("transaction", &txp)] {
            let got = canon::content(&p.ruleset);
            prop_assert!(
                want == got,
                "{what}: {:?}\n{list}\n{json}\n{tx}",
                canon::first_difference(&want, &got)
            );
            prop_assert_eq!(edges(&listed), edges(p), "{}", what);
            prints_back(what, p)?;
        }
    }

    #[test]
    fn json_like_text_never_panics(text in r#"(\{|\}|\[|\]|"nftables"|"rule"|"chain"|"table"|"set"|"elem"|"expr"|"family"|"ip"|"name"|"t"|"target"|"jump"|"concat"|"prefix"|"match"|"left"|"right"|"op"|"=="|:|,|"|\\|1|-1|null|true| |\n|é)*"#) {
        let strings = Strings::new();
        check_bounds(&text, &parse_json(&text, &strings));
        check_bounds(&text, &parse_any(&text, &strings).1);
    }

    #[test]
    fn transaction_like_text_never_panics(text in r#"(add |flush |delete |insert |table |chain |rule |set |map |element |ip |inet |t |c |s |\{ |\} |; |, |: |type |hook |priority |-100 |policy |drop |jump |goto |elements |= |10.0.0.1 |"x |#|\n|é)*"#) {
        check_bounds(&text, &parse_transaction(&text));
    }

    #[test]
    fn any_string_never_panics_in_other_forms(text in any::<String>()) {
        let strings = Strings::new();
        check_bounds(&text, &parse_json(&text, &strings));
        check_bounds(&text, &parse_transaction(&text));
    }
}
