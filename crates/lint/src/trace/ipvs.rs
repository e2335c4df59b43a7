//! What a node's file says besides its iptables-save rules, as the trace reads it: the ipsets
//! (`ipset save` or `ipset list`), the interfaces' addresses (`ip addr`) and the IPVS virtual
//! servers (`ipvsadm -Ln`), read once by `rulelint-ipvs` ([`crate::ipvs::check::read_ipvs`],
//! the same reader the IPVS lints use).
//!
//! **Invariant:** a set match is decided only when the answer is exact: the set was read whole
//! (its header, every member line understood, no more entries declared than listed, the paste
//! not cut inside it; a set not read whole answers only "holds", by a member shown, and only
//! when its type has no network part), its type is one whose key is read here, the match's flags give each of
//! its dimensions, the packet is IPv4 and has the fields the key needs, and no entry carries an
//! option (`nomatch`, `timeout`) nor the header a `timeout` or `netmask`. Anything else stays a
//! question, and the walk forks as it did without the file's sets.

use super::eval::{Packet, SetContents};
use super::{IpvsServer, RealServerFact, SetFact};
use ipnet::IpNet;
use rulelint_ipvs::{Forward, IpSet, Ipvs, Protocol, SetFamily, SetMember};
use rustc_hash::FxHashMap;
use std::fmt::Write;
use std::net::IpAddr;
use std::sync::Mutex;

/// One dimension of a set's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dim {
    /// An address (`hash:ip`, the first part of `hash:ip,port`).
    Ip,
    /// A network holding the address (`hash:net`).
    Net,
    /// `proto:port`.
    Port,
}

/// The dimensions of the set types decided here, and which of them a bare port forms
/// (`bitmap:port`).
fn dimensions(set_type: &str) -> Option<&'static [Dim]> {
    use Dim::*;
    Some(match set_type {
        "hash:ip" => &[Ip],
        "hash:net" => &[Net],
        "hash:ip,port" => &[Ip, Port],
        "hash:net,port" => &[Net, Port],
        "hash:ip,port,ip" => &[Ip, Port, Ip],
        "hash:ip,port,net" => &[Ip, Port, Net],
        "bitmap:port" => &[Port],
        _ => return None,
    })
}

/// The packet's value for one dimension of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Address(IpAddr),
    Port(Protocol, u16),
}

/// The file's ipsets, addresses and virtual servers, for the walk.
#[derive(Debug)]
pub struct FileState<'a> {
    ipvs: Ipvs<'a>,
    /// Sets by name (the first of a name: `Ipvs::extend` joined the others into it).
    sets: FxHashMap<&'a str, usize>,
    /// Virtual servers by key (the first listed).
    virtual_servers: FxHashMap<(IpAddr, Protocol, u16), usize>,
    /// Answers given, by question: each reads every member of its set, and a walk asks the
    /// same one again at every rule that matches on the set (a chain of 20,000 such rules
    /// over a set of 200,000 members took 48 s before this).
    answers: Mutex<FxHashMap<Question, Option<SetFact>>>,
}

/// A set question: the set, the match's flags, and the packet fields a key can read
/// (protocol, source, source port, destination, destination port).
type Question = (
    usize,
    String,
    u8,
    Option<IpAddr>,
    Option<u16>,
    IpAddr,
    Option<u16>,
);

/// How many answers are kept before they are all dropped: a bound on memory whatever the walk.
const MAX_ANSWERS: usize = 1 << 16;

impl<'a> FileState<'a> {
    /// Indexes what `rulelint-ipvs` read from the file (spans into the file's text).
    pub fn new(ipvs: Ipvs<'a>) -> FileState<'a> {
        let mut sets = FxHashMap::default();
        for (i, s) in ipvs.sets.iter().enumerate() {
            sets.entry(s.name).or_insert(i);
        }
        let mut virtual_servers = FxHashMap::default();
        // A listing by name (`ipvsadm -L` without `-n`) is not matched by address.
        if ipvs.outputs.names_resolved.is_none() {
            for (i, vs) in ipvs.virtual_servers.iter().enumerate() {
                if let Some(key) = vs.key() {
                    virtual_servers.entry(key).or_insert(i);
                }
            }
        }
        FileState {
            ipvs,
            sets,
            virtual_servers,
            answers: Mutex::default(),
        }
    }

    /// The IPVS state read.
    pub fn ipvs(&self) -> &Ipvs<'a> {
        &self.ipvs
    }

    /// The file has `ip addr` output.
    pub fn has_ip_addr(&self) -> bool {
        self.ipvs.outputs.ip_addr.is_some()
    }

    /// The addresses of the interfaces `ip addr` showed, of the family of `v4`, each with its
    /// interface's name, in the order listed.
    pub fn addresses(&self, v4: bool) -> Vec<(IpNet, &'a str)> {
        self.ipvs
            .interfaces
            .iter()
            .flat_map(|i| i.addresses.iter().map(move |(n, _)| (*n, i.name)))
            .filter(|(n, _)| n.addr().is_ipv4() == v4)
            .collect()
    }

    /// `ip addr` lists every address of the family of `v4` the node has: the whole listing
    /// (it shows `lo`, which `ip addr` lists first), no interface cut short, and an address of
    /// that family (`ip -4 addr` lists no IPv6 one).
    pub fn lists_every_address(&self, v4: bool) -> bool {
        let interfaces = &self.ipvs.interfaces;
        self.has_ip_addr()
            && interfaces.iter().any(|i| i.name == "lo")
            && interfaces.iter().all(|i| i.complete)
            && interfaces
                .iter()
                .any(|i| i.addresses.iter().any(|(n, _)| n.addr().is_ipv4() == v4))
    }

    /// The virtual server a packet to `ip:port` of `protocol` reaches, as a fact to print;
    /// `None` when `ipvsadm` lists none at that address (or lists by name).
    pub fn virtual_server(&self, ip: IpAddr, protocol: u8, port: u16) -> Option<IpvsServer> {
        let protocol = match protocol {
            6 => Protocol::Tcp,
            17 => Protocol::Udp,
            132 => Protocol::Sctp,
            _ => return None,
        };
        let vs = &self.ipvs.virtual_servers[*self.virtual_servers.get(&(ip, protocol, port))?];
        let real_servers = vs
            .real_servers
            .iter()
            .map(|rs| RealServerFact {
                address: rs.target.text.to_string(),
                forward: match rs.forward {
                    Forward::Masq => "Masq",
                    Forward::Route => "Route",
                    Forward::Tunnel => "Tunnel",
                    Forward::Local => "Local",
                    Forward::Unknown => "unknown",
                },
                weight: rs.weight,
            })
            .collect();
        Some(IpvsServer {
            protocol: protocol.as_str().to_ascii_uppercase(),
            address: vs.target.text.to_string(),
            scheduler: vs.scheduler.map(str::to_string),
            persistent_seconds: vs.persistent_seconds,
            real_servers,
            offset: vs.span.start,
        })
    }

    /// Whether `set` holds the packet's key under `flags`: `None` unless exact (see the
    /// module's invariant).
    fn decide(&self, set: &IpSet<'a>, flags: &str, p: &Packet) -> Option<SetFact> {
        let set_type = set.set_type?;
        let dims = dimensions(set_type)?;
        if set.member_options {
            return None;
        }
        // A set not read whole (a cut listing, members not understood) answers only "holds",
        // and only where no entry hidden from the reader could say otherwise: no network part
        // (whose `nomatch` entries except addresses).
        let whole = set.complete && set.unread_members == 0;
        let nets = dims.contains(&Dim::Net);
        let header = set.header.split_ascii_whitespace();
        if header.clone().any(|w| matches!(w, "timeout" | "netmask")) {
            return None;
        }
        // Hash sets say their family; `bitmap:port` has none and reads IPv4 and IPv6 alike,
        // but only IPv4 is decided here.
        let family_ok = match set.family {
            Some(SetFamily::Inet) => true,
            None => set_type == "bitmap:port",
            Some(SetFamily::Inet6) => false,
        };
        if !family_ok || !p.dst.is_ipv4() {
            return None;
        }
        let flags: Vec<&str> = flags.split(',').collect();
        if flags.len() != dims.len() {
            return None;
        }
        let mut key = Vec::with_capacity(dims.len());
        for (dim, flag) in dims.iter().zip(&flags) {
            let src = match *flag {
                "src" => true,
                "dst" => false,
                _ => return None,
            };
            key.push(match dim {
                Dim::Ip | Dim::Net => Part::Address(if src { p.src? } else { p.dst }),
                Dim::Port => {
                    // `bitmap:port` reads TCP and UDP ports only; the hash sets' members here
                    // are tcp, udp or sctp (any other is an unread member).
                    let protocol = match (p.protocol, set_type) {
                        (6, _) => Protocol::Tcp,
                        (17, _) => Protocol::Udp,
                        (132, t) if t != "bitmap:port" => Protocol::Sctp,
                        _ => return None,
                    };
                    Part::Port(protocol, if src { p.sport? } else { p.dport? })
                }
            });
        }
        let mut found = None;
        for m in &set.members {
            match member_holds(m, dims, &key, set_type == "bitmap:port") {
                Some(true) => {
                    found = Some(m);
                    break;
                }
                Some(false) => {}
                // A member of another shape than the type's: not read exactly.
                None => return None,
            }
        }
        if !whole && (found.is_none() || nets) {
            return None;
        }
        Some(SetFact {
            set: set.name.to_string(),
            set_type: set_type.to_string(),
            key: key_text(&key),
            holds: found.is_some(),
            members: set.members.len(),
            offset: found.map_or(set.span.start, |m| m.span.start),
        })
    }
}

/// Whether member `m` is the packet's `key`: `None` when the member does not have the shape of
/// the set's type.
fn member_holds(m: &SetMember<'_>, dims: &[Dim], key: &[Part], bitmap: bool) -> Option<bool> {
    if bitmap {
        let (None, Some(port), [Part::Port(_, want)]) = (m.address, m.port, key) else {
            return None;
        };
        return Some(port == *want);
    }
    let host = |n: IpNet| (n.prefix_len() == n.max_prefix_len()).then(|| n.addr());
    let mut holds = true;
    for (i, (dim, part)) in dims.iter().zip(key).enumerate() {
        let address = match i {
            0 => m.address,
            2 => m.other,
            _ => None,
        };
        let this = match (dim, part) {
            (Dim::Ip, Part::Address(a)) => host(address?)? == *a,
            (Dim::Net, Part::Address(a)) => address?.contains(a),
            (Dim::Port, Part::Port(protocol, port)) => m.protocol? == *protocol && m.port? == *port,
            _ => return None,
        };
        holds &= this;
    }
    // A member with more parts than the type has.
    if dims.len() < 3 && m.other.is_some() || dims.len() < 2 && m.port.is_some() {
        return None;
    }
    Some(holds)
}

/// The key as ipset writes a member: `10.96.0.10,udp:53`, `30080`, `10.96.0.10`.
fn key_text(key: &[Part]) -> String {
    let mut s = String::new();
    for (i, part) in key.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        match part {
            Part::Address(a) => {
                let _ = write!(s, "{a}");
            }
            // `bitmap:port`: a bare port.
            Part::Port(_, port) if key.len() == 1 => {
                let _ = write!(s, "{port}");
            }
            Part::Port(protocol, port) => {
                let _ = write!(s, "{}:{port}", protocol.as_str());
            }
        }
    }
    s
}

impl SetContents for FileState<'_> {
    fn lookup(&self, name: &str, flags: &str, p: &Packet) -> Option<SetFact> {
        let index = *self.sets.get(name)?;
        let question = (
            index,
            flags.to_string(),
            p.protocol,
            p.src,
            p.sport,
            p.dst,
            p.dport,
        );
        // A poisoned lock only means another trace panicked: its answers are still right.
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(answer) = answers.get(&question) {
            return answer.clone();
        }
        let answer = self.decide(&self.ipvs.sets[index], flags, p);
        if answers.len() >= MAX_ANSWERS {
            answers.clear();
        }
        answers.insert(question, answer.clone());
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ConnState;

    fn state(text: &str) -> FileState<'_> {
        FileState::new(rulelint_ipvs::parse(text).ipvs)
    }

    fn packet(protocol: u8, src: &str, sport: Option<u16>, dst: &str, dport: u16) -> Packet {
        Packet {
            protocol,
            src: Some(src.parse().unwrap()),
            sport,
            dst: dst.parse().unwrap(),
            dport: Some(dport),
            in_interface: None,
            out_interface: None,
            mark: 0,
            state: ConnState::New,
            dnat: false,
            snat: false,
            untracked: false,
        }
    }

    /// `Some(holds)` when decided.
    fn holds(s: &FileState<'_>, set: &str, flags: &str, p: &Packet) -> Option<bool> {
        s.lookup(set, flags, p).map(|f| f.holds)
    }

    const SETS: &str = "create IP hash:ip family inet hashsize 1024 maxelem 65536
add IP 10.96.0.10
create NET hash:net family inet hashsize 1024 maxelem 65536
add NET 10.244.0.0/16
add NET 192.168.1.7
create IPPORT hash:ip,port family inet hashsize 1024 maxelem 65536
add IPPORT 10.96.0.10,udp:53
add IPPORT 10.96.0.10,tcp:53
add IPPORT 10.96.0.1,443
create NETPORT hash:net,port family inet hashsize 1024 maxelem 65536
add NETPORT 10.0.0.0/8,tcp:80
create LOOP hash:ip,port,ip family inet hashsize 1024 maxelem 65536
add LOOP 10.244.1.5,tcp:53,10.244.1.5
create SOURCES hash:ip,port,net family inet hashsize 1024 maxelem 65536
add SOURCES 203.0.113.10,tcp:443,198.51.100.0/24
create PORTS bitmap:port range 0-65535
add PORTS 30080
create V6 hash:ip family inet6 hashsize 1024 maxelem 65536
add V6 fd00::10
create TIMED hash:ip family inet hashsize 1024 maxelem 65536 timeout 300
add TIMED 10.96.0.10 timeout 120
create NOMATCH hash:net family inet hashsize 1024 maxelem 65536
add NOMATCH 10.0.0.0/8
add NOMATCH 10.1.0.0/16 nomatch
create MASKED hash:ip family inet hashsize 1024 maxelem 65536 netmask 24
add MASKED 10.96.0.0
create LIST list:set size 8
add LIST IP
create ODD hash:ip,port family inet hashsize 1024 maxelem 65536
add ODD 10.0.0.1,icmp:echo-request
add ODD 10.96.0.10,tcp:80
";

    #[test]
    fn each_type_read_exactly_is_decided() {
        let s = state(SETS);
        let p = packet(17, "10.244.1.5", Some(40000), "10.96.0.10", 53);
        assert_eq!(holds(&s, "IP", "dst", &p), Some(true));
        assert_eq!(holds(&s, "IP", "src", &p), Some(false));
        assert_eq!(holds(&s, "NET", "src", &p), Some(true));
        assert_eq!(holds(&s, "NET", "dst", &p), Some(false));
        assert_eq!(holds(&s, "IPPORT", "dst,dst", &p), Some(true));
        // The protocol is part of the key.
        let tcp = packet(6, "10.244.1.5", None, "10.96.0.10", 53);
        let other_port = packet(17, "10.244.1.5", None, "10.96.0.10", 54);
        assert_eq!(holds(&s, "IPPORT", "dst,dst", &tcp), Some(true));
        assert_eq!(holds(&s, "IPPORT", "dst,dst", &other_port), Some(false));
        // `10.96.0.1,443` is tcp:443.
        let api = packet(6, "10.244.1.5", None, "10.96.0.1", 443);
        assert_eq!(holds(&s, "IPPORT", "dst,dst", &api), Some(true));
        let web = packet(6, "10.1.2.3", None, "10.9.9.9", 80);
        assert_eq!(holds(&s, "NETPORT", "dst,dst", &web), Some(true));
        assert_eq!(holds(&s, "NETPORT", "src,dst", &web), Some(true));
        let hairpin = packet(6, "10.244.1.5", None, "10.244.1.5", 53);
        assert_eq!(holds(&s, "LOOP", "dst,dst,src", &hairpin), Some(true));
        let not_hairpin = packet(6, "10.244.1.6", None, "10.244.1.5", 53);
        assert_eq!(holds(&s, "LOOP", "dst,dst,src", &not_hairpin), Some(false));
        let lb = packet(6, "198.51.100.9", None, "203.0.113.10", 443);
        assert_eq!(holds(&s, "SOURCES", "dst,dst,src", &lb), Some(true));
        let outsider = packet(6, "198.51.101.9", None, "203.0.113.10", 443);
        assert_eq!(holds(&s, "SOURCES", "dst,dst,src", &outsider), Some(false));
        let nodeport = packet(6, "198.18.0.1", None, "192.168.56.11", 30080);
        assert_eq!(holds(&s, "PORTS", "dst", &nodeport), Some(true));
        let udp_nodeport = packet(17, "198.18.0.1", None, "192.168.56.11", 30081);
        assert_eq!(holds(&s, "PORTS", "dst", &udp_nodeport), Some(false));
        let fact = s.lookup("IPPORT", "dst,dst", &p).unwrap();
        assert_eq!(fact.key, "10.96.0.10,udp:53");
        assert_eq!(s.lookup("PORTS", "dst", &nodeport).unwrap().key, "30080");
    }

    /// Answers are kept by question: asking again gives the same answer, and a packet with
    /// another key, or another set or flags, is not given a kept answer that is not its own.
    #[test]
    fn kept_answers_are_each_questions_own() {
        let s = state(SETS);
        let member = packet(17, "10.244.1.5", Some(40000), "10.96.0.10", 53);
        let other = packet(17, "10.244.1.5", Some(40000), "10.96.0.11", 53);
        for _ in 0..2 {
            assert_eq!(holds(&s, "IP", "dst", &member), Some(true));
            assert_eq!(holds(&s, "IP", "dst", &other), Some(false));
            assert_eq!(holds(&s, "IP", "src", &member), Some(false));
            assert_eq!(holds(&s, "NET", "src", &member), Some(true));
            assert_eq!(holds(&s, "IPPORT", "dst,dst", &member), Some(true));
            let tcp = packet(6, "10.244.1.5", Some(40000), "10.96.0.10", 54);
            assert_eq!(holds(&s, "IPPORT", "dst,dst", &tcp), Some(false));
        }
    }

    #[test]
    fn what_is_not_read_exactly_stays_a_question() {
        let s = state(SETS);
        let p = packet(6, "10.244.1.5", None, "10.96.0.10", 80);
        // No such set, IPv6 sets, timeouts, nomatch entries, netmask, list:set.
        for set in ["ABSENT", "V6", "TIMED", "NOMATCH", "MASKED", "LIST"] {
            assert_eq!(holds(&s, set, "dst", &p), None, "{set}");
        }
        // An unread member (`icmp:echo-request`): a member shown answers "holds", no other.
        assert_eq!(holds(&s, "ODD", "dst,dst", &p), Some(true));
        let q = packet(6, "10.244.1.5", None, "10.96.0.10", 81);
        assert_eq!(holds(&s, "ODD", "dst,dst", &q), None);
        // Flags that do not give each dimension, or a field the packet does not have.
        assert_eq!(holds(&s, "IPPORT", "dst", &p), None);
        assert_eq!(holds(&s, "IPPORT", "dst,dst,dst", &p), None);
        assert_eq!(holds(&s, "IPPORT", "src,src", &p), None);
        // ICMP has no port; SCTP is not in a bitmap:port.
        let icmp = packet(1, "10.244.1.5", None, "10.96.0.10", 0);
        assert_eq!(holds(&s, "IPPORT", "dst,dst", &icmp), None);
        let sctp = packet(132, "10.244.1.5", None, "10.96.0.10", 30080);
        assert_eq!(holds(&s, "PORTS", "dst", &sctp), None);
        // An IPv6 packet.
        let v6 = Packet {
            dst: "fd00::10".parse().unwrap(),
            src: Some("fd00::1".parse().unwrap()),
            ..p.clone()
        };
        assert_eq!(holds(&s, "IP", "dst", &v6), None);
    }

    #[test]
    fn a_cut_listing_answers_only_what_it_shows() {
        let list = "Name: CUT
Type: hash:ip,port
Header: family inet hashsize 1024 maxelem 65536
Number of entries: 3
Members:
10.96.0.10,udp:53
10.96.0.10,tcp:53

Name: CUTNET
Type: hash:net
Header: family inet hashsize 1024 maxelem 65536
Number of entries: 2
Members:
10.0.0.0/8
";
        let s = state(list);
        let shown = packet(17, "10.244.1.5", None, "10.96.0.10", 53);
        let hidden = packet(6, "10.244.1.5", None, "10.96.0.10", 9153);
        assert_eq!(holds(&s, "CUT", "dst,dst", &shown), Some(true));
        assert_eq!(holds(&s, "CUT", "dst,dst", &hidden), None);
        // A hidden `nomatch` entry could except the address: no answer at all.
        assert_eq!(holds(&s, "CUTNET", "dst", &shown), None);
    }

    #[test]
    fn the_local_addresses_are_known_when_ip_addr_is_whole() {
        let whole = "1: lo: <LOOPBACK,UP> mtu 65536
    inet 127.0.0.1/8 scope host lo
2: kube-ipvs0: <BROADCAST,NOARP> mtu 1500
    inet 10.96.0.10/32 scope global kube-ipvs0
";
        let s = state(whole);
        assert!(s.lists_every_address(true));
        assert!(!s.lists_every_address(false));
        let only_ipvs0 = "2: kube-ipvs0: <BROADCAST,NOARP> mtu 1500
    inet 10.96.0.10/32 scope global kube-ipvs0
";
        assert!(!state(only_ipvs0).lists_every_address(true));
    }
}
