//! A trace's size grows at most linearly with a hostile input: a rule of thousands of matches
//! the tracer cannot decide, and thousands of small tables that each ask one question. Sizes
//! are counted (outcomes, steps, assumptions, bytes of the report), never timed.

use rulelint_lint::trace::eval::MAX_RULE_QUESTIONS;
use rulelint_lint::trace::nft::{NftTraceNode, trace_nft};
use rulelint_lint::trace::report::{TracedDump, document, human, node_doc};
use rulelint_lint::trace::{Limit, MAX_FORKED, NodeTrace, PacketSpec, TraceNode, trace};

fn spec() -> PacketSpec {
    PacketSpec::to("10.96.0.1:80".parse().unwrap())
}

/// Outcomes, steps plus assumptions, and bytes of the text report.
type Sizes = (usize, usize, usize);

/// A trace's [`Sizes`].
fn size(node: &dyn TracedDump, t: &NodeTrace) -> Sizes {
    let held = t
        .outcomes
        .iter()
        .map(|o| o.steps.len() + o.assumptions.len())
        .sum();
    let text = human(&document(vec![node_doc(node, "f", t)]));
    (t.outcomes.len(), held, text.len())
}

fn iptables_rule_of_unknown_modules(n: usize) -> String {
    let matches: String = (0..n)
        .map(|i| format!(" -m m{} --o{i} v", i % 97))
        .collect();
    format!(
        "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n\
         -A INPUT{matches} -j DROP\nCOMMIT\n"
    )
}

fn nft_rule_of_meta_cpu(n: usize) -> String {
    let matches: String = (0..n).map(|i| format!("meta cpu {i} ")).collect();
    format!(
        "table ip t {{\n\tchain c {{\n\t\ttype filter hook prerouting priority 0; policy accept;\n\
         \t\t{matches}drop\n\t}}\n}}\n"
    )
}

fn iptables_size(n: usize) -> (Sizes, NodeTrace) {
    let text = iptables_rule_of_unknown_modules(n);
    let parsed = rulelint_parser::parse(&text);
    let node = TraceNode::new("n", &parsed.ruleset);
    let t = trace(&node, &spec());
    (size(&node, &t), t)
}

fn nft_size(n: usize) -> (Sizes, NodeTrace) {
    let text = nft_rule_of_meta_cpu(n);
    let parsed = rulelint_nft::parse(&text);
    let node = NftTraceNode::new("n", &parsed.ruleset);
    let t = trace_nft(&node, &spec());
    (size(&node, &t), t)
}

/// From `n` to `4n` undecided matches, no count grows more than 4 times (plus a little for the
/// numbers' digits): the rule asks at most [`MAX_RULE_QUESTIONS`] questions one by one.
fn assert_linear(small: Sizes, large: Sizes) {
    assert!(large.0 <= 4 * small.0, "outcomes {small:?} -> {large:?}");
    assert!(
        large.1 <= 4 * small.1,
        "steps and assumptions {small:?} -> {large:?}"
    );
    assert!(
        large.2 <= 4 * small.2 + 4096,
        "report bytes {small:?} -> {large:?}"
    );
}

/// A rule of 500 and of 2,000 undecided matches, read by `size_of`: linear, one question per
/// match up to the bound and then one for the rest (the route forks each), no bound hit.
fn assert_linear_in_the_rule(size_of: fn(usize) -> (Sizes, NodeTrace)) {
    let (small, _) = size_of(500);
    let (large, t) = size_of(2000);
    assert_linear(small, large);
    assert!(
        t.outcomes.len() <= 2 * (MAX_RULE_QUESTIONS + 2),
        "{}",
        t.outcomes.len()
    );
    assert!(t.limits.is_empty(), "{:?}", t.limits);
}

#[test]
fn a_rule_of_many_unknown_modules_gives_a_trace_linear_in_the_rule() {
    assert_linear_in_the_rule(iptables_size);
}

#[test]
fn a_rule_of_many_meta_cpu_statements_gives_a_trace_linear_in_the_rule() {
    assert_linear_in_the_rule(nft_size);
}

#[test]
fn the_matches_past_the_bound_are_one_question_naming_the_first_two_and_the_last() {
    let (_, t) = iptables_size(1000);
    let expected = format!(
        "all of the rule's {} further undecided matches let the packet on (one question: a \
         rule asks at most {MAX_RULE_QUESTIONS} one by one): the `-m m16 --o16 v` match holds; \
         the `-m m17 --o17 v` match holds; ({} more); the `-m m29 --o999 v` match holds",
        1000 - MAX_RULE_QUESTIONS,
        1000 - MAX_RULE_QUESTIONS - 3
    );
    let answers: Vec<bool> = t
        .outcomes
        .iter()
        .flat_map(|o| &o.assumptions)
        .filter(|a| a.question == expected)
        .map(|a| a.holds)
        .collect();
    assert!(
        answers.contains(&true) && answers.contains(&false),
        "{t:#?}"
    );
    // The path on which it holds is the one the DROP ends.
    let dropped: Vec<_> = t
        .outcomes
        .iter()
        .filter(|o| o.verdict == rulelint_lint::trace::Verdict::Drop)
        .collect();
    assert_eq!(dropped.len(), 1);
    assert!(
        dropped[0]
            .assumptions
            .iter()
            .any(|a| a.holds && a.question == expected)
    );
}

#[test]
fn the_nft_statements_past_the_bound_are_one_question() {
    let (_, t) = nft_size(40);
    let expected = format!(
        "all of the rule's 24 further undecided matches let the packet on (one question: a \
         rule asks at most {MAX_RULE_QUESTIONS} one by one): the packet matches `meta cpu 16` \
         (not modelled); the packet matches `meta cpu 17` (not modelled); (21 more); the \
         packet matches `meta cpu 39` (not modelled)"
    );
    assert!(
        t.outcomes
            .iter()
            .flat_map(|o| &o.assumptions)
            .any(|a| a.question == expected),
        "{t:#?}"
    );
}

/// Thousands of tables that each drop one source: every path carries the answers of the
/// tables before it, so the forks stop once they have copied [`MAX_FORKED`] entries.
#[test]
fn many_tables_of_one_question_each_stop_at_the_fork_bound() {
    let tables = |n: usize| -> String {
        (0..n)
            .map(|i| {
                format!(
                    "table ip t{i} {{\n\tchain c {{\n\t\ttype filter hook input priority 0; \
                     policy accept;\n\t\tip saddr 10.{}.{}.1 drop\n\t}}\n}}\n",
                    i / 256,
                    i % 256
                )
            })
            .collect()
    };
    let mut sizes = Vec::new();
    for n in [1000, 4000] {
        let text = tables(n);
        let parsed = rulelint_nft::parse(&text);
        let node = NftTraceNode::new("n", &parsed.ruleset);
        let t = trace_nft(&node, &spec());
        assert!(t.limits.contains(&Limit::Forked), "{:?}", t.limits);
        let s = size(&node, &t);
        assert!(s.1 <= 2 * MAX_FORKED, "{s:?}");
        sizes.push(s);
    }
    assert!(sizes[1].2 <= 2 * sizes[0].2, "{sizes:?}");
}
