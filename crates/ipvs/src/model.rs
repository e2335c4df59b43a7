//! What was read: virtual servers with their real servers (`ipvsadm`), ipsets with their members
//! (`ipset`), interfaces with their addresses (`ip addr`), and which of these outputs the text
//! held. Every item keeps its byte span in the text it was read from.

use ipnet::IpNet;
use rulelint_parser::Span;
use std::net::IpAddr;

/// The protocol of a virtual server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// `TCP`, `-t`.
    Tcp,
    /// `UDP`, `-u`.
    Udp,
    /// `SCTP`, `--sctp-service`.
    Sctp,
}

impl Protocol {
    /// The lowercase name ipset and Kubernetes use (`tcp`).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }

    /// From ipset's or Kubernetes' lowercase name.
    pub fn from_lowercase(name: &str) -> Option<Protocol> {
        match name {
            "tcp" => Some(Protocol::Tcp),
            "udp" => Some(Protocol::Udp),
            "sctp" => Some(Protocol::Sctp),
            _ => None,
        }
    }
}

/// An `address:port` as ipvsadm printed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostPort<'a> {
    /// As written (`10.96.0.1:443`, `[fd00::1]:443`, `ip-10-0-62-121.ec2.internal:`).
    pub text: &'a str,
    /// The address, when it is numeric (`ipvsadm -n`); `None` for a resolved host name.
    pub address: Option<IpAddr>,
    /// The port, when it is numeric; `None` for a service name (`http`) or a cut one.
    pub port: Option<u16>,
}

impl HostPort<'_> {
    /// Both address and port are numeric.
    pub fn is_numeric(&self) -> bool {
        self.address.is_some() && self.port.is_some()
    }
}

/// How IPVS forwards to a real server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forward {
    /// `Masq`, `-m`: NAT, what kube-proxy uses.
    Masq,
    /// `Route`, `-g`: direct routing.
    Route,
    /// `Tunnel`, `-i`: IP-in-IP.
    Tunnel,
    /// `Local`: the real server is this host.
    Local,
    /// Not shown (`--stats`, `--rate`) or another word.
    Unknown,
}

/// One real server (destination) of a virtual server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealServer<'a> {
    /// Its address and port.
    pub target: HostPort<'a>,
    /// How packets reach it.
    pub forward: Forward,
    /// Its weight (`None` when the listing does not show it: `--stats`, `--rate`).
    pub weight: Option<i64>,
    /// Active connections, when shown.
    pub active_connections: Option<u64>,
    /// Inactive connections, when shown.
    pub inactive_connections: Option<u64>,
    /// Its line.
    pub span: Span,
}

/// One IPVS virtual server (service) and its real servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualServer<'a> {
    /// Its protocol; `None` for a firewall-mark service (`FWM  1`, `-f 1`).
    pub protocol: Option<Protocol>,
    /// Its address and port (for a firewall-mark service, the mark as text, no address).
    pub target: HostPort<'a>,
    /// The scheduler (`rr`, `wrr`, `lc`, `sh`, `mh`, ...), when shown.
    pub scheduler: Option<&'a str>,
    /// Scheduler flags as written (`flag-1,flag-2`), when shown.
    pub scheduler_flags: Option<&'a str>,
    /// `persistent T`, `-p T`: ClientIP session affinity, seconds.
    pub persistent_seconds: Option<u32>,
    /// `mask M`, `-M M`.
    pub persistence_mask: Option<&'a str>,
    /// Its real servers, in the order listed.
    pub real_servers: Vec<RealServer<'a>>,
    /// Its line.
    pub span: Span,
}

impl VirtualServer<'_> {
    /// The `(address, protocol, port)` key, when all three are known.
    pub fn key(&self) -> Option<(IpAddr, Protocol, u16)> {
        Some((self.target.address?, self.protocol?, self.target.port?))
    }
}

/// One member of an ipset, as far as it was understood: `ip`, `ip,proto:port`,
/// `ip,proto:port,ip`, `ip,proto:port,net` or a bare port (`bitmap:port`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetMember<'a> {
    /// The member as written (first word of its line).
    pub text: &'a str,
    /// The first address or network.
    pub address: Option<IpNet>,
    /// The protocol of `proto:port` (`tcp` when a port has no protocol).
    pub protocol: Option<Protocol>,
    /// The port.
    pub port: Option<u16>,
    /// The third part: an address (`hash:ip,port,ip`) or network (`hash:ip,port,net`).
    pub other: Option<IpNet>,
    /// Its line.
    pub span: Span,
}

/// The address family of an ipset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetFamily {
    /// `family inet`.
    Inet,
    /// `family inet6`.
    Inet6,
}

/// One ipset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpSet<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its type (`hash:ip,port`, `bitmap:port`, ...); `None` when only `add` lines showed it.
    pub set_type: Option<&'a str>,
    /// Its family, when the header shows one.
    pub family: Option<SetFamily>,
    /// `References: N` (`ipset list` only).
    pub references: Option<u64>,
    /// `Number of entries: N` (`ipset list` only).
    pub declared_entries: Option<u64>,
    /// The words after the type on its `create` line, or its `Header:` value (`family inet
    /// hashsize 1024 ...`, `range 0-65535`, `... timeout 300`); empty when neither was read.
    pub header: &'a str,
    /// The members read.
    pub members: Vec<SetMember<'a>>,
    /// Member lines that were not understood (skipped, each with a diagnostic): the members
    /// read are not all there are.
    pub unread_members: u32,
    /// Some member line has words after the member (`nomatch`, `timeout N`, counters,
    /// `comment`): what such an entry matches is not read.
    pub member_options: bool,
    /// All its members were read: its header was read and no more members were declared than
    /// listed. Checks that look for a missing member skip incomplete sets.
    pub complete: bool,
    /// Its `create` or `Name:` line (the first `add` line when neither was read).
    pub span: Span,
}

/// One network interface of `ip addr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface<'a> {
    /// Its name (`kube-ipvs0`, `eth0`, `cni0`), without `@peer`.
    pub name: &'a str,
    /// Its addresses with their lines.
    pub addresses: Vec<(IpNet, Span)>,
    /// All its addresses were read (false when the text ended inside its last address line).
    pub complete: bool,
    /// Its header line (the first address line for `ip -o addr`).
    pub span: Span,
}

/// Which outputs the text held: the first line of each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    /// `ipvsadm -Ln`, its variants, or `ipvsadm-save`.
    pub ipvsadm: Option<Span>,
    /// The first virtual or real server whose address or port was a name (`ipvsadm -L`
    /// without `-n`).
    pub names_resolved: Option<Span>,
    /// `ipset save` or `ipset list`.
    pub ipset: Option<Span>,
    /// `ip addr`.
    pub ip_addr: Option<Span>,
    /// The last line of the text, when it ended without a newline inside a virtual server,
    /// real server, member or address line: cut, so not read.
    pub cut_line: Option<Span>,
    /// The ipvsadm listing lost its last line ([`Outputs::cut_line`]): checks that conclude
    /// from a missing virtual or real server skip it.
    pub ipvsadm_cut: bool,
}

/// The kube-proxy IPVS-mode state read from a text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ipvs<'a> {
    /// Virtual servers, in the order listed.
    pub virtual_servers: Vec<VirtualServer<'a>>,
    /// ipsets, in the order listed.
    pub sets: Vec<IpSet<'a>>,
    /// Interfaces, in the order listed.
    pub interfaces: Vec<Interface<'a>>,
    /// Which outputs were read.
    pub outputs: Outputs,
}

impl<'a> Ipvs<'a> {
    /// An ipset by name.
    pub fn set(&self, name: &str) -> Option<&IpSet<'a>> {
        self.sets.iter().find(|s| s.name == name)
    }

    /// An interface by name.
    pub fn interface(&self, name: &str) -> Option<&Interface<'a>> {
        self.interfaces.iter().find(|i| i.name == name)
    }

    /// Nothing was read.
    pub fn is_empty(&self) -> bool {
        self.virtual_servers.is_empty() && self.sets.is_empty() && self.interfaces.is_empty()
    }

    /// Every span moved by `offset` bytes (a section read on its own, placed in its file).
    pub fn shift(&mut self, offset: usize) {
        let s = |span: &mut Span| {
            *span = Span::new(span.start as usize + offset, span.end as usize + offset);
        };
        for vs in &mut self.virtual_servers {
            s(&mut vs.span);
            for rs in &mut vs.real_servers {
                s(&mut rs.span);
            }
        }
        for set in &mut self.sets {
            s(&mut set.span);
            for m in &mut set.members {
                s(&mut m.span);
            }
        }
        for i in &mut self.interfaces {
            s(&mut i.span);
            for (_, span) in &mut i.addresses {
                s(span);
            }
        }
        let o = &mut self.outputs;
        for span in [
            &mut o.ipvsadm,
            &mut o.names_resolved,
            &mut o.ipset,
            &mut o.ip_addr,
            &mut o.cut_line,
        ]
        .into_iter()
        .flatten()
        {
            s(span);
        }
    }

    /// Appends what another section read (its spans already shifted). Sets of the same name
    /// are joined (an `ipset save` cut in two by other output).
    pub fn extend(&mut self, other: Ipvs<'a>) {
        self.virtual_servers.extend(other.virtual_servers);
        for set in other.sets {
            match self.sets.iter_mut().find(|s| s.name == set.name) {
                Some(mine) => {
                    mine.members.extend(set.members);
                    mine.complete &= set.complete;
                    mine.unread_members += set.unread_members;
                    mine.member_options |= set.member_options;
                    if mine.header.is_empty() {
                        mine.header = set.header;
                    }
                    mine.set_type = mine.set_type.or(set.set_type);
                    mine.family = mine.family.or(set.family);
                }
                None => self.sets.push(set),
            }
        }
        self.interfaces.extend(other.interfaces);
        let (o, n) = (&mut self.outputs, other.outputs);
        o.ipvsadm = o.ipvsadm.or(n.ipvsadm);
        o.names_resolved = o.names_resolved.or(n.names_resolved);
        o.ipset = o.ipset.or(n.ipset);
        o.ip_addr = o.ip_addr.or(n.ip_addr);
        o.cut_line = o.cut_line.or(n.cut_line);
        o.ipvsadm_cut |= n.ipvsadm_cut;
    }
}
