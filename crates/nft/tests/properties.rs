//! Property tests: generated rulesets round-trip exactly and read without diagnostics; arbitrary
//! text and cut-off listings never make the parser panic or produce spans outside the text.

use proptest::prelude::*;
use rulelint_nft::{ChainGraph, parse, print, summary};

fn name() -> impl Strategy<Value = String> {
    "(service|endpoint|external|KUBE-SVC)-[A-Z0-9]{4,8}(-ns[0-9]/svc[0-9]/tcp/p[0-9]{2,4})?"
}

fn ip() -> impl Strategy<Value = String> {
    any::<[u8; 4]>().prop_map(|o| format!("{}.{}.{}.{}", o[0], o[1], o[2], o[3]))
}

fn verdict(chains: Vec<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        Just("accept".to_string()),
        Just("drop".to_string()),
        Just("return".to_string()),
        prop::sample::select(chains.clone()).prop_map(|c| format!("jump {c}")),
        prop::sample::select(chains).prop_map(|c| format!("goto {c}")),
    ]
}

fn statement(chains: Vec<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        (ip(), 0u8..=32, any::<bool>()).prop_map(|(a, p, n)| format!(
            "ip {} {}{a}/{p}",
            if n { "saddr" } else { "daddr" },
            if n { "!= " } else { "" }
        )),
        Just("ct state new".to_string()),
        Just("ct state established,related".to_string()),
        Just("fib daddr type local".to_string()),
        Just("meta l4proto tcp".to_string()),
        (1u16..).prop_map(|p| format!("tcp dport {p}")),
        Just("ip daddr @cluster-ips".to_string()),
        prop::collection::vec(ip(), 1..4)
            .prop_map(|v| format!("ip saddr != {{ {} }}", v.join(", "))),
        Just("meta mark set meta mark | 0x00004000".to_string()),
        Just("meta mark & 0x00004000 == 0x00000000".to_string()),
        Just("counter packets 0 bytes 0".to_string()),
        // Not alone: a rule that is only a comment reads as the chain's comment.
        "[a-z/: ]{0,20}".prop_map(|c| format!("counter comment \"{c}\"")),
        (ip(), 1u16..).prop_map(|(a, p)| format!("meta l4proto tcp dnat to {a}:{p}")),
        Just("masquerade fully-random".to_string()),
        Just("reject with icmp port-unreachable".to_string()),
        Just("update @aff { ip saddr }".to_string()),
        Just("xt match recent".to_string()),
        Just("log prefix \"x \" level warn".to_string()),
        Just("frobnicate 3 widgets".to_string()),
        prop::collection::vec(prop::sample::select(chains.clone()), 1..4).prop_map(|v| {
            let items: Vec<String> = v
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{i} : goto {c}"))
                .collect();
            format!(
                "numgen random mod {} vmap {{ {} }}",
                v.len(),
                items.join(", ")
            )
        }),
        Just("ip daddr . meta l4proto . th dport vmap @svc".to_string()),
        verdict(chains),
    ]
}

/// A canonical ruleset as the printer writes it.
fn ruleset() -> impl Strategy<Value = String> {
    prop::collection::btree_set(name(), 1..6).prop_flat_map(|set| {
        let chains: Vec<String> = set.into_iter().collect();
        let rules = prop::collection::vec(
            prop::collection::vec(
                prop::collection::vec(statement(chains.clone()), 1..5).prop_map(|v| v.join(" ")),
                0..4,
            ),
            chains.len(),
        );
        let elements = prop::collection::vec(
            (ip(), 1u16.., prop::sample::select(chains.clone())),
            0..5,
        );
        (
            Just(chains),
            rules,
            elements,
            prop::sample::select(vec!["dstnat - 10", "filter", "-110", "srcnat + 5"]),
            any::<bool>(),
        )
            .prop_map(|(chains, rules, elements, prio, handles)| {
                let mut h = 0;
                let mut handle = || {
                    h += 1;
                    if handles { format!(" # handle {h}") } else { String::new() }
                };
                let mut out = format!("table ip kube-proxy {{{}\n\tcomment \"rules for kube-proxy\"\n", handle());
                out.push_str(&format!("\tset cluster-ips {{{}\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = {{ 10.0.0.0/8, 172.30.0.41 }}\n\t}}\n\n", handle()));
                out.push_str(&format!("\tset aff {{{}\n\t\ttype ipv4_addr\n\t\tsize 65535\n\t\tflags dynamic,timeout\n\t\ttimeout 3h\n\t}}\n\n", handle()));
                let els: Vec<String> = elements
                    .iter()
                    .map(|(a, p, c)| format!("{a} . tcp . {p} comment \"ns/s:p\" : goto {c}"))
                    .collect();
                out.push_str(&format!("\tmap svc {{{}\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n", handle()));
                if !els.is_empty() {
                    out.push_str(&format!("\t\telements = {{ {} }}\n", els.join(", ")));
                }
                out.push_str("\t}\n");
                out.push_str(&format!("\n\tchain nat-prerouting {{{}\n\t\ttype nat hook prerouting priority {prio}; policy accept;\n\t\tjump {}\n\t}}\n", handle(), chains[0]));
                for (c, rules) in chains.iter().zip(rules) {
                    out.push_str(&format!("\n\tchain {c} {{{}\n", handle()));
                    for r in rules {
                        out.push_str(&format!("\t\t{r}{}\n", handle()));
                    }
                    out.push_str("\t}\n");
                }
                out.push_str("}\n");
                out
            })
    })
}

fn check_spans(text: &str) {
    let parsed = parse(text);
    for (i, d) in parsed.diagnostics.iter().enumerate() {
        assert!(d.span.end as usize <= text.len() && d.span.start <= d.span.end);
        assert!(
            text.is_char_boundary(d.span.start as usize)
                && text.is_char_boundary(d.span.end as usize)
        );
        // Rendering reads the text from its start: a few are enough.
        if i < 20 {
            let _ = d.render("x.nft", text, false);
        }
    }
    for r in &parsed.ruleset.rules {
        assert!(r.span.end as usize <= text.len());
        for s in parsed.ruleset.statements_of(r) {
            assert!(
                s.span.start >= r.span.start && s.span.end <= r.span.end,
                "{s:?} in {r:?}"
            );
        }
    }
    let graph = ChainGraph::build(&parsed.ruleset);
    let _ = graph.reachable_from_roots(&parsed.ruleset);
    let _ = summary::summarize(&parsed, &graph, text);
    let printed = print(&parsed.ruleset);
    let _ = parse(&printed);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn generated_rulesets_round_trip(text in ruleset()) {
        let parsed = parse(&text);
        prop_assert!(parsed.diagnostics.is_empty(), "{:#?}\n{text}", parsed.diagnostics);
        let printed = print(&parsed.ruleset);
        prop_assert_eq!(&printed, &text);
        let again = parse(&printed);
        prop_assert!(parsed.ruleset.same_content(&again.ruleset));
        let graph = ChainGraph::build(&parsed.ruleset);
        prop_assert!(graph.unresolved_jumps().is_empty());
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(table|chain|set|map|elements|=|\\{|\\}|;|,|:|\\.|\"|#|jump|goto|vmap|@s|ip|daddr|type|hook|priority|dstnat|-|10|\n|\t| |x|é)*") {
        check_spans(&text);
    }

    #[test]
    fn any_string_never_panics(text in any::<String>()) {
        check_spans(&text);
    }

}

/// Every cut of a listing (what a truncated paste is) reads without panicking, reports only its
/// truncation, and round-trips.
#[test]
fn every_cut_of_a_listing_reports_only_truncation_and_round_trips() {
    let full = include_str!("../../../corpus/nft/ok/01-overall-rules-handles.txt");
    for cut in (0..=full.len()).filter(|&c| full.is_char_boundary(c)) {
        let text = &full[..cut];
        if cut % 7 == 0 {
            check_spans(text);
        }
        let parsed = parse(text);
        assert!(
            parsed
                .diagnostics
                .iter()
                .all(|d| matches!(d.code, "RL153" | "RL156")
                    // Cut inside the `table` line: nothing there is a block yet.
                    || (d.code == "RL151" && !text.contains('\n'))),
            "cut at {cut}: {:#?}",
            parsed.diagnostics
        );
        let printed = print(&parsed.ruleset);
        let again = parse(&printed);
        // A rule cut inside `{` cannot print unambiguously: the next line's `}` would close it.
        let cut_in_rule_set = text.rsplit('\n').next().is_some_and(|l| l.contains('{'))
            || parsed
                .diagnostics
                .iter()
                .any(|d| d.message.contains("in this rule"));
        assert!(
            cut_in_rule_set || parsed.ruleset.same_content(&again.ruleset),
            "cut at {cut}\n{printed}"
        );
    }
}

#[test]
fn deep_nesting_and_long_lines_stay_bounded() {
    let deep = format!(
        "table ip t {{\n\tchain c {{\n\t\tip saddr {}1{}\n\t}}\n}}\n",
        "{ ".repeat(50_000),
        " }".repeat(50_000)
    );
    check_spans(&deep);
    let wide = format!(
        "table ip t {{\n\tchain c {{\n\t\t{}\n\t}}\n}}\n",
        "ip daddr . ".repeat(100_000)
    );
    check_spans(&wide);
    let many = "}\n{\n".repeat(100_000);
    check_spans(&many);
}
