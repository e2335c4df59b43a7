//! RL408 invalid-endpoint: an endpoint chain that does not DNAT where kube-proxy meant it to,
//! or a Service that lists the same endpoint twice.

use crate::context::{Findings, LintContext};
use crate::kube::names::{CommentRole, comments, service_comment};
use crate::kube::{Endpoint, KubeModel, Service};
use crate::registry::{Category, Lint};
use rulelint_parser::views::{NatAddress, NatError};
use rulelint_parser::{ChainId, CodeInfo, Family, RuleId, RuleRef, Ruleset, Severity};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::fmt::Write as _;

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL408",
        name: "invalid-endpoint",
        severity: Severity::Error,
        summary: "an endpoint chain without a valid DNAT, or a Service that lists one endpoint twice",
        docs: "## What it flags
kube-proxy's per-endpoint chains (`KUBE-SEP-*`) that a Service chain jumps to but that cannot
deliver traffic to the endpoint:
- the chain has no `-j DNAT` rule;
- the DNAT has no `--to-destination`, more than one, or one that is not a single `address:port`
  (`:0`, a port of 0, no address, no port, an address or port range, text that is not an
  address);
- the address is IPv6 in an IPv4 dump or IPv4 in an IPv6 dump.

And a Service port whose `KUBE-SVC-*` or `KUBE-SVL-*` chain lists one endpoint twice: two
balanced jumps to the same `KUBE-SEP-*` chain, or to two chains that DNAT to the same
`address:port`. Session-affinity jumps (`-m recent --rcheck`) are not counted: kube-proxy writes
them in front of the balanced jumps to the same chains on purpose.

One finding per problem, naming the Service port (`namespace/name:port`).

## Why it matters
A packet that reaches an endpoint chain without a working DNAT keeps the Service address as its
destination: the connection times out, or goes wherever the cluster IP happens to route. With
`--to-destination :0` (kubernetes#114537, written when the iptables binary in the kube-proxy
image and the host's iptables disagree) every connection to that endpoint fails while the
Service looks healthy. A repeated endpoint skews kube-proxy's probabilities: the duplicate gets
a larger share of new connections and the endpoints after it less, and it means the rules no
longer match what kube-proxy computed from the EndpointSlices.

## Example
```text
-A KUBE-SVC-YIDRKHK4K7YFNT5I -m comment --comment \"default/my-dep -> 10.233.74.77:80\" -j KUBE-SEP-CKROCXU3WMRQYCUN
-A KUBE-SEP-CKROCXU3WMRQYCUN -p tcp -m comment --comment \"default/my-dep\" -m tcp -j DNAT --to-destination :0 --persistent --to-destination :0 --persistent --to-destination
```

## Instead
```text
-A KUBE-SEP-CKROCXU3WMRQYCUN -p tcp -m comment --comment \"default/my-dep\" -m tcp -j DNAT --to-destination 10.233.74.77:80
```
kube-proxy rewrites its chains on every sync: find what else writes or rewrites them (an
iptables binary of another version, the nft and legacy backends both in use, a script), stop
it, and restart kube-proxy.

## References
- https://github.com/kubernetes/kubernetes/issues/114537",
    },
    category: Category::Correctness,
    check,
};

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let model = cx.kube();
    // An endpoint chain whose DNAT a truncated paste or a fragment left out is not invalid.
    if model.endpoints.is_empty() || !cx.kube_tables_complete() {
        return;
    }
    let set = cx.ruleset();
    // The first Service jump into each endpoint chain: whose endpoint it is. Indexed like
    // `model.endpoints`, 8 bytes an entry: the Services' jumps write it in an order that is
    // random in endpoint order, so it is kept small enough to stay in the cache.
    let mut jumped: Vec<(u32, RuleId)> = vec![(NOT_JUMPED, RuleId(0)); model.endpoints.len()];
    // Each jump's endpoint index (`NO_ENDPOINT`: none), in the order `duplicates` reads the
    // jumps: it then reads this list in order rather than look each chain up again in the
    // model's per-chain table, a cache miss a jump on a large node.
    let mut jump_endpoints: Vec<u32> = Vec::new();
    for (i, service) in model.services.iter().enumerate() {
        for jump in service.endpoints.iter().chain(&service.local_endpoints) {
            let endpoint = jump.chain.and_then(|c| model.endpoint_index(c));
            jump_endpoints.push(endpoint.map_or(NO_ENDPOINT, |e| e as u32));
            if let Some(e) = endpoint
                && jumped[e].0 == NOT_JUMPED
            {
                jumped[e] = (i as u32, jump.rule);
            }
        }
    }
    // Each endpoint's destination for the duplicate check, when it is an address: known from
    // the model when the DNAT is sound (nearly always: no rule is read again then), checked
    // and parsed again only when it is not.
    let mut destinations = vec![NO_DESTINATION; model.endpoints.len()];
    for ((endpoint, &(service, jump)), code) in
        model.endpoints.iter().zip(&jumped).zip(&mut destinations)
    {
        // Nothing jumps to it: no traffic is lost here (unused chains are another lint's).
        if service == NOT_JUMPED {
            continue;
        }
        let usable = endpoint.sound
            || check_endpoint(
                cx,
                out,
                endpoint,
                &model.services[service as usize],
                set.rule(jump),
            )
            || endpoint
                .destination
                .is_some_and(|d| NatAddress::parse(d).is_ok_and(|n| n.first.is_some()));
        if usable && endpoint.destination.is_some() {
            *code = endpoint.destination_key.unwrap_or(TEXT_DESTINATION);
        }
    }
    duplicates(cx, out, model, &destinations, &jump_endpoints);
}

/// No Service jumps to this endpoint (in `check`'s table of first jumps).
const NOT_JUMPED: u32 = u32::MAX;

/// A jump to a chain that is not an endpoint chain of the model (in `check`'s list of each
/// jump's endpoint).
const NO_ENDPOINT: u32 = u32::MAX;

/// An endpoint's destination as `duplicates` compares it, one `u64` an endpoint, so that the
/// Services' jumps (random in endpoint order) read a small table rather than the endpoints: a
/// plain `a.b.c.d:port` is its key (48 bits), any other destination of a usable endpoint is
/// `TEXT_DESTINATION` (its text is read from the endpoint), and none is `NO_DESTINATION`.
const NO_DESTINATION: u64 = u64::MAX;
const TEXT_DESTINATION: u64 = u64::MAX - 1;

/// The endpoint a Service chain's jump comment names: `default/web:http -> 10.244.1.5:8080`.
fn intended<'a>(jump: RuleRef<'_, 'a>) -> Option<Cow<'a, str>> {
    comments(jump).find_map(|c| {
        let (_, role) = service_comment(&c)?;
        if role != CommentRole::Endpoint {
            return None;
        }
        Some(match c {
            Cow::Borrowed(text) => Cow::Borrowed(text.split_once(" -> ")?.1),
            Cow::Owned(text) => Cow::Owned(text.split_once(" -> ")?.1.to_string()),
        })
    })
}

fn check_endpoint(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    endpoint: &Endpoint<'_>,
    service: &Service<'_>,
    jump: RuleRef<'_, '_>,
) -> bool {
    let set = cx.ruleset();
    // The common case, a sound DNAT, returns before anything is formatted.
    let problem = match endpoint.dnat.map(|dnat| set.rule(dnat)) {
        Some(rule) if rule.has_unsupported_revision() => return false, // RL502's finding
        Some(rule) => match dnat_problem(rule, set.family) {
            Some(problem) => Some((rule, problem)),
            None => return true,
        },
        None => None,
    };
    let chain = set.chain(endpoint.chain);
    let name = service.display_name(set);
    let should = match intended(jump) {
        Some(dest) => format!(
            "`-j DNAT --to-destination {dest}` (the endpoint the Service chain's comment names)"
        ),
        None => "`-p PROTO -m PROTO -j DNAT --to-destination POD_IP:PORT`".to_string(),
    };
    let Some((rule, problem)) = problem else {
        out.push(
            out.diagnostic(
                cx.chain_span(chain),
                format!(
                    "endpoint chain {} of {name} has no DNAT rule: traffic sent to this endpoint keeps the Service address",
                    chain.name()
                ),
            )
            .in_chain(chain.get().table, chain.id)
            .with_label(format!(
                "jumped to from line {}, never rewrites the destination",
                cx.line(jump.get().span.start)
            ))
            .with_help(format!(
                "kube-proxy ends every endpoint chain with {should}; restart kube-proxy so that it writes the chain again, and find what emptied it"
            )),
        );
        return false;
    };
    let shown = rule.dnat_destination().unwrap_or("");
    out.push(
        out.at_rule(
            rule,
            format!(
                "DNAT in endpoint chain {} of {name} {problem}",
                chain.name()
            ),
        )
        .with_label(if shown.is_empty() {
            "no usable destination: connections to this endpoint fail".to_string()
        } else {
            format!("`{shown}`: connections to this endpoint fail")
        })
        .with_help(format!(
            "kube-proxy writes {should}; this rule was rewritten, often by an iptables binary of another version than the one that wrote it (kubernetes#114537): align the iptables versions of the host and the kube-proxy image and restart kube-proxy"
        )),
    );
    false
}

/// What is wrong with a DNAT rule's `--to-destination`, as the end of a message; `None` when it
/// is one `address:port` of the dump's family.
fn dnat_problem(rule: RuleRef<'_, '_>, family: Option<Family>) -> Option<String> {
    let target = rule.target()?;
    let mut count = 0usize;
    let mut first: Option<Option<&str>> = None;
    for option in target.options().filter(|o| o.name() == "--to-destination") {
        count += 1;
        if first.is_none() {
            first = Some(option.args().next());
        }
    }
    let mut problem = match first {
        None => return Some("has no --to-destination".to_string()),
        Some(None) => "has a --to-destination without a value".to_string(),
        Some(Some(text)) => match destination_problem(text, family) {
            Some(p) => p,
            None if count > 1 => String::new(),
            None => return None,
        },
    };
    if count > 1 {
        if problem.is_empty() {
            let _ = write!(problem, "has {count} --to-destination options");
        } else {
            let _ = write!(problem, " (and {count} --to-destination options)");
        }
    }
    Some(problem)
}

fn destination_problem(text: &str, family: Option<Family>) -> Option<String> {
    let parsed = match NatAddress::parse(text) {
        Ok(parsed) => parsed,
        Err(NatError::Empty) => return Some("has an empty --to-destination".to_string()),
        Err(NatError::BadAddress(a)) => {
            return Some(format!("goes to `{text}`: `{a}` is not an IP address"));
        }
        Err(NatError::BadPort(p)) => {
            let port = if p.is_empty() {
                "an empty port".to_string()
            } else if p.trim_start_matches('0').is_empty() {
                "port 0".to_string()
            } else {
                format!("`{p}` is not a port")
            };
            let address = if text.starts_with(':') {
                "no address and "
            } else {
                ""
            };
            return Some(format!("goes to `{text}`: {address}{port}"));
        }
        Err(_) => return Some(format!("goes to `{text}`, which is not an address")),
    };
    let Some(first) = parsed.first else {
        return Some(format!("goes to `{text}`: no address, only a port"));
    };
    let Some(ports) = parsed.ports else {
        return Some(format!(
            "goes to `{text}`: no port, so the Service port is kept instead of the endpoint's"
        ));
    };
    if parsed.last != Some(first) || ports.first != ports.last {
        return Some(format!(
            "goes to the range `{text}`: kube-proxy writes one address and port"
        ));
    }
    match (family, first.is_ipv6()) {
        (Some(Family::Ipv4), true) => {
            Some(format!("goes to the IPv6 address `{text}` in an IPv4 dump"))
        }
        (Some(Family::Ipv6), false) => {
            Some(format!("goes to the IPv4 address `{text}` in an IPv6 dump"))
        }
        _ => None,
    }
}

/// What identifies one endpoint of a Service chain.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key<'a> {
    /// The endpoint chain jumped to.
    Chain(ChainId),
    /// An endpoint chain that is not declared, by name.
    Named(&'a str),
    /// The `--to-destination` of the chain's DNAT.
    Destination(&'a str),
}

/// An endpoint's destination: its number when it is a plain `a.b.c.d:port` (with the endpoint,
/// whose text is read only to report), else its text.
#[derive(Clone, Copy)]
enum Destination<'a> {
    Key(u64, usize),
    Text(Option<&'a str>),
}

impl<'a> Destination<'a> {
    /// The same destination. Two plain ones compare by number, without reading their texts
    /// (scattered over a large dump); a plain text never equals one that is not.
    fn same(self, other: Destination<'_>, model: &KubeModel<'_>) -> bool {
        match (self, other) {
            (Destination::Key(a, _), Destination::Key(b, _)) => a == b,
            _ => self.text(model) == other.text(model),
        }
    }

    fn text(self, model: &KubeModel<'a>) -> Option<&'a str> {
        match self {
            Destination::Key(_, endpoint) => model.endpoints[endpoint].destination,
            Destination::Text(text) => text,
        }
    }
}

/// Above this many endpoint jumps in one Service chain, duplicates are found with a hash map;
/// below it (nearly every Service), by comparing with the earlier jumps, which touches no map.
const PAIRWISE_MAX: usize = 32;

/// Two balanced jumps of one Service chain to the same endpoint. `destinations` holds each
/// endpoint's destination as `check` coded it, `jump_endpoints` each jump's endpoint index in
/// the order the jumps are read here (every jump, balanced or not).
fn duplicates(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    model: &KubeModel<'_>,
    destinations: &[u64],
    jump_endpoints: &[u32],
) {
    let set = cx.ruleset();
    // (endpoint chain, destination, rule) of the jumps seen so far in one chain; reused.
    let mut seen: Vec<(Key<'_>, Option<Destination<'_>>, RuleId)> = Vec::new();
    let mut jump_endpoints = jump_endpoints.iter();
    for service in &model.services {
        for jumps in [&service.endpoints[..], &service.local_endpoints[..]] {
            let large = Service::balanced(jumps).count() > PAIRWISE_MAX;
            let mut map: FxHashMap<Key<'_>, RuleId> = FxHashMap::default();
            seen.clear();
            // `Service::balanced`, with each jump's endpoint beside it.
            for (jump, &endpoint) in jumps.iter().zip(jump_endpoints.by_ref()) {
                if jump.affinity {
                    continue;
                }
                // The jump rule itself is read only for an undeclared chain, or to report.
                let chain_key = match jump.chain {
                    Some(chain) => Key::Chain(chain),
                    None => match set.rule(jump.rule).target() {
                        Some(target) => Key::Named(target.name()),
                        None => continue,
                    },
                };
                let endpoint = Some(endpoint as usize)
                    .filter(|_| endpoint != NO_ENDPOINT)
                    .filter(|&i| destinations[i] != NO_DESTINATION);
                let earlier = if large {
                    let destination = endpoint.and_then(|i| model.endpoints[i].destination);
                    let by_chain = map.get(&chain_key).map(|&r| (r, None));
                    let found = by_chain.or_else(|| {
                        let d = destination?;
                        map.get(&Key::Destination(d)).map(|&r| (r, Some(d)))
                    });
                    map.entry(chain_key).or_insert(jump.rule);
                    if let Some(d) = destination {
                        map.entry(Key::Destination(d)).or_insert(jump.rule);
                    }
                    found
                } else {
                    // The endpoint itself is read only for a destination that is not a key.
                    let keyed = endpoint.map(|i| match destinations[i] {
                        TEXT_DESTINATION => Destination::Text(model.endpoints[i].destination),
                        key => Destination::Key(key, i),
                    });
                    let found = seen
                        .iter()
                        .find(|(k, _, _)| *k == chain_key)
                        .map(|&(_, _, r)| (r, None))
                        .or_else(|| {
                            let d = keyed?;
                            seen.iter()
                                .find(|(_, other, _)| other.is_some_and(|o| o.same(d, model)))
                                .map(|&(_, _, r)| (r, d.text(model)))
                        });
                    seen.push((chain_key, keyed, jump.rule));
                    found
                };
                if let Some((earlier, destination)) = earlier {
                    report(cx, out, service, set.rule(jump.rule), earlier, destination);
                }
            }
        }
    }
}

fn report(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    service: &Service<'_>,
    rule: RuleRef<'_, '_>,
    earlier: RuleId,
    destination: Option<&str>,
) {
    let set: &Ruleset<'_> = cx.ruleset();
    let name = service.display_name(set);
    let chain = rule.chain();
    let target = rule.target().map_or("", |t| t.name());
    let earlier = set.rule(earlier);
    let line = cx.line(earlier.get().span.start);
    let (message, label) = match destination {
        None => (
            format!(
                "{} of {name} jumps to endpoint chain {target} a second time (first at line {line})",
                chain.name()
            ),
            "the same endpoint again: it gets a larger share of new connections".to_string(),
        ),
        Some(dest) => (
            format!(
                "{} of {name} lists endpoint {dest} twice: {} (line {line}) and {target} both DNAT to it",
                chain.name(),
                earlier.target().map_or("", |t| t.name()),
            ),
            format!("a second chain for {dest}: it gets a larger share of new connections"),
        ),
    };
    out.push(out.at_rule(rule, message).with_label(label).with_help(
        "kube-proxy writes one jump per endpoint, each with the probability that balances the ones after it; delete the extra jump (or restart kube-proxy so that it rewrites the Service chain) and find what else edits kube-proxy's chains",
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};
    use rulelint_parser::{ChainGraph, parse};

    fn nat(lines: &str) -> String {
        format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-SVC-WEBWEBWEBWEBWEBW - [0:0]\n:KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]\n:KUBE-SEP-BBBBBBBBBBBBBBBB - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW\n{lines}COMMIT\n"
        )
    }

    const JUMPS: &str = "-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-AAAAAAAAAAAAAAAA\n-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.2.7:8080\" -j KUBE-SEP-BBBBBBBBBBBBBBBB\n";

    fn sep(chain: &str, dnat: &str) -> String {
        format!(
            "-A KUBE-SEP-{chain} -s 10.244.1.5/32 -m comment --comment \"default/web:http\" -j KUBE-MARK-MASQ\n-A KUBE-SEP-{chain} -p tcp -m comment --comment \"default/web:http\" -m tcp {dnat}\n"
        )
    }

    fn healthy(a: &str, b: &str) -> String {
        nat(&format!(
            "{JUMPS}{}{}",
            sep("AAAAAAAAAAAAAAAA", &format!("-j DNAT --to-destination {a}")),
            sep("BBBBBBBBBBBBBBBB", &format!("-j DNAT --to-destination {b}"))
        ))
    }

    #[test]
    fn cases() {
        let affinity = nat(&format!(
            "-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -m recent --name KUBE-SEP-AAAAAAAAAAAAAAAA --mask 255.255.255.255 --rsource --rcheck --seconds 10800 --reap -j KUBE-SEP-AAAAAAAAAAAAAAAA\n{JUMPS}{}{}",
            sep(
                "AAAAAAAAAAAAAAAA",
                "-m recent --name KUBE-SEP-AAAAAAAAAAAAAAAA --mask 255.255.255.255 --rsource --set -j DNAT --to-destination 10.244.1.5:8080"
            ),
            sep(
                "BBBBBBBBBBBBBBBB",
                "-j DNAT --to-destination 10.244.2.7:8080"
            )
        ));
        // An unreferenced endpoint chain without DNAT is left to the unused-chain lints.
        let unreferenced = nat(
            "-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-AAAAAAAAAAAAAAAA\n-A KUBE-SEP-AAAAAAAAAAAAAAAA -p tcp -m tcp -j DNAT --to-destination 10.244.1.5:8080\n",
        );
        let v6 = "# Generated by ip6tables-save v1.8.7 on Thu Jun  9 14:02:33 2022\n".to_string()
            + &healthy("[fd00:10:244::5]:8080", "[fd00:10:244::7]:8080")
                .replace("10.96.12.34/32", "fd00:10:96::1234/128");
        assert_cases(
            &LINT,
            &[
                &healthy("10.244.1.5:8080", "10.244.2.7:8080"),
                // The same pod on two ports is two endpoints.
                &healthy("10.244.1.5:8080", "10.244.1.5:9090"),
                &affinity,
                &unreferenced,
                &v6,
                // An old iptables could not print the DNAT: RL502 reports it.
                &healthy("10.244.1.5:8080", "10.244.2.7:8080").replace(
                    "-j DNAT --to-destination 10.244.1.5:8080",
                    "-j DNAT [unsupported revision]",
                ),
            ],
            &[
                (
                    &healthy(
                        ":0 --persistent --to-destination :0 --persistent --to-destination",
                        "10.244.2.7:8080",
                    ),
                    1,
                ),
                (&healthy("10.244.1.5:0", "10.244.2.7"), 2),
                (&healthy(":8080", "10.244.2.7:8080-8090"), 2),
                (&healthy("10.244.1.5:8080", "not-an-ip:8080"), 1),
                (&healthy("10.244.1.5:", "10.244.2.7:http"), 2),
                (&healthy("[fd00::5]:8080", "10.244.2.7:8080"), 1),
                // Two chains for one endpoint.
                (&healthy("10.244.1.5:8080", "10.244.1.5:8080"), 1),
                // One chain twice.
                (
                    &nat(&format!(
                        "{JUMPS}-A KUBE-SVC-WEBWEBWEBWEBWEBW -j KUBE-SEP-AAAAAAAAAAAAAAAA\n{}{}",
                        sep(
                            "AAAAAAAAAAAAAAAA",
                            "-j DNAT --to-destination 10.244.1.5:8080"
                        ),
                        sep(
                            "BBBBBBBBBBBBBBBB",
                            "-j DNAT --to-destination 10.244.2.7:8080"
                        )
                    )),
                    1,
                ),
                // No DNAT, and a DNAT without --to-destination.
                (
                    &nat(&format!(
                        "{JUMPS}-A KUBE-SEP-AAAAAAAAAAAAAAAA -s 10.244.1.5/32 -j KUBE-MARK-MASQ\n{}",
                        sep("BBBBBBBBBBBBBBBB", "-j DNAT")
                    )),
                    2,
                ),
            ],
        );
    }

    #[test]
    fn messages_name_the_service_and_the_intended_endpoint() {
        let found = run(
            &LINT,
            &healthy(
                ":0 --persistent --to-destination :0 --persistent --to-destination",
                "10.244.2.7:8080",
            ),
        );
        assert_eq!(
            found[0].message,
            "DNAT in endpoint chain KUBE-SEP-AAAAAAAAAAAAAAAA of default/web:http goes to `:0`: no address and port 0 (and 3 --to-destination options)"
        );
        assert!(
            found[0]
                .help
                .as_deref()
                .unwrap()
                .contains("10.244.1.5:8080")
        );
        let found = run(&LINT, &healthy("10.244.1.5:8080", "10.244.1.5:8080"));
        assert!(
            found[0]
                .message
                .contains("lists endpoint 10.244.1.5:8080 twice"),
            "{}",
            found[0].message
        );
    }

    /// The model's `sound` fact is what lets the lint skip an endpoint: it must hold exactly
    /// when the lint's own reading of the DNAT finds no problem.
    #[test]
    fn the_models_sound_fact_agrees_with_the_dnat_check() {
        let destinations = [
            "10.244.1.5:8080",
            "10.244.1.5:0",
            "10.244.1.5",
            ":8080",
            "10.244.2.7:8080-8090",
            "10.244.2.7-10.244.2.9:8080",
            "not-an-ip:8080",
            "10.244.1.5:",
            "10.244.2.7:http",
            "[fd00::5]:8080",
            "[fd00::5]",
            "10.244.1.5:8080 --to-destination 10.244.1.6:8080",
            ":0 --persistent --to-destination :0 --persistent --to-destination",
            "",
        ];
        for family in [
            "",
            "# Generated by ip6tables-save v1.8.7 on Thu Jun  9 14:02:33 2022\n",
        ] {
            for d in destinations {
                for dnat in [
                    format!("-j DNAT --to-destination {d}"),
                    "-j DNAT".to_string(),
                ] {
                    let text = format!(
                        "{family}{}",
                        nat(&format!("{JUMPS}{}", sep("AAAAAAAAAAAAAAAA", &dnat)))
                    );
                    let parsed = parse(&text);
                    let graph = ChainGraph::build(&parsed.ruleset);
                    let model = KubeModel::build(&parsed.ruleset, &graph);
                    let endpoint = &model.endpoints[0];
                    let rule = parsed.ruleset.rule(endpoint.dnat.expect("a DNAT rule"));
                    assert_eq!(
                        endpoint.sound,
                        dnat_problem(rule, parsed.ruleset.family).is_none(),
                        "{dnat} in {family:?}"
                    );
                }
            }
        }
    }
}
