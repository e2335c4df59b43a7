//! RL411 mixed-proxy-mode: rules of two Service proxies (kube-proxy's iptables and IPVS modes,
//! or kube-proxy and kube-router's service proxy) both catch traffic.

use crate::context::{Findings, LintContext};
use crate::kube::names::{is_endpoint_chain, service_chain};
use crate::kube::{NfacctOrSet, is_ipvs_chain, is_ipvs_set};
use crate::registry::{Category, Lint};
use rulelint_parser::{ChainId, CodeInfo, MatchRef, RuleRef, Severity, TableKind};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL411",
        name: "mixed-proxy-mode",
        severity: Severity::Warning,
        summary: "rules of two Service proxy modes both catch traffic: a leftover of a mode switch",
        docs: "## What it flags
Rules of kube-proxy's IPVS mode and of its iptables mode that both catch traffic on one node,
or kube-proxy's iptables-mode Service rules beside kube-router's service proxy:

* IPVS mode: a jump to one of its chains (`KUBE-IPVS-FILTER`, `KUBE-IPVS-OUT-FILTER`,
  `KUBE-NODE-PORT`, `KUBE-LOAD-BALANCER`, `KUBE-SOURCE-RANGES-FIREWALL`) that has rules, or a
  match on one of its ipsets (`KUBE-CLUSTER-IP`, `KUBE-LOOP-BACK`, `KUBE-NODE-PORT-TCP`, ...);
* kube-router's service proxy: a jump to `KUBE-ROUTER-SERVICES` or a match on its
  `kube-router-svip` ipset;
* iptables mode: a jump to a Service or endpoint chain (`KUBE-SVC-*`, `KUBE-EXT-*`,
  `KUBE-SEP-*`, ...) that has rules, or a \"has no endpoints\" REJECT.

Only rules that a built-in chain reaches count: chains nothing jumps to any more are dead
weight, not traffic. One finding per dump, on the first IPVS or kube-router rule, naming the
first iptables-mode rule.

## Why it matters
A proxy-mode switch (iptables to IPVS or back, or kube-proxy to kube-router) does not always
remove the old mode's rules: the new mode rewrites the chains it owns and leaves the others
hooked. The old rules keep acting on Service traffic: a \"has no endpoints\" REJECT of the
iptables mode rejects a Service the IPVS mode now serves, and `KUBE-IPVS-FILTER` rejects new
connections to addresses in a stale ipset. The failures depend on the Service and the node.

## Example
```text
-A INPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-FILTER
-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES
-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment \"kube-system/kube-dns:dns has no endpoints\" -m udp --dport 53 -j REJECT --reject-with icmp-port-unreachable
```

## Instead
Keep the rules of the mode kube-proxy runs in. Clean up the other mode with
`kube-proxy --cleanup` (it removes the rules of every mode; restart kube-proxy afterwards so
that it writes its own again), or reboot the node. When kube-router replaces kube-proxy, remove
the kube-proxy DaemonSet and run `kube-proxy --cleanup` on every node.

## Exceptions
kube-router as network-policy controller only (`KUBE-ROUTER-INPUT`, `-FORWARD`, `-OUTPUT`,
`KUBE-POD-FW-*`, `KUBE-NWPLCY-*`) runs beside kube-proxy by design and is not a second proxy.
Cilium's chains look the same with and without its kube-proxy replacement, so Cilium is not
checked. Leftover chains that nothing reaches are not flagged here.",
    },
    category: Category::Suspicious,
    check,
};

/// What a rule shows of a proxy mode, for the message.
enum Evidence<'a> {
    /// A jump to a chain.
    Jump(&'a str),
    /// A match on an ipset.
    Set(&'a str),
    /// A "has no endpoints" REJECT.
    NoEndpoints,
}

/// The first ipset a rule matches on that `pred` accepts.
fn set_match<'a>(rule: RuleRef<'_, 'a>, pred: impl Fn(&str) -> bool) -> Option<&'a str> {
    rule.matches()
        .filter(is_set_match)
        .flat_map(|m| m.options())
        .filter(|o| matches!(o.name(), "--match-set" | "--set"))
        .filter_map(|o| o.args().next())
        .find(|name| pred(name))
}

/// Whether a match is `-m set`.
fn is_set_match(m: &MatchRef<'_, '_>) -> bool {
    m.module() == Some("set")
}

/// A jump to a chain of the rule's table that has rules and whose name `pred` accepts;
/// `target` is the rule's target's name.
fn jump_named<'a>(
    rule: RuleRef<'_, 'a>,
    target: Option<&'a str>,
    pred: impl Fn(&str) -> bool,
) -> Option<&'a str> {
    let target = target?;
    if !pred(target) {
        return None;
    }
    let chain = rule.chain().table().chain(target)?;
    (chain.rule_count() > 0).then_some(target)
}

/// Whether a built-in chain reaches a chain, asked only of the chains this lint reads: a
/// 250k-rule node has ~100k chains, nearly all of which it skips by the model, so walking
/// every chain from the hooks (`ChainGraph::reachable_from_hooks`) costs more than the lint.
/// Each question walks the callers upward (no recursion); a walk that finds no built-in chain
/// marks every chain it saw as unreachable. Past a budget of edges the whole graph is walked
/// once instead, so the work stays linear on any graph.
struct Reach<'c, 'g, 'a> {
    cx: &'c LintContext<'g, 'a>,
    /// Per chain: 0 not known, 1 reachable, 2 not.
    known: Vec<u8>,
    /// Per chain: the walk that last saw it.
    seen: Vec<u32>,
    walk: u32,
    stack: Vec<ChainId>,
    visited: Vec<ChainId>,
    budget: usize,
    full: Option<Vec<bool>>,
}

impl<'c, 'g, 'a> Reach<'c, 'g, 'a> {
    fn new(cx: &'c LintContext<'g, 'a>) -> Self {
        let chains = cx.ruleset().chains.len();
        Reach {
            cx,
            known: vec![0; chains],
            seen: vec![0; chains],
            walk: 0,
            stack: Vec::new(),
            visited: Vec::new(),
            budget: 2 * chains + 1024,
            full: None,
        }
    }

    fn hooked(&mut self, chain: ChainId) -> bool {
        let i = chain.index();
        if let Some(full) = &self.full {
            return full.get(i).copied().unwrap_or(false);
        }
        match self.known.get(i) {
            None => return false,
            Some(1) => return true,
            Some(2) => return false,
            Some(_) => {}
        }
        let set = self.cx.ruleset();
        let graph = self.cx.graph();
        self.walk = self.walk.wrapping_add(1);
        self.stack.clear();
        self.visited.clear();
        self.stack.push(chain);
        self.visited.push(chain);
        self.seen[i] = self.walk;
        let mut found = false;
        while let Some(c) = self.stack.pop() {
            let k = c.index();
            if set.chains[k].builtin || self.known[k] == 1 {
                found = true;
                break;
            }
            if self.known[k] == 2 {
                continue;
            }
            for (from, _) in graph.jumps_into(c) {
                let Some(stamp) = self.seen.get_mut(from.index()) else {
                    continue;
                };
                self.budget = self.budget.saturating_sub(1);
                if *stamp != self.walk {
                    *stamp = self.walk;
                    self.stack.push(from);
                    self.visited.push(from);
                }
            }
            if self.budget == 0 {
                let full = graph.reachable_from_hooks(set);
                let answer = full.get(i).copied().unwrap_or(false);
                self.full = Some(full);
                return answer;
            }
        }
        if found {
            self.known[i] = 1;
        } else {
            for v in &self.visited {
                self.known[v.index()] = 2;
            }
        }
        found
    }
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let kube = cx.kube();
    if !kube.layout.is_kubernetes() {
        return;
    }
    let set = cx.ruleset();
    let mut reachable = Reach::new(cx);
    let mut ipvs: Option<(RuleRef<'_, '_>, Evidence<'_>)> = None;
    let mut router: Option<(RuleRef<'_, '_>, Evidence<'_>)> = None;
    let mut iptables: Option<(RuleRef<'_, '_>, Evidence<'_>)> = None;
    for table in cx.tables() {
        let kind = table.kind();
        if !matches!(kind, TableKind::Nat | TableKind::Filter) {
            continue;
        }
        for chain in table.chains() {
            // IPVS and kube-router state never lives in iptables mode's per-Service and
            // per-endpoint chains: once those have shown iptables mode, skip them (they are
            // most of a large node). The model knows nat's by id, without reading their names.
            if iptables.is_some()
                && (kube.service_of_chain(chain.id).is_some()
                    || kube.endpoint_index(chain.id).is_some())
            {
                continue;
            }
            if !reachable.hooked(chain.id) {
                continue;
            }
            let name = chain.name();
            if iptables.is_some() && (service_chain(name).is_some() || is_endpoint_chain(name)) {
                continue;
            }
            // Where `at` is in the model's dispatch rules (read in order with the chain's).
            let mut at = 0;
            for rule in chain.rules() {
                if iptables.is_some() && (ipvs.is_some() || router.is_some()) {
                    break;
                }
                // kube-proxy's dispatch rules (most of a large node's nat `KUBE-SERVICES`) show
                // only iptables mode: a jump to a Service chain, no set match.
                if iptables.is_some()
                    && kube
                        .dispatch_keys
                        .is_plain_dispatch(chain.id, rule.id, &mut at)
                {
                    continue;
                }
                // The target and whether any match is a set match (from the module words, without
                // building the matches), read once for the questions below (this runs for every
                // dispatch rule of a large node).
                let target = rule.target().map(|t| t.name());
                let sets = (ipvs.is_none() || router.is_none()) && NfacctOrSet::of(rule).set;
                if ipvs.is_none() {
                    ipvs = jump_named(rule, target, is_ipvs_chain)
                        .map(Evidence::Jump)
                        .or_else(|| {
                            sets.then(|| set_match(rule, is_ipvs_set))
                                .flatten()
                                .map(Evidence::Set)
                        })
                        .map(|e| (rule, e));
                }
                if router.is_none() {
                    router = jump_named(rule, target, |n| n == "KUBE-ROUTER-SERVICES")
                        .map(Evidence::Jump)
                        .or_else(|| {
                            sets.then(|| set_match(rule, |n| n.starts_with("kube-router-svip")))
                                .flatten()
                                .map(Evidence::Set)
                        })
                        .map(|e| (rule, e));
                }
                if iptables.is_none() && kind == TableKind::Nat {
                    iptables = jump_named(rule, target, |n| {
                        service_chain(n).is_some() || is_endpoint_chain(n)
                    })
                    .map(|t| (rule, Evidence::Jump(t)));
                }
            }
        }
    }
    // filter's "has no endpoints" REJECTs, where a built-in chain reaches them.
    let first_reject = kube
        .services
        .iter()
        .flat_map(|s| &s.no_endpoints_rules)
        .map(|&id| set.rule(id))
        .filter(|r| {
            r.target().is_some_and(|t| t.name() == "REJECT") && reachable.hooked(r.get().chain)
        })
        .min_by_key(|r| r.get().span.start);
    if let Some(reject) = first_reject
        && iptables
            .as_ref()
            .is_none_or(|(r, _)| reject.get().span.start < r.get().span.start)
    {
        iptables = Some((reject, Evidence::NoEndpoints));
    }
    let Some((old, old_evidence)) = iptables else {
        return;
    };
    let (rule, evidence, (subject, proxy), help) = match (ipvs, router) {
        (Some((r, e)), _) => (
            r,
            e,
            ("kube-proxy's IPVS and iptables modes", "IPVS mode"),
            "one of the two modes is a leftover of a proxy-mode switch: run `kube-proxy --cleanup` (or reboot the node), then restart kube-proxy so that it writes the rules of the mode it is configured for",
        ),
        (None, Some((r, e))) => (
            r,
            e,
            (
                "kube-router's service proxy and kube-proxy's iptables mode",
                "kube-router service proxy",
            ),
            "kube-router replaces kube-proxy: remove the kube-proxy DaemonSet and run `kube-proxy --cleanup` on every node, or turn off kube-router's `--run-service-proxy`",
        ),
        (None, None) => return,
    };
    let line = cx.line(old.get().span.start);
    let old_text = match old_evidence {
        Evidence::Jump(target) => {
            let service = old
                .chain()
                .table()
                .chain(target)
                .and_then(|c| kube.service_of_chain(c.id))
                .map(|s| format!(" ({})", s.display_name(set)))
                .unwrap_or_default();
            format!("jumps to {target}{service}")
        }
        Evidence::Set(name) => format!("matches ipset {name}"),
        Evidence::NoEndpoints => match old.comment() {
            Some(comment) => format!("rejects traffic: \"{comment}\""),
            None => "rejects traffic for a Service without endpoints".to_string(),
        },
    };
    let this = match evidence {
        Evidence::Jump(target) => format!("this rule jumps to {target}"),
        Evidence::Set(name) => format!("this rule matches ipset {name}"),
        Evidence::NoEndpoints => "this rule rejects traffic".to_string(),
    };
    out.push(
        out.at_rule(
            rule,
            format!("{subject} both catch traffic: {this}, and the rule on line {line} {old_text}"),
        )
        .with_label(format!("{proxy} rule"))
        .with_help(help),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    /// iptables mode: a Service chain reached from KUBE-SERVICES.
    const IPTABLES_NAT: &str = "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-SEP-BBBBBBBBBBBBBBBB - [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n\
        -A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n\
        -A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m comment --comment \"default/web:http\" -m tcp -j DNAT --to-destination 10.244.1.5:8080\n\
        -A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n\
        -A KUBE-SVC-AAAAAAAAAAAAAAAA -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-BBBBBBBBBBBBBBBB\n\
        COMMIT\n";

    /// IPVS mode leftovers in filter.
    const IPVS_FILTER: &str = "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-IPVS-FILTER - [0:0]\n\
        -A INPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-FILTER\n\
        -A KUBE-IPVS-FILTER -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN\n\
        -A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT --reject-with icmp-port-unreachable\n\
        COMMIT\n";

    /// The per-chain answers equal the full walk from the hooks, in any order of questions,
    /// with loops and unreachable islands, and when the budget runs out midway.
    #[test]
    fn reach_per_chain_equals_the_full_walk() {
        let looped = "*filter\n:INPUT ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n:C - [0:0]\n:D - [0:0]\n:E - [0:0]\n:F - [0:0]\n\
            -A INPUT -j A\n-A A -j B\n-A B -j A\n-A B -j C\n-A D -j E\n-A E -j D\n-A E -j C\n-A F -j F\nCOMMIT\n";
        let generated =
            rulelint_dumpgen::generate(&rulelint_dumpgen::Shape::with_rule_target(3_000));
        let mut unreachable = 0;
        let mut fell_back = false;
        for text in [looped, IPTABLES_NAT, IPVS_FILTER, generated.as_str()] {
            let parsed = rulelint_parser::parse(text);
            let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
            let cx = LintContext::new(&parsed.ruleset, &graph);
            let full = graph.reachable_from_hooks(&parsed.ruleset);
            assert!(full.iter().any(|&r| r));
            unreachable += full.iter().filter(|&&r| !r).count();
            let ids: Vec<ChainId> = (0..full.len() as u32).map(ChainId).collect();
            for budget in [usize::MAX, 3] {
                for order in [ids.clone(), ids.iter().rev().copied().collect()] {
                    let mut reach = Reach::new(&cx);
                    reach.budget = budget;
                    for &id in &order {
                        assert_eq!(reach.hooked(id), full[id.index()], "chain {}", id.index());
                    }
                    assert!(budget == 3 || reach.full.is_none());
                    fell_back |= reach.full.is_some();
                }
            }
        }
        // D, E (a loop) and F (jumps to itself) are islands no hook reaches.
        assert!(unreachable >= 3, "{unreachable}");
        assert!(fell_back);
    }

    /// The model's plain dispatch rules, which the lint skips, have no set match and jump to
    /// no IPVS or kube-router chain, and the lint finds the same without skipping them.
    #[test]
    fn plain_dispatch_rules_show_only_iptables_mode() {
        crate::lints::testing::for_each_plain_dispatch_rule(&LINT, |rule| {
            assert!(!NfacctOrSet::of(rule).set, "{}", rule.text());
            let target = rule.target().map(|t| t.name());
            assert!(jump_named(rule, target, is_ipvs_chain).is_none());
            assert_ne!(target, Some("KUBE-ROUTER-SERVICES"));
        });
    }

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[
                IPTABLES_NAT,
                IPVS_FILTER,
                // IPVS chains that nothing reaches any more.
                &format!("{IPTABLES_NAT}{}", IPVS_FILTER.replace("-A INPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-FILTER\n", "")),
                // kube-router as network-policy controller beside kube-proxy.
                &format!(
                    "{IPTABLES_NAT}*filter\n:INPUT ACCEPT [0:0]\n:KUBE-ROUTER-INPUT - [0:0]\n-A INPUT -m comment --comment \"kube-router netpol - 4IA2OSFRMVNDXBVV\" -j KUBE-ROUTER-INPUT\n-A KUBE-ROUTER-INPUT -d 10.96.0.0/12 -j RETURN\nCOMMIT\n"
                ),
            ],
            &[
                (&format!("{IPTABLES_NAT}{IPVS_FILTER}"), 1),
                (
                    &format!(
                        "{IPTABLES_NAT}*filter\n:INPUT ACCEPT [0:0]\n:KUBE-ROUTER-SERVICES - [0:0]\n-A INPUT -m comment --comment \"handle traffic to IPVS service IPs in custom chain\" -m set --match-set kube-router-svip dst -j KUBE-ROUTER-SERVICES\n-A KUBE-ROUTER-SERVICES -m set --match-set kube-router-svip-prt dst,dst -j ACCEPT\nCOMMIT\n"
                    ),
                    1,
                ),
            ],
        );
    }

    #[test]
    fn message_names_both_sides() {
        let found = run(&LINT, &format!("{IPTABLES_NAT}{IPVS_FILTER}"));
        assert_eq!(
            found[0].message,
            "kube-proxy's IPVS and iptables modes both catch traffic: this rule jumps to KUBE-IPVS-FILTER, and the rule on line 9 jumps to KUBE-SVC-AAAAAAAAAAAAAAAA (default/web:http)"
        );
    }
}
