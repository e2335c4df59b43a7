//! RL407 probability-ladder: the `-m statistic` probabilities of a service chain's endpoint
//! jumps do not split traffic evenly, or let some of it fall through.

use crate::context::{Findings, LintContext};
use crate::kube::names::ServiceChainKind;
use crate::kube::{EndpointJump, Service};
use crate::registry::{Category, Lint};
use rulelint_parser::{ChainId, CodeInfo, Severity};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL407",
        name: "probability-ladder",
        severity: Severity::Error,
        summary: "endpoint jumps of a KUBE-SVC or KUBE-SVL chain with the wrong statistic probabilities",
        docs: "## What it flags
The balancing rules of a `KUBE-SVC-*`, `KUBE-SVL-*` or `KUBE-XLB-*` chain: its jumps to
`KUBE-SEP-*` endpoint chains, leaving out the session-affinity jumps (`-m recent --rcheck`).
With `n` such jumps, jump `i` (counted from 0) must carry
`-m statistic --mode random --probability` 1/(n-i) and the last one no probability, as
kube-proxy writes them. Each of these is flagged:
- a probability that is not 1/(n-i) (the load is skewed);
- a jump other than the last with no probability (it takes all traffic that reaches it, so the
  endpoints after it never get any);
- a last jump with a probability below 1 (the rest of the traffic falls through the chain
  untranslated).

A probability counts as right when the kernel stores the same value: the statistic match keeps
it as a fraction of 2^31, and `iptables-save` prints that back with 11 decimals, so kube-proxy's
`0.3333333333` reads `0.33333333349`. Values that kube-proxy before 1.17 wrote with 5 decimals
(`0.33333`, read back as `0.33332999982`; kubernetes#83599) are accepted as well.

## Why it matters
Each rule sees only the traffic the rules above it let through, so the probabilities must grow
towards the end for every endpoint to get 1/n of the new connections. A wrong ladder sends
most connections to a few pods, makes some endpoints unreachable, or, when the last rule is
not a catch-all, lets connections leave nat with the Service's virtual IP as their destination,
where they hang. kube-proxy always writes a correct ladder, so a wrong one means the chain was
edited by hand, by another tool, or mixed from two syncs.

## Example
```text
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-AAAAAAAAAAAAAAAA
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.2.7:8080\" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-BBBBBBBBBBBBBBBB
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.3.9:8080\" -j KUBE-SEP-CCCCCCCCCCCCCCCC
```
The first endpoint gets 50% of the connections, the others 25% each.

## Instead
```text
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-AAAAAAAAAAAAAAAA
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.2.7:8080\" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-BBBBBBBBBBBBBBBB
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.3.9:8080\" -j KUBE-SEP-CCCCCCCCCCCCCCCC
```
Restart kube-proxy so that it writes the chain again.

## Exceptions
Chains written with `-I`, `-D` or `-R` (iptables-restore input) are skipped: their order as
written is not the order the kernel holds.

## References
- https://github.com/kubernetes/kubernetes/pull/83599
- https://github.com/kubernetes/kubernetes/issues/37932",
    },
    category: Category::Correctness,
    check,
};

/// The statistic match stores a probability as a fraction of 2^31.
const SCALE: f64 = 2_147_483_648.0;

/// The value the kernel stores for a probability (iptables: `lround(0x80000000 * p)`).
fn stored(p: f64) -> f64 {
    (p * SCALE).round()
}

/// What `iptables-save` prints for kube-proxy's `1/m`.
fn printed(m: usize) -> String {
    format!("{:.11}", stored(1.0 / m as f64) / SCALE)
}

/// Whether `p` is kube-proxy's probability for `1/m`: the kernel value of `1/m` (kube-proxy
/// 1.17 on prints 10 decimals, within a unit of it), or of `1/m` rounded to 5 decimals (before
/// 1.17; both ways on a tie, Go rounds half to even).
fn is_one_over(p: f64, m: usize) -> bool {
    let k = stored(p);
    let close = |q: f64| (k - stored(q)).abs() <= 2.0;
    let m = m as f64;
    if close(1.0 / m) {
        return true;
    }
    let x = 1e5 / m;
    if (x - x.floor() - 0.5).abs() < 1e-6 {
        close(x.floor() / 1e5) || close(x.ceil() / 1e5)
    } else {
        close(x.round() / 1e5)
    }
}

/// A percentage for messages: `33.3%`, `0.01%`.
fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p != 0.0 && p.abs() < 0.1 {
        format!("{p:.2}%")
    } else {
        format!("{p:.1}%")
    }
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    // A ladder cut off by a truncated paste or a fragment looks like one that falls through.
    if !cx.kube_tables_complete() {
        return;
    }
    let kube = cx.kube();
    let set = cx.ruleset();
    let mut balanced: Vec<&EndpointJump> = Vec::new();
    for service in &kube.services {
        for (kind, id) in service.chains.iter() {
            let jumps = match kind {
                ServiceChainKind::Cluster => &service.endpoints[..],
                ServiceChainKind::Local => &service.local_endpoints[..],
                ServiceChainKind::External | ServiceChainKind::Firewall => continue,
            };
            // `written_in_order`, as the chain walks read it once for every chain, rather than
            // each Service chain's rules read again here.
            if !cx.chain_walk(set.chain(id)).in_order {
                continue;
            }
            balanced.clear();
            balanced.extend(Service::balanced(jumps).filter(|j| set.rule(j.rule).chain().id == id));
            check_chain(cx, out, service, id, &balanced);
        }
    }
}

fn check_chain(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    service: &Service<'_>,
    id: ChainId,
    jumps: &[&EndpointJump],
) {
    let set = cx.ruleset();
    let n = jumps.len();
    // Worded only for a finding: nearly every ladder is sound, and this runs per Service chain.
    let of = || {
        let chain = set.chain(id).name();
        match &service.name {
            Some(svc) => format!("{chain} ({svc})"),
            None => chain.to_string(),
        }
    };
    let fair = 1.0 / n as f64;
    // The share of new connections that reaches the current rule.
    let mut reaching = 1.0;
    for (i, jump) in jumps.iter().enumerate() {
        let rule = set.rule(jump.rule);
        let last = i + 1 == n;
        let m = n - i;
        let written = || rule.probability_text().unwrap_or("");
        match (last, jump.probability) {
            (true, None) => {}
            // 1 (or more) matches every packet: a catch-all all the same.
            (true, Some(p)) if stored(p) >= SCALE => {}
            (true, Some(p)) => {
                let through = reaching * (1.0 - p.max(0.0));
                out.push(
                    out.at_rule(
                        rule,
                        format!(
                            "the last endpoint jump in {} has probability {}: {} of new connections fall through the chain untranslated",
                            of(),
                            written(),
                            percent(through)
                        ),
                    )
                    .with_label("the last endpoint jump must match every packet that reaches it")
                    .with_help(format!(
                        "kube-proxy writes the last of the {n} endpoint jumps without `-m statistic` so that it catches every connection the rules above let through; remove the statistic match from this rule, or restart kube-proxy so that it writes the chain again"
                    )),
                );
            }
            (false, None) => {
                let after = m - 1;
                out.push(
                    out.at_rule(
                        rule,
                        format!(
                            "endpoint jump {} of {n} in {} has no probability: it takes every connection that reaches it, so {} after it never {} any",
                            i + 1,
                            of(),
                            if after == 1 { "the endpoint".to_string() } else { format!("the {after} endpoints") },
                            if after == 1 { "gets" } else { "get" }
                        ),
                    )
                    .with_label(format!(
                        "expected `-m statistic --mode random --probability {}` (1/{m})",
                        printed(m)
                    ))
                    .with_help(format!(
                        "kube-proxy gives endpoint jump i (from 0) of n the probability 1/(n-i), so that each endpoint gets 1/{n} of new connections; add `-m statistic --mode random --probability {}` here, or restart kube-proxy so that it writes the chain again",
                        printed(m)
                    )),
                );
                // Nothing reaches the rules below: their probabilities do not matter.
                break;
            }
            (false, Some(p)) => {
                if !is_one_over(p, m) {
                    let share = reaching * p.clamp(0.0, 1.0);
                    out.push(
                        out.at_rule(
                            rule,
                            format!(
                                "endpoint jump {} of {n} in {} has probability {}, expected {} (1/{m})",
                                i + 1,
                                of(),
                                written(),
                                printed(m)
                            ),
                        )
                        .with_label(format!(
                            "this endpoint gets {} of new connections instead of {}",
                            percent(share),
                            percent(fair)
                        ))
                        .with_help(format!(
                            "kube-proxy gives endpoint jump i (from 0) of n the probability 1/(n-i), so that each endpoint gets 1/{n} of new connections; write `--probability {}` here, or restart kube-proxy so that it writes the chain again",
                            printed(m)
                        )),
                    );
                }
                reaching *= 1.0 - p.clamp(0.0, 1.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    /// A nat table with a KUBE-SVC chain holding the given endpoint jumps (probability or
    /// `None`, affinity) and an endpoint chain for each.
    fn ladder(chain: &str, jumps: &[(Option<&str>, bool)]) -> String {
        let mut decl = String::new();
        let mut rules = String::new();
        for (i, (p, affinity)) in jumps.iter().enumerate() {
            let sep = format!("KUBE-SEP-{:0>16}", i % 8);
            if !decl.contains(&sep) {
                decl.push_str(&format!(":{sep} - [0:0]\n"));
                rules.push_str(&format!(
                    "-A {sep} -p tcp -m comment --comment \"default/web:http\" -m tcp -j DNAT --to-destination 10.244.{i}.5:8080\n"
                ));
            }
            let mut rule = format!(
                "-A {chain} -m comment --comment \"default/web:http -> 10.244.{i}.5:8080\""
            );
            if *affinity {
                rule.push_str(&format!(
                    " -m recent --rcheck --seconds 10800 --reap --name {sep} --mask 255.255.255.255 --rsource"
                ));
            }
            if let Some(p) = p {
                rule.push_str(&format!(" -m statistic --mode random --probability {p}"));
            }
            rules.push_str(&format!("{rule} -j {sep}\n"));
        }
        format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:{chain} - [0:0]\n{decl}-A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j {chain}\n{rules}COMMIT\n"
        )
    }

    const SVC: &str = "KUBE-SVC-WEBWEBWEBWEBWEBW";

    #[test]
    fn cases() {
        let one = ladder(SVC, &[(None, false)]);
        let three = ladder(
            SVC,
            &[
                (Some("0.33333333349"), false),
                (Some("0.50000000000"), false),
                (None, false),
            ],
        );
        // kube-proxy's own restore input: 10 decimals.
        let restore_input = ladder(
            SVC,
            &[
                (Some("0.3333333333"), false),
                (Some("0.5000000000"), false),
                (None, false),
            ],
        );
        // kube-proxy before 1.17: 5 decimals, as written and as read back.
        let five = ladder(
            SVC,
            &[
                (Some("0.33333"), false),
                (Some("0.50000"), false),
                (None, false),
            ],
        );
        let five_saved = ladder(
            SVC,
            &[
                (Some("0.33332999982"), false),
                (Some("0.50000000000"), false),
                (None, false),
            ],
        );
        // Session affinity: the --rcheck jumps come first and have no probability.
        let affinity = ladder(
            SVC,
            &[
                (None, true),
                (None, true),
                (Some("0.50000000000"), false),
                (None, false),
            ],
        );
        let local = ladder(
            "KUBE-SVL-WEBWEBWEBWEBWEBW",
            &[(Some("0.50000000000"), false), (None, false)],
        );
        let skewed = ladder(
            SVC,
            &[
                (Some("0.50000000000"), false),
                (Some("0.50000000000"), false),
                (None, false),
            ],
        );
        let last_with_probability = ladder(
            SVC,
            &[
                (Some("0.50000000000"), false),
                (Some("0.50000000000"), false),
            ],
        );
        let missing = ladder(SVC, &[(None, false), (None, false), (None, false)]);
        let local_skewed = ladder(
            "KUBE-SVL-WEBWEBWEBWEBWEBW",
            &[(Some("0.25000000000"), false), (None, false)],
        );
        assert_cases(
            &LINT,
            &[
                &one,
                &three,
                &restore_input,
                &five,
                &five_saved,
                &affinity,
                &local,
            ],
            &[
                (&skewed, 1),
                (&last_with_probability, 1),
                (&missing, 1),
                (&local_skewed, 1),
            ],
        );
    }

    #[test]
    fn probabilities_match_within_the_kernel_precision() {
        for m in [2, 3, 5, 7, 64, 319, 1000, 100_000] {
            assert!(is_one_over(1.0 / m as f64, m), "{m}");
            let saved: f64 = printed(m).parse().unwrap();
            assert!(is_one_over(saved, m), "{m}");
            let five: f64 = format!("{:.5}", 1.0 / m as f64).parse().unwrap();
            assert!(is_one_over(five, m), "{m}");
        }
        assert_eq!(printed(3), "0.33333333349");
        assert_eq!(printed(5), "0.20000000019");
        // 1/64 = 0.015625: Go prints 0.01562, half up gives 0.01563.
        assert!(is_one_over(0.01562, 64) && is_one_over(0.01563, 64));
        assert!(!is_one_over(0.5, 3));
        assert!(!is_one_over(0.3333, 3));
        assert!(!is_one_over(0.33334, 3));
    }

    #[test]
    fn messages() {
        let skewed = ladder(
            SVC,
            &[
                (Some("0.50000000000"), false),
                (Some("0.50000000000"), false),
                (None, false),
            ],
        );
        let found = run(&LINT, &skewed);
        assert_eq!(
            found[0].message,
            "endpoint jump 1 of 3 in KUBE-SVC-WEBWEBWEBWEBWEBW (default/web:http) has probability 0.50000000000, expected 0.33333333349 (1/3)"
        );
        assert_eq!(
            found[0].label,
            "this endpoint gets 50.0% of new connections instead of 33.3%"
        );
        let last = ladder(
            SVC,
            &[
                (Some("0.50000000000"), false),
                (Some("0.50000000000"), false),
            ],
        );
        assert_eq!(
            run(&LINT, &last)[0].message,
            "the last endpoint jump in KUBE-SVC-WEBWEBWEBWEBWEBW (default/web:http) has probability 0.50000000000: 25.0% of new connections fall through the chain untranslated"
        );
        let missing = ladder(SVC, &[(None, false), (None, false), (None, false)]);
        let found = run(&LINT, &missing);
        assert_eq!(
            found[0].message,
            "endpoint jump 1 of 3 in KUBE-SVC-WEBWEBWEBWEBWEBW (default/web:http) has no probability: it takes every connection that reaches it, so the 2 endpoints after it never get any"
        );
        assert_eq!(
            found[0].label,
            "expected `-m statistic --mode random --probability 0.33333333349` (1/3)"
        );
    }
}
