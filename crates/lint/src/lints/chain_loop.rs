//! RL202 chain-loop: chains that jump to each other in a cycle.

use crate::context::{Findings, LintContext};
use crate::registry::{Category, Lint};
use rulelint_parser::{ChainId, CodeInfo, RuleId, Severity};
use std::collections::VecDeque;

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL202",
        name: "chain-loop",
        severity: Severity::Error,
        summary: "chains of a table jump to each other in a loop",
        docs: "## What it flags
A cycle of `-j`/`-g` jumps between chains of one table: a chain that jumps to itself, or
`A -> B -> ... -> A`. Conditions on the jumps do not matter.

## Why it matters
The kernel refuses a table whose jumps can loop (`ELOOP`, \"Too many levels of links\"), so
`iptables-restore` of this dump fails and nothing of the table is applied. A dump that shows a
loop was edited by hand or assembled from several sources.

## Example
```text
*filter
:INPUT ACCEPT [0:0]
:CHECK-A - [0:0]
:CHECK-B - [0:0]
-A INPUT -j CHECK-A
-A CHECK-A -s 10.0.0.0/8 -j CHECK-B
-A CHECK-B -p tcp -j CHECK-A
COMMIT
```

## Instead
Break the cycle: let the inner chain `RETURN` to its caller instead of jumping back.",
    },
    category: Category::Correctness,
    check,
};

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let set = cx.ruleset();
    let graph = cx.graph();
    for group in graph.cycles() {
        let first = set.chain(group[0]);
        let table = first.table();
        if table.get().superseded {
            continue;
        }
        let Some(path) = shortest_cycle(cx, &group) else {
            continue;
        };
        // `path` holds the jumps in order; the last one leads back to the first chain. Names
        // and lines are built only for what the finding prints: a loop may hold a million.
        // Past the path's end: the first chain again, where the loop closes.
        let name = |i: usize| {
            path.get(i)
                .map_or(first.name(), |rule| set.rule(rule).chain().name())
        };
        // Larger knots hold more cycles; one finding per knot is enough to act on.
        let Some(closing_rule) = path.len.checked_sub(1).and_then(|i| path.get(i)) else {
            continue;
        };
        let rule = set.rule(closing_rule);
        let closing_chain = rule.get().chain;
        let line = |i: usize| {
            path.get(i).map_or(String::new(), |r| {
                cx.line(set.rule(r).get().span.start).to_string()
            })
        };
        let others = path.len - 1;
        let message = if path.len == 1 {
            format!("chain `{}` jumps to itself", first.name())
        } else {
            format!("chains loop: {}", shortened(path.len + 1, name, " -> "))
        };
        let help = if others == 0 {
            "the kernel refuses a table whose jumps loop (ELOOP), so iptables-restore fails; remove this jump".to_string()
        } else {
            format!(
                "the kernel refuses a table whose jumps loop (ELOOP), so iptables-restore fails; the other jumps of the loop are on line {}: remove or redirect one of them",
                shortened(others, line, ", ")
            )
        };
        out.push(
            out.diagnostic(rule.target().map_or(rule.get().span, |t| t.span()), message)
                .with_label(format!(
                    "this jump closes the loop back to `{}`",
                    first.name()
                ))
                .with_help(help)
                .in_chain(table.id, closing_chain),
        );
    }
}

/// The most chains (or lines) of a loop a finding names: a loop through a million generated
/// chains is still one readable line.
const NAMED_AT_MOST: usize = 12;

/// Items `0..count` (given by `item`) joined by `separator`, the middle elided past
/// [`NAMED_AT_MOST`]: the start and the end of a loop are what a reader needs to find it. Only
/// the items shown are asked for.
fn shortened<S: AsRef<str>>(count: usize, item: impl Fn(usize) -> S, separator: &str) -> String {
    let half = NAMED_AT_MOST / 2;
    let elided = count > NAMED_AT_MOST;
    let shown: Vec<usize> = if elided {
        (0..half).chain(count - half..count).collect()
    } else {
        (0..count).collect()
    };
    let mut out = String::new();
    for (k, &i) in shown.iter().enumerate() {
        if k > 0 {
            out.push_str(separator);
        }
        if elided && k == half {
            out.push_str(&format!("... ({} more)", count - 2 * half));
            out.push_str(separator);
        }
        out.push_str(item(i).as_ref());
    }
    out
}

/// A loop's jumps in order, of which only the ends are kept: the steps a finding names.
struct LoopPath {
    /// Number of jumps.
    len: usize,
    /// (position, jump rule) of the first and last [`NAMED_AT_MOST`] + 1 jumps, in order;
    /// each rule's chain is its step's chain.
    ends: Vec<(usize, RuleId)>,
}

impl LoopPath {
    /// The jump rule at position `i`, if kept.
    fn get(&self, i: usize) -> Option<RuleId> {
        let at = self.ends.binary_search_by_key(&i, |&(p, _)| p).ok()?;
        Some(self.ends[at].1)
    }
}

/// A shortest cycle through the group's first chain. 4 bytes a chain of the group while
/// searching, and only the loop's ends kept: a loop of a million chains is searched whole.
fn shortest_cycle(cx: &LintContext<'_, '_>, group: &[ChainId]) -> Option<LoopPath> {
    const NONE: u32 = u32::MAX;
    let set = cx.ruleset();
    let graph = cx.graph();
    let start = group[0];
    // parent[i]: the jump rule by which the BFS reached group[i] (its chain is the previous
    // step), or NONE.
    let mut parent: Vec<u32> = vec![NONE; group.len()];
    let mut queue = VecDeque::from([start]);
    while let Some(chain) = queue.pop_front() {
        for (to, jump) in graph.jumps_from(set, chain) {
            if to == start {
                let step_back = |at: ChainId| -> Option<RuleId> {
                    let rule = parent[group.binary_search(&at).ok()?];
                    (rule != NONE).then_some(RuleId(rule))
                };
                // Walked back twice from the closing jump: to count, then to keep the ends.
                let mut len = 1;
                let mut at = chain;
                while at != start {
                    at = set.rule(step_back(at)?).get().chain;
                    len += 1;
                }
                let kept = |i: usize| i <= NAMED_AT_MOST || i + NAMED_AT_MOST + 1 >= len;
                let mut ends = vec![(len - 1, jump.rule)];
                let mut at = chain;
                let mut i = len - 1;
                while at != start {
                    let rule = step_back(at)?;
                    i -= 1;
                    if kept(i) {
                        ends.push((i, rule));
                    }
                    at = set.rule(rule).get().chain;
                }
                ends.reverse();
                return Some(LoopPath { len, ends });
            }
            let Ok(i) = group.binary_search(&to) else {
                continue;
            };
            if parent[i] == NONE {
                parent[i] = jump.rule.0;
                queue.push_back(to);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, filter, run};

    #[test]
    fn a_long_loop_is_named_by_its_ends() {
        let n = 10_000;
        let mut text = String::from("*filter\n:INPUT ACCEPT [0:0]\n");
        for i in 0..n {
            text.push_str(&format!(":C{i} - [0:0]\n"));
        }
        text.push_str("-A INPUT -j C0\n");
        for i in 0..n {
            text.push_str(&format!("-A C{i} -j C{}\n", (i + 1) % n));
        }
        text.push_str("COMMIT\n");
        let found = run(&LINT, &text);
        assert_eq!(found.len(), 1, "{found:?}");
        let d = &found[0];
        assert!(
            d.message.starts_with(
                "chains loop: C0 -> C1 -> C2 -> C3 -> C4 -> C5 -> ... (9989 more) -> "
            ),
            "{}",
            d.message
        );
        assert!(d.message.ends_with("C9999 -> C0"), "{}", d.message);
        assert!(d.help.as_deref().is_some_and(|h| h.len() < 400));
    }

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[
                // A diamond is not a loop.
                &filter(
                    ":A - [0:0]\n:B - [0:0]\n:C - [0:0]\n-A INPUT -j A\n-A INPUT -j B\n-A A -j C\n-A B -j C\n",
                ),
                // The same names in two tables are different chains.
                "*nat\n:PREROUTING ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n-A PREROUTING -j A\n-A A -j B\nCOMMIT\n\
                 *filter\n:INPUT ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n-A INPUT -j B\n-A B -j A\nCOMMIT\n",
            ],
            &[
                (&filter(":A - [0:0]\n-A INPUT -j A\n-A A -p tcp -j A\n"), 1),
                (
                    &filter(
                        ":A - [0:0]\n:B - [0:0]\n:C - [0:0]\n-A INPUT -j A\n-A A -j B\n-A B -g C\n-A C -s 10.0.0.0/8 -j A\n",
                    ),
                    1,
                ),
                // Two separate loops.
                (
                    &filter(
                        ":A - [0:0]\n:B - [0:0]\n:C - [0:0]\n-A INPUT -j A\n-A A -j B\n-A B -j A\n-A INPUT -j C\n-A C -j C\n",
                    ),
                    2,
                ),
            ],
        );
    }

    #[test]
    fn message_walks_the_loop() {
        let found = run(
            &LINT,
            &filter(
                ":A - [0:0]\n:B - [0:0]\n:C - [0:0]\n-A INPUT -j A\n-A A -j B\n-A B -g C\n-A C -s 10.0.0.0/8 -j A\n",
            ),
        );
        assert_eq!(found[0].message, "chains loop: A -> B -> C -> A");
        assert!(
            found[0].help.as_deref().unwrap().contains("line 9, 10"),
            "{:?}",
            found[0].help
        );
    }
}
