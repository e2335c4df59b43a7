//! RL413 weakened-rule: a rule that a well-known comment identifies, without the matches its
//! owner always writes on it.

use crate::context::{Findings, LintContext};
use crate::known::owner;
use crate::kube::names::{CommentRole, comments, service_comment};
use crate::kube::{Generation, dispatch_shape_tokens};
use crate::registry::{Category, Lint};
use rulelint_parser::{ChainRef, CodeInfo, RuleRef, Severity, TableKind, TableRef, Token};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL413",
        name: "weakened-rule",
        severity: Severity::Error,
        summary: "a kube-proxy, kubelet, Calico or Flannel rule, known by its comment, lost a match it always carries",
        docs: "## What it flags
A rule whose comment identifies it as one that kube-proxy, kubelet, Calico felix or Flannel
writes, but that lacks a match condition the owner always writes on that rule:

| Comment | Chain, target | Must match |
|---|---|---|
| `kubernetes firewall for dropping marked packets` | filter `KUBE-FIREWALL`, `DROP` | `-m mark --mark` |
| `block incoming localnet connections` | filter `KUBE-FIREWALL`, `DROP` | `-d`, `! -s`, `-m conntrack ! --ctstate` |
| `kubernetes forwarding rules` | filter `KUBE-FORWARD`, `ACCEPT` | `-m mark --mark` |
| `kubernetes forwarding conntrack rule` (and the older `... pod source rule`, `... pod destination rule`) | filter `KUBE-FORWARD`, `ACCEPT` | `--ctstate RELATED,ESTABLISHED` |
| `kubernetes service nodeports; NOTE: this must be the last rule in this chain` | nat `KUBE-SERVICES`, `KUBE-NODEPORTS` | `-m addrtype --dst-type LOCAL` or `-d` |
| `kubernetes service traffic requiring SNAT` | nat `KUBE-POSTROUTING` (`POSTROUTING` in the first iptables-mode releases), `MASQUERADE`, when no `-m mark ! --mark ... -j RETURN` comes first (the older layout) | `-m mark --mark` |
| `kubernetes load balancer firewall` | filter built-in chains, `KUBE-PROXY-FIREWALL` | `--ctstate NEW` |
| `kubernetes externally-visible service portals`, `kubernetes service portals` | filter built-in chains, on nodes with the 1.25+ layout | `--ctstate NEW` |
| `NS/SVC:PORT cluster IP`, `external IP`, `loadbalancer IP` | nat `KUBE-SERVICES` | `-d`, `--dport` |
| `NS/SVC:PORT` | nat `KUBE-NODEPORTS` | `--dport` |
| `NS/SVC:PORT has no endpoints` | filter `KUBE-SERVICES`, `KUBE-EXTERNAL-SERVICES`, `REJECT` | `--dport`, and `-d` or `--dst-type LOCAL` |
| `NS/SVC:PORT has no local endpoints` | filter `KUBE-SERVICES`, `KUBE-EXTERNAL-SERVICES`, `DROP` | `--dport`, and `-d` or `--dst-type LOCAL` |
| `NS/SVC:PORT traffic not accepted by KUBE-FW-...` | filter `KUBE-PROXY-FIREWALL`, `DROP` | `-d`, `--dport` |
| `NS/SVC:PORT health check node port` | filter `KUBE-NODEPORTS`, `ACCEPT` | `--dport` |
| `Drop IPIP packets from non-Calico hosts` (Calico felix) | filter `cali-*`, `DROP` | `-p` (protocol 4, `ipencap`) |
| `flanneld masq` | nat `POSTROUTING`, `FLANNEL-POSTRTG`, `MASQUERADE` | `-s` and `-d` |
| `flanneld masq` | nat `POSTROUTING`, `FLANNEL-POSTRTG`, `RETURN` | `-s` and `-d`, or `-m mark --mark` |
| `flanneld forward` | filter `FORWARD`, `FLANNEL-FWD`, `ACCEPT` | `-s` or `-d` |

One finding per rule, naming the owner, the missing matches and the rule as the owner writes it.

## Why it matters
Without its match the rule applies to far more traffic than it should: kubelet's mark DROP
drops every packet, `KUBE-FORWARD` accepts all forwarded traffic, a Service's dispatch rule
captures every destination, Flannel masquerades traffic it must leave alone or stops
masquerading pod traffic, Calico drops all input. The usual cause is two iptables versions
(the host's and a container's, or the legacy and nft backends) rewriting the same rules: the
older one does not understand a match, and drops it when it saves and restores the rules
(kubernetes#112477).

## Example
```text
-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -j ACCEPT
```

## Instead
```text
-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT
```
Delete the weakened rule, restart the component that owns it so that it writes the rule again,
and make the host and every container that runs iptables use the same iptables version and
backend.

## Exceptions
A `DROP` or `REJECT` with no match at all in a `KUBE-*`, `DOCKER*` or `FLANNEL-*` chain is
reported by `RL401 bare-drop`, not here. Docker writes no comments, so its rules are not
checked. Rules are only recognised by their exact comment, table, chain and target.

## References
- https://github.com/kubernetes/kubernetes/issues/112477",
    },
    category: Category::Correctness,
    check,
};

/// A match condition a known rule always carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    /// `-m mark --mark`, not negated.
    Mark,
    /// `-d`, not negated.
    Destination,
    /// `! -s`.
    NegatedSource,
    /// `-m conntrack ! --ctstate`.
    NegatedCtstate,
    /// `--ctstate` with `RELATED` or `ESTABLISHED`, not negated.
    Established,
    /// `--ctstate` with `NEW`, not negated.
    New,
    /// `-m addrtype --dst-type LOCAL`, or `-d`.
    LocalOrDestination,
    /// `--dport` (or multiport `--dports`).
    DestinationPort,
    /// `-p`, not negated.
    Protocol,
    /// `-s` and `-d`, either negated.
    SourceAndDestination,
    /// `-s` or `-d`.
    SourceOrDestination,
    /// `-s` and `-d`, or `-m mark --mark`.
    SourceAndDestinationOrMark,
}

/// What [`Need::holds`] reads of a rule's options, in one walk over its matches: this runs for
/// every dispatch rule of a large node, where reading each need apart walks them once per need.
/// Each is read as the one-by-one readers do (a test compares the two): the negation of the
/// first basic `-s`, `-d`, `-p` (`RuleRef::option(None, ..)`) and of the first `-m mark
/// --mark`, and whether a destination-port option is anywhere (`option_anywhere`).
#[derive(Debug, Default, PartialEq)]
struct OptionFacts {
    source: Option<bool>,
    destination: Option<bool>,
    protocol: Option<bool>,
    mark: Option<bool>,
    port: bool,
}

impl OptionFacts {
    /// The facts of a dispatch rule that the model read in kube-proxy's shape with its key
    /// and nothing else (`DispatchKeys::is_plain_dispatch`): `-d` and `-p` as basic options,
    /// not negated, and a `--dport`; no `-s` and no `mark` match (a test compares with `read`).
    const PLAIN_DISPATCH: OptionFacts = OptionFacts {
        source: None,
        destination: Some(false),
        protocol: Some(false),
        mark: None,
        port: true,
    };

    fn read(rule: RuleRef<'_, '_>) -> OptionFacts {
        let mut facts = OptionFacts::default();
        for m in rule.matches() {
            let module = m.module();
            for o in m.options() {
                facts.note(module, o.name(), o.negated());
            }
        }
        facts
    }

    /// The facts of a rule in kube-proxy's dispatch shape, from its words
    /// ([`dispatch_shape_tokens`], whose options are what the walk over its matches gives):
    /// nearly every rule this lint reads on a large node is one, and the walk cost half the
    /// lint. Only the option names are sliced, and a module's name only for `--mark`, the one
    /// option whose module counts: the arguments are never read here.
    fn of_dispatch_shape(rule: RuleRef<'_, '_>, words: &[Token; 11]) -> OptionFacts {
        let mut facts = OptionFacts::default();
        // (the match's module word, the option word): two basic options, two matches.
        for (module, option) in [(None, 0), (None, 2), (Some(4), 5), (Some(7), 8)] {
            let name = rule.token_text(&words[option]);
            let module = match module {
                Some(at) if name == "--mark" => Some(rule.token_text(&words[at])),
                // Any module but `mark` reads the same here: the name alone settles the option.
                Some(_) => Some(""),
                None => None,
            };
            facts.note(module, name, words[option].negated());
        }
        facts
    }

    /// Notes one option, in the walk's order.
    fn note(&mut self, module: Option<&str>, name: &str, negated: bool) {
        let slot = match (module, name) {
            (_, "--dport" | "--destination-port" | "--dports" | "--destination-ports") => {
                self.port = true;
                return;
            }
            (None, "-s" | "--source") => &mut self.source,
            (None, "-d" | "--destination") => &mut self.destination,
            (None, "-p" | "--protocol") => &mut self.protocol,
            (Some("mark"), "--mark") => &mut self.mark,
            _ => return,
        };
        if slot.is_none() {
            *slot = Some(negated);
        }
    }
}

/// Whether the rule matches a (non-negated) conntrack state among `wanted`.
fn ctstate_in(rule: RuleRef<'_, '_>, wanted: &[&str]) -> bool {
    rule.ctstate()
        .is_some_and(|s| !s.negated && s.value.iter().any(|v| wanted.contains(v)))
}

impl Need {
    /// Whether the rule has what this need asks, its options read in `facts`.
    fn holds_in(self, rule: RuleRef<'_, '_>, facts: &OptionFacts) -> bool {
        let state = |wanted: &[&str]| ctstate_in(rule, wanted);
        match self {
            Need::Mark => facts.mark == Some(false),
            Need::Destination => facts.destination == Some(false),
            Need::NegatedSource => facts.source == Some(true),
            Need::NegatedCtstate => rule.ctstate().is_some_and(|s| s.negated),
            Need::Established => state(&["RELATED", "ESTABLISHED"]),
            Need::New => state(&["NEW"]),
            Need::LocalOrDestination => {
                rule.dst_type()
                    .is_some_and(|t| !t.negated && t.value == "LOCAL")
                    || facts.destination == Some(false)
            }
            Need::DestinationPort => facts.port,
            Need::Protocol => facts.protocol == Some(false),
            Need::SourceAndDestination => facts.source.is_some() && facts.destination.is_some(),
            Need::SourceOrDestination => facts.source.is_some() || facts.destination.is_some(),
            Need::SourceAndDestinationOrMark => {
                (facts.source.is_some() && facts.destination.is_some()) || facts.mark == Some(false)
            }
        }
    }

    /// [`Need::holds_in`] read one option at a time: what `OptionFacts` must agree with.
    #[cfg(test)]
    fn holds(self, rule: RuleRef<'_, '_>) -> bool {
        let basic = |names: &[&str]| rule.option(None, names);
        let source = || basic(&["-s", "--source"]);
        let destination = || basic(&["-d", "--destination"]);
        let mark = || {
            rule.option(Some("mark"), &["--mark"])
                .is_some_and(|m| !m.negated)
        };
        let state = |wanted: &[&str]| ctstate_in(rule, wanted);
        match self {
            Need::Mark => mark(),
            Need::Destination => destination().is_some_and(|d| !d.negated),
            Need::NegatedSource => source().is_some_and(|s| s.negated),
            Need::NegatedCtstate => rule.ctstate().is_some_and(|s| s.negated),
            Need::Established => state(&["RELATED", "ESTABLISHED"]),
            Need::New => state(&["NEW"]),
            Need::LocalOrDestination => {
                rule.dst_type()
                    .is_some_and(|t| !t.negated && t.value == "LOCAL")
                    || Need::Destination.holds(rule)
            }
            Need::DestinationPort => crate::kube::names::option_anywhere(
                rule,
                &[
                    "--dport",
                    "--destination-port",
                    "--dports",
                    "--destination-ports",
                ],
            )
            .is_some(),
            Need::Protocol => basic(&["-p", "--protocol"]).is_some_and(|p| !p.negated),
            Need::SourceAndDestination => source().is_some() && destination().is_some(),
            Need::SourceOrDestination => source().is_some() || destination().is_some(),
            Need::SourceAndDestinationOrMark => Need::SourceAndDestination.holds(rule) || mark(),
        }
    }

    /// What is missing, for the message: the part of the need the rule lacks.
    fn missing(self, rule: RuleRef<'_, '_>) -> &'static str {
        let source = rule.option(None, &["-s", "--source"]).is_some();
        let destination = rule.option(None, &["-d", "--destination"]).is_some();
        match (self, source, destination) {
            (Need::SourceAndDestination, true, false) => "`-d`",
            (Need::SourceAndDestination, false, true) => "`-s`",
            (Need::SourceAndDestinationOrMark, true, false) => "`-d` (or `-m mark --mark`)",
            (Need::SourceAndDestinationOrMark, false, true) => "`-s` (or `-m mark --mark`)",
            _ => self.describe(),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Need::Mark => "`-m mark --mark`",
            Need::Destination => "`-d`",
            Need::NegatedSource => "`! -s`",
            Need::NegatedCtstate => "`-m conntrack ! --ctstate`",
            Need::Established => "`-m conntrack --ctstate RELATED,ESTABLISHED`",
            Need::New => "`-m conntrack --ctstate NEW`",
            Need::LocalOrDestination => "`-m addrtype --dst-type LOCAL` (or `-d`)",
            Need::DestinationPort => "`--dport`",
            Need::Protocol => "`-p ipencap` (protocol 4)",
            Need::SourceAndDestination => "`-s` and `-d`",
            Need::SourceOrDestination => "`-s` or `-d`",
            Need::SourceAndDestinationOrMark => "`-s` and `-d` (or `-m mark --mark`)",
        }
    }
}

/// How a known rule's comment reads.
#[derive(Clone, Copy)]
enum Text {
    /// Exactly this.
    Exact(&'static str),
    /// A kube-proxy comment about one Service port, saying one of these.
    Service(&'static [CommentRole]),
    /// `NS/SVC:PORT` followed by this.
    ServiceSuffix(&'static str),
}

/// When the requirement applies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    Always,
    /// On nodes with the 1.25+ kube-proxy layout (older ones wrote some rules without the match).
    Modern,
    /// When no earlier rule of the chain returns packets by their mark (`-m mark ! --mark M -j
    /// RETURN`): the older layout, where the MASQUERADE rule tests the mark itself.
    NoMarkReturnBefore,
}

/// A rule whose owner always writes the same matches on it.
struct Known {
    text: Text,
    table: TableKind,
    /// The chains it is written to; a name ending in `*` is a prefix.
    chains: &'static [&'static str],
    /// `-j` target; empty for any.
    target: &'static str,
    owner: &'static str,
    needs: &'static [Need],
    when: When,
    /// The rule as its owner writes it.
    writes: &'static str,
    /// What the weakened rule does, after "so it".
    effect: &'static str,
}

const BUILTIN_FILTER: &[&str] = &["INPUT", "FORWARD", "OUTPUT"];
const KUBELET: &str = "kubelet";
const KUBE_PROXY: &str = "kube-proxy";
const FLANNEL: &str = "Flannel";

/// Every rule the lint knows, each checked against the owner's source: kube-proxy's
/// `pkg/proxy/iptables/proxier.go` and kubelet's `pkg/kubelet/kubelet_network_linux.go`
/// (1.6 to 1.31), Calico felix's `rules/static.go`, Flannel's `network/iptables.go`.
const KNOWN: &[Known] = &[
    Known {
        text: Text::Exact("kubernetes firewall for dropping marked packets"),
        table: TableKind::Filter,
        chains: &["KUBE-FIREWALL"],
        target: "DROP",
        owner: KUBELET,
        needs: &[Need::Mark],
        when: When::Always,
        writes: "-A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 -j DROP",
        effect: "drops packets that were never marked for dropping",
    },
    Known {
        text: Text::Exact("block incoming localnet connections"),
        table: TableKind::Filter,
        chains: &["KUBE-FIREWALL"],
        target: "DROP",
        owner: KUBELET,
        needs: &[Need::Destination, Need::NegatedSource, Need::NegatedCtstate],
        when: When::Always,
        writes: "-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP",
        effect: "drops more than new outside connections to 127.0.0.0/8",
    },
    Known {
        text: Text::Exact("kubernetes forwarding rules"),
        table: TableKind::Filter,
        chains: &["KUBE-FORWARD"],
        target: "ACCEPT",
        owner: KUBE_PROXY,
        needs: &[Need::Mark],
        when: When::Always,
        writes: "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT",
        effect: "accepts forwarded traffic that kube-proxy never marked, bypassing the FORWARD policy and every rule after it",
    },
    Known {
        text: Text::Exact("kubernetes forwarding conntrack rule"),
        table: TableKind::Filter,
        chains: &["KUBE-FORWARD"],
        target: "ACCEPT",
        owner: KUBE_PROXY,
        needs: &[Need::Established],
        when: When::Always,
        writes: "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
        effect: "accepts new forwarded connections, not only replies, bypassing the FORWARD policy",
    },
    Known {
        text: Text::Exact("kubernetes forwarding conntrack pod source rule"),
        table: TableKind::Filter,
        chains: &["KUBE-FORWARD"],
        target: "ACCEPT",
        owner: KUBE_PROXY,
        needs: &[Need::Established],
        when: When::Always,
        writes: "-A KUBE-FORWARD -s POD_CIDR -m comment --comment \"kubernetes forwarding conntrack pod source rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
        effect: "accepts new forwarded connections, not only replies, bypassing the FORWARD policy",
    },
    Known {
        text: Text::Exact("kubernetes forwarding conntrack pod destination rule"),
        table: TableKind::Filter,
        chains: &["KUBE-FORWARD"],
        target: "ACCEPT",
        owner: KUBE_PROXY,
        needs: &[Need::Established],
        when: When::Always,
        writes: "-A KUBE-FORWARD -d POD_CIDR -m comment --comment \"kubernetes forwarding conntrack pod destination rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
        effect: "accepts new forwarded connections, not only replies, bypassing the FORWARD policy",
    },
    Known {
        text: Text::Exact(
            "kubernetes service nodeports; NOTE: this must be the last rule in this chain",
        ),
        table: TableKind::Nat,
        chains: &["KUBE-SERVICES"],
        target: "KUBE-NODEPORTS",
        owner: KUBE_PROXY,
        needs: &[Need::LocalOrDestination],
        when: When::Always,
        writes: "-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS",
        effect: "sends traffic to any address, not only the node's own, to the node ports",
    },
    Known {
        text: Text::Exact("kubernetes service traffic requiring SNAT"),
        table: TableKind::Nat,
        chains: &["KUBE-POSTROUTING", "POSTROUTING"],
        target: "MASQUERADE",
        owner: KUBE_PROXY,
        needs: &[Need::Mark],
        when: When::NoMarkReturnBefore,
        writes: "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -m mark --mark 0x4000/0x4000 -j MASQUERADE",
        effect: "masquerades all traffic leaving the node, not only Service traffic marked for SNAT",
    },
    Known {
        text: Text::Exact("kubernetes load balancer firewall"),
        table: TableKind::Filter,
        chains: BUILTIN_FILTER,
        target: "KUBE-PROXY-FIREWALL",
        owner: KUBE_PROXY,
        needs: &[Need::New],
        when: When::Always,
        writes: "-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL",
        effect: "runs the load-balancer firewall on every packet instead of on new connections",
    },
    Known {
        text: Text::Exact("kubernetes externally-visible service portals"),
        table: TableKind::Filter,
        chains: BUILTIN_FILTER,
        target: "KUBE-EXTERNAL-SERVICES",
        owner: KUBE_PROXY,
        needs: &[Need::New],
        when: When::Modern,
        writes: "-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES",
        effect: "runs KUBE-EXTERNAL-SERVICES on every packet instead of on new connections",
    },
    Known {
        text: Text::Exact("kubernetes service portals"),
        table: TableKind::Filter,
        chains: BUILTIN_FILTER,
        target: "KUBE-SERVICES",
        owner: KUBE_PROXY,
        needs: &[Need::New],
        when: When::Modern,
        writes: "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
        effect: "runs filter KUBE-SERVICES on every packet instead of on new connections",
    },
    Known {
        text: Text::Service(&[
            CommentRole::ClusterIp,
            CommentRole::ExternalIp,
            CommentRole::LoadBalancerIp,
        ]),
        table: TableKind::Nat,
        chains: &["KUBE-SERVICES"],
        target: "",
        owner: KUBE_PROXY,
        needs: &[Need::Destination, Need::DestinationPort],
        when: When::Always,
        writes: "-A KUBE-SERVICES -d SERVICE_IP/32 -p PROTO -m comment --comment \"NS/SVC:PORT cluster IP\" -m PROTO --dport PORT -j KUBE-SVC-HASH",
        effect: "captures traffic to other addresses or ports than the Service's",
    },
    Known {
        text: Text::Service(&[CommentRole::Plain]),
        table: TableKind::Nat,
        chains: &["KUBE-NODEPORTS"],
        target: "",
        owner: KUBE_PROXY,
        needs: &[Need::DestinationPort],
        when: When::Always,
        writes: "-A KUBE-NODEPORTS -p PROTO -m comment --comment \"NS/SVC:PORT\" -m PROTO --dport NODE_PORT -j KUBE-EXT-HASH",
        effect: "captures traffic to every port of the node, not only the node port",
    },
    Known {
        text: Text::Service(&[CommentRole::NoEndpoints]),
        table: TableKind::Filter,
        chains: &["KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES"],
        target: "REJECT",
        owner: KUBE_PROXY,
        needs: &[Need::DestinationPort, Need::LocalOrDestination],
        when: When::Always,
        writes: "-A KUBE-SERVICES -d SERVICE_IP/32 -p PROTO -m comment --comment \"NS/SVC:PORT has no endpoints\" -m PROTO --dport PORT -j REJECT --reject-with icmp-port-unreachable",
        effect: "rejects traffic to other addresses or ports than the Service's",
    },
    Known {
        text: Text::Service(&[CommentRole::NoLocalEndpoints]),
        table: TableKind::Filter,
        chains: &["KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES"],
        target: "DROP",
        owner: KUBE_PROXY,
        needs: &[Need::DestinationPort, Need::LocalOrDestination],
        when: When::Always,
        writes: "-A KUBE-EXTERNAL-SERVICES -d SERVICE_IP/32 -p PROTO -m comment --comment \"NS/SVC:PORT has no local endpoints\" -m PROTO --dport PORT -j DROP",
        effect: "drops traffic to other addresses or ports than the Service's",
    },
    Known {
        text: Text::Service(&[CommentRole::NotAccepted]),
        table: TableKind::Filter,
        chains: &["KUBE-PROXY-FIREWALL"],
        target: "DROP",
        owner: KUBE_PROXY,
        needs: &[Need::Destination, Need::DestinationPort],
        when: When::Always,
        writes: "-A KUBE-PROXY-FIREWALL -d LB_IP/32 -p PROTO -m comment --comment \"NS/SVC:PORT traffic not accepted by KUBE-FW-HASH\" -m PROTO --dport PORT -j DROP",
        effect: "drops traffic to other addresses or ports than the load balancer's",
    },
    Known {
        text: Text::ServiceSuffix(" health check node port"),
        table: TableKind::Filter,
        chains: &["KUBE-NODEPORTS"],
        target: "ACCEPT",
        owner: KUBE_PROXY,
        needs: &[Need::DestinationPort],
        when: When::Always,
        writes: "-A KUBE-NODEPORTS -p tcp -m comment --comment \"NS/SVC:PORT health check node port\" -m tcp --dport HEALTH_CHECK_PORT -j ACCEPT",
        effect: "accepts traffic to every port of the node, not only the health-check port",
    },
    Known {
        text: Text::Exact("Drop IPIP packets from non-Calico hosts"),
        table: TableKind::Filter,
        chains: &["cali-*"],
        target: "DROP",
        owner: "Calico felix",
        needs: &[Need::Protocol],
        when: When::Always,
        writes: "-A cali-INPUT -p ipencap -m comment --comment \"cali:ID\" -m comment --comment \"Drop IPIP packets from non-Calico hosts\" -j DROP",
        effect: "drops every packet, not only IPIP from unknown hosts",
    },
    Known {
        text: Text::Exact("flanneld masq"),
        table: TableKind::Nat,
        chains: &["FLANNEL-POSTRTG", "POSTROUTING"],
        target: "MASQUERADE",
        owner: FLANNEL,
        needs: &[Need::SourceAndDestination],
        when: When::Always,
        writes: "-A FLANNEL-POSTRTG -s CLUSTER_CIDR ! -d 224.0.0.0/4 -m comment --comment \"flanneld masq\" -j MASQUERADE --random-fully",
        effect: "masquerades traffic that must keep its source address",
    },
    Known {
        text: Text::Exact("flanneld masq"),
        table: TableKind::Nat,
        chains: &["FLANNEL-POSTRTG", "POSTROUTING"],
        target: "RETURN",
        owner: FLANNEL,
        needs: &[Need::SourceAndDestinationOrMark],
        when: When::Always,
        writes: "-A FLANNEL-POSTRTG -s POD_SUBNET -d CLUSTER_CIDR -m comment --comment \"flanneld masq\" -j RETURN",
        effect: "skips the masquerading of pod traffic that leaves the cluster",
    },
    Known {
        text: Text::Exact("flanneld forward"),
        table: TableKind::Filter,
        chains: &["FLANNEL-FWD", "FORWARD"],
        target: "ACCEPT",
        owner: FLANNEL,
        needs: &[Need::SourceOrDestination],
        when: When::Always,
        writes: "-A FLANNEL-FWD -s CLUSTER_CIDR -m comment --comment \"flanneld forward\" -j ACCEPT",
        effect: "accepts all forwarded traffic, not only the pod network's",
    },
];

impl Known {
    fn in_chain(&self, name: &str) -> bool {
        self.chains.iter().any(|c| match c.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => *c == name,
        })
    }

    fn reads(&self, comment: &str) -> bool {
        match self.text {
            Text::Exact(text) => comment == text,
            Text::Service(roles) => {
                service_comment(comment).is_some_and(|(_, role)| roles.contains(&role))
            }
            Text::ServiceSuffix(suffix) => comment.strip_suffix(suffix).is_some_and(|name| {
                service_comment(name).is_some_and(|(_, role)| role == CommentRole::Plain)
            }),
        }
    }
}

/// Whether a rule returns packets by their mark: kube-proxy's 1.20+ KUBE-POSTROUTING starts with
/// `-m mark ! --mark M -j RETURN`. (Without its `!` it is RL410's finding, and still this layout.)
fn returns_by_mark(rule: RuleRef<'_, '_>, target: &str) -> bool {
    target == "RETURN" && rule.option(Some("mark"), &["--mark"]).is_some()
}

/// The chains of a table that known rules may be written to, in table order. Most chains of a
/// large node (`KUBE-SVC-*`, `KUBE-SEP-*`) hold none: a table whose known chains all have exact
/// names gets them by name, and the names of its other chains are never read. (A prefix such as
/// Calico's `cali-*` needs every name of its table read; those chains are walked, not
/// collected: a million-chain table would otherwise hold a list of them, issue 16.)
fn known_chains<'r, 'a>(
    table: TableRef<'r, 'a>,
) -> Box<dyn Iterator<Item = ChainRef<'r, 'a>> + 'r> {
    let kind = table.kind();
    if !matches!(kind, TableKind::Filter | TableKind::Nat) {
        return Box::new(std::iter::empty());
    }
    let names = KNOWN
        .iter()
        .filter(|k| k.table == kind)
        .flat_map(|k| k.chains.iter().copied());
    if names.clone().any(|c| c.ends_with('*')) {
        return Box::new(table.chains());
    }
    let mut chains: Vec<ChainRef<'r, 'a>> = names.filter_map(|n| table.chain(n)).collect();
    chains.sort_unstable_by_key(|c| c.id.index());
    chains.dedup_by_key(|c| c.id);
    Box::new(chains.into_iter())
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let mut generation = None;
    // The known rules of the chain at hand, in KNOWN's order; reused.
    let mut here: Vec<&Known> = Vec::new();
    for chain in cx.tables().flat_map(known_chains) {
        let kind = chain.table().kind();
        // The known rules of this chain. The table and chain of each known rule are compared
        // once per chain, not once per rule and comment.
        here.clear();
        let name = chain.name();
        here.extend(KNOWN.iter().filter(|k| k.table == kind && k.in_chain(name)));
        if here.is_empty() {
            continue;
        }
        let mut mark_return_seen = false;
        // nat `KUBE-SERVICES`: the model read its dispatch rules of kube-proxy's shape.
        let dispatch_keys =
            (kind == TableKind::Nat && name == "KUBE-SERVICES").then(|| &cx.kube().dispatch_keys);
        let mut at = 0;
        for rule in chain.rules() {
            let Some(target) = rule.target() else {
                continue;
            };
            let target = target.name();
            if returns_by_mark(rule, target) {
                mark_return_seen = true;
            }
            // No known rule of this chain has this target: its comments cannot name one.
            if !here
                .iter()
                .any(|k| k.target.is_empty() || k.target == target)
            {
                continue;
            }
            // A dispatch rule that matches only its address, protocol and port (and comments):
            // its facts are known without reading its words.
            let plain_dispatch =
                dispatch_keys.is_some_and(|k| k.is_plain_dispatch(chain.id, rule.id, &mut at));
            // A match iptables could not print is RL502's finding, not a lost match. kube-proxy's
            // dispatch shape has none (its words are of five kinds, the marker is of its own).
            let shaped = if plain_dispatch {
                None
            } else {
                dispatch_shape_tokens(rule)
            };
            if !plain_dispatch && shaped.is_none() && rule.has_unsupported_revision() {
                continue;
            }
            // A DROP or REJECT with no match at all in an owned chain is RL401's.
            let facts = cx.target_facts(rule.id);
            if facts.is_drop_or_reject() && facts.unconditional() && owner(chain.name()).is_some() {
                continue;
            }
            // A rule with every match that the known rules of its target need lost nothing,
            // whatever its comment says: most rules of a healthy node stop here, unread.
            let options = match &shaped {
                _ if plain_dispatch => OptionFacts::PLAIN_DISPATCH,
                Some(shaped) => OptionFacts::of_dispatch_shape(rule, shaped),
                None => OptionFacts::read(rule),
            };
            if here
                .iter()
                .filter(|k| k.target.is_empty() || k.target == target)
                .all(|k| k.needs.iter().all(|n| n.holds_in(rule, &options)))
            {
                continue;
            }
            let Some(known) = comments(rule).find_map(|c| {
                here.iter()
                    .copied()
                    .find(|k| (k.target.is_empty() || k.target == target) && k.reads(&c))
            }) else {
                continue;
            };
            let missing: Vec<Need> = known
                .needs
                .iter()
                .copied()
                .filter(|n| !n.holds_in(rule, &options))
                .collect();
            if missing.is_empty() {
                continue;
            }
            // The generation only now: the Kubernetes model is built for it (outside nat
            // `KUBE-SERVICES`, which asks it for the dispatch rules it read).
            match known.when {
                When::Always => {}
                When::NoMarkReturnBefore if mark_return_seen => continue,
                When::NoMarkReturnBefore => {}
                When::Modern => {
                    let g = *generation.get_or_insert_with(|| cx.kube().layout.generation);
                    if g != Generation::Modern {
                        continue;
                    }
                }
            }
            report(out, chain, rule, known, &missing);
        }
    }
}

fn report(
    out: &mut Findings<'_>,
    chain: ChainRef<'_, '_>,
    rule: RuleRef<'_, '_>,
    known: &Known,
    missing: &[Need],
) {
    let parts: Vec<&str> = missing.iter().map(|n| n.missing(rule)).collect();
    let what = match parts.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    let comment = comments(rule)
        .find(|c| known.reads(c))
        .map(|c| c.into_owned())
        .unwrap_or_default();
    let target = rule.target().map_or("", |t| t.name());
    out.push(
        out.at_rule(
            rule,
            format!(
                "{} rule \"{comment}\" in {} lost {what}: it {}",
                known.owner,
                chain.name(),
                known.effect
            ),
        )
        .with_label(format!("-j {target} without {what}"))
        .with_help(format!(
            "{} writes `{}`; a match is lost like this when two iptables versions rewrite the same rules (kubernetes#112477): delete this rule, restart {} so that it writes the rule again, and give the host and the containers the same iptables version and backend",
            known.owner, known.writes, known.owner
        )),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, filter, nat, run};

    /// The model's plain dispatch rules have the facts the lint gives them unread, and the
    /// lint finds the same without the model's keys.
    #[test]
    fn plain_dispatch_facts_are_the_read_ones() {
        crate::lints::testing::for_each_plain_dispatch_rule(&LINT, |rule| {
            assert_eq!(OptionFacts::read(rule), OptionFacts::PLAIN_DISPATCH);
            assert!(!rule.has_unsupported_revision());
        });
    }

    /// Every need reads the same from `OptionFacts` as one option at a time, on every rule of
    /// the lint corpus, odd forms and a generated node.
    #[test]
    fn needs_read_in_one_walk_hold_as_read_one_by_one() {
        const NEEDS: [Need; 12] = [
            Need::Mark,
            Need::Destination,
            Need::NegatedSource,
            Need::NegatedCtstate,
            Need::Established,
            Need::New,
            Need::LocalOrDestination,
            Need::DestinationPort,
            Need::Protocol,
            Need::SourceAndDestination,
            Need::SourceOrDestination,
            Need::SourceAndDestinationOrMark,
        ];
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../corpus/lints/RL413-weakened-rule");
        let mut texts: Vec<String> = std::fs::read_dir(corpus)
            .expect("RL413 corpus")
            .map(|f| std::fs::read_to_string(f.expect("entry").path()).expect("dump"))
            .collect();
        texts.push(nat(concat!(
            "-A KUBE-SERVICES ! -d 10.0.0.1/32 -s 10.0.0.2 -d 10.0.0.3 -p tcp -m tcp ! --dport 80 -j KUBE-SVC-A\n",
            "-A KUBE-SERVICES ! -s 10.0.0.2 ! -p tcp -m multiport --dports 80,443 -m mark ! --mark 0x1 -m mark --mark 0x2 -j X\n",
            "-A KUBE-SERVICES -m mark --mark 0x4000/0x4000 -m addrtype --dst-type LOCAL -m conntrack --ctstate NEW -j X\n",
            "-A KUBE-SERVICES -m comment --comment \"--mark\" -m set --match-set s dst --destination-port 1 -j X\n",
            "-A KUBE-SERVICES --source 10.0.0.1 --destination 10.0.0.2 --protocol udp -m udp --destination-ports 1 -j X\n",
        )));
        texts.push(rulelint_dumpgen::generate(
            &rulelint_dumpgen::Shape::with_rule_target(3_000),
        ));
        let (mut held, mut shaped_rules) = (0, 0);
        for text in &texts {
            let parsed = rulelint_parser::parse(text);
            for rule in parsed.ruleset.iter_rules() {
                let facts = OptionFacts::read(rule);
                if let Some(shaped) = dispatch_shape_tokens(rule) {
                    shaped_rules += 1;
                    assert_eq!(
                        OptionFacts::of_dispatch_shape(rule, &shaped),
                        facts,
                        "{}",
                        rule.text()
                    );
                }
                for need in NEEDS {
                    let one_by_one = need.holds(rule);
                    assert_eq!(
                        need.holds_in(rule, &facts),
                        one_by_one,
                        "{need:?}: {}",
                        rule.text()
                    );
                    held += usize::from(one_by_one);
                }
            }
        }
        assert!(held > 1000, "{held}");
        assert!(shaped_rules > 100, "{shaped_rules}");
    }

    const MODERN: &str = ":KUBE-PROXY-FIREWALL - [0:0]\n";

    #[test]
    fn cases() {
        let firewall = ":KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n";
        let forward = ":KUBE-FORWARD - [0:0]\n-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n";
        assert_cases(
            &LINT,
            &[
                &filter(&format!(
                    "{firewall}-A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 -j DROP\n-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP\n"
                )),
                // The FORWARD hook carries the same comment and no match.
                &filter(&format!(
                    "{forward}-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT\n-A KUBE-FORWARD -s 10.244.0.0/16 -m comment --comment \"kubernetes forwarding conntrack pod source rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n"
                )),
                // Bare DROP in an owned chain: RL401 reports it.
                &filter(&format!(
                    "{firewall}-A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -j DROP\n"
                )),
                // Modern KUBE-POSTROUTING: the MASQUERADE follows the RETURN of unmarked packets.
                &nat(
                    ":KUBE-POSTROUTING - [0:0]\n-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully\n",
                ),
                // --nodeport-addresses: one tail rule per node address instead of addrtype.
                &nat(
                    ":KUBE-SERVICES - [0:0]\n:KUBE-NODEPORTS - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -d 192.0.2.10/32 -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -j KUBE-NODEPORTS\n",
                ),
                // Before 1.11 the filter hooks had no ctstate; without the 1.25+ layout that is fine.
                &filter(
                    ":KUBE-EXTERNAL-SERVICES - [0:0]\n-A INPUT -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES\n:KUBE-SERVICES - [0:0]\n-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n",
                ),
                // Old KUBE-XLB: "has no local endpoints" in nat, unconditional by design.
                &nat(
                    ":KUBE-XLB-AAAAAAAAAAAAAAAA - [0:0]\n:KUBE-MARK-DROP - [0:0]\n-A PREROUTING -j KUBE-XLB-AAAAAAAAAAAAAAAA\n-A KUBE-XLB-AAAAAAAAAAAAAAAA -m comment --comment \"default/web:http has no local endpoints\" -j KUBE-MARK-DROP\n",
                ),
                // Old KUBE-FW: "loadbalancer IP" without -d outside KUBE-SERVICES.
                &nat(
                    ":KUBE-FW-AAAAAAAAAAAAAAAA - [0:0]\n:KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n-A PREROUTING -j KUBE-FW-AAAAAAAAAAAAAAAA\n-A KUBE-FW-AAAAAAAAAAAAAAAA -m comment --comment \"default/web:http loadbalancer IP\" -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
                ),
                // Flannel's hook and its mark RETURN.
                &nat(
                    ":FLANNEL-POSTRTG - [0:0]\n-A POSTROUTING -m comment --comment \"flanneld masq\" -j FLANNEL-POSTRTG\n-A FLANNEL-POSTRTG -m mark --mark 0x4000/0x4000 -m comment --comment \"flanneld masq\" -j RETURN\n-A FLANNEL-POSTRTG ! -s 10.42.0.0/16 -d 10.42.0.0/16 -m comment --comment \"flanneld masq\" -j MASQUERADE --random-fully\n",
                ),
                &filter(
                    ":cali-INPUT - [0:0]\n-A INPUT -j cali-INPUT\n-A cali-INPUT -p ipencap -m comment --comment \"cali:jX63A0VGotRJWnUL\" -m comment --comment \"Drop IPIP packets from non-Calico hosts\" -j DROP\n",
                ),
                // A match an old iptables could not print: RL502 reports it.
                &filter(&format!(
                    "{forward}-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack [unsupported revision] -j ACCEPT\n"
                )),
                // kube-proxy's restore input: `--dport` after the basic options.
                &nat(
                    ":KUBE-SERVICES - [0:0]\n:KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -m comment --comment \"default/web:http cluster IP\" -m tcp -p tcp -d 10.96.0.20 --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
                ),
                // An unknown comment is not checked.
                &filter(
                    ":MY-CHAIN - [0:0]\n-A INPUT -j MY-CHAIN\n-A MY-CHAIN -m comment --comment \"kubernetes forwarding rules\" -j ACCEPT\n",
                ),
            ],
            &[
                (
                    &filter(&format!(
                        "{forward}-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -j ACCEPT\n"
                    )),
                    1,
                ),
                (
                    &filter(&format!(
                        "{firewall}-A KUBE-FIREWALL -d 127.0.0.0/8 -m comment --comment \"block incoming localnet connections\" -j DROP\n"
                    )),
                    1,
                ),
                (
                    &filter(&format!(
                        "{forward}-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -j ACCEPT\n"
                    )),
                    1,
                ),
                (
                    &nat(
                        ":KUBE-POSTROUTING - [0:0]\n-A POSTROUTING -j KUBE-POSTROUTING\n-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE\n",
                    ),
                    1,
                ),
                (
                    &nat(
                        ":KUBE-SERVICES - [0:0]\n:KUBE-NODEPORTS - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -j KUBE-NODEPORTS\n",
                    ),
                    1,
                ),
                (
                    &filter(&format!(
                        "{MODERN}-A INPUT -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL\n:KUBE-SERVICES - [0:0]\n-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
                    )),
                    2,
                ),
                (
                    &nat(
                        ":KUBE-SERVICES - [0:0]\n:KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n:KUBE-NODEPORTS - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n-A KUBE-NODEPORTS -p tcp -m comment --comment \"default/web:http\" -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
                    ),
                    2,
                ),
                (
                    &filter(
                        ":KUBE-SERVICES - [0:0]\n-A OUTPUT -j KUBE-SERVICES\n-A KUBE-SERVICES -p tcp -m comment --comment \"default/web:http has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable\n",
                    ),
                    1,
                ),
                (
                    &filter(
                        ":KUBE-NODEPORTS - [0:0]\n-A INPUT -j KUBE-NODEPORTS\n-A KUBE-NODEPORTS -p tcp -m comment --comment \"default/web:http health check node port\" -j ACCEPT\n",
                    ),
                    1,
                ),
                (
                    &filter(
                        ":cali-INPUT - [0:0]\n-A INPUT -j cali-INPUT\n-A cali-INPUT -m comment --comment \"cali:jX63A0VGotRJWnUL\" -m comment --comment \"Drop IPIP packets from non-Calico hosts\" -j DROP\n",
                    ),
                    1,
                ),
                (
                    &nat(
                        ":FLANNEL-POSTRTG - [0:0]\n-A POSTROUTING -m comment --comment \"flanneld masq\" -j FLANNEL-POSTRTG\n-A FLANNEL-POSTRTG -m comment --comment \"flanneld masq\" -j RETURN\n-A FLANNEL-POSTRTG -s 10.42.0.0/16 -m comment --comment \"flanneld masq\" -j MASQUERADE\n",
                    ),
                    2,
                ),
                (
                    &filter(
                        ":FLANNEL-FWD - [0:0]\n-A FORWARD -j FLANNEL-FWD\n-A FLANNEL-FWD -m comment --comment \"flanneld forward\" -j ACCEPT\n",
                    ),
                    1,
                ),
            ],
        );
    }

    #[test]
    fn message_names_owner_and_missing_match() {
        let found = run(
            &LINT,
            &filter(
                ":KUBE-FORWARD - [0:0]\n-A FORWARD -j KUBE-FORWARD\n-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -j ACCEPT\n",
            ),
        );
        assert_eq!(
            found[0].message,
            "kube-proxy rule \"kubernetes forwarding rules\" in KUBE-FORWARD lost `-m mark --mark`: it accepts forwarded traffic that kube-proxy never marked, bypassing the FORWARD policy and every rule after it"
        );
        assert!(found[0].help.as_deref().unwrap().contains("0x4000/0x4000"));
    }
}
