//! `rulelint services`: the Service catalogue of each dump, iptables-save or `nft list ruleset`.

use crate::{EXIT_INPUT, Loaded, StatsFormat, write_json};
use rulelint_lint::kube::doc::{human, is_nft_listing, with_services_file};
use rulelint_parser::json;
use std::io::{self, Write};

pub(crate) fn run(loaded: &[Loaded], format: StatsFormat, out: &mut impl Write) -> io::Result<u8> {
    let mut status = 0;
    let mut texts = Vec::new();
    let mut documents = Vec::new();
    for file in loaded {
        let has_content = with_services_file(&file.name, &file.text, |doc, has_content| {
            match format {
                StatsFormat::Json => documents.push(serde_json::to_value(doc)),
                StatsFormat::Human => texts.push(human(doc)),
            }
            has_content
        });
        if !has_content {
            let kind = if is_nft_listing(&file.text) {
                "nft list ruleset"
            } else {
                "iptables-save"
            };
            eprintln!(
                "rulelint: `{}` holds no {kind} content (no table, chain or rule)",
                file.name
            );
            status = EXIT_INPUT;
        }
    }
    match format {
        StatsFormat::Json => {
            let documents: Vec<serde_json::Value> = documents
                .into_iter()
                .collect::<Result<_, _>>()
                .map_err(io::Error::other)?;
            write_json(out, &json::Document::new(documents))?
        }
        StatsFormat::Human => {
            for text in &texts {
                out.write_all(text.as_bytes())?;
            }
        }
    }
    Ok(status)
}
