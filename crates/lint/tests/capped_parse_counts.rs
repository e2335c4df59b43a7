//! The parsers cap their diagnostics as they read (`rulelint_parser::cap`): what counts a
//! node's parse errors (a summary's `parse_errors`, the report of `diff`) still counts every
//! one, in iptables and nftables text alike.

use rulelint_lint::diff::{Node, NodeInput};

const STRAY: usize = 30_000;

fn parse_errors(text: &str) -> usize {
    let input = NodeInput::read(text);
    Node::from_input("n", &input).parse_errors
}

#[test]
fn an_iptables_node_counts_every_stray_line() {
    let few = format!("*filter\n:INPUT ACCEPT [0:0]\n{}COMMIT\n", "x\n".repeat(10));
    let many = format!(
        "*filter\n:INPUT ACCEPT [0:0]\n{}COMMIT\n",
        "x\n".repeat(STRAY)
    );
    let base = parse_errors(&few) - 10;
    assert_eq!(parse_errors(&many), base + STRAY);
}

#[test]
fn an_nftables_node_counts_every_stray_line() {
    let few = format!("table ip t {{\n{}}}\n", "{\n".repeat(10));
    let many = format!("table ip t {{\n{}}}\n", "{\n".repeat(STRAY));
    let base = parse_errors(&few) - 10;
    assert_eq!(parse_errors(&many), base + STRAY);
}
