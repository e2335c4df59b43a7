//! The key `RL409 cluster-ip-conflict` reads from each dispatch rule of nat `KUBE-SERVICES`:
//! its destination address, protocol and port, and whether it matches nothing else. The model
//! reads it of the rules of kube-proxy's shape in the same pass over their words as their
//! Services' addresses (`DispatchFacts::dispatch_key`, `KubeModel::dispatch_keys`): RL409
//! reading the chain's rules a second time cost about 1,400 instructions a rule.

use super::{port_range, word_bytes};
use ipnet::IpNet;
use rulelint_parser::views::PortRange;
use rulelint_parser::{ChainId, RuleId, RuleRef, Token};

/// Destination address, protocol (by number) and port of a dispatch rule.
pub(crate) type DispatchKey = (IpNet, u16, PortRange);

/// What RL409 reads of one rule: its [`DispatchKey`] (`None`: not one it can read), and whether
/// the rule matches nothing but the key (and comments).
pub(crate) type KeyRead = (Option<DispatchKey>, bool);

/// The keys of the rules of nat `KUBE-SERVICES` (the chain `chain`) that the model read, have
/// kube-proxy's shape and jump (not go) to a Service chain, in rule order
/// (`RuleId`, ascending); each as [`read_dispatch_key`] reads it (pinned by a test).
#[derive(Clone, Debug, Default)]
pub(crate) struct DispatchKeys {
    pub(crate) chain: Option<ChainId>,
    pub(crate) keys: Vec<(RuleId, KeyRead)>,
}

impl DispatchKeys {
    /// The key read of `rule` when the model has it; `at` is where the previous search ended
    /// (rules come in order in the common case, so a search is one comparison).
    pub(crate) fn find(&self, rule: RuleId, at: &mut usize) -> Option<KeyRead> {
        match self.keys.get(*at) {
            Some(&(id, read)) if id == rule => {
                *at += 1;
                Some(read)
            }
            Some(&(id, _)) if id > rule => None,
            _ => {
                let i = self.keys.binary_search_by_key(&rule, |&(id, _)| id).ok()?;
                *at = i + 1;
                Some(self.keys[i].1)
            }
        }
    }
}

impl DispatchKeys {
    /// Whether `rule` (a rule of `chain`; `at` as for [`find`](Self::find)) is one the model
    /// read in nat `KUBE-SERVICES` that has a key and matches only it: it jumps to a Service
    /// chain, its basic options are a `-d` and a `-p`, not negated, and its only matches are
    /// `comment`, `tcp`, `udp` or `sctp` ones with a `--dport` among them (kube-proxy's
    /// dispatch rule), so it has no `set`, `nfacct` or `mark` match and jumps to no IPVS or
    /// kube-router chain.
    pub(crate) fn is_plain_dispatch(&self, chain: ChainId, rule: RuleId, at: &mut usize) -> bool {
        self.chain == Some(chain) && matches!(self.find(rule, at), Some((Some(_), true)))
    }
}

/// The protocol of a rule, by number (`tcp` and `6` are one protocol).
pub(crate) fn protocol_number(text: &str) -> Option<u16> {
    if text.eq_ignore_ascii_case("tcp") {
        Some(6)
    } else if text.eq_ignore_ascii_case("udp") {
        Some(17)
    } else if text.eq_ignore_ascii_case("sctp") {
        Some(132)
    } else {
        text.parse().ok()
    }
}

/// The key of a dispatch rule and whether it matches only the key, read in one walk over its
/// matches, or over `shaped`, its words when it has kube-proxy's shape
/// ([`dispatch_shape_tokens`](super::dispatch_shape_tokens)): their names compared as bytes,
/// and only the three arguments of the key sliced as text. Each option is the first of its
/// kind, as `RuleRef::destination`, `protocol` and `option_anywhere` read them (a test in RL409
/// compares the two ways).
pub(crate) fn read_dispatch_key<'a>(rule: RuleRef<'_, 'a>, shaped: Option<[Token; 11]>) -> KeyRead {
    let mut destination: Option<(bool, &str)> = None;
    let mut protocol: Option<(bool, &str)> = None;
    let mut port: Option<(bool, &str)> = None;
    let mut only_key = true;
    let mut take =
        |module: Option<&[u8]>, name: &[u8], negated: bool, arg: &dyn Fn() -> &'a str| {
            let is_port = matches!(name, b"--dport" | b"--destination-port");
            let slot = match (module, name) {
                _ if is_port => &mut port,
                (None, b"-d" | b"--destination") => &mut destination,
                (None, b"-p" | b"--protocol") => &mut protocol,
                _ => {
                    if module != Some(b"comment") {
                        only_key = false;
                    }
                    return;
                }
            };
            if negated && module != Some(b"comment") {
                only_key = false;
            }
            if slot.is_none() {
                *slot = Some((negated, arg()));
            }
        };
    let known_module = |module: Option<&[u8]>| {
        matches!(module, None | Some(b"comment" | b"tcp" | b"udp" | b"sctp"))
    };
    let mut modules_known = true;
    match shaped {
        // One option to a match: each option's module is its match's.
        Some([d, d_arg, p, p_arg, m3, o3, a3, m4, o4, a4, _]) => {
            for (module, option, arg) in [
                (None, d, d_arg),
                (None, p, p_arg),
                (Some(m3), o3, a3),
                (Some(m4), o4, a4),
            ] {
                let module = module.map(|m| word_bytes(rule, &m));
                modules_known &= known_module(module);
                take(module, word_bytes(rule, &option), option.negated(), &|| {
                    rule.token_text(&arg)
                });
            }
        }
        None => {
            for m in rule.matches() {
                let module = m.module().map(str::as_bytes);
                modules_known &= known_module(module);
                for o in m.options() {
                    take(module, o.name().as_bytes(), o.negated(), &|| {
                        o.args().next().unwrap_or("")
                    });
                }
            }
        }
    }
    let only_key = only_key && modules_known;
    let key = (|| {
        let address = destination
            .filter(|&(negated, _)| !negated)
            .and_then(|(_, text)| rulelint_parser::views::parse_address(text).ok())?;
        let protocol = protocol_number(protocol.filter(|&(negated, _)| !negated)?.1)?;
        let port = port.filter(|&(negated, _)| !negated)?.1;
        Some((address, protocol, port_range(port)?))
    })();
    (key, only_key)
}
