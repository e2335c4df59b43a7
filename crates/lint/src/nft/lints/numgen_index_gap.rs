//! RL452 numgen-index-gap: `numgen ... mod N` looked up in a map that lacks some of the indices
//! `0..N-1` (plus its offset), or has keys it never produces.

use crate::nft::NftLint;
use crate::nft::context::{NftContext, NftFindings};
use crate::registry::Category;
use rulelint_nft::{Element, Expr, Severity, Stmt};
use rulelint_parser::CodeInfo;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL452",
        name: "numgen-index-gap",
        severity: Severity::Error,
        summary: "a `numgen ... mod N` map lacks some index in 0..N-1, or has keys numgen never produces",
        docs: "## What it flags
A `numgen random mod N` (or `numgen inc mod N`) whose result is looked up in an anonymous map
or verdict map (`vmap { 0 : goto endpoint-A, 1 : goto endpoint-B }`,
`map { 0 : 10.180.0.1 . 80 }`) when
- some index from `0` to `N-1` (shifted by `offset`) has no element, or
- an element's key is outside that range, so it is never chosen.

## Why it matters
kube-proxy writes exactly the indices `0..N-1`, one per endpoint. A missing index has no
verdict: that share of new connections (one in `N`) falls through the Service chain without
DNAT and fails. An extra key is an endpoint that never gets traffic.

## Example
```text
numgen random mod 3 vmap { 0 : goto endpoint-A, 1 : goto endpoint-B }
```

## Instead
```text
numgen random mod 2 vmap { 0 : goto endpoint-A, 1 : goto endpoint-B }
```
Let kube-proxy rewrite the chain (restart it) if it wrote it this way; fix the rule if a person
or another tool did.",
    },
    category: Category::Correctness,
    check,
};

/// At most this many missing indices are named in a message.
const NAMED: usize = 8;

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    let set = cx.ruleset();
    // The context's walk found the statements that look up a map by numgen.
    // Reused across the thousands of Service chains: one allocation each, not one per rule.
    let mut lookups = Vec::new();
    let mut seen = Vec::new();
    for &(rule_id, s) in cx.walked().numgen_lookups() {
        let Some(rule) = set.rules.get(rule_id.index()) else {
            continue;
        };
        if let Some(statement) = set.statements_of(rule).get(s as usize) {
            lookups.clear();
            match &statement.kind {
                Stmt::Vmap { key, map } => lookups.push((key, map)),
                Stmt::Nat(nat) => {
                    if let Some(to) = &nat.to {
                        collect_maps(to, &mut lookups);
                    }
                }
                Stmt::Assign { value, .. } => collect_maps(value, &mut lookups),
                _ => {}
            }
            for &(key, map) in &lookups {
                let Expr::Numgen(numgen) = key else {
                    continue;
                };
                let (modulus, offset) = (&numgen.modulus, &numgen.offset);
                let Expr::Set(elements) = map else {
                    continue;
                };
                let (Ok(n), Ok(offset)) = (
                    modulus.parse::<u64>(),
                    offset.map_or(Ok(0), |o| o.parse::<u64>()),
                ) else {
                    continue;
                };
                // A map with far more indices than elements is not kube-proxy's; stay linear.
                // A rule of a chain cut short may be cut inside its map (asked last: few rules
                // get here, and the chain is memory the statement walk does not touch).
                if n == 0 || n > 1 << 20 || !cx.chain(rule.chain).closed {
                    continue;
                }
                report(
                    cx,
                    out,
                    Lookup {
                        chain: rule.chain,
                        span: statement.span,
                        n,
                        offset,
                        elements,
                    },
                    &mut seen,
                );
            }
        }
    }
}

/// The map lookups of an expression, in written order. An explicit stack: no recursion on
/// input depth.
fn collect_maps<'e, 'a>(expr: &'e Expr<'a>, out: &mut Vec<(&'e Expr<'a>, &'e Expr<'a>)>) {
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Map { key, map } => out.push((key, map)),
            Expr::Concat(parts) => stack.extend(parts.iter().rev()),
            Expr::Binop(b) => {
                stack.push(&b.right);
                stack.push(&b.left);
            }
            _ => {}
        }
    }
}

/// A `numgen ... mod n offset o` lookup in a map of `elements`, written at `span` in `chain`.
struct Lookup<'e, 'a> {
    chain: rulelint_nft::ChainId,
    span: rulelint_nft::Span,
    n: u64,
    offset: u64,
    elements: &'e [Element<'a>],
}

/// Reports the lookup's missing and extra indices; `seen` is scratch space.
fn report(
    cx: &NftContext<'_, '_>,
    out: &mut NftFindings<'_>,
    lookup: Lookup<'_, '_>,
    seen: &mut Vec<bool>,
) {
    let Lookup {
        chain,
        span,
        n,
        offset,
        elements,
    } = lookup;
    seen.clear();
    seen.resize(n as usize, false);
    let mut outside = Vec::new();
    for element in elements {
        // A key that is not a plain number (a range, an expression) is not judged.
        let Expr::Literal(text) = &element.key else {
            return;
        };
        let Ok(k) = text.parse::<u64>() else {
            return;
        };
        match k.checked_sub(offset).filter(|i| *i < n) {
            Some(i) => seen[i as usize] = true,
            None => outside.push((k, element.span)),
        }
    }
    let missing: Vec<u64> = (0..n)
        .filter(|i| !seen[*i as usize])
        .map(|i| i + offset)
        .collect();
    // Worded only for a finding: most maps have every index.
    let range = || format!("{offset}..{}", offset + n - 1);
    if !missing.is_empty() {
        let range = range();
        let mut named: Vec<String> = missing.iter().take(NAMED).map(u64::to_string).collect();
        if missing.len() > NAMED {
            named.push(format!("and {} more", missing.len() - NAMED));
        }
        let message = if missing.len() == 1 {
            format!(
                "numgen mod {n} has no element for index {} of {range}",
                missing[0]
            )
        } else {
            format!(
                "numgen mod {n} has no element for {} of its indices {range}: {}",
                missing.len(),
                named.join(", ")
            )
        };
        out.push_in(
            chain,
            out.diagnostic(span, message)
                .with_label(format!("numgen map in {}", cx.chain(chain).name))
                .with_help(format!("about {} of {n} new connections find no element and fall through without DNAT; kube-proxy writes one element per index, so restart it or fix the rule", missing.len())),
        );
    }
    for (k, element_span) in outside {
        let range = range();
        out.push_in(
            chain,
            out.diagnostic(
                element_span,
                format!("key {k} is outside numgen's range {range}: this element is never chosen"),
            )
            .with_label("element never chosen")
            .with_help("make the modulus the number of elements, and number them from the offset"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::lints::testing::{HEALTHY, assert_cases};

    fn chain(rule: &str) -> String {
        format!(
            "table ip t {{\n\tchain a {{\n\t\t{rule}\n\t}}\n\tchain b {{\n\t}}\n\tchain c {{\n\t}}\n}}\n"
        )
    }

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[
                HEALTHY,
                &chain("numgen random mod 1 vmap { 0 : goto b }"),
                &chain("numgen inc mod 2 offset 5 vmap { 5 : jump b, 6 : jump c }"),
                &chain(
                    "meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.0.0.1 . 80, 1 : 10.0.0.2 . 80 }",
                ),
                &chain("numgen random mod 2 vmap { 0-0 : goto b, 1 : goto c }"),
            ],
            &[
                (
                    &chain("numgen random mod 3 vmap { 0 : goto b, 1 : goto c }"),
                    1,
                ),
                (
                    &chain("numgen random mod 2 vmap { 0 : goto b, 2 : goto c }"),
                    2,
                ),
                (
                    &chain(
                        "meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 1 : 10.0.0.2 . 80 }",
                    ),
                    1,
                ),
                (
                    &HEALTHY.replace("numgen random mod 2", "numgen random mod 20"),
                    1,
                ),
            ],
        );
    }
}
