//! The WebAssembly surface of rulelint: strings in, JSON out, no file or network access.
//!
//! For now it exposes the parser; `check`, `diff` and `services` follow with the lint engine.

use rulelint_parser::json;
use wasm_bindgen::prelude::*;

/// Parses a dump and returns the same JSON document as `rulelint parse --format json` for one
/// file named `name`.
#[wasm_bindgen]
pub fn parse(name: &str, text: &str) -> String {
    let parsed = rulelint_parser::parse(text);
    let doc = json::Document::new(vec![json::file_doc(name, &parsed)]);
    // Serialising plain structs of strings and numbers cannot fail.
    serde_json::to_string(&doc).unwrap_or_default()
}

#[cfg(test)]
mod tests {
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
}
