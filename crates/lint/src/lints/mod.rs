//! One file per lint: its declaration with docs, its check, and its pass/fail cases.

pub mod bare_drop;
pub mod chain_loop;
pub mod cluster_ip_conflict;
pub mod duplicate_rule;
pub mod empty_kube_chain;
pub mod forward_drop_policy;
pub mod invalid_endpoint;
pub mod masquerade_mark_mismatch;
pub mod missing_hairpin;
pub mod missing_hook_jump;
pub mod mixed_backend;
pub mod mixed_proxy_mode;
pub mod orphan_endpoint_chain;
pub mod orphan_service_chain;
pub mod probability_ladder;
pub mod ruleset_scale;
pub mod service_without_endpoints;
pub mod shadowed_hook_jump;
pub mod shadowed_rule;
pub mod stale_reject;
pub mod undefined_jump_target;
pub mod unreachable_rule;
pub mod unreferenced_chain;
pub mod unsupported_revision;
pub mod weakened_rule;

#[cfg(test)]
pub(crate) mod testing {
    use crate::context::{Findings, LintContext};
    use crate::registry::Lint;
    use rulelint_parser::{ChainGraph, Diagnostic, parse};

    /// The findings of one lint alone on a dump.
    pub fn run(lint: &'static Lint, text: &str) -> Vec<Diagnostic> {
        let parsed = parse(text);
        let graph = ChainGraph::build(&parsed.ruleset);
        let cx = LintContext::new(&parsed.ruleset, &graph);
        let mut out = Vec::new();
        (lint.check)(&cx, &mut Findings::new(lint, &mut out));
        out
    }

    /// Asserts that `lint` finds the same with the model's dispatch keys as with a model that
    /// has none (the lint then reads every dispatch rule itself): for the lints that take what
    /// the model read of nat `KUBE-SERVICES` instead of reading it again.
    pub fn assert_same_without_dispatch_keys(
        lint: &'static Lint,
        set: &rulelint_parser::Ruleset<'_>,
        graph: &ChainGraph,
        model: &crate::kube::KubeModel<'_>,
    ) {
        let run_on = |model: crate::kube::KubeModel<'_>| {
            let cx = LintContext::new(set, graph);
            cx.set_kube_for_tests(model);
            let mut out = Vec::new();
            (lint.check)(&cx, &mut Findings::new(lint, &mut out));
            out
        };
        let mut without_keys = model.clone();
        without_keys.dispatch_keys = Default::default();
        assert_eq!(
            run_on(model.clone()),
            run_on(without_keys),
            "{}",
            lint.info.name
        );
    }

    /// Over the damaged dispatch texts (`cluster_ip_conflict`'s tests): `look(rule)` on each rule
    /// the model read as a plain dispatch rule (more than a thousand of them), and `lint` finds
    /// the same with and without the model's keys.
    pub fn for_each_plain_dispatch_rule(
        lint: &'static Lint,
        mut look: impl FnMut(rulelint_parser::RuleRef<'_, '_>),
    ) {
        let mut plain = 0;
        for text in crate::lints::cluster_ip_conflict::tests::damaged_dispatch_texts() {
            let parsed = parse(&text);
            let graph = ChainGraph::build(&parsed.ruleset);
            let model = crate::kube::KubeModel::build(&parsed.ruleset, &graph);
            let keys = &model.dispatch_keys;
            if let Some(chain) = keys.chain {
                let mut at = 0;
                for rule in parsed.ruleset.chain(chain).rules() {
                    if keys.is_plain_dispatch(chain, rule.id, &mut at) {
                        plain += 1;
                        look(rule);
                    }
                }
            }
            assert_same_without_dispatch_keys(lint, &parsed.ruleset, &graph, &model);
        }
        assert!(plain > 1_000, "{plain}");
    }

    /// Every `pass` dump yields no finding of the lint; every `fail` dump yields the given number.
    pub fn assert_cases(lint: &'static Lint, pass: &[&str], fail: &[(&str, usize)]) {
        for text in pass {
            let found = run(lint, text);
            assert!(
                found.is_empty(),
                "{} flagged a pass case:\n{text}\n{found:#?}",
                lint.info.name
            );
        }
        for (text, count) in fail {
            let found = run(lint, text);
            assert_eq!(
                found.len(),
                *count,
                "{} on:\n{text}\n{found:#?}",
                lint.info.name
            );
            for d in &found {
                assert_eq!(d.code, lint.info.code);
                assert!(!d.message.ends_with('.'), "{}", d.message);
                assert!(d.help.is_some(), "{} finding without help", lint.info.name);
            }
        }
    }

    /// A filter table holding the given lines (declarations and rules).
    pub fn filter(lines: &str) -> String {
        format!(
            "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n{lines}COMMIT\n"
        )
    }

    /// A complete nat table holding `lines`.
    pub fn nat(lines: &str) -> String {
        format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n{lines}COMMIT\n"
        )
    }
}
