//! One pass over the lines. Each line is recognised by its own shape, so that `ipvsadm`,
//! `ipset` and `ip addr` output may follow each other in any order; a little state says which
//! listing the line belongs to (the ipvsadm title decides the columns of a real server line,
//! `Members:` opens an ipset member list, an interface header the `inet` lines after it).

use crate::codes;
use crate::model::{
    Forward, HostPort, Interface, IpSet, Ipvs, Protocol, RealServer, SetFamily, SetMember,
    VirtualServer,
};
use ipnet::IpNet;
use rulelint_parser::{Diagnostic, Span};
use rustc_hash::FxHashMap;
use std::net::IpAddr;

/// What was read from a text, and what was wrong with it.
#[derive(Clone, Debug, Default)]
pub struct Parsed<'a> {
    /// The model.
    pub ipvs: Ipvs<'a>,
    /// Diagnostics (`RL171`..`RL174`), in text order.
    pub diagnostics: Vec<Diagnostic>,
}

/// The columns of an `ipvsadm` listing, from its title line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Columns {
    /// `Prot LocalAddress:Port Scheduler Flags` / `Forward Weight ActiveConn InActConn`.
    Plain,
    /// `--stats`, `--rate`: numbers only, no forward method or weight.
    Counters,
    /// `--thresholds`: `Uthreshold Lthreshold ActiveConn InActConn`.
    Thresholds,
    /// `--persistent-conn`: `Weight PersistConn ActiveConn InActConn`.
    PersistentConn,
}

struct Reader<'a> {
    out: Parsed<'a>,
    columns: Columns,
    /// The virtual server real server lines belong to.
    current_vs: Option<usize>,
    /// Virtual servers of `ipvsadm-save` by (protocol flag, address as written).
    saved_vs: FxHashMap<(&'a str, &'a str), usize>,
    /// ipsets by name.
    sets: FxHashMap<&'a str, usize>,
    /// The `ipset list` set whose header or members come next.
    list_set: Option<usize>,
    /// After `Members:` of `list_set`.
    in_members: bool,
    /// The `ip addr` interface whose address lines come next.
    interface: Option<usize>,
    /// Interfaces by name: a node lists tens of thousands of veth/cali interfaces.
    interfaces: FxHashMap<&'a str, usize>,
    /// The open run of stray lines.
    stray: Option<Span>,
}

/// Reads `text`: any mix of `ipvsadm`, `ipset` and `ip addr` output. Never fails, never panics;
/// linear in the text.
pub fn parse(text: &str) -> Parsed<'_> {
    let mut r = Reader {
        out: Parsed::default(),
        columns: Columns::Plain,
        current_vs: None,
        saved_vs: FxHashMap::default(),
        sets: FxHashMap::default(),
        list_set: None,
        in_members: false,
        interface: None,
        interfaces: FxHashMap::default(),
        stray: None,
    };
    if text.len() > u32::MAX as usize {
        r.out.diagnostics.push(
            Diagnostic::new(
                &codes::STRAY_TEXT,
                Span::new(0, 0),
                "the text is 4 GiB or more and was not read",
            )
            .with_label("start of the text"),
        );
        return r.out;
    }
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        let end = memchr_newline(bytes, pos);
        let line = &text[pos..end];
        let unterminated = !line.ends_with('\n');
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if unterminated {
            r.last_line(pos, line);
        } else {
            r.line(pos, line);
        }
        pos = end;
    }
    r.flush_stray();
    r.finish();
    // The list grew by doubling; a large one is given back in place (no copy).
    r.out.ipvs.virtual_servers.shrink_to_fit();
    r.out
}

/// Adds a real server to its virtual server's list. The first is given a list of one: most
/// virtual servers of a node have one real server (a Service with one pod), and a `Vec`'s
/// first push makes room for four (a 200k-service node held 62 MB of empty slots).
fn push_real_server<'a>(list: &mut Vec<RealServer<'a>>, real: RealServer<'a>) {
    if list.is_empty() {
        list.reserve_exact(1);
    }
    list.push(real);
}

fn memchr_newline(bytes: &[u8], pos: usize) -> usize {
    bytes[pos..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| pos + i + 1)
}

impl<'a> Reader<'a> {
    fn malformed(&mut self, span: Span, message: impl Into<String>, label: &str) {
        self.out.diagnostics.push(
            Diagnostic::new(&codes::MALFORMED_LINE, span, message)
                .with_label(label.to_string())
                .with_help("paste the tool's output unchanged; this line was skipped"),
        );
    }

    fn stray_line(&mut self, span: Span) {
        match &mut self.stray {
            Some(run) => run.end = span.end,
            None => self.stray = Some(span),
        }
    }

    fn flush_stray(&mut self) {
        if let Some(span) = self.stray.take() {
            self.out.diagnostics.push(
                Diagnostic::new(
                    &codes::STRAY_TEXT,
                    span,
                    "text that ipvsadm, ipset and ip addr do not print",
                )
                .with_label("skipped")
                .with_help("paste each tool's output whole: `iptables-save; ipset save; ipvsadm -Ln; ip addr show kube-ipvs0`"),
            );
        }
    }

    /// The last line of a text that does not end in a newline: a paste cut there may have cut
    /// the line. An item it held (virtual or real server, member, address) is dropped and its
    /// listing marked incomplete, so that no check concludes from a cut address or port.
    fn last_line(&mut self, pos: usize, line: &'a str) {
        let ipvs = &self.out.ipvs;
        let vs = ipvs.virtual_servers.len();
        let rs: usize = ipvs
            .virtual_servers
            .iter()
            .map(|v| v.real_servers.len())
            .sum();
        let members: Vec<usize> = ipvs.sets.iter().map(|s| s.members.len()).collect();
        let addresses: Vec<usize> = ipvs.interfaces.iter().map(|i| i.addresses.len()).collect();
        self.line(pos, line);
        let ipvs = &mut self.out.ipvs;
        let mut dropped = None;
        if ipvs.virtual_servers.len() > vs {
            dropped = ipvs.virtual_servers.pop().map(|v| v.span);
            ipvs.outputs.ipvsadm_cut = true;
        } else if ipvs
            .virtual_servers
            .iter()
            .map(|v| v.real_servers.len())
            .sum::<usize>()
            > rs
        {
            dropped = ipvs
                .virtual_servers
                .iter_mut()
                .rev()
                .find_map(|v| v.real_servers.pop())
                .map(|r| r.span);
            ipvs.outputs.ipvsadm_cut = true;
        }
        for (i, set) in ipvs.sets.iter_mut().enumerate() {
            if set.members.len() > members.get(i).copied().unwrap_or(0) {
                dropped = set.members.pop().map(|m| m.span);
                set.complete = false;
            }
        }
        for (i, interface) in ipvs.interfaces.iter_mut().enumerate() {
            if interface.addresses.len() > addresses.get(i).copied().unwrap_or(0) {
                dropped = interface.addresses.pop().map(|(_, span)| span);
                interface.complete = false;
            }
        }
        // The line itself may be a header cut short (`IP Virtual Server version 1.2.1 (s`,
        // `create KUBE-CLUSTER-IP hash:ip,po`): its listing may go on past the cut.
        let t = line.trim();
        let mut words = t.split_ascii_whitespace();
        let first = words.next().unwrap_or("");
        let o = ipvs.outputs;
        // ipvsadm is the last output begun: whatever this line is, the listing may go on.
        let in_ipvsadm = o.ipvsadm.is_some_and(|v| {
            [o.ipset, o.ip_addr]
                .iter()
                .all(|other| other.is_none_or(|other| other.start < v.start))
        });
        if in_ipvsadm
            || t.starts_with("->")
            || matches!(first, "TCP" | "UDP" | "SCTP" | "FWM" | "-A" | "-a")
        {
            ipvs.outputs.ipvsadm_cut = true;
        } else if matches!(first, "create" | "add") {
            if let Some(&i) = words.next().and_then(|name| self.sets.get(name)) {
                ipvs.sets[i].complete = false;
            }
        } else if let Some(i) = self.list_set {
            ipvs.sets[i].complete = false;
        } else if let Some(i) = self.interface {
            ipvs.interfaces[i].complete = false;
        }
        if let Some(span) = dropped {
            ipvs.outputs.cut_line = Some(span);
            self.out.diagnostics.push(
                Diagnostic::new(
                    &codes::CUT_OUTPUT,
                    span,
                    "the text ends inside this line, which may be cut: it was not read",
                )
                .with_label("last line, without a newline")
                .with_help("checks that look for what this line held skip its listing; save the whole output to a file"),
            );
        }
    }

    fn line(&mut self, pos: usize, line: &'a str) {
        let trimmed = line.trim();
        let lead = line.len() - line.trim_start().len();
        let span = Span::new(pos + lead, pos + lead + trimmed.len());
        if trimmed.is_empty() {
            // A blank line ends an `ipset list` block.
            self.list_set = None;
            self.in_members = false;
            return;
        }
        if self.recognised(trimmed, lead > 0, span)
            || trimmed.starts_with('#')
            || is_prompt(trimmed)
        {
            self.flush_stray();
        } else if self.in_members
            && let Some(set) = self.list_set
        {
            self.flush_stray();
            let mut words = trimmed.split_ascii_whitespace();
            let word = words.next().unwrap_or(trimmed);
            self.member(set, word, words.next().is_some(), span);
        } else {
            self.stray_line(span);
        }
    }

    /// Reads a line of one of the outputs; false when it is none of them.
    fn recognised(&mut self, t: &'a str, indented: bool, span: Span) -> bool {
        // An ipset member list goes on until a blank line or the next block.
        if self.in_members
            && !t.starts_with("Name: ")
            && let Some(set) = self.list_set
            && let Some(m) = parse_member(t.split_ascii_whitespace().next().unwrap_or(t), span)
        {
            let s = &mut self.out.ipvs.sets[set];
            s.members.push(m);
            s.member_options |= t.split_ascii_whitespace().nth(1).is_some();
            return true;
        }
        if t.starts_with("IP Virtual Server version") {
            self.out.ipvs.outputs.ipvsadm.get_or_insert(span);
            self.columns = Columns::Plain;
            self.current_vs = None;
            return true;
        }
        if let Some(rest) = t.strip_prefix("Prot LocalAddress:Port") {
            self.out.ipvs.outputs.ipvsadm.get_or_insert(span);
            self.columns = if rest.contains("Conns") || rest.contains("CPS") {
                Columns::Counters
            } else if rest.contains("Uthreshold") {
                Columns::Thresholds
            } else if rest.contains("PersistConn") {
                Columns::PersistentConn
            } else {
                Columns::Plain
            };
            return true;
        }
        if t.starts_with("-> RemoteAddress:Port") {
            return true;
        }
        if let Some(rest) = t.strip_prefix("->") {
            self.real_server(rest, span);
            return true;
        }
        let mut words = t.split_ascii_whitespace();
        let first = words.next().unwrap_or("");
        match first {
            "TCP" | "UDP" | "SCTP" | "FWM" if !indented => {
                self.virtual_server_listed(t, span);
                return true;
            }
            "-A" | "-a" => {
                let second = words.next().unwrap_or("");
                if matches!(
                    second,
                    "-t" | "-u"
                        | "-f"
                        | "--sctp-service"
                        | "--tcp-service"
                        | "--udp-service"
                        | "--fwmark-service"
                ) {
                    self.saved_line(t, span);
                    return true;
                }
                return false;
            }
            "create" => {
                if let (Some(name), Some(kind)) = (words.next(), words.next())
                    && kind.contains(':')
                {
                    self.out.ipvs.outputs.ipset.get_or_insert(span);
                    let set = self.set_index(name, span);
                    let header: Vec<&str> = words.collect();
                    let s = &mut self.out.ipvs.sets[set];
                    s.header = after_words(t, 3);
                    s.set_type = Some(kind);
                    s.family = family(&header);
                    s.span = span;
                    s.complete = true;
                    self.list_set = None;
                    self.in_members = false;
                    return true;
                }
                return false;
            }
            "add" => {
                if let (Some(name), Some(member)) = (words.next(), words.next()) {
                    let more = words.next().is_some();
                    self.out.ipvs.outputs.ipset.get_or_insert(span);
                    let set = match self.sets.get(name) {
                        Some(&i) => i,
                        None => {
                            // A cut `ipset save`: the set's `create` line is not in the text.
                            let i = self.set_index(name, span);
                            self.out.ipvs.sets[i].complete = false;
                            i
                        }
                    };
                    self.member(set, member, more, span);
                    return true;
                }
                return false;
            }
            _ => {}
        }
        if let Some(name) = t.strip_prefix("Name: ") {
            self.out.ipvs.outputs.ipset.get_or_insert(span);
            let set = self.set_index(name.trim(), span);
            let s = &mut self.out.ipvs.sets[set];
            s.span = span;
            s.complete = true;
            self.list_set = Some(set);
            self.in_members = false;
            return true;
        }
        if let Some(set) = self.list_set
            && let Some((key, value)) = t
                .split_once(": ")
                .or_else(|| t.strip_suffix(':').map(|k| (k, "")))
        {
            let value = value.trim();
            let s = &mut self.out.ipvs.sets[set];
            match key {
                "Type" => s.set_type = Some(value),
                "Header" => {
                    s.header = value;
                    s.family = family(&value.split_ascii_whitespace().collect::<Vec<_>>());
                }
                "References" => s.references = value.parse().ok(),
                "Number of entries" => s.declared_entries = value.parse().ok(),
                "Members" => self.in_members = true,
                "Revision" | "Size in memory" => {}
                _ => {
                    // Not a header key: `ip addr` may follow the list without a blank line
                    // (`1: lo: <LOOPBACK,UP> ...` reads as a key and a value). It ends the list.
                    if self.ip_addr_line(t, indented, span) {
                        self.list_set = None;
                        self.in_members = false;
                        return true;
                    }
                    return false;
                }
            }
            return true;
        }
        self.ip_addr_line(t, indented, span)
    }

    fn set_index(&mut self, name: &'a str, span: Span) -> usize {
        if let Some(&i) = self.sets.get(name) {
            return i;
        }
        let i = self.out.ipvs.sets.len();
        self.out.ipvs.sets.push(IpSet {
            name,
            set_type: None,
            family: None,
            references: None,
            declared_entries: None,
            header: "",
            members: Vec::new(),
            unread_members: 0,
            member_options: false,
            complete: false,
            span,
        });
        self.sets.insert(name, i);
        i
    }

    /// A member `word` of `set`; `more` says whether its line has words after it.
    fn member(&mut self, set: usize, word: &'a str, more: bool, span: Span) {
        match parse_member(word, span) {
            Some(m) => {
                let s = &mut self.out.ipvs.sets[set];
                s.members.push(m);
                s.member_options |= more;
            }
            None => {
                self.out.ipvs.sets[set].unread_members += 1;
                let name = self.out.ipvs.sets[set].name;
                self.malformed(
                    span,
                    format!("`{word}` is not an ipset member of a kind kube-proxy writes"),
                    &format!("member of {name}"),
                );
            }
        }
    }

    /// `TCP  10.96.0.1:443 rr persistent 10800`, `FWM  1 rr`, `TCP  10.96.0.1:443  0  0 ...`.
    fn virtual_server_listed(&mut self, t: &'a str, span: Span) {
        self.out.ipvs.outputs.ipvsadm.get_or_insert(span);
        let mut words = t.split_ascii_whitespace();
        let proto_word = words.next().unwrap_or("");
        let Some(target_word) = words.next() else {
            self.current_vs = None;
            return self.malformed(
                span,
                "a virtual server line without an address",
                "virtual server",
            );
        };
        let (protocol, target) = if proto_word == "FWM" {
            if words.clone().next() == Some("IPv6") {
                words.next();
            }
            (
                None,
                HostPort {
                    text: target_word,
                    address: None,
                    port: None,
                },
            )
        } else {
            let protocol = match proto_word {
                "TCP" => Protocol::Tcp,
                "UDP" => Protocol::Udp,
                _ => Protocol::Sctp,
            };
            (Some(protocol), host_port(target_word))
        };
        if protocol.is_some() && !target.is_numeric() {
            self.out.ipvs.outputs.names_resolved.get_or_insert(span);
        }
        let mut vs = VirtualServer {
            protocol,
            target,
            scheduler: None,
            scheduler_flags: None,
            persistent_seconds: None,
            persistence_mask: None,
            real_servers: Vec::new(),
            span,
        };
        if self.columns == Columns::Plain
            || self.columns == Columns::Thresholds
            || self.columns == Columns::PersistentConn
        {
            vs.scheduler = words.next();
            while let Some(w) = words.next() {
                match w {
                    "persistent" => {
                        vs.persistent_seconds = words.next().and_then(|v| v.parse().ok())
                    }
                    "mask" => vs.persistence_mask = words.next(),
                    "pe" => {
                        words.next();
                    }
                    _ if w.starts_with('(') => {
                        vs.scheduler_flags = Some(w.trim_start_matches('(').trim_end_matches(')'))
                    }
                    _ => {}
                }
            }
        }
        self.current_vs = Some(self.out.ipvs.virtual_servers.len());
        self.out.ipvs.virtual_servers.push(vs);
    }

    /// `  -> 10.244.0.4:80   Masq    1      0          0`, by the listing's columns.
    fn real_server(&mut self, rest: &'a str, span: Span) {
        let Some(vs) = self.current_vs else {
            return self.malformed(
                span,
                "a real server line before any virtual server",
                "real server",
            );
        };
        let mut words = rest.split_ascii_whitespace();
        let Some(target_word) = words.next() else {
            return self.malformed(span, "a real server line without an address", "real server");
        };
        let target = host_port(target_word);
        if !target.is_numeric() {
            self.out.ipvs.outputs.names_resolved.get_or_insert(span);
        }
        // Only the first four columns are read: no list of words per real server.
        let mut cols: [Option<&str>; 4] = [None; 4];
        for (col, word) in cols.iter_mut().zip(words) {
            *col = Some(word);
        }
        let num = |i: usize| cols[i].and_then(|w| w.parse::<u64>().ok());
        let (forward, weight, active, inactive) = match self.columns {
            Columns::Plain => (
                forward_name(cols[0].unwrap_or("")),
                cols[1].and_then(|w| w.parse::<i64>().ok()),
                num(2),
                num(3),
            ),
            Columns::PersistentConn => (
                Forward::Unknown,
                cols[0].and_then(|w| w.parse::<i64>().ok()),
                num(2),
                num(3),
            ),
            Columns::Thresholds => (Forward::Unknown, None, num(2), num(3)),
            Columns::Counters => (Forward::Unknown, None, None, None),
        };
        push_real_server(
            &mut self.out.ipvs.virtual_servers[vs].real_servers,
            RealServer {
                target,
                forward,
                weight,
                active_connections: active,
                inactive_connections: inactive,
                span,
            },
        );
    }

    /// `-A -t 10.96.0.1:443 -s rr -p 10800` and `-a -t 10.96.0.1:443 -r 10.244.0.2:6443 -m -w 1`.
    fn saved_line(&mut self, t: &'a str, span: Span) {
        self.out.ipvs.outputs.ipvsadm.get_or_insert(span);
        let words: Vec<&'a str> = t.split_ascii_whitespace().take(32).collect();
        let (Some(&op), Some(&flag), Some(&target_word)) =
            (words.first(), words.get(1), words.get(2))
        else {
            return self.malformed(
                span,
                "an ipvsadm-save line without its service",
                "ipvsadm-save line",
            );
        };
        let protocol = match flag {
            "-t" | "--tcp-service" => Some(Protocol::Tcp),
            "-u" | "--udp-service" => Some(Protocol::Udp),
            "--sctp-service" => Some(Protocol::Sctp),
            _ => None,
        };
        let target = if protocol.is_some() {
            host_port(target_word)
        } else {
            HostPort {
                text: target_word,
                address: None,
                port: None,
            }
        };
        if protocol.is_some() && !target.is_numeric() {
            self.out.ipvs.outputs.names_resolved.get_or_insert(span);
        }
        let value = |name: &str| {
            words
                .iter()
                .position(|w| *w == name)
                .and_then(|i| words.get(i + 1).copied())
        };
        if op == "-A" {
            let vs = VirtualServer {
                protocol,
                target,
                scheduler: value("-s"),
                scheduler_flags: value("-b"),
                persistent_seconds: value("-p").and_then(|v| v.parse().ok()),
                persistence_mask: value("-M"),
                real_servers: Vec::new(),
                span,
            };
            self.saved_vs
                .insert((flag, target_word), self.out.ipvs.virtual_servers.len());
            self.current_vs = Some(self.out.ipvs.virtual_servers.len());
            self.out.ipvs.virtual_servers.push(vs);
            return;
        }
        let Some(&vs) = self.saved_vs.get(&(flag, target_word)) else {
            return self.malformed(
                span,
                format!(
                    "a real server of {flag} {target_word}, which no `-A` line before it declares"
                ),
                "ipvsadm-save real server",
            );
        };
        let Some(rs_word) = value("-r") else {
            return self.malformed(
                span,
                "an `-a` line without `-r ADDRESS:PORT`",
                "ipvsadm-save real server",
            );
        };
        let rs = host_port(rs_word);
        if !rs.is_numeric() {
            self.out.ipvs.outputs.names_resolved.get_or_insert(span);
        }
        let forward = if words.contains(&"-m") {
            Forward::Masq
        } else if words.contains(&"-i") {
            Forward::Tunnel
        } else if words.contains(&"-g") {
            Forward::Route
        } else {
            Forward::Unknown
        };
        push_real_server(
            &mut self.out.ipvs.virtual_servers[vs].real_servers,
            RealServer {
                target: rs,
                forward,
                weight: value("-w").and_then(|v| v.parse().ok()),
                active_connections: None,
                inactive_connections: None,
                span,
            },
        );
    }

    /// `5: kube-ipvs0: <BROADCAST,NOARP> ...`, `    inet 10.96.0.1/32 scope global kube-ipvs0`,
    /// `5: kube-ipvs0    inet 10.96.0.1/32 ...` (`ip -o addr`) and the lines iproute2 prints
    /// between them.
    fn ip_addr_line(&mut self, t: &'a str, indented: bool, span: Span) -> bool {
        let mut words = t.split_ascii_whitespace();
        let first = words.next().unwrap_or("");
        if !indented
            && let Some(index) = first.strip_suffix(':')
            && !index.is_empty()
            && index.bytes().all(|b| b.is_ascii_digit())
        {
            let Some(name_word) = words.next() else {
                return false;
            };
            let name = name_word.trim_end_matches(':');
            let name = name.split('@').next().unwrap_or(name);
            let third = words.next().unwrap_or("");
            if third.starts_with('<') && name_word.ends_with(':') {
                self.out.ipvs.outputs.ip_addr.get_or_insert(span);
                self.interface = Some(self.interface_index(name, span));
                return true;
            }
            if matches!(third, "inet" | "inet6") {
                self.out.ipvs.outputs.ip_addr.get_or_insert(span);
                let i = self.interface_index(name, span);
                self.interface = None;
                self.address(i, words.next(), span);
                return true;
            }
            if third.starts_with("link/") {
                self.out.ipvs.outputs.ip_addr.get_or_insert(span);
                return true;
            }
            return false;
        }
        if indented && let Some(i) = self.interface {
            match first {
                "inet" | "inet6" => {
                    self.address(i, words.next(), span);
                    return true;
                }
                _ if first.starts_with("link/")
                    || matches!(
                        first,
                        "valid_lft"
                            | "altname"
                            | "RX:"
                            | "TX:"
                            | "vrf"
                            | "bridge"
                            | "veth"
                            | "dummy"
                            | "vxlan"
                            | "prog/xdp"
                    ) =>
                {
                    return true;
                }
                _ => {}
            }
        }
        false
    }

    fn interface_index(&mut self, name: &'a str, span: Span) -> usize {
        // `ip -o addr` repeats the interface on every line: one entry per name.
        if let Some(&i) = self.interfaces.get(name) {
            return i;
        }
        let i = self.out.ipvs.interfaces.len();
        self.out.ipvs.interfaces.push(Interface {
            name,
            addresses: Vec::new(),
            complete: true,
            span,
        });
        self.interfaces.insert(name, i);
        i
    }

    fn address(&mut self, interface: usize, word: Option<&str>, span: Span) {
        match word.and_then(|w| {
            w.parse::<IpNet>()
                .ok()
                .or_else(|| w.parse::<IpAddr>().ok().map(IpNet::from))
        }) {
            Some(net) => self.out.ipvs.interfaces[interface]
                .addresses
                .push((net, span)),
            None => self.malformed(
                span,
                "an `inet` line without an address/prefix",
                "ip addr line",
            ),
        }
    }

    fn finish(&mut self) {
        let mut cut = Vec::new();
        for set in &mut self.out.ipvs.sets {
            let listed = set.members.len() as u64;
            if let Some(declared) = set.declared_entries
                && declared > listed
            {
                set.complete = false;
                cut.push(
                    Diagnostic::new(
                        &codes::CUT_OUTPUT,
                        set.span,
                        format!("ipset {} declares {declared} entries but {listed} are listed", set.name),
                    )
                    .with_label("this set")
                    .with_help("checks that look for a member of this set skip it; save the whole output to a file (`ipset list > node.ipset`)"),
                );
            } else if set.set_type.is_none() {
                cut.push(
                    Diagnostic::new(
                        &codes::CUT_OUTPUT,
                        set.span,
                        format!("members of ipset {} without its `create` line", set.name),
                    )
                    .with_label("first member read")
                    .with_help("checks that look for a member of this set skip it; paste the whole `ipset save`"),
                );
            }
        }
        if let Some(span) = self.out.ipvs.outputs.names_resolved {
            cut.push(
                Diagnostic::new(
                    &codes::NAMES_RESOLVED,
                    span,
                    "ipvsadm printed names instead of addresses and ports: the checks that need addresses skip these servers",
                )
                .with_label("first server shown by name")
                .with_help("run `ipvsadm -Ln` (with `-n`); names are cut to 28-33 characters and cannot be turned back into addresses"),
            );
        }
        self.out.diagnostics.extend(cut);
        self.out.diagnostics.sort_by_key(|d| (d.span.start, d.code));
    }
}

/// A shell prompt running one of the tools (`[root@node ~]# ipvsadm -ln`, `user@k:~$ sudo
/// ipset list`): skipped silently.
fn is_prompt(t: &str) -> bool {
    let Some(i) = t.find("# ").or_else(|| t.find("$ ")) else {
        return false;
    };
    let command = t[i + 2..].trim_start();
    let command = command
        .strip_prefix("sudo ")
        .unwrap_or(command)
        .trim_start();
    [
        "ipvsadm",
        "ipset",
        "ip ",
        "iptables",
        "ip6tables",
        "kubectl",
        "cat ",
        "nft",
    ]
    .iter()
    .any(|c| command.starts_with(c))
}

/// `t` after its first `n` words (blank-separated), trimmed: the header of `create NAME KIND
/// ...` after 3.
fn after_words(t: &str, n: usize) -> &str {
    let mut rest = t.trim_start();
    for _ in 0..n {
        let end = rest
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        rest = rest[end..].trim_start();
    }
    rest.trim_end()
}

fn family(header: &[&str]) -> Option<SetFamily> {
    let i = header.iter().position(|w| *w == "family")?;
    match *header.get(i + 1)? {
        "inet" => Some(SetFamily::Inet),
        "inet6" => Some(SetFamily::Inet6),
        _ => None,
    }
}

fn forward_name(word: &str) -> Forward {
    match word {
        "Masq" => Forward::Masq,
        "Route" => Forward::Route,
        "Tunnel" => Forward::Tunnel,
        "Local" => Forward::Local,
        _ => Forward::Unknown,
    }
}

/// `10.96.0.1:443`, `[fd00::1]:443`, `host.name:http`.
pub(crate) fn host_port(word: &str) -> HostPort<'_> {
    let (host, port) = if let Some(rest) = word.strip_prefix('[') {
        match rest.split_once("]:") {
            Some((h, p)) => (h, p),
            None => (rest.trim_end_matches(']'), ""),
        }
    } else {
        word.rsplit_once(':').unwrap_or((word, ""))
    };
    HostPort {
        text: word,
        address: host.parse().ok(),
        port: port.parse().ok(),
    }
}

/// An ipset member: `10.96.0.10`, `30080`, `10.96.0.10,tcp:53`, `10.96.0.10,53`,
/// `10.244.1.5,tcp:53,10.244.1.5`, `1.2.3.4,tcp:80,203.0.113.0/25`, `fd00::a,udp:53`.
pub(crate) fn parse_member(word: &str, span: Span) -> Option<SetMember<'_>> {
    let mut parts = word.split(',');
    let first = parts.next()?;
    let mut member = SetMember {
        text: word,
        address: None,
        protocol: None,
        port: None,
        other: None,
        span,
    };
    match net(first) {
        Some(n) => member.address = Some(n),
        None => {
            // A bitmap:port member is a bare port (or a range, which kube-proxy does not write).
            member.port = Some(first.parse().ok()?);
            return parts.next().is_none().then_some(member);
        }
    }
    if let Some(second) = parts.next() {
        let (protocol, port) = match second.split_once(':') {
            Some((p, port)) => (Protocol::from_lowercase(p)?, port),
            None => (Protocol::Tcp, second),
        };
        member.protocol = Some(protocol);
        member.port = Some(port.parse().ok()?);
    }
    if let Some(third) = parts.next() {
        member.other = Some(net(third)?);
    }
    parts.next().is_none().then_some(member)
}

fn net(word: &str) -> Option<IpNet> {
    word.parse::<IpNet>()
        .ok()
        .or_else(|| word.parse::<IpAddr>().ok().map(IpNet::from))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes_of(p: &Parsed<'_>) -> Vec<&'static str> {
        p.diagnostics.iter().map(|d| d.code).collect()
    }

    const LISTED: &str = "IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  10.96.0.1:443 rr persistent 10800
  -> 172.16.1.3:6443              Masq    1      0          0         
  -> 172.16.1.5:6443              Masq    0      3          1         
UDP  10.96.0.10:53 rr
SCTP [fd00::10]:9000 sh (flag-1,flag-2)
  -> [fd00:10:244::5]:9000        Route   2      0          0         
FWM  7 wrr
";

    #[test]
    fn ipvsadm_listing() {
        let p = parse(LISTED);
        assert_eq!(codes_of(&p), Vec::<&str>::new());
        let vs = &p.ipvs.virtual_servers;
        assert_eq!(vs.len(), 4);
        assert_eq!(
            vs[0].key(),
            Some(("10.96.0.1".parse().unwrap(), Protocol::Tcp, 443))
        );
        assert_eq!(vs[0].scheduler, Some("rr"));
        assert_eq!(vs[0].persistent_seconds, Some(10800));
        assert_eq!(vs[0].real_servers.len(), 2);
        assert_eq!(vs[0].real_servers[1].weight, Some(0));
        assert_eq!(vs[0].real_servers[1].active_connections, Some(3));
        assert_eq!(vs[0].real_servers[0].forward, Forward::Masq);
        assert!(vs[1].real_servers.is_empty());
        assert_eq!(vs[2].protocol, Some(Protocol::Sctp));
        assert_eq!(vs[2].target.address, Some("fd00::10".parse().unwrap()));
        assert_eq!(vs[2].scheduler_flags, Some("flag-1,flag-2"));
        assert_eq!(vs[2].real_servers[0].forward, Forward::Route);
        assert_eq!(vs[3].protocol, None);
        assert!(p.ipvs.outputs.ipvsadm.is_some());
        assert!(p.ipvs.outputs.names_resolved.is_none());
    }

    #[test]
    fn stats_and_rate_columns() {
        let text = "IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes
  -> RemoteAddress:Port
TCP  10.96.0.1:443                       5       30        0     1800        0
  -> 172.16.1.3:6443                     5       30       20     1800     1200
";
        let p = parse(text);
        assert_eq!(codes_of(&p), Vec::<&str>::new());
        let rs = &p.ipvs.virtual_servers[0].real_servers[0];
        assert_eq!(rs.weight, None);
        assert_eq!(rs.target.port, Some(6443));
        assert_eq!(p.ipvs.virtual_servers[0].scheduler, None);
    }

    #[test]
    fn ipvsadm_save() {
        let text = "-A -t 10.96.0.1:443 -s rr -p 10800
-a -t 10.96.0.1:443 -r 192.168.0.1:6443 -m -w 1
-A -u 10.96.0.10:53 -s rr
-a -u 10.96.0.10:53 -r 172.17.0.2:53 -m -w 0
-a -u 10.96.0.99:53 -r 172.17.0.2:53 -m -w 1
";
        let p = parse(text);
        assert_eq!(codes_of(&p), vec!["RL172"]);
        let vs = &p.ipvs.virtual_servers;
        assert_eq!(vs.len(), 2);
        assert_eq!(vs[0].persistent_seconds, Some(10800));
        assert_eq!(vs[1].real_servers[0].weight, Some(0));
        assert_eq!(vs[1].real_servers[0].forward, Forward::Masq);
    }

    #[test]
    fn resolved_names_are_marked_once() {
        let text = "TCP  ip-10-0-62-121.ec2.internal: rr\n  -> 100.98.125.10:http           Masq    1      2          14\n  -> ip-10-0-62-92.ec2.internal:9 Masq    1      0          0\n";
        let p = parse(text);
        assert_eq!(codes_of(&p), vec!["RL173"]);
        let vs = &p.ipvs.virtual_servers[0];
        assert_eq!(vs.target.address, None);
        assert_eq!(
            vs.real_servers[0].target.address,
            Some("100.98.125.10".parse().unwrap())
        );
        assert_eq!(vs.real_servers[0].target.port, None);
    }

    #[test]
    fn set_headers_unread_members_and_member_options() {
        let save = "create A hash:ip,port family inet hashsize 1024 timeout 300
add A 10.0.0.1,tcp:80 timeout 120
add A 10.0.0.2,icmp:echo-request
create B  bitmap:port  range 0-65535
add B 30080
";
        let p = parse(save);
        let a = p.ipvs.set("A").unwrap();
        assert_eq!(a.header, "family inet hashsize 1024 timeout 300");
        assert!(a.member_options);
        assert_eq!((a.members.len(), a.unread_members), (1, 1));
        let b = p.ipvs.set("B").unwrap();
        assert_eq!(b.header, "range 0-65535");
        assert!(!b.member_options && b.unread_members == 0);

        let list = "Name: N
Type: hash:net
Header: family inet hashsize 1024 maxelem 65536
Number of entries: 2
Members:
10.0.0.0/8 nomatch
10.1.0.0/16
";
        let n = parse(list);
        let n = n.ipvs.set("N").unwrap();
        assert_eq!(n.header, "family inet hashsize 1024 maxelem 65536");
        assert!(n.member_options && n.complete && n.members.len() == 2);
    }

    #[test]
    fn ipset_save_and_list() {
        let save = "create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x57c6d218
add KUBE-CLUSTER-IP 10.96.0.10,tcp:53
add KUBE-CLUSTER-IP 10.96.0.1,443
create KUBE-LOOP-BACK hash:ip,port,ip family inet6 hashsize 1024 maxelem 65536
add KUBE-LOOP-BACK fd00::5,tcp:53,fd00::5
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 30080
add KUBE-GONE 10.0.0.1
";
        let p = parse(save);
        assert_eq!(codes_of(&p), vec!["RL174"]);
        let c = p.ipvs.set("KUBE-CLUSTER-IP").unwrap();
        assert!(c.complete);
        assert_eq!(c.members[1].protocol, Some(Protocol::Tcp));
        assert_eq!(c.members[1].port, Some(443));
        let l = p.ipvs.set("KUBE-LOOP-BACK").unwrap();
        assert_eq!(l.family, Some(SetFamily::Inet6));
        assert_eq!(l.members[0].other, Some("fd00::5/128".parse().unwrap()));
        assert_eq!(
            p.ipvs.set("KUBE-NODE-PORT-TCP").unwrap().members[0].port,
            Some(30080)
        );
        assert!(!p.ipvs.set("KUBE-GONE").unwrap().complete);

        let list = "Name: KUBE-CLUSTER-IP
Type: hash:ip,port
Revision: 5
Header: family inet hashsize 1024 maxelem 65536
Size in memory: 8696
References: 2
Number of entries: 3
Members:
10.68.135.246,tcp:39080
10.68.0.10,udp:53

Name: KUBE-NODE-PORT-TCP
Type: bitmap:port
Revision: 3
Header: range 0-65535
Size in memory: 8264
References: 1
Number of entries: 1
Members:
30080
";
        let p = parse(list);
        assert_eq!(codes_of(&p), vec!["RL174"]);
        let c = p.ipvs.set("KUBE-CLUSTER-IP").unwrap();
        assert!(!c.complete);
        assert_eq!(c.references, Some(2));
        assert_eq!(c.members.len(), 2);
        let n = p.ipvs.set("KUBE-NODE-PORT-TCP").unwrap();
        assert!(n.complete);
        assert_eq!(n.members[0].port, Some(30080));
    }

    /// `ipset list; ip addr` pasted without a blank line between them: the interface header
    /// `1: lo: <LOOPBACK,UP>` looked like a list header key, and every interface was lost.
    #[test]
    fn ip_addr_right_after_a_set_list_ends_the_list() {
        for (first, index) in [("1: lo:", "1"), ("5: kube-ipvs0:", "5")] {
            let text = format!(
                "Name: KUBE-CLUSTER-IP
Type: hash:ip,port
Revision: 5
Header: family inet hashsize 1024 maxelem 65536
Size in memory: 8696
References: 2
Number of entries: 1
Members:
10.96.0.10,udp:53
{first} <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000
    inet 10.96.0.10/32 scope global kube-ipvs0
"
            );
            let p = parse(&text);
            assert_eq!(codes_of(&p), Vec::<&str>::new(), "{index}");
            let set = p.ipvs.set("KUBE-CLUSTER-IP").unwrap();
            assert!(set.complete);
            assert_eq!(set.members.len(), 1);
            assert!(p.ipvs.outputs.ip_addr.is_some());
            let name = first.split_ascii_whitespace().nth(1).unwrap();
            let interface = p.ipvs.interface(name.trim_end_matches(':')).unwrap();
            assert_eq!(interface.addresses.len(), 1);
        }
        // A line that is neither a header key nor `ip addr` is still not a member.
        let p = parse("Name: S\nType: hash:ip\nNumber of entries: 1\nMembers:\nwhat: now\n");
        assert!(!p.ipvs.set("S").unwrap().complete);
    }

    #[test]
    fn ip_addr_forms() {
        let text = "5: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default 
    link/ether 9a:8e:57:1b:2b:5c brd ff:ff:ff:ff:ff:ff
    inet 10.96.0.1/32 scope global kube-ipvs0
       valid_lft forever preferred_lft forever
    inet6 fd00::1/128 scope global 
       valid_lft forever preferred_lft forever
6: cni0    inet 10.244.1.1/24 brd 10.244.1.255 scope global cni0\\       valid_lft forever preferred_lft forever
";
        let p = parse(text);
        assert_eq!(codes_of(&p), Vec::<&str>::new());
        let k = p.ipvs.interface("kube-ipvs0").unwrap();
        assert_eq!(k.addresses.len(), 2);
        assert_eq!(
            p.ipvs.interface("cni0").unwrap().addresses[0].0,
            "10.244.1.1/24".parse::<IpNet>().unwrap()
        );
    }

    /// `ip -o addr` repeats each interface on every address line, not always next to each
    /// other; a name met again adds to its one entry, across many interfaces.
    #[test]
    fn ip_o_addr_lines_of_one_interface_make_one_entry() {
        let mut text = String::new();
        for round in 1..=2 {
            for i in 0..3000 {
                text.push_str(&format!(
                    "{}: cali{i}    inet 10.{round}.{}.{}/32 scope global cali{i}\\\n",
                    i + 1,
                    i / 256,
                    i % 256
                ));
            }
        }
        let p = parse(&text);
        assert_eq!(codes_of(&p), Vec::<&str>::new());
        assert_eq!(p.ipvs.interfaces.len(), 3000);
        let last = p.ipvs.interface("cali2999").unwrap();
        assert_eq!(last.addresses.len(), 2);
        assert_eq!(
            last.addresses[1].0,
            "10.2.11.183/32".parse::<IpNet>().unwrap()
        );
    }

    #[test]
    fn a_last_line_without_newline_is_not_read() {
        let p = parse("TCP  10.96.0.1:443 rr\n  -> 10.0.0.1:80 Masq 1 0 0\nTCP  10.96.0.10:5");
        assert_eq!(codes_of(&p), vec!["RL174"]);
        assert_eq!(p.ipvs.virtual_servers.len(), 1);
        assert!(p.ipvs.outputs.ipvsadm_cut);
        let p = parse("create A hash:ip,port family inet\nadd A 10.0.0.1,tcp:8");
        assert!(p.ipvs.sets[0].members.is_empty() && !p.ipvs.sets[0].complete);
        let p =
            parse("create A hash:ip,port family inet\nadd A 10.0.0.1,tcp:80\ncreate B hash:ip,po");
        assert!(p.ipvs.sets[0].complete && !p.ipvs.sets[1].complete);
        let p = parse("IP Virtual Server version 1.2.1 (s");
        assert!(p.ipvs.outputs.ipvsadm_cut);
        // Whole lines read as before.
        let p = parse("create A hash:ip,port family inet\nadd A 10.0.0.1,tcp:80\n");
        assert!(p.ipvs.sets[0].complete && p.ipvs.sets[0].members.len() == 1);
    }

    #[test]
    fn stray_text_and_prompts() {
        let text = "[root@k8s-m3 ~]# ipvsadm -ln\nhello there\nmore prose\nIP Virtual Server version 1.2.1 (size=4096)\n  -> 10.0.0.1:80 Masq 1 0 0\n";
        let p = parse(text);
        assert_eq!(codes_of(&p), vec!["RL171", "RL172"]);
        assert_eq!(
            &text[p.diagnostics[0].span.range()],
            "hello there\nmore prose"
        );
    }
}
