//! `rulelint trace`: where a packet goes on each node, and why.

use crate::{EXIT_INPUT, load_all, write_json};
use rulelint_lint::ipvs::check::read_ipvs;
use rulelint_lint::source::{Section, SectionKind, sections};
use rulelint_lint::trace::nft::{NftTraceNode, trace_nft};
use rulelint_lint::trace::{
    Affinity, ConnState, Origin, PacketFields, PacketSpec, TraceNode, report, trace,
};
use std::io::{self, Write};

/// Output formats.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// The summary line, the inputs, and every outcome with its path.
    Human,
    /// The stable JSON document (format version 1, documented in the README).
    Json,
}

/// `--from`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum From {
    /// A pod on this node (enters at PREROUTING).
    Pod,
    /// Another machine (enters at PREROUTING).
    Outside,
    /// The node itself (leaves through OUTPUT).
    Host,
}

/// `--state`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum State {
    /// The first packet of a connection: the nat tables run.
    New,
    /// A packet of a known connection: the nat tables do not run.
    Established,
}

/// `--affinity`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum AffinityFlag {
    /// The source is in a session-affinity list (a returning client): each list forks, paths
    /// on which none holds it are left out.
    Hit,
    /// No session-affinity list holds the source (a first connection): `recent --rcheck`
    /// fails and the random balancing decides.
    Miss,
}

/// The flags of `rulelint trace`.
#[derive(clap::Args)]
pub struct TraceArgs {
    /// Dump files (one per node); `-` reads standard input; `.gz` files are decompressed.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Destination: `IP`, `IP:PORT`, `[IPv6]:PORT`.
    #[arg(long, value_name = "IP[:PORT]")]
    pub dst: String,
    /// Protocol: tcp, udp, sctp, icmp, icmpv6 or a number [default: tcp].
    #[arg(long, value_name = "PROTO")]
    pub proto: Option<String>,
    /// Source: `IP` or `IP:PORT` [default: a pod address for `--from pod`, an outside address
    /// for `--from outside`, the node's address for `--from host`].
    #[arg(long, value_name = "IP[:PORT]")]
    pub src: Option<String>,
    /// Where the packet comes from: which hooks it passes [default: pod].
    #[arg(long, value_enum)]
    pub from: Option<From>,
    /// Input interface (unknown when not given: rules matching `-i` fork).
    #[arg(long = "in", value_name = "IFACE")]
    pub in_interface: Option<String>,
    /// Output interface (unknown when not given: rules matching `-o` fork).
    #[arg(long = "out", value_name = "IFACE")]
    pub out_interface: Option<String>,
    /// Conntrack state [default: new].
    #[arg(long, value_enum)]
    pub state: Option<State>,
    /// An address of the node (repeatable). With it, other addresses are taken as not the
    /// node's; without it, only what the dump shows is.
    #[arg(long = "node-ip", value_name = "IP")]
    pub node_ip: Vec<String>,
    /// What the session-affinity lists (`-m recent`, `sessionAffinity: ClientIP`) hold for the
    /// source [default: unknown: each `recent --rcheck` forks, labelled].
    #[arg(long, value_enum)]
    pub affinity: Option<AffinityFlag>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// Reads the flags into a packet spec; the error is the message for stderr.
fn spec(args: &TraceArgs) -> Result<PacketSpec, String> {
    PacketFields {
        dst: args.dst.clone(),
        src: args.src.clone(),
        proto: args.proto.clone(),
        from: args.from.map(|f| match f {
            From::Pod => Origin::Pod,
            From::Outside => Origin::Outside,
            From::Host => Origin::Host,
        }),
        in_interface: args.in_interface.clone(),
        out_interface: args.out_interface.clone(),
        state: args.state.map(|s| match s {
            State::New => ConnState::New,
            State::Established => ConnState::Established,
        }),
        node_ips: args.node_ip.clone(),
        affinity: args.affinity.map(|a| match a {
            AffinityFlag::Hit => Affinity::Hit,
            AffinityFlag::Miss => Affinity::Miss,
        }),
    }
    .spec(|field| format!("--{field}"))
}

/// Runs `rulelint trace`.
pub fn run(args: &TraceArgs, out: &mut impl Write) -> io::Result<u8> {
    let spec = match spec(args) {
        Ok(s) => s,
        Err(message) => {
            eprintln!("rulelint: {message}");
            return Ok(EXIT_INPUT);
        }
    };
    let loaded = match load_all(&args.files) {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    // Each dump through the parser of its kind: an nftables ruleset (`nft list ruleset` even
    // beside iptables-save text; `nft -j list ruleset` or kube-proxy's `add ...` transaction
    // alone) through the nftables walk, else iptables-save. Each text's store of the strings
    // its nft JSON escapes.
    let strings: Vec<rulelint_nft::Strings> = loaded
        .iter()
        .map(|_| rulelint_nft::Strings::new())
        .collect();
    let mut dumps = Vec::with_capacity(loaded.len());
    let mut failed = false;
    // Of each iptables-save file, the IPVS-mode state beside its rules (ipsets, `ip addr`,
    // `ipvsadm`), read as the IPVS lints read it.
    let mut states = Vec::with_capacity(loaded.len());
    for (l, strings) in loaded.iter().zip(&strings) {
        let (kind, parts) = dump_kind(&l.name, &l.text);
        states.push(match kind {
            DumpKind::Iptables => read_ipvs(&l.text, &parts).map(|(ipvs, _)| ipvs),
            _ => None,
        });
        match kind {
            DumpKind::Nft => {
                let parsed = rulelint_nft::parse(&l.text);
                if parsed.ruleset.chains.is_empty() {
                    eprintln!("rulelint: `{}` holds no nftables chain", l.name);
                    failed = true;
                }
                dumps.push(Parsed::Nft(parsed));
            }
            DumpKind::NftOtherForm => {
                let (_, parsed) = rulelint_nft::parse_any(&l.text, strings);
                if parsed.ruleset.chains.is_empty() {
                    eprintln!("rulelint: `{}` holds no nftables chain", l.name);
                    failed = true;
                }
                dumps.push(Parsed::Nft(parsed));
            }
            DumpKind::Iptables => {
                let parsed = rulelint_parser::parse(&l.text);
                if parsed.has_no_content() {
                    match crate::other_backend(&l.text) {
                        // IPVS state alone: the rules a packet crosses are iptables-save's.
                        Some(what) => eprintln!(
                            "rulelint: `{}` holds {what} but no iptables-save rules: the trace \
                             walks the node's iptables-save output (in one file with its IPVS state)",
                            l.name
                        ),
                        None => eprintln!("rulelint: `{}` holds {}", l.name, crate::NO_RULESET),
                    }
                    failed = true;
                }
                dumps.push(Parsed::Iptables(parsed));
            }
        }
    }
    if failed {
        return Ok(EXIT_INPUT);
    }
    let names = crate::diff::node_names(&loaded.iter().collect::<Vec<_>>());
    let mut docs = Vec::with_capacity(loaded.len());
    for (((l, p), name), state) in loaded.iter().zip(&dumps).zip(names).zip(states) {
        match p {
            Parsed::Iptables(p) => {
                let name =
                    rulelint_lint::diff::declared_name(&p.ruleset).map_or(name, str::to_string);
                let mut node = TraceNode::new(name, &p.ruleset);
                if let Some(ipvs) = state {
                    node = node.with_file_state(ipvs);
                }
                let result = trace(&node, &spec);
                docs.push(report::node_doc(&node, &l.name, &result));
            }
            Parsed::Nft(p) => {
                let node = NftTraceNode::new(name, &p.ruleset);
                let result = trace_nft(&node, &spec);
                docs.push(report::node_doc(&node, &l.name, &result));
            }
        }
    }
    let doc = report::document(docs);
    match args.format {
        Format::Json => write_json(out, &doc)?,
        Format::Human => out.write_all(report::human(&doc).as_bytes())?,
    }
    Ok(0)
}

/// A dump parsed by the parser of its kind. (One per traced node, moved once: the size of the
/// iptables variant does not matter.)
#[allow(clippy::large_enum_variant)]
enum Parsed<'a> {
    Iptables(rulelint_parser::Parsed<'a>),
    Nft(rulelint_nft::Parsed<'a>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum DumpKind {
    Iptables,
    /// `nft list ruleset` text.
    Nft,
    /// `nft -j list ruleset` or an `add ...` transaction, alone in its file.
    NftOtherForm,
}

/// Which walk reads a file: nftables when it holds an `nft list ruleset` listing (even beside
/// iptables-save text, which is then left out and said so), or nft JSON or an `add ...`
/// transaction without iptables-save text; iptables-save otherwise. With the file's sections.
fn dump_kind(name: &str, text: &str) -> (DumpKind, Vec<Section>) {
    let parts = sections(text);
    let kind = kind_of(name, &parts);
    (kind, parts)
}

fn kind_of(name: &str, parts: &[Section]) -> DumpKind {
    let kinds: Vec<SectionKind> = parts.iter().map(|s| s.kind).collect();
    let nft = kinds.contains(&SectionKind::Nft);
    if nft {
        if kinds.contains(&SectionKind::Iptables) {
            eprintln!(
                "rulelint: `{name}` holds both iptables-save and nft text: the trace walks the \
                 nftables listing only"
            );
        }
        return DumpKind::Nft;
    }
    // nft JSON or an `add ...` transaction without iptables-save text: through `parse_any`,
    // which reads either into the model of a listing.
    if kinds
        .iter()
        .any(|k| matches!(k, SectionKind::NftJson | SectionKind::NftTransaction))
        && !kinds.contains(&SectionKind::Iptables)
    {
        return DumpKind::NftOtherForm;
    }
    DumpKind::Iptables
}
