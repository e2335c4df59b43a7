//! Typed views of what analysis needs from a rule: addresses, protocol, ports, interfaces, mark,
//! probability, comment, NAT targets, conntrack state, address type and set matches.
//!
//! Views are computed on demand from the rule's tokens; the parser stores only spans.

use crate::model::{RuleRef, TokenKind};
use ipnet::{IpNet, Ipv4Net};
use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A value that may be negated with `!`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negatable<T> {
    /// `!` was written.
    pub negated: bool,
    /// The value.
    pub value: T,
}

/// Why an address did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddressError {
    /// Looks like a host name (iptables-restore would resolve it); not an error in itself.
    #[error("a host name, not an address")]
    Hostname,
    /// The address part is not an IPv4 or IPv6 address.
    #[error("not an IPv4 or IPv6 address")]
    BadAddress,
    /// The prefix length is too long for the family, or the netmask is not contiguous.
    #[error("the prefix or netmask is not valid for this address")]
    BadPrefix,
}

/// Why a NAT destination or source did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NatError {
    /// The value is empty.
    #[error("no address")]
    Empty,
    /// The address part is not an address or address range.
    #[error("`{0}` is not an address")]
    BadAddress(String),
    /// The port part is not a port or port range from 1 to 65535.
    #[error("`{0}` is not a port or port range")]
    BadPort(String),
}

/// Parses `-s`/`-d` values: `10.0.0.1`, `10.0.0.0/8`, `10.0.0.0/255.0.0.0`, `fd00::/64`.
pub fn parse_address(text: &str) -> Result<IpNet, AddressError> {
    match parse_ipv4_fast(text.as_bytes()) {
        Some(net) => Ok(net),
        None => parse_address_general(text),
    }
}

/// [`parse_address`] for any address: the standard library's parsers.
fn parse_address_general(text: &str) -> Result<IpNet, AddressError> {
    let (addr, prefix) = match text.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (text, None),
    };
    let ip: IpAddr = match addr.parse() {
        Ok(ip) => ip,
        Err(_) => {
            let numeric = addr.bytes().all(|b| b.is_ascii_digit() || b == b'.');
            let hostname = !numeric
                && !addr.contains(':')
                && !addr.is_empty()
                && addr
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
            return Err(if hostname {
                AddressError::Hostname
            } else {
                AddressError::BadAddress
            });
        }
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let prefix_len = match prefix {
        None => max,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse::<u8>().map_err(|_| AddressError::BadPrefix)?
        }
        Some(p) => netmask_len(p, ip.is_ipv4()).ok_or(AddressError::BadPrefix)?,
    };
    IpNet::new(ip, prefix_len).map_err(|_| AddressError::BadPrefix)
}

/// `a.b.c.d[/n]` without allocation or UTF-8 work: most addresses in a dump. `None` sends the
/// text to the general parser (which also produces the error, if any).
fn parse_ipv4_fast(b: &[u8]) -> Option<IpNet> {
    let mut octets = [0u8; 4];
    let mut rest = b;
    for (k, octet) in octets.iter_mut().enumerate() {
        if k > 0 {
            rest = rest.strip_prefix(b".")?;
        }
        let (value, after) = decimal_octet(rest)?;
        *octet = value;
        rest = after;
    }
    let prefix = match rest {
        [] => 32,
        [b'/', d @ b'0'..=b'9'] => d - b'0',
        [b'/', d1 @ b'0'..=b'9', d2 @ b'0'..=b'9'] => (d1 - b'0') * 10 + (d2 - b'0'),
        _ => return None,
    };
    Ipv4Net::new(Ipv4Addr::from(octets), prefix)
        .ok()
        .map(IpNet::V4)
}

/// An octet of 1 to 3 decimal digits at the start of `b`, and the bytes after it. A leading
/// zero (`010`) or a value over 255 gives `None`, as does a fourth digit: such text is left to
/// the strict parser.
#[inline]
fn decimal_octet(b: &[u8]) -> Option<(u8, &[u8])> {
    let digit = |d: u8| u16::from(d - b'0');
    let (value, rest) = match b {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9', rest @ ..] => {
            (digit(*a) * 100 + digit(*b) * 10 + digit(*c), rest)
        }
        [a @ b'1'..=b'9', b @ b'0'..=b'9', rest @ ..] => (digit(*a) * 10 + digit(*b), rest),
        [a @ b'0'..=b'9', rest @ ..] => (digit(*a), rest),
        _ => return None,
    };
    if rest.first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    Some((u8::try_from(value).ok()?, rest))
}

/// Prefix length of a dotted (or IPv6) netmask, if it is contiguous.
fn netmask_len(mask: &str, v4: bool) -> Option<u8> {
    let bits: u128 = if v4 {
        u128::from(u32::from(mask.parse::<Ipv4Addr>().ok()?)) << 96
    } else {
        u128::from(mask.parse::<Ipv6Addr>().ok()?)
    };
    let ones = bits.leading_ones();
    (bits.checked_shl(ones).unwrap_or(0) == 0).then_some(ones as u8)
}

/// A port or inclusive port range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRange {
    /// First port.
    pub first: u16,
    /// Last port (equal to `first` for one port).
    pub last: u16,
}

impl PortRange {
    /// Parses `80`, `8000:8100` (iptables) or `8000-8100` (NAT targets).
    pub fn parse(text: &str) -> Option<PortRange> {
        let (a, b) = text
            .split_once(':')
            .or_else(|| text.split_once('-'))
            .unwrap_or((text, text));
        let first = if a.is_empty() { 0 } else { a.parse().ok()? };
        let last = if b.is_empty() {
            u16::MAX
        } else {
            b.parse().ok()?
        };
        (first <= last).then_some(PortRange { first, last })
    }
}

/// A mark and mask: `0x4000/0x4000`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mark {
    /// The value.
    pub value: u32,
    /// The mask (`0xffffffff` when none was written).
    pub mask: u32,
}

impl Mark {
    /// Parses `0x4000/0x4000`, `0x4000` or decimal forms.
    pub fn parse(text: &str) -> Option<Mark> {
        let (v, m) = text.split_once('/').unwrap_or((text, "0xffffffff"));
        Some(Mark {
            value: parse_u32(v)?,
            mask: parse_u32(m)?,
        })
    }
}

fn parse_u32(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The parts of a DNAT `--to-destination` or SNAT `--to-source` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NatAddress {
    /// First address of the range; `None` for a port-only value such as `:8080`.
    pub first: Option<IpAddr>,
    /// Last address of the range (equal to `first` for one address).
    pub last: Option<IpAddr>,
    /// Port or port range, if given.
    pub ports: Option<PortRange>,
}

impl NatAddress {
    /// Parses `10.0.0.1`, `10.0.0.1:80`, `10.0.0.1-10.0.0.9:80-90`, `[fd00::1]:80`, `fd00::1`.
    pub fn parse(text: &str) -> Result<NatAddress, NatError> {
        if text.is_empty() {
            return Err(NatError::Empty);
        }
        let (addr_part, port_part) = if let Some(rest) = text.strip_prefix('[') {
            let (a, after) = rest
                .split_once(']')
                .ok_or_else(|| NatError::BadAddress(text.to_string()))?;
            (a, after.strip_prefix(':'))
        } else if text.matches(':').count() > 1 {
            (text, None)
        } else {
            match text.split_once(':') {
                Some((a, p)) => (a, Some(p)),
                None => (text, None),
            }
        };
        let (first, last) = if addr_part.is_empty() {
            (None, None)
        } else {
            let (a, b) = addr_part.split_once('-').unwrap_or((addr_part, addr_part));
            let a: IpAddr = a
                .parse()
                .map_err(|_| NatError::BadAddress(addr_part.to_string()))?;
            let b: IpAddr = b
                .parse()
                .map_err(|_| NatError::BadAddress(addr_part.to_string()))?;
            (Some(a), Some(b))
        };
        let ports = match port_part {
            None => None,
            Some(p) => Some(
                PortRange::parse(p)
                    .filter(|r| r.first > 0)
                    .ok_or_else(|| NatError::BadPort(p.to_string()))?,
            ),
        };
        Ok(NatAddress { first, last, ports })
    }
}

/// An ipset match: `-m set [!] --match-set NAME dst,dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetMatch<'a> {
    /// Negated with `!`.
    pub negated: bool,
    /// The set's name.
    pub name: &'a str,
    /// The direction flags (`src`, `dst,dst`).
    pub flags: &'a str,
}

/// Removes the quotes and `\"` / `\\` escapes of a quoted argument; other text is returned as is.
pub fn unquote(text: &str) -> Cow<'_, str> {
    if !text.contains('"') {
        return Cow::Borrowed(text);
    }
    // The common case, `"ns/svc:port cluster IP"`: one quoted word without escapes, borrowed.
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
        && !inner.contains(['"', '\\'])
    {
        return Cow::Borrowed(inner);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {}
            '\\' => match chars.next() {
                Some(n @ ('"' | '\\')) => out.push(n),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            },
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

impl<'r, 'a> RuleRef<'r, 'a> {
    /// The first argument of the option `name` (as written) in the match of `module`
    /// (`None` for basic options), with its negation.
    pub fn option(&self, module: Option<&str>, names: &[&str]) -> Option<Negatable<&'a str>> {
        self.matches()
            .filter(|m| m.module() == module)
            .flat_map(|m| m.options())
            .find(|o| names.contains(&o.name()))
            .map(|o| Negatable {
                negated: o.negated(),
                value: o.args().next().unwrap_or(""),
            })
    }

    /// The first argument of option `name` in any module's match (e.g. `--dport` in `tcp` or
    /// `udp`), with its negation.
    pub fn module_option(&self, names: &[&str]) -> Option<Negatable<&'a str>> {
        self.matches()
            .filter(|m| m.module().is_some())
            .flat_map(|m| m.options())
            .find(|o| names.contains(&o.name()))
            .map(|o| Negatable {
                negated: o.negated(),
                value: o.args().next().unwrap_or(""),
            })
    }

    /// `-s` as a network (`None` when absent or unparsable).
    pub fn source(&self) -> Option<Negatable<IpNet>> {
        self.address(&["-s", "--source"])
    }

    /// `-d` as a network (`None` when absent or unparsable).
    pub fn destination(&self) -> Option<Negatable<IpNet>> {
        self.address(&["-d", "--destination"])
    }

    fn address(&self, names: &[&str]) -> Option<Negatable<IpNet>> {
        let o = self.option(None, names)?;
        Some(Negatable {
            negated: o.negated,
            value: parse_address(o.value).ok()?,
        })
    }

    /// `-p` as written (`tcp`, `udp`, `6`).
    pub fn protocol(&self) -> Option<Negatable<&'a str>> {
        self.option(None, &["-p", "--protocol"])
    }

    /// `-i` as written.
    pub fn in_interface(&self) -> Option<Negatable<&'a str>> {
        self.option(None, &["-i", "--in-interface"])
    }

    /// `-o` as written.
    pub fn out_interface(&self) -> Option<Negatable<&'a str>> {
        self.option(None, &["-o", "--out-interface"])
    }

    /// Destination ports from `--dport`/`--destination-port` or multiport `--dports`.
    pub fn destination_ports(&self) -> Option<Negatable<Vec<PortRange>>> {
        self.ports(&[
            "--dport",
            "--destination-port",
            "--dports",
            "--destination-ports",
            "--ports",
        ])
    }

    /// Source ports from `--sport`/`--source-port` or multiport `--sports`.
    pub fn source_ports(&self) -> Option<Negatable<Vec<PortRange>>> {
        self.ports(&["--sport", "--source-port", "--sports", "--source-ports"])
    }

    fn ports(&self, names: &[&str]) -> Option<Negatable<Vec<PortRange>>> {
        let o = self.module_option(names)?;
        let ports = o
            .value
            .split(',')
            .map(PortRange::parse)
            .collect::<Option<Vec<_>>>()?;
        Some(Negatable {
            negated: o.negated,
            value: ports,
        })
    }

    /// `-m mark --mark VALUE/MASK`.
    pub fn mark(&self) -> Option<Negatable<Mark>> {
        let o = self.option(Some("mark"), &["--mark"])?;
        Some(Negatable {
            negated: o.negated,
            value: Mark::parse(o.value)?,
        })
    }

    /// `-m statistic --mode random --probability P`.
    pub fn probability(&self) -> Option<f64> {
        self.option(Some("statistic"), &["--probability"])?
            .value
            .parse()
            .ok()
    }

    /// The `--probability` argument as written (kube-proxy writes 11 decimals).
    pub fn probability_text(&self) -> Option<&'a str> {
        self.option(Some("statistic"), &["--probability"])
            .map(|o| o.value)
    }

    /// `-m comment --comment TEXT`, unquoted.
    pub fn comment(&self) -> Option<Cow<'a, str>> {
        self.option(Some("comment"), &["--comment"])
            .map(|o| unquote(o.value))
    }

    /// `-m conntrack --ctstate` or `-m state --state`, split at commas.
    pub fn ctstate(&self) -> Option<Negatable<Vec<&'a str>>> {
        let o = self
            .option(Some("conntrack"), &["--ctstate"])
            .or_else(|| self.option(Some("state"), &["--state"]))?;
        Some(Negatable {
            negated: o.negated,
            value: o.value.split(',').collect(),
        })
    }

    /// `-m addrtype --dst-type TYPE`.
    pub fn dst_type(&self) -> Option<Negatable<&'a str>> {
        self.option(Some("addrtype"), &["--dst-type"])
    }

    /// `-m addrtype --src-type TYPE`.
    pub fn src_type(&self) -> Option<Negatable<&'a str>> {
        self.option(Some("addrtype"), &["--src-type"])
    }

    /// `-m set --match-set NAME FLAGS` matches.
    pub fn set_matches(&self) -> Vec<SetMatch<'a>> {
        self.matches()
            .filter(|m| m.module() == Some("set"))
            .flat_map(|m| m.options())
            .filter(|o| o.name() == "--match-set" || o.name() == "--set")
            .map(|o| {
                let mut args = o.args();
                SetMatch {
                    negated: o.negated(),
                    name: args.next().unwrap_or(""),
                    flags: args.next().unwrap_or(""),
                }
            })
            .collect()
    }

    /// DNAT's `--to-destination` as written.
    pub fn dnat_destination(&self) -> Option<&'a str> {
        let target = self.target()?;
        (target.name() == "DNAT").then(|| target.option_arg("--to-destination"))?
    }

    /// SNAT's `--to-source` as written.
    pub fn snat_source(&self) -> Option<&'a str> {
        let target = self.target()?;
        (target.name() == "SNAT").then(|| target.option_arg("--to-source"))?
    }

    /// True when the rule holds an `[unsupported revision]` marker.
    pub fn has_unsupported_revision(&self) -> bool {
        self.tokens()
            .iter()
            .any(|t| t.kind() == TokenKind::Unsupported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipnet::Ipv6Net;

    /// An IPv4 network.
    fn v4(text: &str) -> IpNet {
        IpNet::V4(text.parse::<Ipv4Net>().expect("test network"))
    }

    /// An IPv6 network.
    fn v6(text: &str) -> IpNet {
        IpNet::V6(text.parse::<Ipv6Net>().expect("test network"))
    }

    #[test]
    fn addresses() {
        assert_eq!(parse_address("10.0.0.0/8"), Ok(v4("10.0.0.0/8")));
        assert_eq!(parse_address("10.1.2.3"), Ok(v4("10.1.2.3/32")));
        assert_eq!(parse_address("10.0.0.0/255.255.0.0"), Ok(v4("10.0.0.0/16")));
        assert_eq!(parse_address("fd00::/64"), Ok(v6("fd00::/64")));
        assert_eq!(parse_address("10.0.0.300/8"), Err(AddressError::BadAddress));
        assert_eq!(parse_address("10.1.2.3/33"), Err(AddressError::BadPrefix));
        assert_eq!(
            parse_address("10.0.0.0/255.0.255.0"),
            Err(AddressError::BadPrefix)
        );
        assert_eq!(parse_address("fd00::zz/64"), Err(AddressError::BadAddress));
        assert_eq!(parse_address("localhost"), Err(AddressError::Hostname));
    }

    #[test]
    fn the_ipv4_fast_path_agrees_with_the_general_parser() {
        for text in [
            "0.0.0.0/0",
            "255.255.255.255",
            "10.96.0.10/32",
            "1.2.3.4/08",
            "256.1.1.1",
            "01.2.3.4",
            "1.2.3.4/",
            "1.2.3.4/33",
            "1.2.3.4/123",
            "1.2.3",
            "1.2.3.4.5",
            "1..3.4",
            "1234.1.1.1",
        ] {
            if let Some(fast) = parse_ipv4_fast(text.as_bytes()) {
                assert_eq!(Ok(fast), parse_address_general(text), "{text}");
            }
        }
        assert!(parse_ipv4_fast(b"10.96.0.10/32").is_some());
    }

    proptest::proptest! {
        #[test]
        fn the_ipv4_fast_path_agrees_on_any_text(
            text in "[0-9./]{0,18}|([0-9]{1,4}\\.){3}[0-9]{1,4}(/[0-9]{0,3})?",
        ) {
            if let Some(fast) = parse_ipv4_fast(text.as_bytes()) {
                proptest::prop_assert_eq!(Ok(fast), parse_address_general(&text));
            }
        }
    }

    #[test]
    fn nat_addresses() {
        let n = NatAddress::parse("10.244.1.5:8080").unwrap();
        assert_eq!(n.first, Some("10.244.1.5".parse().unwrap()));
        assert_eq!(
            n.ports,
            Some(PortRange {
                first: 8080,
                last: 8080
            })
        );
        let n = NatAddress::parse("[fd00::5]:80").unwrap();
        assert_eq!(n.first, Some("fd00::5".parse().unwrap()));
        let n = NatAddress::parse("fd00::5").unwrap();
        assert_eq!(n.ports, None);
        let n = NatAddress::parse("10.0.0.1-10.0.0.9:80-90").unwrap();
        assert_eq!(n.last, Some("10.0.0.9".parse().unwrap()));
        assert_eq!(
            n.ports,
            Some(PortRange {
                first: 80,
                last: 90
            })
        );
        assert_eq!(NatAddress::parse(":0"), Err(NatError::BadPort("0".into())));
        assert!(NatAddress::parse("").is_err());
        assert!(NatAddress::parse("10.0.0:80").is_err());
    }

    #[test]
    fn marks_ports_unquote() {
        assert_eq!(
            Mark::parse("0x8000/0x8000"),
            Some(Mark {
                value: 0x8000,
                mask: 0x8000
            })
        );
        assert_eq!(
            Mark::parse("0x1"),
            Some(Mark {
                value: 1,
                mask: u32::MAX
            })
        );
        assert_eq!(
            PortRange::parse("8000:8100"),
            Some(PortRange {
                first: 8000,
                last: 8100
            })
        );
        assert_eq!(PortRange::parse("9:1"), None);
        assert_eq!(unquote(r#""a \"b\" \\ c""#), r#"a "b" \ c"#);
        assert_eq!(unquote("plain"), "plain");
    }
}
