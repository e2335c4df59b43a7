//! Running the IPVS-mode lints on one file's IPVS state: its reader diagnostics and every
//! enabled lint's findings, with the configuration applied. Spans are the file's.

use super::context::IpvsContext;
use crate::check::{at_configured_level, lint_level};
use crate::config::Config;
use crate::registry::IPVS_LINTS;
use rulelint_ipvs::Ipvs;
use rulelint_parser::{Diagnostic, Parsed};

/// Checks a file's IPVS state (`text` is the file, `ipvs` read from its IPVS sections with
/// spans into it, `diagnostics` the readers'), beside its iptables part when it has one (`None`
/// otherwise). Not sorted.
pub fn check_ipvs(
    text: &str,
    ipvs: &Ipvs<'_>,
    diagnostics: &[Diagnostic],
    iptables: Option<&Parsed<'_>>,
    config: &Config,
) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = diagnostics
        .iter()
        .filter_map(|d| at_configured_level(config, d))
        .collect();
    let cx = IpvsContext::new(text, ipvs, iptables);
    let mut found = Vec::new();
    for lint in IPVS_LINTS {
        let Some((severity, overridden)) = lint_level(config, &lint.info, lint.category) else {
            continue;
        };
        found.clear();
        (lint.check)(&cx, &mut found);
        for mut d in found.drain(..) {
            if overridden {
                d.severity = severity;
            }
            out.push(d);
        }
    }
    out
}

/// The IPVS state of a file's [`SectionKind::Ipvs`](crate::source::SectionKind::Ipvs)
/// sections, each read by `rulelint-ipvs` and placed in the file (spans into `text`), with the
/// readers' diagnostics; `None` when the file has no such section.
pub fn read_ipvs<'a>(
    text: &'a str,
    sections: &[crate::source::Section],
) -> Option<(Ipvs<'a>, Vec<Diagnostic>)> {
    let mut ipvs: Option<Ipvs<'a>> = None;
    let mut diagnostics = Vec::new();
    for s in sections
        .iter()
        .filter(|s| s.kind == crate::source::SectionKind::Ipvs)
    {
        let offset = s.range.start;
        let mut parsed = rulelint_ipvs::parse(&text[s.range.clone()]);
        parsed.ipvs.shift(offset);
        diagnostics.extend(parsed.diagnostics.into_iter().map(|mut d| {
            d.span = rulelint_parser::Span::new(
                d.span.start as usize + offset,
                d.span.end as usize + offset,
            );
            d
        }));
        match &mut ipvs {
            Some(all) => all.extend(parsed.ipvs),
            None => ipvs = Some(parsed.ipvs),
        }
    }
    ipvs.map(|i| (i, diagnostics))
}
