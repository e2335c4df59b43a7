//! Running the lints: parser diagnostics and lint findings through one pipeline, with the
//! configuration applied and the output sorted.

use crate::config::{Config, Level};
use crate::context::LintContext;
use crate::registry::{Category, CodeEntry, LINTS, Lint, find_code};
use rulelint_parser::{ChainGraph, CodeInfo, Diagnostic, Parsed, Ruleset, Severity};
use std::sync::atomic::{AtomicUsize, Ordering};

const MISSING_COMMIT: &str = rulelint_parser::codes::MISSING_COMMIT.code;

/// Checks a parsed dump: its parser diagnostics and every enabled lint's findings, with the
/// configuration's severities and allowed chains applied, sorted by position then code.
pub fn check(parsed: &Parsed<'_>, config: &Config) -> Vec<Diagnostic> {
    let cx = LintContext::with_graph_on_demand(&parsed.ruleset);
    check_in(parsed, &cx, config, lint_threads(&parsed.ruleset))
}

/// [`check`] of a dump whose text was already searched for RL502's marker word
/// (`LintContext::has_unsupported_marker`): `check_source` does it beside the parse. What the
/// lints read (the graph, the Kubernetes model, a target class a rule) is freed before the
/// findings are sorted and rendered, even for the CLI's one file: kept to the exit, it saved
/// 0.6% of the instructions of a 250k-rule check but raised the peak of 200 MB of
/// `-A X -j X` by 44 MB (issue 16's bound is a peak within 4x the input).
pub(crate) fn check_knowing_unsupported_marker(
    parsed: &Parsed<'_>,
    config: &Config,
    unsupported_marker: bool,
) -> Vec<Diagnostic> {
    let cx = LintContext::with_graph_on_demand(&parsed.ruleset)
        .knowing_unsupported_marker(unsupported_marker);
    check_in(parsed, &cx, config, lint_threads(&parsed.ruleset))
}

/// [`check`] with a graph the caller already built from `parsed.ruleset`.
pub fn check_with_graph(
    parsed: &Parsed<'_>,
    graph: &ChainGraph,
    config: &Config,
) -> Vec<Diagnostic> {
    check_with_graph_on(parsed, graph, config, lint_threads(&parsed.ruleset))
}

/// Below this many rules the lints of a dump run on one thread: a second one costs more to
/// start than it saves.
const PARALLEL_LINTS_MIN_RULES: usize = 20_000;

/// The threads the lints of `set` run on: two on a native build for a large dump (the
/// Kubernetes model is built on one while the other runs the lints that do not need it), one
/// in WebAssembly.
fn lint_threads(set: &Ruleset<'_>) -> usize {
    if cfg!(target_arch = "wasm32") || set.rules.len() < PARALLEL_LINTS_MIN_RULES {
        1
    } else {
        2
    }
}

/// [`check_with_graph`] with the lints run on `threads` threads (1: all on this one). The
/// findings are the same, in the same order, whatever the number.
pub fn check_with_graph_on(
    parsed: &Parsed<'_>,
    graph: &ChainGraph,
    config: &Config,
    threads: usize,
) -> Vec<Diagnostic> {
    check_in(
        parsed,
        &LintContext::new(&parsed.ruleset, graph),
        config,
        threads,
    )
}

/// [`check_with_graph_on`] over a context of `parsed.ruleset`.
fn check_in(
    parsed: &Parsed<'_>,
    cx: &LintContext<'_, '_>,
    config: &Config,
    threads: usize,
) -> Vec<Diagnostic> {
    let set = &parsed.ruleset;
    let mut out = Vec::with_capacity(parsed.diagnostics.len());
    out.extend(
        parsed
            .diagnostics
            .iter()
            .filter(|d| !allowed(config, set, d))
            .filter_map(|d| at_configured_level(config, d)),
    );
    let enabled: Vec<(&'static Lint, Severity, bool)> = LINTS
        .iter()
        .filter_map(|&lint| {
            lint_level(config, &lint.info, lint.category).map(|(s, o)| (lint, s, o))
        })
        .collect();
    let lints: Vec<&'static Lint> = enabled.iter().map(|&(lint, _, _)| lint).collect();
    let found = run_lints(cx, &lints, threads);
    for ((_, severity, overridden), found) in enabled.iter().zip(found) {
        for mut d in found {
            if allowed(config, set, &d) {
                continue;
            }
            // A lint may pick a severity per finding (ruleset-scale); a configured level wins.
            if *overridden {
                d.severity = *severity;
            }
            out.push(d);
        }
    }
    fold_cut_line(set, &mut out);
    sort(&mut out);
    out
}

/// A parser diagnostic at the severity `config` gives its code; `None` when the code is not
/// selected. Parser codes are always catalogued; an unknown one keeps its own severity.
pub(crate) fn at_configured_level(config: &Config, d: &Diagnostic) -> Option<Diagnostic> {
    let level = find_code(d.code).map_or(Level::At(d.severity), |e| config.level(&e));
    match level {
        Level::At(severity) => Some(Diagnostic {
            severity,
            ..d.clone()
        }),
        Level::Off => None,
    }
}

/// Runs `lints` over `cx` and returns each one's findings, in the order of `lints`. With two
/// threads or more, the first worker starts by building the Kubernetes model (when a
/// Kubernetes lint runs) while the others take lints from a shared queue, those that do not
/// need the model first; a lint that needs it waits until it is built (`LintContext::kube`).
fn run_lints(
    cx: &LintContext<'_, '_>,
    lints: &[&'static Lint],
    threads: usize,
) -> Vec<Vec<Diagnostic>> {
    let threads = threads.min(lints.len());
    if threads <= 1 || cfg!(target_arch = "wasm32") {
        return lints
            .iter()
            .map(|lint| {
                let mut found = Vec::new();
                lint.run(cx, &mut found);
                found
            })
            .collect();
    }
    // The queue holds the lints that do not wait for the model first.
    let needs_model = |lint: &Lint| reads_model_first(lint.info.code);
    let mut order: Vec<usize> = (0..lints.len()).collect();
    order.sort_by_key(|&i| needs_model(lints[i]));
    let build_model = order.iter().any(|&i| needs_model(lints[i]));
    let prepare = |thread: usize| {
        if build_model && thread == 0 {
            cx.kube();
        }
        if build_model && thread == 1 {
            // The graph (when built on demand) and the endpoints' DNAT rules, while the first
            // thread builds the rest of the model, which reads neither.
            cx.graph();
            cx.read_endpoint_dnats();
        }
    };
    run_queued(threads, &order, lints.len(), prepare, |i| {
        let mut found = Vec::new();
        lints[i].run(cx, &mut found);
        found
    })
}

/// Runs `run(i)` for each index in `order` on `threads` scoped threads (the caller's is thread
/// 0), each taking the next index from one shared queue after its own `prepare(thread)`; the
/// results come back indexed `0..count`, whichever thread ran them. A panic in a thread is
/// resumed in the caller.
pub(crate) fn run_queued<T: Send + Default>(
    threads: usize,
    order: &[usize],
    count: usize,
    prepare: impl Fn(usize) + Sync,
    run: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let work = |thread: usize| {
        prepare(thread);
        let mut done = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            done.push((i, run(i)));
        }
        done
    };
    let mut results: Vec<T> = (0..count).map(|_| T::default()).collect();
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads)
            .map(|t| {
                let work = &work;
                scope.spawn(move || work(t))
            })
            .collect();
        let mut done = work(0);
        for helper in helpers {
            match helper.join() {
                Ok(d) => done.extend(d),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        for (i, found) in done {
            results[i] = found;
        }
    });
    results
}

/// The Kubernetes lints (RL4xx) that read the model only to word a finding, or only for a rule
/// that already lost a match: on a healthy dump they never wait for it, so they run beside its
/// build with the lints of the other layers.
const MODEL_ONLY_ON_FINDING: &[&str] = &["RL401", "RL403", "RL410"];

/// Whether a lint reads the Kubernetes model before it can conclude anything. (Either way the
/// findings are the same: a lint that asks for the model waits until it is built.)
fn reads_model_first(code: &str) -> bool {
    code.starts_with("RL4") && !MODEL_ONLY_ON_FINDING.contains(&code)
}

/// The severity a lint runs at under `config` (`None`: not selected), and whether the
/// configuration names its level, which then wins over a severity the lint picks per finding.
pub(crate) fn lint_level(
    config: &Config,
    info: &'static CodeInfo,
    category: Category,
) -> Option<(Severity, bool)> {
    let Level::At(severity) = config.level(&CodeEntry { info, category }) else {
        return None;
    };
    let overridden = config.lints.get(info.code).and_then(|s| s.level).is_some();
    Some((severity, overridden))
}

/// A paste cut off inside a table (its text ends before the table's COMMIT, `RL103`) may end
/// mid-word: `-j KUBE-SERVI`, `--comment "kubernetes`. What is on that last line is the cut,
/// not a finding of its own, so the findings on it are folded into the `RL103` finding. (Lints
/// that conclude from what is absent skip such a table: `LintContext::is_complete`.)
fn fold_cut_line(set: &Ruleset<'_>, out: &mut Vec<Diagnostic>) {
    let Some(table) = set
        .iter_tables()
        .filter(|t| !t.get().implicit)
        .max_by_key(|t| t.get().header.start)
        .filter(|t| t.get().commit.is_none())
    else {
        return;
    };
    // The end of the table's last line of content: its last rule or declaration.
    let mut last = table.get().header.end;
    for chain in table.chains() {
        let declared = chain.get().declaration().map_or(0, |d| d.end);
        let ruled = chain.rules().map(|r| r.get().span.end).max().unwrap_or(0);
        last = last.max(declared).max(ruled);
    }
    let last = last as usize;
    let text = set.source().as_bytes();
    let last = last.min(text.len());
    let start = text[..last]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1) as u32;
    let end = last as u32;
    out.retain(|d| d.code == MISSING_COMMIT || d.span.start < start || d.span.start > end);
    let header = table.get().header.start;
    for d in out
        .iter_mut()
        .filter(|d| d.code == MISSING_COMMIT && d.span.start == header)
    {
        let help = d.help.take().unwrap_or_default();
        d.help = Some(format!(
            "{help}; rulelint does not check the table's last line, which may be cut off, nor what the missing part would decide (jumps, endpoints, chains that look unused or empty)"
        ));
    }
}

/// Parses and checks a dump in one call.
///
/// ```
/// use rulelint_lint::{Config, check_text};
/// let dump = "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n\
///             -A INPUT -j KUBE-FIREWALL\n-A KUBE-FIREWALL -j DROP\nCOMMIT\n";
/// let findings = check_text(dump, &Config::default());
/// assert_eq!(findings[0].code, "RL401");
/// assert_eq!(findings[0].name, "bare-drop");
/// ```
pub fn check_text(text: &str, config: &Config) -> Vec<Diagnostic> {
    check(&rulelint_parser::parse(text), config)
}

fn allowed(config: &Config, set: &Ruleset<'_>, d: &Diagnostic) -> bool {
    d.chain
        .is_some_and(|c| config.chain_allowed(d.code, set.chain(c).name()))
}

/// The output order: by position, then code.
pub fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (a.span.start, a.span.end, a.code).cmp(&(b.span.start, b.span.end, b.code))
    });
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The Kubernetes lints scheduled beside the model's build do not ask for it on a healthy
    /// kube-proxy node: they would wait for it there.
    #[test]
    fn lints_run_beside_the_model_do_not_read_it_on_a_healthy_node() {
        let text = rulelint_dumpgen::generate(&rulelint_dumpgen::Shape::with_rule_target(30_000));
        let parsed = rulelint_parser::parse(&text);
        let graph = ChainGraph::build(&parsed.ruleset);
        for code in MODEL_ONLY_ON_FINDING {
            let lint = LINTS
                .iter()
                .find(|l| l.info.code == *code)
                .expect("a registered lint");
            let cx = LintContext::new(&parsed.ruleset, &graph);
            let mut found = Vec::new();
            lint.run(&cx, &mut found);
            assert!(found.is_empty(), "{code}: {found:?}");
            assert!(!cx.kube_built(), "{code} built the Kubernetes model");
        }
        // And the others do read it there.
        let cx = LintContext::new(&parsed.ruleset, &graph);
        let lint = LINTS
            .iter()
            .find(|l| l.info.code == "RL408")
            .expect("RL408");
        lint.run(&cx, &mut Vec::new());
        assert!(cx.kube_built());
    }

    /// Every iptables-save dump of the lint corpus (`corpus/lints/*/*.txt`).
    pub(crate) fn lint_corpus_dumps() -> Vec<String> {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/lints");
        std::fs::read_dir(corpus)
            .expect("corpus/lints")
            .map(|d| d.expect("entry").path())
            .filter(|d| d.is_dir())
            .flat_map(|d| std::fs::read_dir(d).expect("lint folder"))
            .map(|f| f.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "txt"))
            .map(|p| std::fs::read_to_string(p).expect("dump"))
            .collect()
    }

    /// The lints of a dump on one thread or several: the same findings, in the same order.
    #[test]
    fn lint_threads_do_not_change_the_findings() {
        let mut texts = lint_corpus_dumps();
        assert!(texts.len() > 100);
        texts.push(rulelint_dumpgen::generate(
            &rulelint_dumpgen::Shape::with_rule_target(30_000),
        ));
        let mut all = Config::default();
        all.set_select(vec!["all".to_string()]).expect("all");
        let mut found = 0;
        for text in &texts {
            let parsed = rulelint_parser::parse(text);
            let graph = ChainGraph::build(&parsed.ruleset);
            for config in [&Config::default(), &all] {
                let one = check_with_graph_on(&parsed, &graph, config, 1);
                found += one.len();
                for threads in [2, 3, 8] {
                    let many = check_with_graph_on(&parsed, &graph, config, threads);
                    assert_eq!(format!("{one:?}"), format!("{many:?}"), "{threads} threads");
                }
                // `check` builds the graph on demand (on the second thread for a large dump).
                let on_demand = check(&parsed, config);
                assert_eq!(
                    format!("{one:?}"),
                    format!("{on_demand:?}"),
                    "graph on demand"
                );
            }
        }
        assert!(found > 150, "{found}");
    }
}
