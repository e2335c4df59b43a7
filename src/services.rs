//! `rulelint services`: the Service catalogue of each dump, iptables-save or `nft list ruleset`.

use crate::{EXIT_INPUT, Loaded, StatsFormat, write_json};
use rulelint_lint::kube::doc::{catalog_of, human, is_nft_listing, services_file};
use rulelint_parser::json;
use std::io::{self, Write};

pub(crate) fn run(loaded: &[Loaded], format: StatsFormat, out: &mut impl Write) -> io::Result<u8> {
    let mut status = 0;
    let mut catalogs = Vec::with_capacity(loaded.len());
    // Each file's store of the strings its JSON escapes: the catalogues borrow them.
    let strings: Vec<rulelint_nft::Strings> = loaded
        .iter()
        .map(|_| rulelint_nft::Strings::new())
        .collect();
    for (file, strings) in loaded.iter().zip(&strings) {
        let (catalog, has_content) = catalog_of(&file.text, strings);
        if !has_content {
            if is_nft_listing(&file.text) {
                eprintln!(
                    "rulelint: `{}` holds no nft list ruleset content (no table, chain or rule)",
                    file.name
                );
            } else if let Some(what) = crate::other_backend(&file.text) {
                // ipsets or interface addresses alone: IPVS state, but no Service to list.
                eprintln!(
                    "rulelint: `{}` holds {what} but no Service (no virtual server and no kube-proxy rule)",
                    file.name
                );
            } else {
                eprintln!("rulelint: `{}` holds {}", file.name, crate::NO_RULESET);
            }
            status = EXIT_INPUT;
        }
        catalogs.push(catalog);
    }
    let docs: Vec<_> = loaded
        .iter()
        .zip(&catalogs)
        .map(|(l, c)| services_file(&l.name, c))
        .collect();
    match format {
        StatsFormat::Json => write_json(out, &json::Document::new(docs))?,
        StatsFormat::Human => {
            for d in &docs {
                out.write_all(human(d).as_bytes())?;
            }
        }
    }
    Ok(status)
}
