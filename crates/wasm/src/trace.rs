//! The page's packet trace: [`Tracer`] keeps the nodes' dumps parsed and prepared
//! ([`TraceNode`]) so that each trace only walks; [`trace`](crate::trace) is the one-shot form.
//! Both answer with the JSON document of `rulelint trace --format json` (format version 1),
//! built by the same report module.

use crate::NodeText;
use rulelint_lint::trace::{PacketFields, TraceNode, report, trace as walk};
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
        return Err(format!("`{}` holds no iptables-save content", n.name));
    }
    Ok(Prepared::new(dumps, |dumps| {
        dumps
            .borrow_owner()
            .iter()
            .zip(dumps.borrow_dependent())
            .map(|(n, p)| {
                let name = rulelint_lint::diff::declared_name(&p.ruleset)
                    .map_or_else(|| n.name.clone(), str::to_string);
                TraceNode::new(name, &p.ruleset)
            })
            .collect()
    }))
}

fn run(prepared: &Prepared, packet: &str) -> String {
    let fields: PacketFields = match serde_json::from_str(packet) {
        Ok(f) => f,
        Err(e) => return error(format!("expected a JSON packet {{dst, proto, ...}}: {e}")),
    };
    let spec = match fields.spec(str::to_string) {
        Ok(s) => s,
        Err(e) => return error(e),
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
