//! The key `RL409 cluster-ip-conflict` reads from each dispatch rule of nat `KUBE-SERVICES`:
//! its destination address, protocol and port, and whether it matches nothing else. The model
//! reads it of the rules of kube-proxy's shape in the same pass over their words as their
//! Services' addresses (`DispatchFacts::dispatch_key`, `KubeModel::dispatch_keys`): RL409
//! reading the chain's rules a second time cost about 1,400 instructions a rule.

use super::{port_range, word_bytes};
use ipnet::{IpNet, Ipv4Net};
use rulelint_parser::views::PortRange;
use rulelint_parser::{ChainId, RuleId, RuleRef, Token};
use std::net::Ipv4Addr;

/// Destination address, protocol (by number) and port of a dispatch rule.
pub(crate) type DispatchKey = (IpNet, u16, PortRange);

/// What RL409 reads of one rule: its [`DispatchKey`] (`None`: not one it can read), and whether
/// the rule matches nothing but the key (and comments).
pub(crate) type KeyRead = (Option<DispatchKey>, bool);

/// The keys of the rules of nat `KUBE-SERVICES` (the chain `chain`) that the model read, have
/// kube-proxy's shape and jump (not go) to a Service chain, in rule order
/// (`RuleId`, ascending); each as [`read_dispatch_key`] reads it (pinned by a test), packed in
/// 16 bytes ([`PackedKeyRead`]): a key that does not pack (IPv6) is left to the lint.
#[derive(Clone, Debug, Default)]
pub(crate) struct DispatchKeys {
    pub(crate) chain: Option<ChainId>,
    keys: Vec<PackedKeyRead>,
}

/// A [`KeyRead`] with an IPv4 address and a protocol number below 256, in 16 bytes: the
/// model keeps one a dispatch rule while the lints run, and a `KeyRead` and its rule took 32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PackedKeyRead {
    rule: RuleId,
    address: Ipv4Addr,
    first_port: u16,
    last_port: u16,
    protocol: u8,
    prefix: u8,
    flags: u8,
}

impl PackedKeyRead {
    const HAS_KEY: u8 = 1;
    const ONLY_KEY: u8 = 2;

    /// `read` packed, when it packs back to itself.
    fn pack(rule: RuleId, read: KeyRead) -> Option<PackedKeyRead> {
        let (key, only_key) = read;
        let mut packed = PackedKeyRead {
            rule,
            address: Ipv4Addr::UNSPECIFIED,
            first_port: 0,
            last_port: 0,
            protocol: 0,
            prefix: 0,
            flags: if only_key { Self::ONLY_KEY } else { 0 },
        };
        if let Some((address, protocol, port)) = key {
            let IpNet::V4(address) = address else {
                return None;
            };
            packed.address = address.addr();
            packed.prefix = address.prefix_len();
            packed.protocol = u8::try_from(protocol).ok()?;
            packed.first_port = port.first;
            packed.last_port = port.last;
            packed.flags |= Self::HAS_KEY;
        }
        (packed.unpack() == Some(read)).then_some(packed)
    }

    fn unpack(self) -> Option<KeyRead> {
        let key = if self.flags & Self::HAS_KEY != 0 {
            let address = Ipv4Net::new(self.address, self.prefix).ok()?;
            Some((
                IpNet::V4(address),
                u16::from(self.protocol),
                PortRange {
                    first: self.first_port,
                    last: self.last_port,
                },
            ))
        } else {
            None
        };
        Some((key, self.flags & Self::ONLY_KEY != 0))
    }
}

impl DispatchKeys {
    /// Room for the keys of `count` rules of `chain`.
    pub(crate) fn for_chain(chain: ChainId, count: usize) -> DispatchKeys {
        DispatchKeys {
            chain: Some(chain),
            keys: Vec::with_capacity(count),
        }
    }

    /// Keeps `read` of `rule` (after the rules kept before it), when it packs.
    pub(crate) fn push(&mut self, rule: RuleId, read: KeyRead) {
        if let Some(packed) = PackedKeyRead::pack(rule, read) {
            self.keys.push(packed);
        }
    }

    /// Every kept key, in rule order (tests).
    #[cfg(test)]
    pub(crate) fn all(&self) -> impl Iterator<Item = (RuleId, KeyRead)> + '_ {
        self.keys
            .iter()
            .map(|k| (k.rule, k.unpack().expect("a packed key unpacks")))
    }

    /// The key read of `rule` when the model has it; `at` is where the previous search ended
    /// (rules come in order in the common case, so a search is one comparison).
    pub(crate) fn find(&self, rule: RuleId, at: &mut usize) -> Option<KeyRead> {
        let i = match self.keys.get(*at) {
            Some(k) if k.rule == rule => *at,
            Some(k) if k.rule > rule => return None,
            _ => self.keys.binary_search_by_key(&rule, |k| k.rule).ok()?,
        };
        *at = i + 1;
        self.keys[i].unpack()
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
