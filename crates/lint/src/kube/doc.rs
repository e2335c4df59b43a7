//! `rulelint services`: the Kubernetes model of a dump as a stable JSON document (format
//! version 1, inside the common `{format_version, files}` envelope) and as text for humans.

use super::AddressKind;
use super::catalog::{Backend, Catalog, CatalogEndpoint, CatalogService, NodePortAddresses};
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
    /// The chains of deleted Services kube-proxy has not removed yet (nftables: flushed and
    /// unreferenced until its next sync); left out when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale_chains: Vec<&'m str>,
}

/// The layout facts.
#[derive(Debug, Serialize)]
pub struct LayoutDoc {
    /// `iptables`, `ipvs`, `userspace`, `kube-router`, `nftables`, `iptables-nft` or `none`.
    pub proxy_mode: &'static str,
    /// kubelet's chains are present.
    pub kubelet: bool,
    /// iptables: `none`, `legacy` or `modern`; nftables: `alpha`, `post-dnat-filter`,
    /// `pre-dnat-filter`, `inline-masquerade`, `direct-dnat` or `unrecognised`.
    pub generation: &'static str,
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
    /// nftables only: the addresses NodePorts are accepted on (`local`: every local address).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_port_addresses: Option<Vec<String>>,
    /// Where the facts were read from (not serialised: `proxy_mode` says it).
    #[serde(skip)]
    pub backend: Backend,
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
    /// nftables only: affinity, source ranges and traffic policies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyDoc>,
}

/// A Service port's session affinity, source ranges and traffic policies.
#[derive(Debug, Serialize)]
pub struct PolicyDoc {
    /// ClientIP session affinity.
    pub affinity: bool,
    /// Its timeout, when the dump shows it.
    pub affinity_timeout_seconds: Option<u64>,
    /// `loadBalancerSourceRanges`.
    pub source_ranges: Vec<String>,
    /// `internalTrafficPolicy: Local`.
    pub internal_local: bool,
    /// `externalTrafficPolicy: Local`.
    pub external_local: bool,
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
    /// A session-affinity rule (`-m recent --rcheck`, `ip saddr @affinity-...`).
    pub affinity: bool,
    /// The line of the jump.
    pub line: u32,
    /// nftables only: the endpoint chain marks hairpin traffic for masquerading (IPVS: the
    /// endpoint is in `KUBE-LOOP-BACK`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hairpin_masquerade: Option<bool>,
    /// IPVS only: the real server's share of the weight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
}

/// Builds the document of one file from its catalogue.
///
/// The document of an iptables dump is the one `rulelint services` has always printed
/// (format version 1): the facts the catalogue adds (affinity timeout, source ranges, traffic
/// policies, hairpin marking, stale chains) are written only for nftables dumps, so iptables
/// output stays byte for byte what it was.
pub fn services_file<'m>(path: &'m str, catalog: &'m Catalog<'m>) -> ServicesFile<'m> {
    let extended = catalog.node.backend != Backend::Iptables;
    let ipvs = catalog.node.backend == Backend::Ipvs;
    let endpoint_docs = |entries: &'m [CatalogEndpoint<'m>]| -> Vec<EndpointDoc<'m>> {
        entries
            .iter()
            .map(|e| EndpointDoc {
                chain: e.chain,
                destination: e.destination.as_deref(),
                probability: e.probability,
                affinity: e.affinity_check,
                line: e.origin.line,
                hairpin_masquerade: extended.then_some(e.hairpin_masquerade),
                share: if ipvs { e.share } else { None },
            })
            .collect()
    };
    let mut services: Vec<ServiceDoc<'m>> = catalog
        .services
        .iter()
        .map(|s: &'m CatalogService<'m>| ServiceDoc {
            name: s.name.as_deref(),
            hash: s.hash,
            chains: ChainsDoc {
                cluster: s.chains.cluster,
                local: s.chains.local,
                external: s.chains.external,
                firewall: s.chains.firewall,
            },
            addresses: s
                .addresses
                .iter()
                .map(|a| AddressDoc {
                    kind: a.kind,
                    address: a.address.map(|n| n.to_string()),
                    protocol: a.protocol,
                    port: a.port,
                    line: a.origin.line,
                })
                .collect(),
            endpoints: endpoint_docs(&s.endpoints),
            local_endpoints: endpoint_docs(&s.local_endpoints),
            rejects_without_endpoints: !s.rejects_without_endpoints.is_empty(),
            drops_without_local_endpoints: !s.drops_without_local_endpoints.is_empty(),
            policy: extended.then(|| PolicyDoc {
                affinity: s.affinity.is_some(),
                affinity_timeout_seconds: s.affinity.and_then(|a| a.timeout_seconds),
                source_ranges: s
                    .source_ranges
                    .iter()
                    .map(|r| r.network.to_string())
                    .collect(),
                internal_local: s.internal_local,
                external_local: s.external_local,
            }),
        })
        .collect();
    // By name (unnamed last, by hash): the order users look things up in.
    services.sort_by(|a, b| {
        (a.name.is_none(), a.name, a.hash).cmp(&(b.name.is_none(), b.name, b.hash))
    });
    let node = &catalog.node;
    let iptables = node.iptables;
    ServicesFile {
        path,
        layout: LayoutDoc {
            proxy_mode: node.proxy_mode,
            kubelet: iptables.is_some_and(|l| l.kubelet),
            generation: node.generation,
            description: node.description,
            mark_drop: iptables.is_some_and(|l| l.mark_drop),
            proxy_firewall: iptables.is_some_and(|l| l.proxy_firewall),
            nfacct: iptables.is_some_and(|l| l.nfacct),
            large_cluster: node.large_cluster,
            ipvs: iptables.is_some_and(|l| l.ipvs) || node.backend == Backend::Ipvs,
            masquerade_mark: node
                .masquerade_mark
                .map(|m| format!("{:#x}/{:#x}", m.value, m.mask)),
            node_port_addresses: extended
                .then(|| match &node.node_port_addresses {
                    NodePortAddresses::Unknown => None,
                    NodePortAddresses::AllLocal => Some(vec!["local".to_string()]),
                    NodePortAddresses::Listed(list) => Some(
                        list.iter()
                            .map(|n| host(&n.to_string()).to_string())
                            .collect(),
                    ),
                })
                .flatten(),
            backend: node.backend,
        },
        services,
        unused_endpoint_chains: catalog.unused_endpoint_chains.clone(),
        stale_chains: catalog.stale_chains.clone(),
    }
}

/// `10.0.0.1/32` as `10.0.0.1`.
fn host(address: &str) -> &str {
    address
        .strip_suffix("/32")
        .or_else(|| address.strip_suffix("/128"))
        .unwrap_or(address)
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
    if let Some(addresses) = &l.node_port_addresses {
        let _ = writeln!(out, "  node ports on {}", addresses.join(" "));
    }
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
                if l.backend == Backend::Ipvs {
                    let _ = writeln!(
                        out,
                        "    {label:<10} {:<24} {:<14} {}  (line {})",
                        e.destination.unwrap_or("?"),
                        e.share
                            .map_or("weight ?".to_string(), |s| format!("share={s:.3}")),
                        match e.hairpin_masquerade {
                            Some(true) => "in KUBE-LOOP-BACK",
                            _ => "",
                        },
                        e.line
                    );
                    continue;
                }
                let _ = writeln!(
                    out,
                    "    {label:<10} {:<24} {:<14} {}  (line {})",
                    e.destination.unwrap_or("(no DNAT)"),
                    e.probability
                        .map_or("last".to_string(), |p| format!("p={p:.5}")),
                    e.chain.unwrap_or("(undeclared)"),
                    e.line
                );
                if e.hairpin_masquerade == Some(false) && e.chain.is_some() {
                    let _ = writeln!(out, "    {:<10} no hairpin masquerade in its chain", "");
                }
            }
        }
        if let Some(p) = &s.policy {
            if p.affinity {
                let _ = writeln!(
                    out,
                    "    affinity   ClientIP{}",
                    p.affinity_timeout_seconds
                        .map_or(String::new(), |t| format!(", timeout {t}s"))
                );
            }
            if !p.source_ranges.is_empty() {
                let _ = writeln!(out, "    sources    {}", p.source_ranges.join(" "));
            }
            let policies: Vec<&str> = [
                (p.internal_local, "internal Local"),
                (p.external_local, "external Local"),
            ]
            .into_iter()
            .filter_map(|(on, text)| on.then_some(text))
            .collect();
            if !policies.is_empty() {
                let _ = writeln!(out, "    policy     {}", policies.join(", "));
            }
            if s.drops_without_local_endpoints
                && s.local_endpoints.is_empty()
                && !s.endpoints.is_empty()
            {
                let _ = writeln!(
                    out,
                    "    {:<10} external traffic dropped here: no local endpoints",
                    ""
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
    if !file.stale_chains.is_empty() {
        let _ = writeln!(
            out,
            "\n  stale chains of deleted Services (kube-proxy removes them on a later sync): {}",
            file.stale_chains.join(" ")
        );
    }
    out
}

/// Whether `text` is an `nft list ruleset` listing: its first line that is neither blank nor a
/// `#` comment starts with `table `, or opens a `chain`, `map` or `set` block (a pasted
/// fragment; no iptables-save line looks like that). A stand-in for the input detection of
/// issue 18.
pub fn is_nft_listing(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| {
            l.starts_with("table ")
                || (["chain ", "map ", "set "].iter().any(|k| l.starts_with(k)) && l.ends_with('{'))
        })
}

/// The catalogue of one text and whether it held any ruleset content at all. A text with an
/// nftables part ([`crate::source::sections`]: listing, `nft -j` JSON or transaction) is read
/// as nftables, unless that part programs no Service and the iptables part does (a node whose
/// kube-proxy runs in iptables mode beside another nftables table). `strings` keeps the
/// strings a JSON ruleset escapes.
pub fn catalog_of<'a>(text: &'a str, strings: &'a rulelint_nft::Strings) -> (Catalog<'a>, bool) {
    use crate::source::SectionKind;
    let sections = crate::source::sections(text);
    if let Some((ipvs, _)) = crate::ipvs::check::read_ipvs(text, &sections)
        && !ipvs.virtual_servers.is_empty()
    {
        // A node in IPVS mode: its Services are the virtual servers.
        let parsed = crate::source::parse_iptables_sections(text, &sections);
        let layout = (!parsed.has_no_content()).then(|| {
            let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
            super::KubeModel::build(&parsed.ruleset, &graph).layout
        });
        return (Catalog::from_ipvs(text, &ipvs, layout), true);
    }
    let has_nft = sections.iter().any(|s| {
        matches!(
            s.kind,
            SectionKind::Nft | SectionKind::NftJson | SectionKind::NftTransaction
        )
    });
    let iptables = || {
        let parsed = rulelint_parser::parse(text);
        let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
        let model = super::KubeModel::build(&parsed.ruleset, &graph);
        (
            Catalog::from_iptables(&parsed.ruleset, &graph, &model),
            !parsed.has_no_content(),
        )
    };
    if !has_nft {
        return iptables();
    }
    let (_, parsed) = rulelint_nft::parse_any(text, strings);
    let graph = rulelint_nft::ChainGraph::build(&parsed.ruleset);
    let model = crate::nft::kube::NftKubeModel::build(&parsed.ruleset, &graph);
    let catalog = Catalog::from_nft(&model);
    let mixed = sections.iter().any(|s| {
        s.kind == crate::source::SectionKind::Iptables && !text[s.range.clone()].trim().is_empty()
    });
    if catalog.services.is_empty() && mixed {
        let (from_iptables, _) = iptables();
        if !from_iptables.services.is_empty() {
            return (from_iptables, true);
        }
    }
    (catalog, !parsed.ruleset.tables.is_empty())
}

/// The `rulelint services` document of one text ([`catalog_of`]): `with` gets the document
/// and whether the text held any ruleset content at all.
pub fn with_services_file<R>(
    path: &str,
    text: &str,
    with: impl FnOnce(&ServicesFile<'_>, bool) -> R,
) -> R {
    let strings = rulelint_nft::Strings::new();
    let (catalog, has_content) = catalog_of(text, &strings);
    with(&services_file(path, &catalog), has_content)
}
