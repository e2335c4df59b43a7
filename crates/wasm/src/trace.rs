//! The page's packet trace. [`Session`] holds each loaded dump as `check` read it (one parsed
//! copy per dump) and prepares a [`TraceNode`] on it at the first trace, so the page's traces
//! neither parse again nor prepare again. [`Tracer`] parses and prepares dumps given as text;
//! [`trace`](crate::trace) is the one-shot form. All answer with the JSON document of
//! `rulelint trace --format json` (format version 1), built by the same report module.

use crate::NodeText;
use rulelint_lint::Config;
use rulelint_lint::ipvs::check::read_ipvs;
use rulelint_lint::report::{CheckDocument, CheckedFile};
use rulelint_lint::source::SectionKind;
use rulelint_lint::source::{CheckedSource, check_source};
use rulelint_lint::trace::nft::{NftTraceNode, trace_nft};
use rulelint_lint::trace::{PacketFields, PacketSpec, TraceNode, report, trace as walk};
use rulelint_parser::Parsed;
use self_cell::self_cell;
use wasm_bindgen::prelude::*;

type ParsedList<'a> = Vec<Parsed<'a>>;

self_cell!(
    /// The dumps' texts and what the parser read from them (which borrows the texts).
    struct Dumps {
        owner: Vec<NodeText>,
        #[covariant]
        dependent: ParsedList,
    }
);

type NodeList<'a> = Vec<TraceNode<'a>>;

self_cell!(
    /// The parsed dumps and their trace nodes (which borrow the parsed rulesets).
    struct Prepared {
        owner: Dumps,
        #[covariant]
        dependent: NodeList,
    }
);

fn error(message: String) -> String {
    serde_json::json!({ "error": message }).to_string()
}

fn prepare(nodes: &str) -> Result<Prepared, String> {
    let inputs: Vec<NodeText> = serde_json::from_str(nodes)
        .map_err(|e| format!("expected a JSON array of {{name, text}}: {e}"))?;
    if inputs.is_empty() {
        return Err("trace needs at least one dump".into());
    }
    let dumps = Dumps::new(inputs, |inputs| {
        inputs
            .iter()
            .map(|n| rulelint_parser::parse(&n.text))
            .collect()
    });
    let (inputs, parsed) = (dumps.borrow_owner(), dumps.borrow_dependent());
    if let Some((n, _)) = inputs.iter().zip(parsed).find(|(_, p)| p.has_no_content()) {
        return Err(format!(
            "`{}` holds no ruleset (no iptables-save or nftables table, chain or rule)",
            n.name
        ));
    }
    Ok(Prepared::new(dumps, |dumps| {
        dumps
            .borrow_owner()
            .iter()
            .zip(dumps.borrow_dependent())
            .map(|(n, p)| {
                let name = rulelint_lint::diff::declared_name(&p.ruleset)
                    .map_or_else(|| n.name.clone(), str::to_string);
                let node = TraceNode::new(name, &p.ruleset);
                // The IPVS-mode state beside the rules (ipsets, `ip addr`, `ipvsadm`), as the
                // CLI's trace reads it.
                let sections = rulelint_lint::source::sections(&n.text);
                match read_ipvs(&n.text, &sections) {
                    Some((ipvs, _)) => node.with_file_state(ipvs),
                    None => node,
                }
            })
            .collect()
    }))
}

fn run(prepared: &Prepared, packet: &str) -> String {
    let spec = match packet_spec(packet) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let inputs = prepared.borrow_owner().borrow_owner();
    let docs = prepared
        .borrow_dependent()
        .iter()
        .zip(inputs)
        .map(|(node, input)| report::node_doc(node, &input.name, &walk(node, &spec)))
        .collect();
    crate::to_json(&report::document(docs))
}

/// Nodes' dumps prepared for tracing, kept by the page's worker for as long as the dumps are
/// loaded: building one parses and prepares every dump once; [`Tracer::trace`] then only walks.
#[wasm_bindgen]
pub struct Tracer {
    prepared: Result<Prepared, String>,
}

#[wasm_bindgen]
impl Tracer {
    /// Prepares `nodes`, a JSON array of `{"name": ..., "text": ...}` (one or more). A bad
    /// argument or a dump without iptables-save content is kept and returned by every trace.
    #[wasm_bindgen(constructor)]
    pub fn new(nodes: &str) -> Tracer {
        Tracer {
            prepared: prepare(nodes),
        }
    }

    /// The number of prepared nodes (0 when preparing failed).
    pub fn nodes(&self) -> usize {
        self.prepared
            .as_ref()
            .map_or(0, |p| p.borrow_dependent().len())
    }

    /// Traces `packet` (a JSON [`PacketFields`]: `{"dst": "10.96.0.10:53", "proto": "udp",
    /// ...}`) on every node: the document of `rulelint trace --format json`, or `{"error"}`.
    pub fn trace(&self, packet: &str) -> String {
        match &self.prepared {
            Ok(p) => run(p, packet),
            Err(e) => error(e.clone()),
        }
    }
}

/// Traces `packet` on `nodes` in one go (see [`Tracer`], which keeps the prepared nodes).
pub fn trace_once(nodes: &str, packet: &str) -> String {
    Tracer::new(nodes).trace(packet)
}

self_cell!(
    /// One loaded dump and what `check` read from it (which borrows the text).
    struct Checked {
        owner: NodeText,
        #[covariant]
        dependent: CheckedSource,
    }
);

/// A dump's trace node: iptables-save, or an `nft list ruleset` listing.
enum AnyNode<'a> {
    Iptables(TraceNode<'a>),
    Nft(NftTraceNode<'a>),
}

self_cell!(
    /// A checked dump and its trace node (which borrows the parsed ruleset).
    struct Traceable {
        owner: Checked,
        #[covariant]
        dependent: AnyNode,
    }
);

/// What the trace walks in a checked dump, as the CLI picks it: the `nft list ruleset` listing
/// when there is one (the CLI parses the whole file as one: the page uses the check's parse of
/// it when it is the whole file, and says so otherwise), else the iptables-save part. `Err`:
/// why the dump cannot be traced.
fn trace_source(c: &CheckedSource<'_>, text: &str, name: &str) -> Result<(), String> {
    if c.sections.iter().any(|s| s.kind == SectionKind::Nft) {
        return match c.nft.as_slice() {
            [(0, parsed)] if parsed.ruleset.text.len() == text.len() => {
                if parsed.ruleset.chains.is_empty() {
                    Err(format!("`{name}` holds no nftables chain"))
                } else {
                    Ok(())
                }
            }
            _ => Err(format!(
                "`{name}` holds an nftables listing beside other text: the page traces a \
                 listing alone in its file (`rulelint trace` reads this file)"
            )),
        };
    }
    // IPVS-mode outputs beside iptables-save are state the trace reads, not another ruleset.
    if c.sections
        .iter()
        .any(|s| !matches!(s.kind, SectionKind::Iptables | SectionKind::Ipvs))
    {
        return Err(format!(
            "`{name}` holds nft JSON or an `add ...` transaction: the page traces \
             iptables-save and `nft list ruleset` text (`rulelint trace` reads this file)"
        ));
    }
    if c.iptables.has_no_content() {
        return Err(format!(
            "`{name}` holds no ruleset (no iptables-save or nftables table, chain or rule)"
        ));
    }
    Ok(())
}

/// One dump of a session: checked, then prepared for tracing at the first trace.
enum Loaded {
    Checked(Checked),
    Traceable(Traceable),
    /// Only while moving from one state to the other.
    Moving,
}

impl Loaded {
    fn checked(&self) -> Option<&Checked> {
        match self {
            Loaded::Checked(c) => Some(c),
            Loaded::Traceable(t) => Some(t.borrow_owner()),
            Loaded::Moving => None,
        }
    }

    /// Prepares the trace node once: the dump is not parsed again.
    fn prepare(&mut self) {
        if let Loaded::Checked(_) = self
            && let Loaded::Checked(checked) = std::mem::replace(self, Loaded::Moving)
        {
            *self = Loaded::Traceable(Traceable::new(checked, |c| {
                let name = c.borrow_owner().name.clone();
                let checked = c.borrow_dependent();
                if let [(_, nft)] = checked.nft.as_slice()
                    && checked.sections.iter().any(|s| s.kind == SectionKind::Nft)
                {
                    return AnyNode::Nft(NftTraceNode::new(name, &nft.ruleset));
                }
                let set = &checked.iptables.ruleset;
                let name = rulelint_lint::diff::declared_name(set).map_or(name, str::to_string);
                let node = TraceNode::new(name, set);
                // `check` read the IPVS-mode state beside the rules: the trace decides ipset
                // matches and node addresses from it, as the CLI's does.
                AnyNode::Iptables(match &checked.ipvs {
                    Some(ipvs) => node.with_file_state(ipvs.clone()),
                    None => node,
                })
            }));
        }
    }
}

/// The page's loaded dumps, kept by the worker for as long as they are loaded: each is parsed
/// once, by [`Session::check`], and the same parse serves every trace. Free it
/// (`free()`, which wasm-bindgen adds) when the dumps change: wasm memory is not garbage-collected.
#[wasm_bindgen]
#[derive(Default)]
pub struct Session {
    dumps: Vec<Loaded>,
}

#[wasm_bindgen]
impl Session {
    /// A session without dumps.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Session {
        Session::default()
    }

    /// Checks one more dump and keeps it: the same JSON document as `check` (and as
    /// `rulelint check --format json` for one file named `name`). A bad configuration returns
    /// `{"error": "..."}` and keeps nothing.
    pub fn check(&mut self, name: &str, text: &str, config: &str) -> String {
        let config = match Config::from_toml(config) {
            Ok(c) => c,
            Err(e) => return error(e.to_string()),
        };
        let input = NodeText {
            name: name.to_string(),
            text: text.to_string(),
        };
        let checked = Checked::new(input, |input| check_source(&input.text, &config));
        let out = {
            let c = checked.borrow_dependent();
            let file = CheckedFile {
                path: name,
                ruleset: &c.iptables.ruleset,
                diagnostics: &c.diagnostics,
            };
            crate::to_json(&CheckDocument::new(&[file]))
        };
        self.dumps.push(Loaded::Checked(checked));
        out
    }

    /// The number of dumps held.
    pub fn dumps(&self) -> usize {
        self.dumps.len()
    }

    /// Traces `packet` (a JSON [`PacketFields`]) on every dump held: the document of
    /// `rulelint trace --format json`, or `{"error"}`. The first trace prepares each dump's
    /// trace node (no parse); later ones only walk.
    pub fn trace(&mut self, packet: &str) -> String {
        let spec = match packet_spec(packet) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if self.dumps.is_empty() {
            return error("trace needs at least one dump".into());
        }
        for c in self.dumps.iter().filter_map(Loaded::checked) {
            let input = c.borrow_owner();
            if let Err(e) = trace_source(c.borrow_dependent(), &input.text, &input.name) {
                return error(e);
            }
        }
        let mut docs = Vec::with_capacity(self.dumps.len());
        for dump in &mut self.dumps {
            dump.prepare();
            if let Loaded::Traceable(t) = dump {
                let file = &t.borrow_owner().borrow_owner().name;
                docs.push(match t.borrow_dependent() {
                    AnyNode::Iptables(node) => report::node_doc(node, file, &walk(node, &spec)),
                    AnyNode::Nft(node) => report::node_doc(node, file, &trace_nft(node, &spec)),
                });
            }
        }
        crate::to_json(&report::document(docs))
    }
}

/// Reads the page's packet JSON; an error comes back as the `{"error"}` document.
fn packet_spec(packet: &str) -> Result<PacketSpec, String> {
    let fields: PacketFields = serde_json::from_str(packet)
        .map_err(|e| error(format!("expected a JSON packet {{dst, proto, ...}}: {e}")))?;
    fields.spec(str::to_string).map_err(error)
}
