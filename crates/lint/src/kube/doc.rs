//! `rulelint services`: the Kubernetes model of a dump as a stable JSON document (format
//! version 1, inside the common `{format_version, files}` envelope) and as text for humans.

use super::{AddressKind, EndpointJump, Generation, KubeModel, ProxyMode, Service};
use rulelint_parser::{LineIndex, Ruleset};
use serde::Serialize;
use std::fmt::Write as _;

/// The model of one file.
#[derive(Debug, Serialize)]
pub struct ServicesFile<'m> {
    /// The path as the user gave it.
    pub path: &'m str,
    /// The layout.
    pub layout: LayoutDoc,
    /// Every Service port, by name (unnamed ones last, by hash).
    pub services: Vec<ServiceDoc<'m>>,
    /// `KUBE-SEP-*` chains no service chain jumps to.
    pub unused_endpoint_chains: Vec<&'m str>,
}

/// The layout facts.
#[derive(Debug, Serialize)]
pub struct LayoutDoc {
    /// `iptables`, `ipvs`, `userspace`, `kube-router` or `none`.
    pub proxy_mode: ProxyMode,
    /// kubelet's chains are present.
    pub kubelet: bool,
    /// `none`, `legacy` or `modern`.
    pub generation: Generation,
    /// What the generation means.
    pub description: &'static str,
    /// nat holds `KUBE-MARK-DROP`.
    pub mark_drop: bool,
    /// filter holds `KUBE-PROXY-FIREWALL`.
    pub proxy_firewall: bool,
    /// kube-proxy's nfacct counters are present.
    pub nfacct: bool,
    /// Large-cluster mode (over 1,000 endpoints, or endpoint chains without comments).
    pub large_cluster: bool,
    /// IPVS-mode state present.
    pub ipvs: bool,
    /// The mark `KUBE-MARK-MASQ` sets, `0x4000/0x4000`.
    pub masquerade_mark: Option<String>,
}

/// One Service port.
#[derive(Debug, Serialize)]
pub struct ServiceDoc<'m> {
    /// `namespace/name:port`, or null when no comment names it.
    pub name: Option<&'m str>,
    /// The hash its chains share.
    pub hash: Option<&'m str>,
    /// Its chains by kind.
    pub chains: ChainsDoc<'m>,
    /// Ways in: cluster IP, external IPs, load-balancer IPs, node ports.
    pub addresses: Vec<AddressDoc<'m>>,
    /// The endpoints of `KUBE-SVC-*`.
    pub endpoints: Vec<EndpointDoc<'m>>,
    /// The endpoints of `KUBE-SVL-*` (Local traffic policy).
    pub local_endpoints: Vec<EndpointDoc<'m>>,
    /// filter holds "has no endpoints" REJECT rules for it.
    pub rejects_without_endpoints: bool,
    /// filter holds "has no local endpoints" DROP rules for it (Local traffic policy).
    pub drops_without_local_endpoints: bool,
}

/// The chains of a Service port.
#[derive(Debug, Serialize)]
pub struct ChainsDoc<'m> {
    /// `KUBE-SVC-*`.
    pub cluster: Option<&'m str>,
    /// `KUBE-SVL-*` or `KUBE-XLB-*`.
    pub local: Option<&'m str>,
    /// `KUBE-EXT-*`.
    pub external: Option<&'m str>,
    /// `KUBE-FW-*`.
    pub firewall: Option<&'m str>,
}

/// One way into a Service port.
#[derive(Debug, Serialize)]
pub struct AddressDoc<'m> {
    /// `cluster-ip`, `external-ip`, `load-balancer-ip` or `node-port`.
    pub kind: AddressKind,
    /// The destination, `10.96.0.1/32`; null for node ports.
    pub address: Option<String>,
    /// `tcp`, `udp`, `sctp`.
    pub protocol: Option<&'m str>,
    /// The port, or the first of a range.
    pub port: Option<u16>,
    /// The line of the dispatch rule.
    pub line: u32,
}

/// One endpoint jump.
#[derive(Debug, Serialize)]
pub struct EndpointDoc<'m> {
    /// The `KUBE-SEP-*` chain.
    pub chain: Option<&'m str>,
    /// The DNAT `--to-destination`, as written.
    pub destination: Option<&'m str>,
    /// `--probability`, or null for the last rule.
    pub probability: Option<f64>,
    /// A session-affinity rule (`-m recent --rcheck`).
    pub affinity: bool,
    /// The line of the jump.
    pub line: u32,
}

/// Builds the document of one file.
pub fn services_file<'m>(
    path: &'m str,
    set: &'m Ruleset<'m>,
    model: &'m KubeModel<'m>,
) -> ServicesFile<'m> {
    let lines = LineIndex::new(set.source());
    let line = |rule: rulelint_parser::RuleId| lines.line(set.rule(rule).get().span.start);
    let chain_name = |c: Option<rulelint_parser::ChainId>| c.map(|c| set.chain(c).name());
    let endpoint_docs = |jumps: &[EndpointJump]| -> Vec<EndpointDoc<'m>> {
        jumps
            .iter()
            .map(|j| EndpointDoc {
                chain: chain_name(j.chain),
                destination: model.endpoint(j).and_then(|e| e.destination),
                probability: j.probability,
                affinity: j.affinity,
                line: line(j.rule),
            })
            .collect()
    };
    let mut services: Vec<ServiceDoc<'m>> = model
        .services
        .iter()
        .map(|s: &'m Service<'m>| ServiceDoc {
            name: s.name.as_deref(),
            hash: s.hash,
            chains: ChainsDoc {
                cluster: chain_name(s.chains.cluster),
                local: chain_name(s.chains.local),
                external: chain_name(s.chains.external),
                firewall: chain_name(s.chains.firewall),
            },
            addresses: s
                .addresses
                .iter()
                .map(|a| AddressDoc {
                    kind: a.kind,
                    address: a.address.map(|n| n.to_string()),
                    protocol: a.protocol,
                    port: a.port.map(|p| p.first),
                    line: line(a.rule),
                })
                .collect(),
            endpoints: endpoint_docs(&s.endpoints),
            local_endpoints: endpoint_docs(&s.local_endpoints),
            rejects_without_endpoints: !s.no_endpoints_rules.is_empty(),
            drops_without_local_endpoints: !s.no_local_endpoints_rules.is_empty(),
        })
        .collect();
    // By name (unnamed last, by hash): the order users look things up in.
    services.sort_by(|a, b| {
        (a.name.is_none(), a.name, a.hash).cmp(&(b.name.is_none(), b.name, b.hash))
    });
    let mut used = vec![false; model.endpoints.len()];
    for s in &model.services {
        for j in s.endpoints.iter().chain(&s.local_endpoints) {
            if let Some(i) = j.chain.and_then(|c| model.endpoint_index(c)) {
                used[i] = true;
            }
        }
    }
    let layout = model.layout;
    ServicesFile {
        path,
        layout: LayoutDoc {
            proxy_mode: layout.mode,
            kubelet: layout.kubelet,
            generation: layout.generation,
            description: layout.describe(),
            mark_drop: layout.mark_drop,
            proxy_firewall: layout.proxy_firewall,
            nfacct: layout.nfacct,
            large_cluster: layout.large_cluster,
            ipvs: layout.ipvs,
            masquerade_mark: layout
                .masquerade_mark
                .map(|m| format!("{:#x}/{:#x}", m.value, m.mask)),
        },
        services,
        unused_endpoint_chains: model
            .endpoints
            .iter()
            .zip(&used)
            .filter(|(_, used)| !**used)
            .map(|(e, _)| set.chain(e.chain).name())
            .collect(),
    }
}

/// The text view: one block per Service port.
pub fn human(file: &ServicesFile<'_>) -> String {
    let mut out = String::new();
    let l = &file.layout;
    let _ = writeln!(
        out,
        "{}: {}; {} service ports{}",
        file.path,
        l.description,
        file.services.len(),
        if l.large_cluster {
            "; large-cluster mode"
        } else {
            ""
        }
    );
    for s in &file.services {
        let name = s
            .name
            .or(s.chains.cluster)
            .or(s.chains.external)
            .unwrap_or("(unnamed)");
        let _ = writeln!(out, "\n  {name}");
        let chains: Vec<&str> = [
            s.chains.cluster,
            s.chains.local,
            s.chains.external,
            s.chains.firewall,
        ]
        .into_iter()
        .flatten()
        .collect();
        if !chains.is_empty() {
            let _ = writeln!(out, "    chains     {}", chains.join(" "));
        }
        for a in &s.addresses {
            let kind = match a.kind {
                AddressKind::ClusterIp => "cluster IP",
                AddressKind::ExternalIp => "external IP",
                AddressKind::LoadBalancerIp => "LB IP",
                AddressKind::NodePort => "node port",
            };
            let _ = writeln!(
                out,
                "    {kind:<10} {}{}{}  (line {})",
                a.address.as_deref().map_or(String::new(), |a| format!(
                    "{} ",
                    a.strip_suffix("/32")
                        .or_else(|| a.strip_suffix("/128"))
                        .unwrap_or(a)
                )),
                a.protocol.unwrap_or("any"),
                a.port.map_or(String::new(), |p| format!("/{p}")),
                a.line
            );
        }
        for (label, endpoints) in [("endpoint", &s.endpoints), ("local", &s.local_endpoints)] {
            for e in endpoints.iter().filter(|e| !e.affinity) {
                let _ = writeln!(
                    out,
                    "    {label:<10} {:<24} {:<14} {}  (line {})",
                    e.destination.unwrap_or("(no DNAT)"),
                    e.probability
                        .map_or("last".to_string(), |p| format!("p={p:.5}")),
                    e.chain.unwrap_or("(undeclared)"),
                    e.line
                );
            }
        }
        if s.endpoints.is_empty() && s.local_endpoints.is_empty() {
            let _ = writeln!(
                out,
                "    endpoints  none{}",
                if s.rejects_without_endpoints {
                    " (filter rejects its traffic: \"has no endpoints\")"
                } else if s.drops_without_local_endpoints {
                    " on this node (filter drops its external traffic: \"has no local endpoints\")"
                } else {
                    ""
                }
            );
        }
    }
    if !file.unused_endpoint_chains.is_empty() {
        let _ = writeln!(
            out,
            "\n  endpoint chains no service uses: {}",
            file.unused_endpoint_chains.join(" ")
        );
    }
    out
}
