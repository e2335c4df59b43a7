//! `rulelint stats` on kube-proxy's IPVS-mode state (`ipvsadm -Ln`, `ipset save`/`list`, `ip
//! addr`): virtual servers, real servers, ipsets and their members, interfaces.

use serde::Serialize;
use std::fmt::Write;

/// The interface kube-proxy's IPVS mode binds every Service address to.
const KUBE_IPVS0: &str = "kube-ipvs0";

/// The figures of a file's IPVS state (every IPVS section read as one, as `check` reads it).
#[derive(Serialize)]
pub struct IpvsStats {
    /// The outputs read: `ipvsadm`, `ipset`, `ip addr`.
    pub outputs: Vec<&'static str>,
    pub virtual_servers: usize,
    /// Virtual servers by protocol: `tcp`, `udp`, `sctp`, `fwmark` (firewall-mark services).
    pub virtual_servers_by_protocol: std::collections::BTreeMap<&'static str, usize>,
    pub real_servers: usize,
    /// Virtual servers listed without a real server.
    pub virtual_servers_without_real_servers: usize,
    /// Every ipset, in the order listed.
    pub ipsets: Vec<IpsetStats>,
    /// Members of every ipset.
    pub ipset_members: usize,
    pub interfaces: usize,
    /// Addresses of `kube-ipvs0`; null when `ip addr` does not show it.
    pub kube_ipvs0_addresses: Option<usize>,
}

/// One ipset.
#[derive(Serialize)]
pub struct IpsetStats {
    pub name: String,
    /// `hash:ip,port`, ...; null when only `add` lines showed the set.
    #[serde(rename = "type")]
    pub set_type: Option<String>,
    pub members: usize,
    /// Every member was read (false for a cut paste, or `Number of entries` above the listed).
    pub complete: bool,
}

/// The figures of `ipvs`, which `rulelint_lint::source::check_source` read.
pub fn collect(ipvs: &rulelint_ipvs::Ipvs<'_>) -> IpvsStats {
    let mut outputs = Vec::new();
    let o = &ipvs.outputs;
    for (read, name) in [
        (o.ipvsadm.is_some(), "ipvsadm"),
        (o.ipset.is_some(), "ipset"),
        (o.ip_addr.is_some(), "ip addr"),
    ] {
        if read {
            outputs.push(name);
        }
    }
    let mut by_protocol = std::collections::BTreeMap::new();
    for vs in &ipvs.virtual_servers {
        *by_protocol
            .entry(vs.protocol.map_or("fwmark", |p| p.as_str()))
            .or_insert(0) += 1;
    }
    let ipsets: Vec<IpsetStats> = ipvs
        .sets
        .iter()
        .map(|s| IpsetStats {
            name: s.name.to_string(),
            set_type: s.set_type.map(str::to_string),
            members: s.members.len(),
            complete: s.complete,
        })
        .collect();
    IpvsStats {
        outputs,
        virtual_servers: ipvs.virtual_servers.len(),
        virtual_servers_by_protocol: by_protocol,
        real_servers: ipvs
            .virtual_servers
            .iter()
            .map(|vs| vs.real_servers.len())
            .sum(),
        virtual_servers_without_real_servers: ipvs
            .virtual_servers
            .iter()
            .filter(|vs| vs.real_servers.is_empty())
            .count(),
        ipset_members: ipsets.iter().map(|s| s.members).sum(),
        ipsets,
        interfaces: ipvs.interfaces.len(),
        kube_ipvs0_addresses: ipvs.interface(KUBE_IPVS0).map(|i| i.addresses.len()),
    }
}

/// The human lines of the IPVS part.
pub fn human(out: &mut String, ipvs: &IpvsStats) {
    let outputs = if ipvs.outputs.is_empty() {
        "nothing read".to_string()
    } else {
        ipvs.outputs.join(", ")
    };
    let _ = writeln!(out, "  IPVS state ({outputs}):");
    let by_protocol: Vec<String> = ipvs
        .virtual_servers_by_protocol
        .iter()
        .map(|(p, n)| format!("{n} {p}"))
        .collect();
    let by_protocol = if by_protocol.is_empty() {
        String::new()
    } else {
        format!(" ({})", by_protocol.join(", "))
    };
    let _ = writeln!(
        out,
        "    virtual servers: {}{by_protocol}, real servers: {}, virtual servers without real servers: {}",
        ipvs.virtual_servers, ipvs.real_servers, ipvs.virtual_servers_without_real_servers
    );
    let _ = writeln!(
        out,
        "    ipsets: {}, members: {}",
        ipvs.ipsets.len(),
        ipvs.ipset_members
    );
    for s in &ipvs.ipsets {
        let cut = if s.complete { "" } else { " (incomplete)" };
        let _ = writeln!(
            out,
            "      {:>9} {} ({}){cut}",
            s.members,
            s.name,
            s.set_type.as_deref().unwrap_or("type not shown")
        );
    }
    let kube_ipvs0 = match ipvs.kube_ipvs0_addresses {
        Some(n) => format!(", {KUBE_IPVS0} addresses: {n}"),
        None => String::new(),
    };
    let _ = writeln!(out, "    interfaces: {}{kube_ipvs0}", ipvs.interfaces);
}
