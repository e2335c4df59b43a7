//! No recursion on input depth: a path and a cycle of a million chains (200,000 in debug
//! builds, whose frames are larger) go through every analysis without overflowing the stack of
//! a test thread (2 MiB, a quarter of a main thread's).

use rulelint_lint::diff::{Group, Node, compare};
use rulelint_lint::kube::doc::catalog_of;
use rulelint_lint::source::check_source;
use rulelint_lint::trace::{PacketSpec, TraceNode, trace};
use rulelint_lint::{Config, Severity};
use rulelint_parser::parse;

const CHAINS: usize = if cfg!(debug_assertions) {
    200_000
} else {
    1_000_000
};

/// `*filter` with INPUT jumping to C0, and C0 -> C1 -> ... (-> C0 when `cycle`).
fn iptables_chain(cycle: bool) -> String {
    let mut text = String::with_capacity(CHAINS * 40);
    text.push_str("*filter\n:INPUT ACCEPT [0:0]\n");
    for i in 0..CHAINS {
        text.push_str(&format!(":C{i} - [0:0]\n"));
    }
    text.push_str("-A INPUT -j C0\n");
    for i in 0..CHAINS - 1 {
        text.push_str(&format!("-A C{i} -j C{}\n", i + 1));
    }
    if cycle {
        text.push_str(&format!("-A C{} -j C0\n", CHAINS - 1));
    }
    text.push_str("COMMIT\n");
    text
}

/// The same in nftables: a base chain on input, then a path (or cycle) of jumps.
fn nft_chain(cycle: bool) -> String {
    let mut text = String::with_capacity(CHAINS * 50);
    text.push_str("table ip deep {\n\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n\t\tjump c0\n\t}\n");
    for i in 0..CHAINS {
        let next = if i + 1 < CHAINS {
            format!("\t\tjump c{}\n", i + 1)
        } else if cycle {
            "\t\tjump c0\n".to_string()
        } else {
            String::new()
        };
        text.push_str(&format!("\tchain c{i} {{\n{next}\t}}\n"));
    }
    text.push_str("}\n");
    text
}

#[test]
fn a_million_chain_path_and_cycle_in_iptables() {
    for cycle in [false, true] {
        let text = iptables_chain(cycle);
        let findings = check_source(&text, &Config::default()).diagnostics;
        let loops = findings.iter().filter(|d| d.code == "RL202").count();
        assert_eq!(loops, usize::from(cycle), "cycle {cycle}");
        assert!(findings.iter().all(|d| d.message.len() < 2000));

        let strings = rulelint_nft::Strings::new();
        let (catalog, content) = catalog_of(&text, &strings);
        assert!(content && catalog.services.is_empty());

        let parsed = parse(&text);
        let other = parse(&text);
        let nodes = [Node::new("a", &parsed), Node::new("b", &other)];
        assert_eq!(compare(&Group::from_nodes(&nodes), &nodes).drift_count(), 0);

        let node = TraceNode::new("a", &parsed.ruleset);
        let spec = PacketSpec::to("192.0.2.1:80".parse().expect("endpoint"));
        let traced = trace(&node, &spec);
        assert!(!traced.outcomes.is_empty());
    }
}

#[test]
fn a_million_chain_path_and_cycle_in_nftables() {
    for cycle in [false, true] {
        let text = nft_chain(cycle);
        let findings = check_source(&text, &Config::default()).diagnostics;
        assert!(
            findings
                .iter()
                .all(|d| d.severity != Severity::Error || d.code.starts_with("RL15")),
            "cycle {cycle}: {:?}",
            findings.iter().map(|d| d.code).collect::<Vec<_>>()
        );
        let strings = rulelint_nft::Strings::new();
        let (catalog, content) = catalog_of(&text, &strings);
        assert!(content && catalog.services.is_empty());
    }
}
