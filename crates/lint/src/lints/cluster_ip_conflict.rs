//! RL409 cluster-ip-conflict: two Service dispatch rules in nat `KUBE-SERVICES` for one
//! address, port and protocol; the later one never sees traffic.

use crate::context::{Findings, LintContext};
use crate::kube::names::{CommentRole, comments, service_chain, service_comment};
#[cfg(test)]
use crate::kube::protocol_number;
use crate::kube::{DispatchKey, dispatch_shape_tokens, read_dispatch_key};
use crate::registry::{Category, Lint};
use ipnet::IpNet;
#[cfg(test)]
use rulelint_parser::views::PortRange;
use rulelint_parser::{CodeInfo, RuleId, RuleRef, Severity, TableKind};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::hash::Hash;

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL409",
        name: "cluster-ip-conflict",
        severity: Severity::Error,
        summary: "two Service dispatch rules match the same address, port and protocol",
        docs: "## What it flags
A dispatch rule in nat `KUBE-SERVICES` (`-d ADDRESS -p PROTO --dport PORT -j KUBE-SVC-*`, or
`KUBE-SVL-*`, `KUBE-EXT-*`, `KUBE-FW-*`, `KUBE-XLB-*`) that matches the same destination
address, protocol and port as an earlier dispatch rule leading to another chain: a cluster IP,
external IP or load-balancer IP that two Service ports claim, or one Service port whose
`externalIPs` repeat its load-balancer IP while `loadBalancerSourceRanges` send the
load-balancer traffic through `KUBE-FW-*`. The finding is on the later rule and names the
earlier one.

## Why it matters
iptables takes the first rule that matches: every packet goes to the first Service, and the
second one is unreachable at that address while it looks configured. The API server never gives
two Services one cluster IP, but it does not check `externalIPs` (and controllers can hand out
one load-balancer IP twice), so two Services can claim the same address and port; when it is
the same Service, the external-IP rule bypasses the `loadBalancerSourceRanges` firewall. A
conflict on a cluster IP means rules that kube-proxy did not write in this sync: stale rules,
or a second proxy writing the same chain.

## Example
```text
-A KUBE-SERVICES -d 203.0.113.10/32 -p tcp -m comment --comment \"shop/web:http external IP\" -m tcp --dport 80 -j KUBE-EXT-7PQ2LDRWVZAKXG4M
-A KUBE-SERVICES -d 203.0.113.10/32 -p tcp -m comment --comment \"blog/web:http external IP\" -m tcp --dport 80 -j KUBE-EXT-M3XJQ5RT2C7WFHNB
```

## Instead
Give each Service port its own address or port: change the `externalIPs` (or the
load-balancer IP) of one of the Services. For a cluster IP, restart kube-proxy so that it
rewrites `KUBE-SERVICES`, and find what else writes it.

## Exceptions
Only rules that match nothing but the destination address, protocol and port (and comments)
hide later rules: kube-proxy's older external-IP rules, which add `physdev` and `addrtype`
matches, hide nothing. Two rules to the same chain (a Service port whose external IP is also its
load-balancer IP, without source ranges) send the traffic to the same place and are not
reported.",
    },
    category: Category::Correctness,
    check,
};

/// Destination address, protocol and port of a dispatch rule.
type Key = DispatchKey;

#[cfg(test)]
fn key(rule: RuleRef<'_, '_>) -> Option<Key> {
    let address = rule.destination().filter(|d| !d.negated)?.value;
    let protocol = protocol_number(rule.protocol().filter(|p| !p.negated)?.value)?;
    // One port (kube-proxy's `--dport`), read without building the list of a multiport match.
    let port = crate::kube::names::option_anywhere(rule, &["--dport", "--destination-port"])
        .filter(|p| !p.negated)?;
    Some((address, protocol, PortRange::parse(port.value)?))
}

/// Whether the rule matches nothing but its destination address, protocol and port: then every
/// packet to that address and port stops at it, and a later rule for them is never reached.
#[cfg(test)]
fn matches_only_the_key(rule: RuleRef<'_, '_>) -> bool {
    rule.matches().all(|m| match m.module() {
        // In kube-proxy's restore input `--dport` follows the basic options, outside its match.
        None => m.options().all(|o| {
            !o.negated()
                && matches!(
                    o.name(),
                    "-d" | "--destination" | "-p" | "--protocol" | "--dport" | "--destination-port"
                )
        }),
        Some("comment") => true,
        Some("tcp" | "udp" | "sctp") => m
            .options()
            .all(|o| !o.negated() && matches!(o.name(), "--dport" | "--destination-port")),
        Some(_) => false,
    })
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let Some(chain) = cx
        .tables()
        .filter(|t| t.kind() == TableKind::Nat)
        .last()
        .and_then(|t| t.chain("KUBE-SERVICES"))
    else {
        return;
    };
    // The model read the key of each dispatch rule of kube-proxy's shape with its Service.
    let model = cx.kube();
    let known = &model.dispatch_keys;
    let known = (known.chain == Some(chain.id)).then_some(known);
    let mut at = 0;
    // The first rule of each key. Sized once: nearly every dispatch rule of a healthy node
    // has a key of its own. IPv4 keys are packed in 12 bytes (`packed_v4`): a slot of that map
    // takes 17 bytes where one of `Key` took 29, and a node has one a dispatch rule.
    let mut first_v4: FxHashMap<[u32; 3], RuleId> =
        FxHashMap::with_capacity_and_hasher(chain.rule_count(), Default::default());
    let mut first_other: FxHashMap<Key, RuleId> = FxHashMap::default();
    for rule in chain.rules() {
        let (key, only_key) = match known.and_then(|k| k.find(rule.id, &mut at)) {
            // A rule the model read jumps to a Service chain and has kube-proxy's shape.
            Some(read) => read,
            None => {
                let Some(target) = rule.target() else {
                    continue;
                };
                if target.is_goto() || service_chain(target.name()).is_none() {
                    continue;
                }
                // kube-proxy's shape of a dispatch rule has no `[unsupported revision]` word.
                let shaped = dispatch_shape_tokens(rule);
                if shaped.is_none() && rule.has_unsupported_revision() {
                    continue;
                }
                read_dispatch_key(rule, shaped)
            }
        };
        let Some(key) = key else {
            continue;
        };
        let earlier = match packed_v4(&key) {
            Some(packed) => first_or_keep(&mut first_v4, packed, rule.id, only_key),
            None => first_or_keep(&mut first_other, key, rule.id, only_key),
        };
        if let Some(earlier) = earlier {
            let earlier = cx.ruleset().rule(earlier);
            let target = rule.target().map_or("", |t| t.name());
            if earlier.target().is_some_and(|t| t.name() != target) {
                report(cx, out, rule, earlier, key);
            }
        }
    }
}

/// An IPv4 key in three words, one-to-one: the address; the prefix length and protocol; the
/// first and last port. `None` for an IPv6 key.
fn packed_v4((address, protocol, port): &Key) -> Option<[u32; 3]> {
    let IpNet::V4(net) = address else {
        return None;
    };
    Some([
        u32::from(net.addr()),
        u32::from(net.prefix_len()) << 16 | u32::from(*protocol),
        u32::from(port.first) << 16 | u32::from(port.last),
    ])
}

/// The rule that claimed `key` first, or `None` when it is new; then `rule` claims it when
/// `keep`. One hash and probe a rule: nearly every key is new, so a look-up then an insert
/// would do both twice.
fn first_or_keep<K: Hash + Eq>(
    first: &mut FxHashMap<K, RuleId>,
    key: K,
    rule: RuleId,
    keep: bool,
) -> Option<RuleId> {
    match first.entry(key) {
        Entry::Occupied(earlier) => Some(*earlier.get()),
        Entry::Vacant(slot) => {
            if keep {
                slot.insert(rule);
            }
            None
        }
    }
}

/// How a dispatch rule names its Service port and what the address is to it:
/// (`default/web:http`, `cluster IP`).
fn describe<'a>(cx: &LintContext<'_, 'a>, rule: RuleRef<'_, 'a>) -> (Cow<'a, str>, &'static str) {
    let target = rule.target().map_or("", |t| t.name());
    let from_comment = comments(rule).find_map(|c| {
        let (name, role) = service_comment(&c)?;
        let what = match role {
            CommentRole::ClusterIp => "cluster IP",
            CommentRole::ExternalIp => "external IP",
            CommentRole::LoadBalancerIp => "load-balancer IP",
            _ => "address",
        };
        Some((Cow::Owned(name.to_string()), what))
    });
    let what_by_chain = match service_chain(target).map(|(k, _)| k) {
        Some(crate::kube::names::ServiceChainKind::Firewall) => "load-balancer IP",
        Some(crate::kube::names::ServiceChainKind::External) => "external address",
        _ => "cluster IP",
    };
    let model = cx.kube();
    let by_chain = rule
        .chain()
        .table()
        .chain(target)
        .and_then(|c| model.service_of_chain(c.id))
        .and_then(|s| s.name.clone());
    match (by_chain, from_comment) {
        (Some(name), Some((_, what))) => (name, what),
        (Some(name), None) => (name, what_by_chain),
        (None, Some((name, what))) => (name, what),
        (None, None) => (Cow::Borrowed(target), what_by_chain),
    }
}

fn report<'a>(
    cx: &LintContext<'_, 'a>,
    out: &mut Findings<'_>,
    rule: RuleRef<'_, 'a>,
    earlier: RuleRef<'_, 'a>,
    (address, protocol, port): Key,
) {
    let (name, what) = describe(cx, rule);
    let (earlier_name, earlier_what) = describe(cx, earlier);
    let line = cx.line(earlier.get().span.start);
    let proto = match protocol {
        6 => Cow::Borrowed("tcp"),
        17 => Cow::Borrowed("udp"),
        132 => Cow::Borrowed("sctp"),
        n => Cow::Owned(n.to_string()),
    };
    let host = if address.prefix_len() == address.max_prefix_len() {
        address.addr().to_string()
    } else {
        address.to_string()
    };
    let target = rule.target().map_or("", |t| t.name());
    let earlier_target = earlier.target().map_or("", |t| t.name());
    let same_service = name == earlier_name;
    let message = if same_service {
        format!(
            "{name} {what} {host}:{port}/{proto} is already dispatched to {earlier_target} by its {earlier_what} rule at line {line}: this rule to {target} never sees traffic",
            port = port.first
        )
    } else {
        format!(
            "{name} {what} {host}:{port}/{proto} is already taken by {earlier_name} ({earlier_what}, line {line}): this rule never sees traffic",
            port = port.first
        )
    };
    let help = if same_service {
        "the external-IP rule comes first and skips the loadBalancerSourceRanges check of the KUBE-FW chain: remove the load-balancer IP from the Service's externalIPs".to_string()
    } else if what == "cluster IP" && earlier_what == "cluster IP" {
        "the API server never gives two Services one cluster IP, so one of these rules is stale or was not written by this kube-proxy: restart kube-proxy so that it rewrites KUBE-SERVICES, and find what else writes the chain".to_string()
    } else {
        format!(
            "iptables takes the first match, so {earlier_name} gets all traffic to {host}:{}/{proto}: give one of the Services another address or port (the API server does not check externalIPs for conflicts)",
            port.first
        )
    };
    out.push(
        out.at_rule(rule, message)
            .with_label(format!(
                "shadowed by line {line}, which sends the same traffic to {earlier_target}"
            ))
            .with_help(help),
    );
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    /// `read_dispatch_key` reads every rule as `key` and `matches_only_the_key` do: the lint's
    /// corpus, odd forms (negations, options in other modules, repeated options) and a
    /// generated node.
    #[test]
    fn one_walk_reads_as_key_and_matches_only_the_key() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../corpus/lints/RL409-cluster-ip-conflict");
        let mut texts: Vec<String> = std::fs::read_dir(corpus)
            .expect("RL409 corpus")
            .map(|f| std::fs::read_to_string(f.expect("entry").path()).expect("dump"))
            .collect();
        texts.push(nat(concat!(
            "-A KUBE-SERVICES ! -d 10.0.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 ! -p tcp -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m tcp ! --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -d 10.0.0.2/32 -p tcp -p udp --dport 80 -m tcp --dport 81 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d bogus -p tcp -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p 6 -m comment --comment x --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m comment ! --comment x -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m tcp --dport 80 -d 10.0.0.3 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m tcp --dport 80 --sport 9 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m physdev ! --physdev-is-in -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m set --match-set s dst -m tcp --destination-port 80:90 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -i eth0 -d 10.0.0.1/32 -p udp -m udp --dport 53 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            // kube-proxy's shape of eleven words, with other modules, options and negations.
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m mark --mark 0x1 -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m tcp --dport 80 -m comment --comment x -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p udp -m comment --comment x -m udp --sport 53 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p tcp -m comment --comment x -m tcp ! --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 ! -p tcp -m comment ! --comment x -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES -d 10.0.0.1/32 -p sctp -m comment --comment x -m sctp --destination-port 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
            "-A KUBE-SERVICES --destination 10.0.0.1/32 --protocol tcp -m tcp --dport 80 -m tcp --dport 81 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
        )));
        texts.push(rulelint_dumpgen::generate(
            &rulelint_dumpgen::Shape::with_rule_target(3_000),
        ));
        let (mut keyed, mut shaped_keys) = (0, 0);
        for text in &texts {
            let parsed = rulelint_parser::parse(text);
            for rule in parsed.ruleset.iter_rules() {
                let (key_read, only_read) = read_dispatch_key(rule, None);
                assert_eq!(key_read, key(rule), "{}", rule.text());
                assert_eq!(only_read, matches_only_the_key(rule), "{}", rule.text());
                keyed += usize::from(key_read.is_some());
                if let Some(shaped) = crate::kube::dispatch_shape_tokens(rule) {
                    let read = read_dispatch_key(rule, Some(shaped));
                    assert_eq!(read, (key_read, only_read), "{}", rule.text());
                    shaped_keys += 1;
                }
            }
        }
        assert!(keyed > 100 && shaped_keys > 100, "{keyed} {shaped_keys}");
    }

    /// The keys the model reads with the Services are the ones the lint reads itself, of rules
    /// it would read (a jump to a Service chain), and the lint finds the same with them as
    /// without: a generated node, the same with rules inserted out of order, gotos, negations,
    /// other shapes, copies and conflicts, and the corpus, each also cut short.
    /// A generated node, the same with copies of its dispatch rules inserted out of order, as
    /// gotos, with negations, other modules (`mark`, a kube-router `set`), two `-d` and
    /// undeclared targets, and the lint corpus, each also cut short three ways.
    pub(crate) fn damaged_dispatch_texts() -> Vec<String> {
        let node = rulelint_dumpgen::generate(&rulelint_dumpgen::Shape::with_rule_target(3_000));
        let mut damaged = String::new();
        let mut dispatch_seen = 0;
        for line in node.lines() {
            damaged.push_str(line);
            damaged.push('\n');
            if line.starts_with("-A KUBE-SERVICES -d ") {
                dispatch_seen += 1;
                let variant = match dispatch_seen % 8 {
                    0 => line.replacen("-A KUBE-SERVICES", "-I KUBE-SERVICES 1", 1),
                    1 => line.replace(" -j KUBE-", " -g KUBE-"),
                    2 => line.replacen(" -p ", " ! -p ", 1),
                    3 => line.replace(" --dport ", " -m mark --mark 0x1 --dport "),
                    4 => line.replace(
                        "-A KUBE-SERVICES -d ",
                        "-A KUBE-SERVICES -d 10.9.9.9/32 -d ",
                    ),
                    5 => line.replace(" -j KUBE-SVC-", " -j KUBE-SVC-X"),
                    6 => match (line.find(" -m comment --comment \""), line.rfind("\" -m ")) {
                        (Some(from), Some(to)) if from < to => format!(
                            "{} -m set --match-set kube-router-svip{}",
                            &line[..from],
                            &line[to + 1..]
                        ),
                        _ => line.to_string(),
                    },
                    _ => line.to_string(),
                };
                damaged.push_str(&variant);
                damaged.push('\n');
            }
        }
        let mut texts = vec![node, damaged];
        texts.extend(crate::check::tests::lint_corpus_dumps());
        let cut: Vec<String> = texts
            .iter()
            .flat_map(|t| {
                [t.len() / 3, t.len() / 2, t.len() * 9 / 10]
                    .map(|at| t[..t.floor_char_boundary(at)].to_string())
            })
            .collect();
        texts.extend(cut);
        texts
    }

    /// The keys the model reads with the Services are the ones the lint reads itself, of rules
    /// it would read (a jump to a Service chain), and the lint finds the same with them as
    /// without ([`damaged_dispatch_texts`]).
    #[test]
    fn model_keys_are_the_lint_s_own() {
        let texts = damaged_dispatch_texts();
        let mut known_keys = 0;
        for text in &texts {
            let parsed = rulelint_parser::parse(text);
            let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
            let model = crate::kube::KubeModel::build(&parsed.ruleset, &graph);
            let keys = &model.dispatch_keys;
            assert!(keys.all().map(|(id, _)| id).is_sorted());
            for (id, read) in keys.all() {
                let rule = parsed.ruleset.rule(id);
                assert_eq!(Some(rule.chain().id), keys.chain);
                let target = rule.target().expect("a target");
                assert!(!target.is_goto() && service_chain(target.name()).is_some());
                let shaped = dispatch_shape_tokens(rule).expect("kube-proxy's shape");
                assert_eq!(
                    read,
                    read_dispatch_key(rule, Some(shaped)),
                    "{}",
                    rule.text()
                );
                known_keys += 1;
            }
            // The lint with the model's keys finds what it finds reading every rule itself.
            crate::lints::testing::assert_same_without_dispatch_keys(
                &LINT,
                &parsed.ruleset,
                &graph,
                &model,
            );
        }
        assert!(known_keys > 1_000, "{known_keys}");
    }

    /// Two IPv4 keys pack to the same words exactly when they are equal.
    #[test]
    fn packed_v4_keys_are_one_to_one() {
        let key = |address: &str, protocol: u16, first: u16, last: u16| -> Key {
            (
                address.parse().expect("a network"),
                protocol,
                PortRange { first, last },
            )
        };
        let keys = [
            key("10.0.0.1/32", 6, 80, 80),
            key("10.0.0.1/31", 6, 80, 80),
            key("10.0.0.2/32", 6, 80, 80),
            key("10.0.0.1/32", 17, 80, 80),
            key("10.0.0.1/32", 6, 81, 81),
            key("10.0.0.1/32", 6, 80, 81),
            key("10.0.0.1/32", 65535, 65535, 65535),
            key("0.0.0.0/0", 0, 0, 0),
        ];
        for a in &keys {
            for b in &keys {
                assert_eq!(a == b, packed_v4(a) == packed_v4(b), "{a:?} {b:?}");
            }
        }
        assert_eq!(packed_v4(&key("::1/128", 6, 80, 80)), None);
    }

    fn nat(lines: &str) -> String {
        format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n:KUBE-SVC-BBBBBBBBBBBBBBBB - [0:0]\n:KUBE-EXT-AAAAAAAAAAAAAAAA - [0:0]\n:KUBE-EXT-BBBBBBBBBBBBBBBB - [0:0]\n:KUBE-FW-AAAAAAAAAAAAAAAA - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n{lines}COMMIT\n"
        )
    }

    fn dispatch(addr: &str, proto: &str, port: u16, comment: &str, chain: &str) -> String {
        format!(
            "-A KUBE-SERVICES -d {addr}/32 -p {proto} -m comment --comment \"{comment}\" -m {proto} --dport {port} -j {chain}\n"
        )
    }

    #[test]
    fn cases() {
        let a_cluster = dispatch(
            "10.96.0.20",
            "tcp",
            80,
            "shop/web:http cluster IP",
            "KUBE-SVC-AAAAAAAAAAAAAAAA",
        );
        let b_cluster = dispatch(
            "10.96.0.30",
            "tcp",
            80,
            "blog/web:http cluster IP",
            "KUBE-SVC-BBBBBBBBBBBBBBBB",
        );
        let a_ext = dispatch(
            "203.0.113.10",
            "tcp",
            80,
            "shop/web:http external IP",
            "KUBE-EXT-AAAAAAAAAAAAAAAA",
        );
        let b_ext = dispatch(
            "203.0.113.10",
            "tcp",
            80,
            "blog/web:http external IP",
            "KUBE-EXT-BBBBBBBBBBBBBBBB",
        );
        let b_ext_udp = dispatch(
            "203.0.113.10",
            "udp",
            80,
            "blog/web:http external IP",
            "KUBE-EXT-BBBBBBBBBBBBBBBB",
        );
        let b_ext_443 = dispatch(
            "203.0.113.10",
            "tcp",
            443,
            "blog/web:https external IP",
            "KUBE-EXT-BBBBBBBBBBBBBBBB",
        );
        let a_lb_same_chain = dispatch(
            "203.0.113.10",
            "tcp",
            80,
            "shop/web:http loadbalancer IP",
            "KUBE-EXT-AAAAAAAAAAAAAAAA",
        );
        let a_lb_fw = dispatch(
            "203.0.113.10",
            "tcp",
            80,
            "shop/web:http loadbalancer IP",
            "KUBE-FW-AAAAAAAAAAAAAAAA",
        );
        // Before 1.11: external-IP rules with physdev/addrtype matches do not hide later rules.
        let old_ext = "-A KUBE-SERVICES -d 203.0.113.10/32 -p tcp -m comment --comment \"shop/web:http external IP\" -m tcp --dport 80 -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j KUBE-SVC-AAAAAAAAAAAAAAAA\n-A KUBE-SERVICES -d 203.0.113.10/32 -p tcp -m comment --comment \"shop/web:http external IP\" -m tcp --dport 80 -m addrtype --dst-type LOCAL -j KUBE-SVC-AAAAAAAAAAAAAAAA\n";
        let masq_first = "-A KUBE-SERVICES ! -s 10.244.0.0/16 -d 10.96.0.20/32 -p tcp -m comment --comment \"shop/web:http cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n";
        assert_cases(
            &LINT,
            &[
                &nat(&format!(
                    "{a_cluster}{b_cluster}{a_ext}{b_ext_udp}{b_ext_443}"
                )),
                &nat(&format!("{a_ext}{a_lb_same_chain}")),
                &nat(&format!("{old_ext}{b_ext_udp}")),
                &nat(&format!("{masq_first}{a_cluster}")),
            ],
            &[
                (&nat(&format!("{a_ext}{b_ext}")), 1),
                // kube-proxy's restore input writes `-m tcp -p tcp -d IP --dport N`.
                (
                    &nat(&format!(
                        "{a_ext}-A KUBE-SERVICES -m comment --comment \"blog/web:http external IP\" -m tcp -p tcp -d 203.0.113.10 --dport 80 -j KUBE-EXT-BBBBBBBBBBBBBBBB\n"
                    )),
                    1,
                ),
                (&nat(&format!("{a_ext}{a_lb_fw}")), 1),
                (
                    &nat(&format!(
                        "{a_cluster}{}",
                        a_cluster
                            .replace("KUBE-SVC-AAAAAAAAAAAAAAAA", "KUBE-SVC-BBBBBBBBBBBBBBBB")
                            .replace("shop/", "blog/")
                    )),
                    1,
                ),
                // A protocol number is the same protocol as its name.
                (
                    &nat(&format!("{a_ext}{}", b_ext.replace("-p tcp", "-p 6"))),
                    1,
                ),
                // Three claims: two findings, both against the first.
                (
                    &nat(&format!(
                        "{a_ext}{b_ext}{}",
                        b_ext.replace("KUBE-EXT-BBBBBBBBBBBBBBBB", "KUBE-SVC-BBBBBBBBBBBBBBBB")
                    )),
                    2,
                ),
            ],
        );
    }

    #[test]
    fn message_names_both_services() {
        let found = run(
            &LINT,
            &nat(&format!(
                "{}{}",
                dispatch(
                    "203.0.113.10",
                    "tcp",
                    80,
                    "shop/web:http external IP",
                    "KUBE-EXT-AAAAAAAAAAAAAAAA"
                ),
                dispatch(
                    "203.0.113.10",
                    "tcp",
                    80,
                    "blog/web:http external IP",
                    "KUBE-EXT-BBBBBBBBBBBBBBBB"
                )
            )),
        );
        assert_eq!(
            found[0].message,
            "blog/web:http external IP 203.0.113.10:80/tcp is already taken by shop/web:http (external IP, line 14): this rule never sees traffic"
        );
    }
}
