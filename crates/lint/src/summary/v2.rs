//! Node summary format version 2: the facts as text in chunks, each chunk a gzip member of its
//! own, so that a reader of thousands of summaries skips, without inflating them, the chunks it
//! has already read from another node (nodes of a cluster share nearly all their facts).
//!
//! The file is a series of gzip members (RFC 1952; `zcat` shows the text). Each member's
//! header carries an extra field with the subfield `RL` (5 bytes: the member's length in bytes,
//! little-endian `u32`, then its part: 0 header, 1 Service facts, 2 chain facts, 3 lines), so
//! that members are found without inflating them, as in BGZF. The first member is the header:
//! one line of JSON (`format`, `format_version: 2`, `node`, `digests`, `has_model`,
//! `has_catalog`, `extra_endpoint_ips`). Then come pairs of members: a chunk of facts
//! (`@services` or `@chains`, then one fact a line) and its lines (`@lines`, then one line a
//! fact). A fact is tab-separated: the subject's kind and fields (names as text, `\-` for
//! none), the value (`p` present, `f0`/`f1` a flag, `wN` a weight, `tNAME` a text, `dHEX.HEX`
//! a digest) and the flags (bit 0: a rule shows it; bits 1-2: why healthy nodes may differ in
//! it; bits 3-4, Service facts only: read by the iptables model (1), the catalogue (2) or both;
//! bit 5: the catalogue reads the endpoint's chain as the empty name). Names escape `\`, tab,
//! CR and LF as `\\`, `\t`, `\r`, `\n`; a field longer than two bytes that repeats one of
//! the two facts above is written `\"` (the same field of the fact above) or `\K` (the K-th
//! field of the fact above, then of the one before). A line of `@lines` is the dump line that
//! shows the fact, as the difference from the last line given (`-` for none), and, when the
//! catalogue reads the fact at another line, `,` and that line's difference from the fact's.
//!
//! Chunks are cut where the content says (before a Service port, or a chain, whose name hashes
//! to 0 modulo a constant), not by count, so a fact more or less on one node changes one chunk
//! only; facts that differ between healthy nodes by design (local endpoints, per-pod chains)
//! are chunked apart, and lines (which differ between nodes with the order of their rules)
//! live in members of their own, inflated only for the facts a report shows.

use super::{FORMAT, Merged, NodeDoc, SummaryError, merged, scope_number, scope_of_number};
use crate::diff::facts::{SubjectOf, ValueOf};
use crate::diff::group::{LocalFactOf, NodeFacts, NodeInfo};
use crate::diff::{Expected, NodeBackend};
use crate::kube::AddressKind;
use flate2::write::DeflateEncoder;
use flate2::{Compression, Crc};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::ops::Range;

/// The format version this module writes and reads.
pub const VERSION: u32 = 2;

/// The bytes of a member's gzip header: 10 fixed, 2 of extra length, 9 of the `RL` subfield.
const HEADER_LEN: usize = 21;
/// A member inflates to at most this much text (a damaged or hostile length stops here).
const MEMBER_LIMIT: u64 = 256 << 20;
/// A chunk is cut before a Service port (or chain) whose name hashes to 0 modulo this.
const CUT: u64 = 256;
/// Chunks of facts cut by count (facts that differ by node) hold at most this many.
const LOCAL_CHUNK: usize = 4096;

/// What a member holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// The node and what was read of it.
    Header,
    /// Service-level facts.
    Services,
    /// Chain-level facts.
    Chains,
    /// The lines of the facts of the member before.
    Lines,
}

impl Part {
    fn code(self) -> u8 {
        match self {
            Part::Header => 0,
            Part::Services => 1,
            Part::Chains => 2,
            Part::Lines => 3,
        }
    }

    fn of(code: u8) -> Option<Part> {
        Some(match code {
            0 => Part::Header,
            1 => Part::Services,
            2 => Part::Chains,
            3 => Part::Lines,
            _ => return None,
        })
    }

    fn tag(self) -> &'static str {
        match self {
            Part::Header => "",
            Part::Services => "@services\n",
            Part::Chains => "@chains\n",
            Part::Lines => "@lines\n",
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: String,
    format_version: u32,
    node: NodeDoc,
    digests: bool,
    has_model: bool,
    has_catalog: bool,
    extra_endpoint_ips: Vec<IpAddr>,
}

/// A version 2 summary as read from its file: the header read, the chunks found but not
/// inflated.
#[derive(Debug)]
pub struct Summary {
    bytes: Vec<u8>,
    /// What the report says about the node.
    pub info: NodeInfo,
    /// Whether chain digests were collected.
    pub digests: bool,
    /// Whether the iptables model's Service facts are there.
    pub has_model: bool,
    /// Whether the catalogue's Service facts are there.
    pub has_catalog: bool,
    /// Pod IPs the node DNATs to that no endpoint fact names.
    pub extra_endpoint_ips: Vec<IpAddr>,
    chunks: Vec<(Part, Range<usize>, Range<usize>)>,
}

/// A chunk of a summary: its facts and their lines, each a whole gzip member.
#[derive(Clone, Copy, Debug)]
pub struct Chunk<'s> {
    /// [`Part::Services`] or [`Part::Chains`].
    pub part: Part,
    /// The member of the facts.
    pub facts: &'s [u8],
    /// The member of their lines.
    pub lines: &'s [u8],
    /// Where the lines member starts in the file.
    pub lines_at: usize,
}

/// A fact of a chunk as read, its line not yet known.
#[derive(Clone, Debug)]
pub struct ChunkFact<'t> {
    /// The fact, its line 0.
    pub fact: LocalFactOf<Cow<'t, str>>,
    /// Service facts: read by the iptables model (1), the catalogue (2), both (3); chains: 0.
    pub lists: u8,
    /// The catalogue reads the endpoint's chain as the empty name.
    pub blank_chain: bool,
}

/// Whether bytes start a version 2 summary (by content: a gzip member with the `RL` header
/// field of a header part).
pub fn is_v2(head: &[u8]) -> bool {
    member_head(head).is_some_and(|(part, _)| part == Part::Header)
}

/// The part and length of the member at the start of `b`.
fn member_head(b: &[u8]) -> Option<(Part, usize)> {
    if b.len() < HEADER_LEN || b[..4] != [0x1f, 0x8b, 8, 4] {
        return None;
    }
    let u16_at = |i: usize| usize::from(u16::from_le_bytes([b[i], b[i + 1]]));
    if u16_at(10) != 9 || &b[12..14] != b"RL" || u16_at(14) != 5 {
        return None;
    }
    let len = u32::from_le_bytes([b[16], b[17], b[18], b[19]]) as usize;
    Some((Part::of(b[20])?, len))
}

/// A gzip member of `text`, its length and part in the header.
fn member(part: Part, text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    Members::new().write(part, text, &mut out);
    out
}

/// Writes gzip members with one deflate state, reset between them: a fresh state per member
/// (its tables allocated and zeroed) cost a third as much as compressing the member did. A
/// reset state compresses as a new one does, byte for byte.
struct Members {
    encoder: DeflateEncoder<Vec<u8>>,
    spare: Vec<u8>,
}

impl Members {
    fn new() -> Members {
        Members {
            encoder: DeflateEncoder::new(Vec::new(), Compression::default()),
            spare: Vec::new(),
        }
    }

    /// Appends the member of `text` to `out`.
    fn write(&mut self, part: Part, text: &str, out: &mut Vec<u8>) {
        // Writing to a Vec does not fail.
        let _ = self.encoder.write_all(text.as_bytes());
        let mut deflated = self
            .encoder
            .reset(std::mem::take(&mut self.spare))
            .unwrap_or_default();
        let mut crc = Crc::new();
        crc.update(text.as_bytes());
        let len = (HEADER_LEN + deflated.len() + 8) as u32;
        out.reserve(len as usize);
        // No file name, no time: the same text gives the same bytes on every node.
        out.extend_from_slice(&[0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 255]);
        out.extend_from_slice(&9u16.to_le_bytes());
        out.extend_from_slice(b"RL");
        out.extend_from_slice(&5u16.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.push(part.code());
        out.extend_from_slice(&deflated);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        deflated.clear();
        self.spare = deflated;
    }
}

/// The text of a member, checked against its checksum and its part.
pub fn inflate(member: &[u8], part: Part) -> Result<String, SummaryError> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(member)
        .take(MEMBER_LIMIT)
        .read_to_string(&mut text)
        .map_err(|e| SummaryError::Damaged(format!("a part does not inflate: {e}")))?;
    if text.len() as u64 >= MEMBER_LIMIT {
        return Err(SummaryError::Damaged("a part too large".into()));
    }
    if !text.starts_with(part.tag()) {
        return Err(SummaryError::Damaged("a part of another kind".into()));
    }
    text.drain(..part.tag().len());
    Ok(text)
}

impl Summary {
    /// Finds the members of a summary file and reads its header.
    pub fn parse(bytes: Vec<u8>) -> Result<Summary, SummaryError> {
        let mut members = Vec::new();
        let mut at = 0usize;
        while at < bytes.len() {
            let (part, len) = member_head(&bytes[at..])
                .ok_or_else(|| SummaryError::Damaged("a part without its length".into()))?;
            if len < HEADER_LEN + 8 || len > bytes.len() - at {
                return Err(SummaryError::Damaged("a part of a wrong length".into()));
            }
            members.push((part, at..at + len));
            at += len;
        }
        let Some((Part::Header, first)) = members.first().cloned() else {
            return Err(SummaryError::Damaged("no header".into()));
        };
        let header = read_header(&inflate(&bytes[first], Part::Header)?)?;
        let mut chunks = Vec::new();
        let mut rest = members[1..].iter();
        while let Some((part, facts)) = rest.next() {
            let (Part::Services | Part::Chains, Some((Part::Lines, lines))) = (part, rest.next())
            else {
                return Err(SummaryError::Damaged("facts without their lines".into()));
            };
            chunks.push((*part, facts.clone(), lines.clone()));
        }
        Ok(Summary {
            bytes,
            info: header.0,
            digests: header.1.digests,
            has_model: header.1.has_model,
            has_catalog: header.1.has_catalog,
            extra_endpoint_ips: header.1.extra_endpoint_ips,
            chunks,
        })
    }

    /// The chunks, in the order written.
    pub fn chunks(&self) -> impl Iterator<Item = Chunk<'_>> + '_ {
        self.chunks.iter().map(|(part, facts, lines)| Chunk {
            part: *part,
            facts: &self.bytes[facts.clone()],
            lines: &self.bytes[lines.clone()],
            lines_at: lines.start,
        })
    }

    /// Bytes of the file.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the file is empty (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Every fact, inflated and read: the summary as [`NodeFacts`].
    pub fn to_facts(&self) -> Result<NodeFacts, SummaryError> {
        let mut parts = Vec::new();
        for chunk in self.chunks() {
            parts.push((
                chunk.part,
                inflate(chunk.facts, chunk.part)?,
                inflate(chunk.lines, Part::Lines)?,
            ));
        }
        let mut strings = Strings::default();
        let (mut services, mut catalog, mut chains) = (Vec::new(), Vec::new(), Vec::new());
        for (part, facts, lines) in &parts {
            let facts = decode_facts(facts, *part)?;
            let lines = decode_lines(lines, facts.len())?;
            for (f, (line, catalog_line)) in facts.into_iter().zip(lines) {
                for (to, fact) in split(f, line, catalog_line) {
                    let fact = fact.map(|s| strings.id(&s));
                    match (part, to) {
                        (Part::Chains, _) => chains.push(fact),
                        (_, List::Model) => services.push(fact),
                        (_, List::Catalog) => catalog.push(fact),
                    }
                }
            }
        }
        Ok(NodeFacts {
            info: self.info.clone(),
            strings: strings.list,
            services: self.has_model.then_some(services),
            catalog: self.has_catalog.then_some(catalog),
            chains,
            digests: self.digests,
            extra_endpoint_ips: self.extra_endpoint_ips.clone(),
        })
    }
}

/// Which list of a node a Service fact goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum List {
    /// The iptables model's.
    Model,
    /// The backend-neutral catalogue's.
    Catalog,
}

/// A fact of a chunk as the lists read it: the model's as written, the catalogue's without a
/// rule, at its own line and with its endpoint's chain blank when so flagged.
pub fn split<'t>(
    f: ChunkFact<'t>,
    line: u32,
    catalog_line: u32,
) -> impl Iterator<Item = (List, LocalFactOf<Cow<'t, str>>)> {
    let model = (f.lists == 0 || f.lists & 1 == 1).then(|| LocalFactOf {
        line,
        ..f.fact.clone()
    });
    let catalog = (f.lists & 2 == 2).then(|| {
        let mut subject = f.fact.subject;
        if f.blank_chain
            && let SubjectOf::Endpoint { chain, .. } = &mut subject
        {
            *chain = Cow::Borrowed("");
        }
        LocalFactOf {
            subject,
            line: catalog_line,
            by_rule: false,
            ..f.fact
        }
    });
    model
        .map(|m| (List::Model, m))
        .into_iter()
        .chain(catalog.map(|c| (List::Catalog, c)))
}

/// A table of names for [`Summary::to_facts`].
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    ids: rustc_hash::FxHashMap<String, u32>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        self.list.push(s.to_string());
        let id = (self.list.len() - 1) as u32;
        self.ids.insert(s.to_string(), id);
        id
    }
}

fn read_header(text: &str) -> Result<(NodeInfo, Header), SummaryError> {
    let header: Header = serde_json::from_str(text.trim_end())?;
    if header.format != FORMAT {
        return Err(SummaryError::Damaged(format!("format `{}`", header.format)));
    }
    if header.format_version != VERSION {
        return Err(SummaryError::Version(header.format_version));
    }
    let info = super::node_info(&header.node)?;
    Ok((info, header))
}

/// Reads the text of a version 2 summary as `zcat` prints it (standard input, a pair of
/// summaries read whole).
pub fn from_text(text: &str) -> Result<NodeFacts, SummaryError> {
    let (head, mut rest) = text.split_once('\n').unwrap_or((text, ""));
    // Rebuilt as members: one reader for both ways in (it reads the header).
    let mut bytes = member(Part::Header, &format!("{head}\n"));
    while !rest.is_empty() {
        let part = [Part::Services, Part::Chains, Part::Lines]
            .into_iter()
            .find(|p| rest.starts_with(p.tag()))
            .ok_or_else(|| SummaryError::Damaged("text outside a part".into()))?;
        let body = &rest[part.tag().len()..];
        let end = body.find("\n@").map_or(body.len(), |e| e + 1);
        bytes.extend(member(part, &format!("{}{}", part.tag(), &body[..end])));
        rest = &body[end..];
    }
    Summary::parse(bytes)?.to_facts()
}

/// The facts of a chunk's text (the member inflated, its tag removed).
pub fn decode_facts(text: &str, part: Part) -> Result<Vec<ChunkFact<'_>>, SummaryError> {
    let mut out = Vec::new();
    // The fields of the two lines before, for references to them.
    let (mut before, mut last): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let damaged =
            || SummaryError::Damaged(format!("a fact that does not read: `{}`", cut(line)));
        let mut fields: Vec<&str> = Vec::with_capacity(8);
        for (i, raw) in line.split('\t').enumerate() {
            fields.push(match reference(raw) {
                None => raw,
                Some(Reference::Above) => last.get(i).copied().ok_or_else(damaged)?,
                Some(Reference::Recent(k)) => last
                    .iter()
                    .chain(&before)
                    .nth(k)
                    .copied()
                    .ok_or_else(damaged)?,
            });
        }
        out.push(decode_fact(&fields, part).ok_or_else(damaged)?);
        before = std::mem::replace(&mut last, fields);
    }
    Ok(out)
}

/// A field that stands for a field of the line above (`\"`, the same position) or of the two
/// lines above (`\K`, the K-th of their fields, the line above first).
enum Reference {
    Above,
    Recent(usize),
}

fn reference(raw: &str) -> Option<Reference> {
    let rest = raw.strip_prefix('\\')?;
    if rest == "\"" {
        return Some(Reference::Above);
    }
    if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
        return rest.parse().ok().map(Reference::Recent);
    }
    None
}

/// Writes a fact's fields, those that repeat a longer field of the two lines above as
/// references to it: a chunk's facts repeat their Service, chain and endpoint names, and
/// references leave deflate less to encode (a summary is a sixth smaller).
fn put_with_references(out: &mut String, line: &str, recent: &mut Recent) {
    let Recent {
        current,
        last,
        before,
    } = recent;
    current.set(line);
    for (i, f) in current.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        if f.len() <= 2 {
            out.push_str(f);
        } else if last.get(i) == Some(f) {
            out.push_str("\\\"");
        } else if let Some(k) = last.iter().chain(before.iter()).position(|o| o == f) {
            out.push('\\');
            out.push_str(itoa::Buffer::new().format(k));
        } else {
            out.push_str(f);
        }
    }
    out.push('\n');
    // The fact becomes the last, the last the one before; the buffers go round.
    std::mem::swap(last, before);
    std::mem::swap(current, last);
}

/// The fields of the two facts written last in a chunk, which a fact's fields may refer to;
/// kept in buffers reused fact after fact (a `String` per field was a third of the writing).
#[derive(Default)]
struct Recent {
    current: Fields,
    last: Fields,
    before: Fields,
}

impl Recent {
    /// Forgets both facts (a chunk's first fact refers to none).
    fn clear(&mut self) {
        self.last.set_none();
        self.before.set_none();
    }
}

/// A fact's line and where each of its tab-separated fields is.
#[derive(Default)]
struct Fields {
    line: String,
    ends: Vec<usize>,
}

impl Fields {
    fn set(&mut self, line: &str) {
        self.set_none();
        self.line.push_str(line);
        // A byte loop: fields are a few bytes, too short for `split`'s search to pay.
        for (i, b) in line.bytes().enumerate() {
            if b == b'\t' {
                self.ends.push(i);
            }
        }
        self.ends.push(line.len());
    }

    fn set_none(&mut self) {
        self.line.clear();
        self.ends.clear();
    }

    fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] + 1 };
        Some(&self.line[start..end])
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.ends.len()).filter_map(|i| self.get(i))
    }
}

fn cut(line: &str) -> &str {
    let end = (0..=line.len().min(80))
        .rev()
        .find(|&i| line.is_char_boundary(i))
        .unwrap_or(0);
    &line[..end]
}

/// The lines of a chunk's facts: (the fact's line, the catalogue's line); 0 for none.
pub fn decode_lines(text: &str, count: usize) -> Result<Vec<(u32, u32)>, SummaryError> {
    let damaged = || SummaryError::Damaged("a line that does not read".into());
    let mut out = Vec::with_capacity(count);
    let mut last = 0i64;
    for l in text.lines() {
        let (own, catalog) = match l.split_once(',') {
            Some((o, c)) => (o, Some(c.parse::<i64>().map_err(|_| damaged())?)),
            None => (l, None),
        };
        let line = if own == "-" {
            0
        } else {
            let d = own.parse::<i64>().map_err(|_| damaged())?;
            last = last.checked_add(d).ok_or_else(damaged)?;
            last
        };
        let catalog_line = match catalog {
            Some(d) => line.checked_add(d).ok_or_else(damaged)?,
            None => line,
        };
        let fit = |v: i64| u32::try_from(v).map_err(|_| damaged());
        out.push((fit(line)?, fit(catalog_line)?));
    }
    if out.len() != count {
        return Err(SummaryError::Damaged(format!(
            "{} lines for {count} facts",
            out.len()
        )));
    }
    Ok(out)
}

fn unescape(field: &str) -> Option<Cow<'_, str>> {
    if !field.contains('\\') {
        return Some(Cow::Borrowed(field));
    }
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '\\' => '\\',
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            _ => return None,
        });
    }
    Some(Cow::Owned(out))
}

/// `\-` for none, else the name.
fn optional(field: &str) -> Option<Option<Cow<'_, str>>> {
    if field == "\\-" {
        Some(None)
    } else {
        unescape(field).map(Some)
    }
}

fn decode_fact<'t>(fields: &[&'t str], part: Part) -> Option<ChunkFact<'t>> {
    let mut fields = fields.iter().copied();
    let mut next = move || fields.next();
    let kind: u8 = next()?.parse().ok()?;
    fn name(f: Option<&str>) -> Option<Cow<'_, str>> {
        unescape(f?)
    }
    let scope = |f: Option<&str>| scope_of_number(f?.parse().ok()?);
    let subject = match kind {
        0 => SubjectOf::Service {
            service: name(next())?,
        },
        1 => SubjectOf::ServiceChain {
            service: name(next())?,
            chain: name(next())?,
        },
        2 => SubjectOf::Address {
            service: name(next())?,
            kind: match next()? {
                "0" => AddressKind::ClusterIp,
                "1" => AddressKind::ExternalIp,
                "2" => AddressKind::LoadBalancerIp,
                "3" => AddressKind::NodePort,
                _ => return None,
            },
            address: match optional(next()?)? {
                None => None,
                Some(a) => Some(a.parse::<IpNet>().ok()?),
            },
            protocol: optional(next()?)?,
            port: match optional(next()?)? {
                None => None,
                Some(p) => Some(p.parse::<u16>().ok()?),
            },
        },
        3 => SubjectOf::NoEndpointsReject {
            service: name(next())?,
        },
        4 => SubjectOf::Endpoint {
            service: name(next())?,
            chain: name(next())?,
            destination: name(next())?,
        },
        5 => SubjectOf::Weight {
            service: name(next())?,
            destination: name(next())?,
        },
        6 => SubjectOf::LocalEndpoint {
            service: name(next())?,
            destination: name(next())?,
        },
        7 => SubjectOf::NoLocalEndpointsDrop {
            service: name(next())?,
        },
        8 => SubjectOf::HookJump {
            table: name(next())?,
            hook: name(next())?,
            target: name(next())?,
            scope: scope(next())?,
        },
        9 => SubjectOf::Chain {
            table: name(next())?,
            chain: name(next())?,
            scope: scope(next())?,
        },
        10 => SubjectOf::Policy {
            table: name(next())?,
            chain: name(next())?,
            scope: scope(next())?,
        },
        11 => SubjectOf::ChainRules {
            table: name(next())?,
            chain: name(next())?,
            scope: scope(next())?,
        },
        _ => return None,
    };
    // Service-level facts in Service chunks, chain-level ones in chain chunks.
    if (kind >= 8) != (part == Part::Chains) {
        return None;
    }
    let value_field = next()?;
    let (tag, rest) = value_field.split_at_checked(1)?;
    let value = match tag {
        "p" if rest.is_empty() => ValueOf::Present,
        "f" => ValueOf::Flag(match rest {
            "0" => false,
            "1" => true,
            _ => return None,
        }),
        "w" => ValueOf::Weight(rest.parse().ok()?),
        "t" => ValueOf::Text(unescape(rest)?),
        "d" => {
            let (exact, masked) = rest.split_once('.')?;
            ValueOf::Digest {
                exact: u64::from_str_radix(exact, 16).ok()?,
                masked: u64::from_str_radix(masked, 16).ok()?,
            }
        }
        _ => return None,
    };
    let flags: u8 = next()?.parse().ok()?;
    if next().is_some() || flags >> 6 != 0 {
        return None;
    }
    let lists = (flags >> 3) & 3;
    let blank_chain = (flags >> 5) & 1 == 1;
    let service_part = part == Part::Services;
    if service_part == (lists == 0)
        || (blank_chain && !matches!(subject, SubjectOf::Endpoint { .. }))
    {
        return None;
    }
    Some(ChunkFact {
        fact: LocalFactOf {
            subject,
            value,
            line: 0,
            by_rule: flags & 1 == 1,
            expected: match (flags >> 1) & 3 {
                1 => Some(Expected::LocalEndpoints),
                2 => Some(Expected::NodeLocalChain),
                3 => Some(Expected::NodeAddress),
                _ => None,
            },
        },
        lists,
        blank_chain,
    })
}

/// The summary file of a node's facts.
pub fn write(facts: &NodeFacts) -> Vec<u8> {
    let header = Header {
        format: FORMAT.into(),
        format_version: VERSION,
        node: NodeDoc::of(&facts.info),
        digests: facts.digests,
        has_model: facts.services.is_some(),
        has_catalog: facts.catalog.is_some(),
        extra_endpoint_ips: facts.extra_endpoint_ips.clone(),
    };
    let mut chunks = ChunkWriter::default();
    let mut out = Vec::new();
    chunks.members.write(
        Part::Header,
        &format!("{}\n", serde_json::to_string(&header).unwrap_or_default()),
        &mut out,
    );
    let text = |id: u32| facts.strings.get(id as usize).map_or("", String::as_str);
    let empty = facts.strings.iter().position(String::is_empty);
    let services = merged(
        facts.services.as_deref().unwrap_or_default(),
        facts.catalog.as_deref().unwrap_or_default(),
        empty.map(|e| e as u32),
    );
    let chains: Vec<Merged<'_>> = facts
        .chains
        .iter()
        .map(|fact| Merged {
            fact,
            lists: 0,
            blank_chain: false,
            catalog_line: None,
        })
        .collect();
    for (part, list) in [(Part::Services, services), (Part::Chains, chains)] {
        // Facts that differ by node by design apart, so that the others' chunks are alike.
        let (local, shared): (Vec<_>, Vec<_>) =
            list.into_iter().partition(|m| m.fact.expected.is_some());
        let mut chunk: Vec<&Merged<'_>> = Vec::new();
        for m in &shared {
            let key = match m.fact.subject {
                SubjectOf::Service { service } => Some(text(service)),
                SubjectOf::Chain { chain, .. } | SubjectOf::ChainRules { chain, .. } => {
                    Some(text(chain))
                }
                SubjectOf::HookJump { hook, .. } => Some(text(hook)),
                _ => None,
            };
            if !chunk.is_empty() && key.is_some_and(|k| fnv(k).is_multiple_of(CUT)) {
                chunks.write(part, &chunk, &text, &mut out);
                chunk.clear();
            }
            chunk.push(m);
        }
        if !chunk.is_empty() {
            chunks.write(part, &chunk, &text, &mut out);
        }
        for piece in local.chunks(LOCAL_CHUNK) {
            let piece: Vec<&Merged<'_>> = piece.iter().collect();
            chunks.write(part, &piece, &text, &mut out);
        }
    }
    out
}

/// FNV-1a: a hash fixed by the format (chunk cuts must not move between versions of a
/// hasher crate).
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Writes chunks: the facts member and the lines member of each, with buffers and a deflate
/// state reused from chunk to chunk.
#[derive(Default)]
struct ChunkWriter {
    members: Members,
    facts: String,
    lines: String,
    fact: String,
    recent: Recent,
}

impl Default for Members {
    fn default() -> Members {
        Members::new()
    }
}

impl ChunkWriter {
    /// Appends the facts member and the lines member of a chunk to `out`.
    fn write<'s>(
        &mut self,
        part: Part,
        chunk: &[&Merged<'_>],
        text: &impl Fn(u32) -> &'s str,
        out: &mut Vec<u8>,
    ) {
        let ChunkWriter {
            members,
            facts,
            lines,
            fact,
            recent,
        } = self;
        facts.clear();
        facts.push_str(part.tag());
        lines.clear();
        lines.push_str(Part::Lines.tag());
        recent.clear();
        let mut last = 0i64;
        let mut digits = itoa::Buffer::new();
        for m in chunk {
            fact.clear();
            put_fact(fact, m, text);
            put_with_references(facts, fact.trim_end_matches('\n'), recent);
            let line = m.fact.line;
            if line == 0 {
                lines.push('-');
            } else {
                lines.push_str(digits.format(i64::from(line) - last));
                last = i64::from(line);
            }
            if let Some(c) = m.catalog_line {
                lines.push(',');
                lines.push_str(digits.format(i64::from(c) - i64::from(line)));
            }
            lines.push('\n');
        }
        members.write(part, facts, out);
        members.write(Part::Lines, lines, out);
    }
}

fn put_name(out: &mut String, s: &str) {
    if !s
        .bytes()
        .any(|b| matches!(b, b'\\' | b'\t' | b'\n' | b'\r'))
    {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

fn put_fact<'s>(out: &mut String, m: &Merged<'_>, text: &impl Fn(u32) -> &'s str) {
    let f = m.fact;
    let names = |out: &mut String, kind: u8, names: &[u32]| {
        put_number(out, kind);
        for &n in names {
            out.push('\t');
            put_name(out, text(n));
        }
    };
    match f.subject {
        SubjectOf::Service { service } => names(out, 0, &[service]),
        SubjectOf::ServiceChain { service, chain } => names(out, 1, &[service, chain]),
        SubjectOf::Address {
            service,
            kind,
            address,
            protocol,
            port,
        } => {
            names(out, 2, &[service]);
            let kind = match kind {
                AddressKind::ClusterIp => 0,
                AddressKind::ExternalIp => 1,
                AddressKind::LoadBalancerIp => 2,
                AddressKind::NodePort => 3,
            };
            out.push('\t');
            put_number(out, kind);
            out.push('\t');
            match address {
                Some(IpNet::V4(net)) => {
                    crate::diff::ipvs::push_ipv4(out, net.addr());
                    out.push('/');
                    put_number(out, net.prefix_len());
                }
                Some(a) => {
                    let _ = write!(out, "{a}");
                }
                None => out.push_str("\\-"),
            }
            out.push('\t');
            match protocol {
                Some(p) => put_name(out, text(p)),
                None => out.push_str("\\-"),
            }
            out.push('\t');
            match port {
                Some(p) => put_number(out, p),
                None => out.push_str("\\-"),
            }
        }
        SubjectOf::NoEndpointsReject { service } => names(out, 3, &[service]),
        SubjectOf::Endpoint {
            service,
            chain,
            destination,
        } => names(out, 4, &[service, chain, destination]),
        SubjectOf::Weight {
            service,
            destination,
        } => names(out, 5, &[service, destination]),
        SubjectOf::LocalEndpoint {
            service,
            destination,
        } => names(out, 6, &[service, destination]),
        SubjectOf::NoLocalEndpointsDrop { service } => names(out, 7, &[service]),
        SubjectOf::HookJump {
            table,
            hook,
            target,
            scope,
        } => {
            names(out, 8, &[table, hook, target]);
            out.push('\t');
            put_number(out, scope_number(scope));
        }
        SubjectOf::Chain {
            table,
            chain,
            scope,
        } => {
            names(out, 9, &[table, chain]);
            out.push('\t');
            put_number(out, scope_number(scope));
        }
        SubjectOf::Policy {
            table,
            chain,
            scope,
        } => {
            names(out, 10, &[table, chain]);
            out.push('\t');
            put_number(out, scope_number(scope));
        }
        SubjectOf::ChainRules {
            table,
            chain,
            scope,
        } => {
            names(out, 11, &[table, chain]);
            out.push('\t');
            put_number(out, scope_number(scope));
        }
    }
    out.push('\t');
    match f.value {
        ValueOf::Present => out.push('p'),
        ValueOf::Flag(b) => out.push_str(if b { "f1" } else { "f0" }),
        ValueOf::Weight(w) => {
            out.push('w');
            put_number(out, w);
        }
        ValueOf::Text(t) => {
            out.push('t');
            put_name(out, text(t));
        }
        ValueOf::Digest { exact, masked } => {
            let _ = write!(out, "d{exact:x}.{masked:x}");
        }
    }
    let expected = match f.expected {
        None => 0u8,
        Some(Expected::LocalEndpoints) => 1,
        Some(Expected::NodeLocalChain) => 2,
        Some(Expected::NodeAddress) => 3,
    };
    let flags = u8::from(f.by_rule)
        | (expected << 1)
        | ((m.lists as u8) << 3)
        | (u8::from(m.blank_chain) << 5);
    out.push('\t');
    put_number(out, flags);
    out.push('\n');
}

/// Appends a number in decimal, as `Display` writes it (a summary writes several a fact).
fn put_number(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// The backend of its name, among those this version knows.
pub(super) fn backend(name: &str) -> Option<NodeBackend> {
    Some(match name {
        "iptables" => NodeBackend::Iptables,
        "nftables" => NodeBackend::Nftables,
        "iptables+nftables" => NodeBackend::Both,
        "ipvs" => NodeBackend::Ipvs,
        "iptables+ipvs" => NodeBackend::IptablesIpvs,
        _ => return None,
    })
}
