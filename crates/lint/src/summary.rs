//! Node summaries: what `rulelint diff` needs of one node's dump ([`NodeFacts`]) as a small,
//! versioned file, written where the dump is taken (`rulelint summarize`) so that a cluster is
//! compared by moving kilobytes per node, not the dumps. Format version 2 ([`v2`], what
//! `summarize` writes) holds the facts in chunks that a reader of many nodes skips when another
//! node had them; this module reads it (as text: [`from_json`]) and reads and writes version 1.
//!
//! The document (format version [`FORMAT_VERSION`], described in the README's "Node
//! summaries"):
//!
//! ```json
//! {
//!   "format": "rulelint-node-summary",
//!   "format_version": 1,
//!   "node": {"name": "node-7", "rules": 250000, "parse_errors": 0,
//!            "backend": "iptables", "nft_generation": null},
//!   "digests": true,
//!   "strings": ["default/kubernetes:https", "KUBE-SVC-NPX46M4PTMTKRN6Y", "..."],
//!   "has_model": true,
//!   "has_catalog": true,
//!   "services": [[0, 0, 3, 1, 140, 24]],
//!   "chains": [[9, 5, 6, 0, 0, 301, 0]],
//!   "extra_endpoint_ips": []
//! }
//! ```
//!
//! Each fact is one array of integers: the subject's kind and its fields (names are indexes
//! into `strings`; optional fields are stored plus one, 0 for none), the value's kind and
//! fields, the line of the dump that shows it (0 for none) and flags: bit 0, a rule shows it;
//! bits 1-2, why healthy nodes may differ in it; and for `services` only, bits 3-4, read by the
//! iptables model (1), the backend-neutral catalogue (2) or both (3); bit 5, the catalogue reads
//! the endpoint's chain as the empty name; bit 6, one more integer follows: the catalogue's line,
//! as a difference from the fact's. The subject's fields and the line are written as the
//! difference from those of the previous fact of the same kind in the list, zigzag-encoded
//! (`(d << 1) ^ (d >> 63)`): alike facts come in runs, and a summary is a third the size.
//! Rule text is not kept: a pair of summaries is compared without the rule level.

use crate::diff::Expected;
use crate::diff::facts::{Scope, SubjectOf, ValueOf};
use crate::diff::group::{LocalFact, NodeFacts, NodeInfo};
use crate::kube::AddressKind;
use crate::nft::kube::NftGeneration;
use ipnet::IpNet;
use rulelint_parser::escape_control;
use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::net::IpAddr;

pub mod v2;

/// The `format` field that marks a summary.
pub const FORMAT: &str = "rulelint-node-summary";
/// The version of the document's shape; a reader refuses other versions.
pub const FORMAT_VERSION: u32 = 1;
/// The scope number of an IPVS node's iptables chains, clear of the nftables generations'
/// (1 + their position).
const IPVS_SCOPE: u64 = 1000;

/// Why a text is not a summary this version reads.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
// Messages quote the file's text (a field, a fact, serde's "unknown variant `...`"): control
// characters are escaped so a crafted summary cannot drive the terminal.
pub enum SummaryError {
    /// Not JSON of the summary's shape.
    #[error("not a node summary: {}", escape_control(&.0.to_string()))]
    Json(#[from] serde_json::Error),
    /// Another format version.
    #[error("node summary format version {0}, this rulelint reads versions 1 and 2")]
    Version(u32),
    /// A field out of range (an index past the names, an unknown kind).
    #[error("node summary is damaged: {}", escape_control(.0))]
    Damaged(String),
}

/// Whether a text is a summary (by content, not file name): a JSON object whose first field
/// is `"format": "rulelint-node-summary"`.
pub fn is_summary(text: &str) -> bool {
    let head = text.trim_start();
    head.starts_with('{') && head[..head.len().min(200)].contains("\"rulelint-node-summary\"")
}

/// The summary document of a node's facts.
pub fn to_json(facts: &NodeFacts) -> String {
    let mut names = AddressNames {
        strings: facts.strings.clone(),
        ids: Default::default(),
    };
    let empty = facts.strings.iter().position(String::is_empty);
    let mut services: Vec<RawFact> = merged(
        facts.services.as_deref().unwrap_or_default(),
        facts.catalog.as_deref().unwrap_or_default(),
        empty.map(|e| e as u32),
    )
    .into_iter()
    .map(|m| {
        let mut raw = RawFact::of(m.fact, &mut names);
        let mut flags = m.lists << 3;
        flags |= u64::from(m.blank_chain) << 5;
        raw.numbers[raw.len as usize - 1] |= flags;
        if let Some(line) = m.catalog_line {
            raw.numbers[raw.len as usize - 1] |= 1 << 6;
            raw.push(zigzag(i64::from(line) - i64::from(m.fact.line)));
        }
        raw
    })
    .collect();
    let mut chains = raw_list(&facts.chains, &mut names);
    differences(&mut services);
    differences(&mut chains);
    let doc = Document {
        format: FORMAT.into(),
        format_version: FORMAT_VERSION,
        node: NodeDoc::of(&facts.info),
        digests: facts.digests,
        strings: names.strings,
        has_model: facts.services.is_some(),
        has_catalog: facts.catalog.is_some(),
        services,
        chains,
        extra_endpoint_ips: facts.extra_endpoint_ips.clone(),
    };
    let mut out = serde_json::to_string(&doc).unwrap_or_default();
    out.push('\n');
    out
}

/// Reads a summary document.
pub fn from_json(text: &str) -> Result<NodeFacts, SummaryError> {
    // One pass over the text; only a document that does not parse is read again, for its
    // version (another version may not parse as this one) or the error about it.
    #[derive(Deserialize)]
    struct Version {
        format_version: u32,
    }
    // Version 2 as `zcat` shows it: a header line, then its parts.
    // (Version 1 is one line.)
    if let Some((head, rest)) = text.split_once('\n')
        && !rest.trim().is_empty()
        && let Ok(v) = serde_json::from_str::<Version>(head)
    {
        return match v.format_version {
            v2::VERSION => v2::from_text(text),
            other => Err(SummaryError::Version(other)),
        };
    }
    let doc: Document = match serde_json::from_str(text) {
        Ok(doc) => doc,
        Err(e) => {
            return Err(match serde_json::from_str::<Version>(text) {
                Ok(v) if v.format_version != FORMAT_VERSION => {
                    SummaryError::Version(v.format_version)
                }
                Ok(_) => e.into(),
                Err(head) => head.into(),
            });
        }
    };
    if doc.format_version != FORMAT_VERSION {
        return Err(SummaryError::Version(doc.format_version));
    }
    if doc.format != FORMAT {
        return Err(SummaryError::Damaged(format!("format `{}`", doc.format)));
    }
    let strings = doc.strings;
    let list = |raw: Vec<RawFact>| -> Result<Vec<LocalFact>, SummaryError> {
        raw.into_iter()
            .map(|r| r.fact(&strings).map(|(f, _)| f))
            .collect()
    };
    let (mut services, mut catalog) = (Vec::new(), Vec::new());
    let mut raw_services = doc.services;
    let mut raw_chains = doc.chains;
    sums(&mut raw_services)?;
    sums(&mut raw_chains)?;
    let empty = strings.iter().position(String::is_empty).map(|e| e as u32);
    for raw in raw_services {
        let (fact, extra) = raw.fact(&strings)?;
        let lists = (extra.flags >> 3) & 3;
        if lists & 1 == 1 && doc.has_model {
            services.push(fact);
        }
        if lists & 2 == 2 && doc.has_catalog {
            let mut subject = fact.subject;
            if (extra.flags >> 5) & 1 == 1 {
                let SubjectOf::Endpoint { chain, .. } = &mut subject else {
                    return Err(SummaryError::Damaged("a blank chain on no endpoint".into()));
                };
                *chain = empty.ok_or_else(|| SummaryError::Damaged("no empty name".into()))?;
            }
            let line = match extra.catalog_line {
                Some(d) => u32::try_from(i64::from(fact.line) + unzigzag(d))
                    .map_err(|_| SummaryError::Damaged("a bad line".into()))?,
                None => fact.line,
            };
            catalog.push(LocalFact {
                subject,
                line,
                by_rule: false,
                ..fact
            });
        }
        if lists == 0 {
            return Err(SummaryError::Damaged("a fact in no list".into()));
        }
    }
    let services = doc.has_model.then_some(services);
    let catalog = doc.has_catalog.then_some(catalog);
    let chains = list(raw_chains)?;
    Ok(NodeFacts {
        info: node_info(&doc.node)?,
        strings,
        services,
        catalog,
        chains,
        digests: doc.digests,
        extra_endpoint_ips: doc.extra_endpoint_ips,
    })
}

/// What the report says about a node, from its summary.
fn node_info(node: &NodeDoc) -> Result<NodeInfo, SummaryError> {
    let backend = v2::backend(&node.backend)
        .ok_or_else(|| SummaryError::Damaged(format!("backend `{}`", node.backend)))?;
    let nft_generation = match &node.nft_generation {
        None => None,
        Some(name) => Some(
            generation(name)
                .ok_or_else(|| SummaryError::Damaged(format!("nftables layout `{name}`")))?,
        ),
    };
    Ok(NodeInfo {
        name: node.name.clone(),
        rules: node.rules,
        parse_errors: node.parse_errors,
        backend,
        nft_generation,
        services_unknown: node.services_unknown,
    })
}

impl NodeDoc {
    fn of(info: &NodeInfo) -> NodeDoc {
        NodeDoc {
            name: info.name.clone(),
            rules: info.rules,
            parse_errors: info.parse_errors,
            backend: info.backend.name().into(),
            nft_generation: info.nft_generation.map(str::to_string),
            services_unknown: info.services_unknown,
        }
    }
}

/// The generation of its name, among those this version knows.
fn generation(name: &str) -> Option<&'static str> {
    [
        NftGeneration::None,
        NftGeneration::Alpha,
        NftGeneration::PostDnatFilter,
        NftGeneration::PreDnatFilter,
        NftGeneration::InlineMasquerade,
        NftGeneration::DirectDnat,
        NftGeneration::Unrecognised,
    ]
    .into_iter()
    .map(NftGeneration::name)
    .find(|n| *n == name)
}

#[derive(Serialize, Deserialize)]
struct Document {
    format: String,
    format_version: u32,
    node: NodeDoc,
    digests: bool,
    strings: Vec<String>,
    has_model: bool,
    has_catalog: bool,
    services: Vec<RawFact>,
    chains: Vec<RawFact>,
    extra_endpoint_ips: Vec<IpAddr>,
}

#[derive(Serialize, Deserialize)]
struct NodeDoc {
    name: String,
    rules: usize,
    parse_errors: usize,
    backend: String,
    nft_generation: Option<String>,
    // Absent (false) in summaries of nodes whose Services are compared.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    services_unknown: bool,
}

/// A fact as integers: at most 6 for the subject, 3 for the value, line, flags and the
/// catalogue's line.
#[derive(Clone, Copy, Default)]
struct RawFact {
    numbers: [u64; 12],
    len: u8,
}

/// What a fact's flags say beyond the fact.
struct Extra {
    flags: u64,
    catalog_line: Option<u64>,
}

/// A fact's scope as the number both versions write: 0 iptables, [`IPVS_SCOPE`], else an
/// nftables layout by its position among the known generations, from 1 (stable within a
/// version).
fn scope_number(s: Scope) -> u64 {
    match s {
        Scope::Iptables => 0,
        Scope::Ipvs => IPVS_SCOPE,
        Scope::Nft { generation } => {
            1 + GENERATIONS
                .iter()
                .position(|g| *g == generation)
                .unwrap_or(GENERATIONS.len() - 1) as u64
        }
    }
}

/// The scope a number written by [`scope_number`] stands for; `None` for an unknown layout.
fn scope_of_number(v: u64) -> Option<Scope> {
    Some(match v {
        0 => Scope::Iptables,
        IPVS_SCOPE => Scope::Ipvs,
        v => Scope::Nft {
            generation: GENERATIONS.get(usize::try_from(v).ok()?.checked_sub(1)?)?,
        },
    })
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// How many fields follow a subject kind.
fn subject_fields(kind: u64) -> Option<usize> {
    Some(match kind {
        0 | 3 | 7 => 1,
        1 | 5 | 6 => 2,
        4 | 9..=11 => 3,
        8 => 4,
        2 => 5,
        _ => return None,
    })
}

fn value_fields(kind: u64) -> Option<usize> {
    Some(match kind {
        0 => 0,
        1..=3 => 1,
        4 => 2,
        _ => return None,
    })
}

/// An optional index or number, stored plus one.
fn opt(v: Option<u64>) -> u64 {
    v.map_or(0, |v| v + 1)
}

/// The subject's kind, its fields and where the line of a raw fact is.
fn shape(r: &RawFact) -> Option<(usize, usize, usize)> {
    let n = &r.numbers[..r.len as usize];
    let kind = *n.first()?;
    let fields = subject_fields(kind)?;
    let value_len = value_fields(*n.get(1 + fields)?)?;
    let line = 1 + fields + 1 + value_len;
    (line < n.len()).then_some((kind as usize, fields, line))
}

/// The last subject fields and line seen, per kind of subject.
#[derive(Default)]
struct Previous {
    fields: [[u64; 5]; 12],
    lines: [u64; 12],
}

/// Writes each fact's subject fields and line as differences from those of the previous fact
/// of its kind (zigzag-encoded): facts of one kind come in runs of alike names and lines, and
/// small numbers compress well (a summary is a third of the size it is without).
fn differences(list: &mut [RawFact]) {
    let mut previous = Previous::default();
    for r in list {
        let Some((kind, fields, line)) = shape(r) else {
            continue;
        };
        for (k, slot) in (1..=fields).zip(&mut previous.fields[kind]) {
            let v = r.numbers[k];
            r.numbers[k] = zigzag(v.wrapping_sub(*slot) as i64);
            *slot = v;
        }
        let v = r.numbers[line];
        r.numbers[line] = zigzag(v.wrapping_sub(previous.lines[kind]) as i64);
        previous.lines[kind] = v;
    }
}

/// Undoes [`differences`]; names and lines are checked where facts are read.
fn sums(list: &mut [RawFact]) -> Result<(), SummaryError> {
    let mut previous = Previous::default();
    for r in list {
        let (kind, fields, line) =
            shape(r).ok_or_else(|| SummaryError::Damaged("a fact of an unknown shape".into()))?;
        for (k, slot) in (1..=fields).zip(&mut previous.fields[kind]) {
            *slot = slot.wrapping_add(unzigzag(r.numbers[k]) as u64);
            r.numbers[k] = *slot;
        }
        previous.lines[kind] = previous.lines[kind].wrapping_add(unzigzag(r.numbers[line]) as u64);
        r.numbers[line] = previous.lines[kind];
    }
    Ok(())
}

/// The Service-level facts of both readings in one list, each with the readings it belongs to
/// (1: the iptables model's, 2: the catalogue's, 3: both): the two list alike facts in alike
/// order, and a fact both hold is written once.
fn merged<'f>(
    model: &'f [LocalFact],
    catalog: &'f [LocalFact],
    empty: Option<u32>,
) -> Vec<Merged<'f>> {
    let one = |fact, lists| Merged {
        fact,
        lists,
        blank_chain: false,
        catalog_line: None,
    };
    let mut out = Vec::with_capacity(model.len().max(catalog.len()));
    let (mut i, mut j) = (0, 0);
    while i < model.len() || j < catalog.len() {
        match (model.get(i), catalog.get(j)) {
            (Some(m), Some(c)) if let Some(blank_chain) = alike(m, c, empty) => {
                out.push(Merged {
                    fact: m,
                    lists: 3,
                    blank_chain,
                    catalog_line: (c.line != m.line).then_some(c.line),
                });
                i += 1;
                j += 1;
            }
            (m, c) => {
                if let Some(m) = m {
                    out.push(one(m, 1));
                    i += 1;
                }
                if let Some(c) = c {
                    out.push(one(c, 2));
                    j += 1;
                }
            }
        }
    }
    out
}

/// A Service-level fact as written: in one reading or both, with what the catalogue's copy
/// reads differently (its endpoint's chain blank, its line).
struct Merged<'f> {
    fact: &'f LocalFact,
    lists: u64,
    blank_chain: bool,
    catalog_line: Option<u32>,
}

/// Whether the catalogue's fact `c` is the model's `m` read without a rule, up to its line and
/// an endpoint's chain (which the catalogue leaves blank); then whether the chain is blanked.
fn alike(m: &LocalFact, c: &LocalFact, empty: Option<u32>) -> Option<bool> {
    if c.by_rule || c.value != m.value || c.expected != m.expected {
        return None;
    }
    if c.subject == m.subject {
        return Some(false);
    }
    match (m.subject, c.subject) {
        (
            SubjectOf::Endpoint {
                service,
                destination,
                ..
            },
            SubjectOf::Endpoint {
                service: s,
                chain,
                destination: d,
            },
        ) if service == s && destination == d && Some(chain) == empty => Some(true),
        _ => None,
    }
}

fn raw_list(list: &[LocalFact], names: &mut AddressNames) -> Vec<RawFact> {
    list.iter().map(|f| RawFact::of(f, names)).collect()
}

impl RawFact {
    fn extend(&mut self, values: &[u64]) {
        values.iter().for_each(|&v| self.push(v));
    }

    fn push(&mut self, v: u64) {
        if let Some(slot) = self.numbers.get_mut(self.len as usize) {
            *slot = v;
            self.len += 1;
        }
    }

    fn of(f: &LocalFact, names: &mut AddressNames) -> RawFact {
        let mut r = RawFact::default();
        let scope = scope_number;
        let s = |id: u32| u64::from(id);
        match f.subject {
            SubjectOf::Service { service } => r.extend(&[0, s(service)]),
            SubjectOf::ServiceChain { service, chain } => r.extend(&[1, s(service), s(chain)]),
            SubjectOf::Address {
                service,
                kind,
                address,
                protocol,
                port,
            } => {
                r.push(2);
                r.push(s(service));
                r.push(match kind {
                    AddressKind::ClusterIp => 0,
                    AddressKind::ExternalIp => 1,
                    AddressKind::LoadBalancerIp => 2,
                    AddressKind::NodePort => 3,
                });
                // An address is written as text among the names.
                r.push(opt(address.map(|a| u64::from(names.id(a)))));
                r.push(opt(protocol.map(s)));
                r.push(opt(port.map(u64::from)));
                return r.finish(f);
            }
            SubjectOf::NoEndpointsReject { service } => r.extend(&[3, s(service)]),
            SubjectOf::Endpoint {
                service,
                chain,
                destination,
            } => r.extend(&[4, s(service), s(chain), s(destination)]),
            SubjectOf::Weight {
                service,
                destination,
            } => r.extend(&[5, s(service), s(destination)]),
            SubjectOf::LocalEndpoint {
                service,
                destination,
            } => r.extend(&[6, s(service), s(destination)]),
            SubjectOf::NoLocalEndpointsDrop { service } => r.extend(&[7, s(service)]),
            SubjectOf::HookJump {
                table,
                hook,
                target,
                scope: sc,
            } => r.extend(&[8, s(table), s(hook), s(target), scope(sc)]),
            SubjectOf::Chain {
                table,
                chain,
                scope: sc,
            } => r.extend(&[9, s(table), s(chain), scope(sc)]),
            SubjectOf::Policy {
                table,
                chain,
                scope: sc,
            } => r.extend(&[10, s(table), s(chain), scope(sc)]),
            SubjectOf::ChainRules {
                table,
                chain,
                scope: sc,
            } => r.extend(&[11, s(table), s(chain), scope(sc)]),
        };
        r.finish(f)
    }

    fn finish(mut self, f: &LocalFact) -> RawFact {
        match f.value {
            ValueOf::Present => self.push(0),
            ValueOf::Flag(b) => self.extend(&[1, u64::from(b)]),
            ValueOf::Weight(w) => self.extend(&[2, u64::from(w)]),
            ValueOf::Text(t) => self.extend(&[3, u64::from(t)]),
            ValueOf::Digest { exact, masked } => self.extend(&[4, exact, masked]),
        }
        self.push(u64::from(f.line));
        let expected = match f.expected {
            None => 0,
            Some(Expected::LocalEndpoints) => 1,
            Some(Expected::NodeLocalChain) => 2,
            Some(Expected::NodeAddress) => 3,
        };
        self.push(u64::from(f.by_rule) | (expected << 1));
        self
    }

    /// The fact, its indexes checked against the names.
    fn fact(&self, strings: &[String]) -> Result<(LocalFact, Extra), SummaryError> {
        let damaged = |what: &str| SummaryError::Damaged(format!("a fact with {what}"));
        let n = &self.numbers[..self.len as usize];
        let kind = *n.first().ok_or_else(|| damaged("no fields"))?;
        let fields = subject_fields(kind).ok_or_else(|| damaged("an unknown kind"))?;
        let value_at = 1 + fields;
        let value_kind = *n.get(value_at).ok_or_else(|| damaged("too few fields"))?;
        let value_len = value_fields(value_kind).ok_or_else(|| damaged("an unknown value"))?;
        let line_at = value_at + 1 + value_len;
        let flags = *n
            .get(line_at + 1)
            .ok_or_else(|| damaged("too few fields"))?;
        let catalog_line = (flags >> 6) & 1 == 1;
        if n.len() != line_at + 2 + usize::from(catalog_line) {
            return Err(damaged("a wrong number of fields"));
        }
        let name = |v: u64| -> Result<u32, SummaryError> {
            if (v as usize) < strings.len() {
                Ok(v as u32)
            } else {
                Err(damaged("a name index out of range"))
            }
        };
        let scope =
            |v: u64| scope_of_number(v).ok_or_else(|| damaged("an unknown nftables layout"));
        let f = &n[1..value_at];
        let subject = match kind {
            0 => SubjectOf::Service {
                service: name(f[0])?,
            },
            1 => SubjectOf::ServiceChain {
                service: name(f[0])?,
                chain: name(f[1])?,
            },
            2 => SubjectOf::Address {
                service: name(f[0])?,
                kind: match f[1] {
                    0 => AddressKind::ClusterIp,
                    1 => AddressKind::ExternalIp,
                    2 => AddressKind::LoadBalancerIp,
                    3 => AddressKind::NodePort,
                    _ => return Err(damaged("an unknown address kind")),
                },
                address: match f[2] {
                    0 => None,
                    v => Some(
                        strings[name(v - 1)? as usize]
                            .parse::<IpNet>()
                            .map_err(|_| damaged("a bad address"))?,
                    ),
                },
                protocol: match f[3] {
                    0 => None,
                    v => Some(name(v - 1)?),
                },
                port: match f[4] {
                    0 => None,
                    v => Some(u16::try_from(v - 1).map_err(|_| damaged("a bad port"))?),
                },
            },
            3 => SubjectOf::NoEndpointsReject {
                service: name(f[0])?,
            },
            4 => SubjectOf::Endpoint {
                service: name(f[0])?,
                chain: name(f[1])?,
                destination: name(f[2])?,
            },
            5 => SubjectOf::Weight {
                service: name(f[0])?,
                destination: name(f[1])?,
            },
            6 => SubjectOf::LocalEndpoint {
                service: name(f[0])?,
                destination: name(f[1])?,
            },
            7 => SubjectOf::NoLocalEndpointsDrop {
                service: name(f[0])?,
            },
            8 => SubjectOf::HookJump {
                table: name(f[0])?,
                hook: name(f[1])?,
                target: name(f[2])?,
                scope: scope(f[3])?,
            },
            9 => SubjectOf::Chain {
                table: name(f[0])?,
                chain: name(f[1])?,
                scope: scope(f[2])?,
            },
            10 => SubjectOf::Policy {
                table: name(f[0])?,
                chain: name(f[1])?,
                scope: scope(f[2])?,
            },
            _ => SubjectOf::ChainRules {
                table: name(f[0])?,
                chain: name(f[1])?,
                scope: scope(f[2])?,
            },
        };
        let v = &n[value_at + 1..value_at + 1 + value_len];
        let value = match value_kind {
            0 => ValueOf::Present,
            1 => ValueOf::Flag(v[0] != 0),
            2 => ValueOf::Weight(u32::try_from(v[0]).map_err(|_| damaged("a bad weight"))?),
            3 => ValueOf::Text(name(v[0])?),
            _ => ValueOf::Digest {
                exact: v[0],
                masked: v[1],
            },
        };
        let line = u32::try_from(n[line_at]).map_err(|_| damaged("a bad line"))?;
        let fact = LocalFact {
            subject,
            value,
            line,
            by_rule: flags & 1 == 1,
            expected: match (flags >> 1) & 3 {
                1 => Some(Expected::LocalEndpoints),
                2 => Some(Expected::NodeLocalChain),
                3 => Some(Expected::NodeAddress),
                _ => None,
            },
        };
        let extra = Extra {
            flags,
            catalog_line: catalog_line.then(|| n[line_at + 2]),
        };
        Ok((fact, extra))
    }
}

/// The generations, by position (a scope's number is one more than its position).
const GENERATIONS: [&str; 7] = [
    "none",
    "alpha",
    "post-dnat-filter",
    "pre-dnat-filter",
    "inline-masquerade",
    "direct-dnat",
    "unrecognised",
];

/// The names of a document being written: the node's, then the addresses of its facts.
struct AddressNames {
    strings: Vec<String>,
    ids: rustc_hash::FxHashMap<IpNet, u32>,
}

impl AddressNames {
    fn id(&mut self, net: IpNet) -> u32 {
        *self.ids.entry(net).or_insert_with(|| {
            self.strings.push(net.to_string());
            (self.strings.len() - 1) as u32
        })
    }
}

impl Serialize for RawFact {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len as usize))?;
        for v in &self.numbers[..self.len as usize] {
            seq.serialize_element(v)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for RawFact {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Numbers;
        impl<'de> Visitor<'de> for Numbers {
            type Value = RawFact;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of at most 11 integers")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawFact, A::Error> {
                let mut r = RawFact::default();
                while let Some(v) = seq.next_element::<u64>()? {
                    if r.len as usize == r.numbers.len() {
                        return Err(de::Error::custom("a fact of more than 11 integers"));
                    }
                    r.push(v);
                }
                Ok(r)
            }
        }
        deserializer.deserialize_seq(Numbers)
    }
}
