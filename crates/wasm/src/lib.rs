//! The WebAssembly surface of rulelint: strings in, JSON out, no file or network access.
//! `parse`, `check` and `services` return the same JSON document as the CLI's `--format json`
//! for one file, `diff` and `trace` the same as the CLI for several; `chains` and `explain` serve
//! the web page (`web/`), and [`Tracer`] keeps dumps prepared for the page's repeated traces. No function panics on any
//! input: a problem comes back as `{"error": "..."}`.

mod chains;
mod trace;

pub use chains::{CHAINS_FORMAT_VERSION, ChainDoc, ChainsDoc, TableDoc, chains_doc};
pub use trace::{Session, Tracer};

use rulelint_lint::Config;
use rulelint_lint::report::{CheckDocument, CheckedFile};
use rulelint_lint::source::check_source;
use rulelint_parser::json;
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// Serialises plain data; strings and numbers cannot fail, but an error still comes back as JSON.
fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string())
}

/// Parses a dump and returns the same JSON document as `rulelint parse --format json` for one
/// file named `name`.
#[wasm_bindgen]
pub fn parse(name: &str, text: &str) -> String {
    let parsed = rulelint_parser::parse(text);
    to_json(&json::Document::new(vec![json::file_doc(name, &parsed)]))
}

/// Checks a dump and returns the same JSON document as `rulelint check --format json` for one
/// file named `name`. `config` is the text of a `rulelint.toml` (empty for the defaults); a bad
/// configuration returns `{"error": "..."}`.
#[wasm_bindgen]
pub fn check(name: &str, text: &str, config: &str) -> String {
    let config = match Config::from_toml(config) {
        Ok(c) => c,
        Err(e) => return serde_json::json!({ "error": e.to_string() }).to_string(),
    };
    // As the CLI does: iptables-save and nftables sections, each through its own parser and
    // lints, suppressions and caps applied.
    let checked = check_source(text, &config);
    let file = CheckedFile {
        path: name,
        ruleset: &checked.iptables.ruleset,
        diagnostics: &checked.diagnostics,
    };
    to_json(&CheckDocument::new(&[file]))
}

/// The page's chain view of a dump named `name`: every chain with its table, rule count,
/// finding counts under `config` (as `check` reports them) and distinct callees, plus each
/// table's hooks and the chains no hook reaches (see [`ChainsDoc`]). A bad configuration
/// returns `{"error": "..."}`.
#[wasm_bindgen]
pub fn chains(name: &str, text: &str, config: &str) -> String {
    let config = match Config::from_toml(config) {
        Ok(c) => c,
        Err(e) => return serde_json::json!({ "error": e.to_string() }).to_string(),
    };
    let parsed = rulelint_parser::parse(text);
    let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
    let diagnostics = rulelint_lint::check_with_graph(&parsed, &graph, &config);
    to_json(&chains_doc(name, &parsed.ruleset, &graph, &diagnostics))
}

/// The documentation page of a code or lint name (what `rulelint explain` prints), as
/// `{"code", "name", "severity", "page"}` with `page` in Markdown; an unknown code returns
/// `{"error": "..."}`.
#[wasm_bindgen]
pub fn explain(code: &str) -> String {
    match rulelint_lint::find_code(code.trim()) {
        Some(entry) => serde_json::json!({
            "code": entry.info.code,
            "name": entry.info.name,
            "severity": entry.info.severity.to_string(),
            "page": rulelint_lint::docs_page(&entry),
        })
        .to_string(),
        None => {
            serde_json::json!({ "error": format!("unknown code or name `{code}`") }).to_string()
        }
    }
}

/// The version of this build, for the page's footer.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Reads what kube-proxy programmed (iptables-save or `nft list ruleset` text) and returns the
/// same JSON document as `rulelint services --format json` for one file named `name`.
#[wasm_bindgen]
pub fn services(name: &str, text: &str) -> String {
    rulelint_lint::kube::doc::with_services_file(name, text, |doc, _| {
        to_json(&json::Document::new(vec![doc]))
    })
}

/// One node for [`diff`] and [`trace`].
#[derive(serde::Deserialize)]
struct NodeText {
    name: String,
    text: String,
}

/// Traces a packet on node dumps and returns the same JSON document as
/// `rulelint trace --format json`. `nodes` is a JSON array of `{"name": ..., "text": ...}` (one
/// or more); `packet` is the packet's fields as JSON (`{"dst": "10.96.0.10:53", "proto": "udp",
/// "src", "from": "pod"|"outside"|"host", "in", "out", "state": "new"|"established",
/// "node_ips": [...]}`, only `dst` required). A bad argument, a bad field or a dump without
/// iptables-save content returns `{"error": "..."}`.
#[wasm_bindgen]
pub fn trace(nodes: &str, packet: &str) -> String {
    trace::trace_once(nodes, packet)
}

/// Compares node dumps and returns the same JSON document as `rulelint diff --format json`.
/// `nodes` is a JSON array of `{"name": ..., "text": ...}` (two or more); a bad argument or a
/// dump without iptables-save content returns `{"error": "..."}`.
#[wasm_bindgen]
pub fn diff(nodes: &str) -> String {
    let error = |message: String| serde_json::json!({ "error": message }).to_string();
    let inputs: Vec<NodeText> = match serde_json::from_str(nodes) {
        Ok(n) => n,
        Err(e) => return error(format!("expected a JSON array of {{name, text}}: {e}")),
    };
    if inputs.len() < 2 {
        return error(format!(
            "diff needs at least two dumps; got {}",
            inputs.len()
        ));
    }
    // iptables-save, nftables in any form, or both in one text; each text's store of the
    // strings its nft JSON escapes.
    let strings: Vec<rulelint_nft::Strings> = inputs
        .iter()
        .map(|_| rulelint_nft::Strings::new())
        .collect();
    let read: Vec<_> = inputs
        .iter()
        .zip(&strings)
        .map(|(n, strings)| rulelint_lint::diff::NodeInput::read_with(&n.text, strings))
        .collect();
    if let Some((n, _)) = inputs.iter().zip(&read).find(|(_, r)| r.has_no_content()) {
        return error(format!(
            "`{}` holds no ruleset (no iptables-save or nftables table, chain or rule)",
            n.name
        ));
    }
    let prepared = rulelint_lint::diff::prepare(inputs.iter().map(|n| n.name.clone()).zip(&read));
    let facts_of_comparison = rulelint_lint::diff::Group::from_nodes(&prepared);
    let comparison = rulelint_lint::diff::compare(&facts_of_comparison, &prepared);
    let paths: Vec<&str> = inputs.iter().map(|n| n.name.as_str()).collect();
    to_json(&rulelint_lint::diff::report::document(&comparison, &paths))
}

#[cfg(test)]
mod tests {
    /// The page checks an nftables listing as the CLI does: the stale chains of a deleted
    /// Service are found (info), in the listing's own lines.
    #[test]
    fn check_reads_nft_listings_like_the_cli() {
        let listing =
            include_str!("../../../corpus/nft/ok/02-stale-chains-after-service-delete.txt");
        let doc: serde_json::Value =
            serde_json::from_str(&super::check("node.nft", listing, "")).expect("JSON");
        let codes: Vec<&str> = doc["files"][0]["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .map(|d| d["code"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(codes, ["RL457", "RL457"], "{doc:#}");
    }

    #[test]
    fn trace_returns_the_cli_json_shape_and_the_tracer_keeps_nodes() {
        let dump = "*nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n\
                    :KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n:KUBE-SEP-BBBBBBBBBBBBBBBB - [0:0]\n\
                    -A PREROUTING -j KUBE-SERVICES\n\
                    -A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n\
                    -A KUBE-SVC-AAAAAAAAAAAAAAAA -j KUBE-SEP-BBBBBBBBBBBBBBBB\n\
                    -A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m tcp -j DNAT --to-destination 10.244.1.5:6443\nCOMMIT\n";
        let nodes = serde_json::json!([{"name": "a", "text": dump}, {"name": "b", "text": dump}]);
        let packet = r#"{"dst": "10.96.0.1:443", "proto": "tcp", "src": "", "node_ips": []}"#;
        let value: serde_json::Value =
            serde_json::from_str(&super::trace(&nodes.to_string(), packet)).expect("JSON");
        assert_eq!(value["format_version"], 1);
        assert_eq!(value["nodes"].as_array().unwrap().len(), 2);
        let outcome = &value["nodes"][0]["outcomes"][0];
        assert_eq!(outcome["destination"], "10.244.1.5:6443");
        assert_eq!(outcome["probability"], 1.0);
        assert!(value["first_difference"].is_null());
        let tracer = super::Tracer::new(&nodes.to_string());
        assert_eq!(tracer.nodes(), 2);
        for _ in 0..2 {
            let again: serde_json::Value =
                serde_json::from_str(&tracer.trace(packet)).expect("JSON");
            assert_eq!(again, value);
        }
        let bad: serde_json::Value =
            serde_json::from_str(&tracer.trace(r#"{"dst": "nowhere"}"#)).expect("JSON");
        assert!(bad["error"].as_str().unwrap().starts_with("dst: "));
        let empty = serde_json::json!([{"name": "e", "text": "hello"}]);
        let bad: serde_json::Value =
            serde_json::from_str(&super::trace(&empty.to_string(), packet)).expect("JSON");
        assert!(bad["error"].as_str().unwrap().contains("holds no ruleset"));
        let bad: serde_json::Value =
            serde_json::from_str(&super::trace("[]", packet)).expect("JSON");
        assert!(bad["error"].is_string());
    }

    /// The session checks each dump once and traces on that parse: its check documents are
    /// `check`'s and its traces are the one-shot `trace`'s, on corpus dumps of Services.
    #[test]
    fn session_checks_and_traces_as_the_one_shot_functions() {
        let dumps = [
            (
                "healthy.txt",
                include_str!("../../../corpus/kube/healthy/modern-1.29-full.txt"),
            ),
            (
                "node-b.txt",
                include_str!("../../../corpus/diff/stale-endpoint/node-b.txt"),
            ),
        ];
        let mut session = super::Session::new();
        for (name, text) in dumps {
            assert_eq!(session.check(name, text, ""), super::check(name, text, ""));
        }
        assert_eq!(session.dumps(), 2);
        let nodes: Vec<_> = dumps
            .iter()
            .map(|(name, text)| serde_json::json!({"name": name, "text": text}))
            .collect();
        let nodes = serde_json::Value::from(nodes).to_string();
        let packets = [
            r#"{"dst": "10.100.34.17:80"}"#,
            r#"{"dst": "10.96.0.10:53", "proto": "udp", "from": "host"}"#,
            r#"{"dst": "192.168.0.10:30080", "from": "outside"}"#,
        ];
        for _ in 0..2 {
            for packet in packets {
                let got = session.trace(packet);
                assert!(got.contains("\"outcomes\""), "{got}");
                assert_eq!(got, super::trace(&nodes, packet));
            }
        }
        let bad: serde_json::Value =
            serde_json::from_str(&session.trace(r#"{"dst": "nowhere"}"#)).expect("JSON");
        assert!(bad["error"].as_str().unwrap().starts_with("dst: "));
        let mut empty = super::Session::new();
        assert!(empty.trace(packets[0]).contains("at least one dump"));
        empty.check("e", "hello", "");
        assert!(empty.trace(packets[0]).contains("holds no ruleset"));
        let bad: serde_json::Value =
            serde_json::from_str(&empty.check("c", "", "[[[")).expect("JSON");
        assert!(bad["error"].is_string());
        assert_eq!(empty.dumps(), 1);
    }

    /// A node in IPVS mode pasted whole (iptables-save, ipsets, `ip addr`, `ipvsadm`): the page
    /// decides ipset matches and node addresses from the file as the CLI's trace does, in the
    /// session and in the one-shot function alike.
    #[test]
    fn session_and_one_shot_trace_read_the_ipvs_state_beside_the_rules() {
        let text = include_str!("../../../corpus/ipvs/healthy-node.txt");
        let mut session = super::Session::new();
        session.check("healthy-node.txt", text, "");
        let nodes = serde_json::json!([{"name": "healthy-node.txt", "text": text}]).to_string();
        let packet = r#"{"dst": "10.96.0.10:53", "proto": "udp"}"#;
        let got = session.trace(packet);
        assert_eq!(got, super::trace(&nodes, packet));
        let doc: serde_json::Value = serde_json::from_str(&got).expect("JSON");
        let outcomes = doc["nodes"][0]["outcomes"].as_array().expect("outcomes");
        // Without the file's ipsets and addresses this packet forks into 30 assumed outcomes.
        assert_eq!(outcomes.len(), 1, "{got}");
        assert!(outcomes[0]["ipvs"].is_object(), "{got}");
    }

    /// An `nft list ruleset` listing traces in the session as `rulelint trace` traces it (the
    /// same walk and report on the whole file); nft JSON is refused with a reason.
    #[test]
    fn session_traces_nft_listings_as_the_cli() {
        use rulelint_lint::trace::nft::{NftTraceNode, trace_nft};
        use rulelint_lint::trace::{PacketFields, report};
        let listing = include_str!("../../../corpus/nft/ok/01-overall-rules.txt");
        let iptables = include_str!("../../../corpus/kube/healthy/modern-1.29-full.txt");
        let mut session = super::Session::new();
        session.check("node.nft", listing, "");
        session.check("healthy.txt", iptables, "");
        let packet = r#"{"dst": "172.30.0.42:80"}"#;
        let fields: PacketFields = serde_json::from_str(packet).unwrap();
        let spec = fields.spec(str::to_string).unwrap();
        let parsed = rulelint_nft::parse(listing);
        let node = NftTraceNode::new("node.nft", &parsed.ruleset);
        let ipt = rulelint_parser::parse(iptables);
        let ipt_node = rulelint_lint::trace::TraceNode::new(
            rulelint_lint::diff::declared_name(&ipt.ruleset).unwrap_or("healthy.txt"),
            &ipt.ruleset,
        );
        let want = super::to_json(&report::document(vec![
            report::node_doc(&node, "node.nft", &trace_nft(&node, &spec)),
            report::node_doc(
                &ipt_node,
                "healthy.txt",
                &rulelint_lint::trace::trace(&ipt_node, &spec),
            ),
        ]));
        assert!(want.contains("\"backend\":\"nftables\""), "{want}");
        for _ in 0..2 {
            assert_eq!(session.trace(packet), want);
        }
        let json = include_str!("../../../corpus/nft/forms/01-overall-rules.json");
        let mut other = super::Session::new();
        other.check("node.json", json, "");
        let bad: serde_json::Value = serde_json::from_str(&other.trace(packet)).expect("JSON");
        assert!(bad["error"].as_str().unwrap().contains("nft JSON"), "{bad}");
    }

    #[test]
    fn diff_returns_the_cli_json_shape() {
        let a = "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n";
        let b = "*nat\n:PREROUTING ACCEPT [9:9]\n:KUBE-SERVICES - [0:0]\nCOMMIT\n";
        let input = serde_json::json!([{"name": "a", "text": a}, {"name": "b", "text": b}]);
        let value: serde_json::Value =
            serde_json::from_str(&super::diff(&input.to_string())).expect("valid JSON");
        assert_eq!(value["format_version"], 1);
        assert_eq!(value["agree"], false);
        assert_eq!(value["differences"][0]["kind"], "hook-jump");
        let bad: serde_json::Value = serde_json::from_str(&super::diff("[1]")).expect("JSON");
        assert!(bad["error"].as_str().unwrap().contains("name, text"));
        let one = serde_json::json!([{"name": "a", "text": a}]);
        let one: serde_json::Value =
            serde_json::from_str(&super::diff(&one.to_string())).expect("JSON");
        assert!(one["error"].as_str().unwrap().contains("at least two"));
    }

    /// The page's diff reads IPVS nodes (`iptables-save; ipset save; ipvsadm -Ln; ip addr`)
    /// as the CLI does: the stale real server, and the IPVS node beside an iptables node.
    #[test]
    fn diff_reads_ipvs_nodes() {
        let a = include_str!("../../../corpus/diff/ipvs-stale-real-server/node-a.txt");
        let b = include_str!("../../../corpus/diff/ipvs-stale-real-server/node-b.txt");
        let nodes = serde_json::json!([{"name": "a", "text": a}, {"name": "b", "text": b}]);
        let doc: serde_json::Value =
            serde_json::from_str(&super::diff(&nodes.to_string())).expect("JSON");
        assert_eq!(doc["agree"], false, "{doc:#}");
        assert_eq!(doc["differences"][0]["kind"], "endpoint", "{doc:#}");
        assert_eq!(doc["nodes"][1]["backend"], "iptables+ipvs");
        let iptables = include_str!("../../../corpus/diff/ipvs-vs-iptables/node-a.txt");
        let ipvs = include_str!("../../../corpus/diff/ipvs-vs-iptables/node-b.txt");
        let nodes =
            serde_json::json!([{"name": "a", "text": iptables}, {"name": "b", "text": ipvs}]);
        let doc: serde_json::Value =
            serde_json::from_str(&super::diff(&nodes.to_string())).expect("JSON");
        assert_eq!(doc["agree"], true, "{doc:#}");
        assert!(doc["notes"][0].as_str().unwrap().contains("IPVS mode"));
    }

    #[test]
    fn services_returns_the_cli_json_shape() {
        let dump = "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n\
                    -A PREROUTING -j KUBE-SERVICES\n\
                    -A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment \"default/kubernetes:https cluster IP\" -m tcp --dport 443 -j KUBE-SVC-AAAAAAAAAAAAAAAA\nCOMMIT\n";
        let value: serde_json::Value =
            serde_json::from_str(&super::services("node.txt", dump)).expect("valid JSON");
        let service = &value["files"][0]["services"][0];
        assert_eq!(service["name"], "default/kubernetes:https");
        assert_eq!(service["addresses"][0]["address"], "10.96.0.1/32");
    }

    #[test]
    fn services_reads_an_nft_listing() {
        let listing = "table ip kube-proxy {\n\tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n\t\t\
                       elements = { 10.96.0.1 . tcp . 443 : goto service-AAAAAAAA-default/kubernetes/tcp/https }\n\t}\n\t\
                       chain service-AAAAAAAA-default/kubernetes/tcp/https {\n\t\tnumgen random mod 1 vmap { 0 : goto endpoint-BBBBBBBB-default/kubernetes/tcp/https__192.168.1.5/6443 }\n\t}\n\t\
                       chain endpoint-BBBBBBBB-default/kubernetes/tcp/https__192.168.1.5/6443 {\n\t\tmeta l4proto tcp dnat to 192.168.1.5:6443\n\t}\n}\n";
        let value: serde_json::Value =
            serde_json::from_str(&super::services("node.nft", listing)).expect("valid JSON");
        let file = &value["files"][0];
        assert_eq!(file["layout"]["proxy_mode"], "nftables");
        let service = &file["services"][0];
        assert_eq!(service["name"], "default/kubernetes:https");
        assert_eq!(service["endpoints"][0]["destination"], "192.168.1.5:6443");
    }

    #[test]
    fn chains_give_hooks_callees_and_finding_counts() {
        let dump = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n\
                    :KUBE-FIREWALL - [0:0]\n:LEFTOVER - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A INPUT -s 10.0.0.1/32 -j KUBE-FIREWALL\n\
                    -A OUTPUT -j KUBE-FIREWALL\n-A KUBE-FIREWALL -j DROP\nCOMMIT\n";
        let value: serde_json::Value =
            serde_json::from_str(&super::chains("node.txt", dump, "")).expect("valid JSON");
        assert_eq!(value["path"], "node.txt");
        let chains = value["chains"].as_array().unwrap();
        let index = |name: &str| chains.iter().position(|c| c["name"] == name).unwrap();
        let (input, fw, left) = (index("INPUT"), index("KUBE-FIREWALL"), index("LEFTOVER"));
        let table = &value["tables"][0];
        assert_eq!(table["name"], "filter");
        assert_eq!(table["hooks"].as_array().unwrap().len(), 3);
        assert_eq!(table["unreached"], serde_json::json!([left]));
        // Two jumps to the same chain give one callee.
        assert_eq!(chains[input]["calls"], serde_json::json!([fw]));
        assert_eq!(chains[input]["rules"], 2);
        assert_eq!(chains[input]["line"], 2);
        assert_eq!(chains[fw]["builtin"], false);
        assert_eq!(
            chains[fw]["findings"][0], 1,
            "the bare DROP is an error on the chain"
        );
        assert!(chains[fw].get("calls").is_none());
        let bad: serde_json::Value =
            serde_json::from_str(&super::chains("n", dump, "select = 1")).expect("JSON");
        assert!(bad["error"].is_string());
    }

    #[test]
    fn explain_returns_the_docs_page_or_an_error() {
        let value: serde_json::Value =
            serde_json::from_str(&super::explain("RL401")).expect("valid JSON");
        assert_eq!(value["name"], "bare-drop");
        assert!(
            value["page"]
                .as_str()
                .unwrap()
                .starts_with("# RL401 bare-drop")
        );
        let by_name: serde_json::Value =
            serde_json::from_str(&super::explain("bare-drop")).expect("valid JSON");
        assert_eq!(by_name["code"], "RL401");
        let bad: serde_json::Value =
            serde_json::from_str(&super::explain("RL999")).expect("valid JSON");
        assert!(bad["error"].as_str().unwrap().contains("RL999"));
    }

    #[test]
    fn no_function_panics_on_odd_input() {
        for text in [
            "",
            "\u{0}\u{feff}",
            "*nat\n-A X -j",
            "COMMIT\nCOMMIT",
            "\r\n\\\n",
        ] {
            for out in [
                super::parse("x", text),
                super::check("x", text, ""),
                super::chains("x", text, ""),
                super::services("x", text),
            ] {
                serde_json::from_str::<serde_json::Value>(&out).expect("valid JSON");
            }
        }
    }

    #[test]
    fn parse_returns_the_cli_json_shape() {
        let json = super::parse(
            "a.txt",
            "*filter\n:INPUT DROP [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n",
        );
        let value: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(value["format_version"], 1);
        assert_eq!(
            value["files"][0]["tables"][0]["chains"][0]["policy"],
            "DROP"
        );
        assert_eq!(
            value["files"][0]["tables"][0]["chains"][0]["rules"][0]["target"]["name"],
            "ACCEPT"
        );
    }

    #[test]
    fn check_returns_findings_and_honours_the_config() {
        let dump = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n\
                    :KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A OUTPUT -j KUBE-FIREWALL\n-A KUBE-FIREWALL -j DROP\nCOMMIT\n";
        let value: serde_json::Value =
            serde_json::from_str(&super::check("node.txt", dump, "")).expect("valid JSON");
        assert_eq!(value["summary"]["error"], 1);
        assert_eq!(value["files"][0]["diagnostics"][0]["code"], "RL401");
        let ignored: serde_json::Value =
            serde_json::from_str(&super::check("node.txt", dump, "ignore = [\"bare-drop\"]"))
                .expect("valid JSON");
        assert_eq!(ignored["summary"]["error"], 0);
        let bad: serde_json::Value =
            serde_json::from_str(&super::check("node.txt", dump, "ignore = 3")).expect("JSON");
        assert!(
            bad["error"]
                .as_str()
                .unwrap()
                .contains("invalid configuration")
        );
    }
}
