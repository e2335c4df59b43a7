//! Configuration: which codes run, at which severity, and which chains they leave alone. Read
//! from `rulelint.toml`; the CLI's flags override it.

use crate::registry::{CodeEntry, all_codes};
use rulelint_parser::Severity;
use serde::Deserialize;
use std::collections::BTreeMap;

/// An error in the configuration (file or flags). Problems in a dump are diagnostics, never this.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file is not valid TOML or has keys rulelint does not know.
    #[error("invalid configuration: {0}")]
    Toml(String),
    /// A code or name that no lint or parser diagnostic has.
    #[error("unknown lint `{0}` (see `rulelint lints` for the codes and names)")]
    UnknownLint(String),
    /// A severity that is not `error`, `warning`, `info` or `off`.
    #[error("invalid severity `{value}` for `{lint}` (expected error, warning, info or off)")]
    InvalidSeverity {
        /// The lint it was given for.
        lint: String,
        /// What was written.
        value: String,
    },
    /// A `fail-on` that is not `error`, `warning`, `info` or `never`.
    #[error("invalid fail-on `{0}` (expected error, warning, info or never)")]
    InvalidFailOn(String),
}

/// The lowest severity that makes a run fail (exit status 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailOn {
    /// Fail on errors (the default).
    #[default]
    Error,
    /// Fail on warnings and errors.
    Warning,
    /// Fail on any finding.
    Info,
    /// Never fail because of findings.
    Never,
}

impl FailOn {
    /// Parses `error`, `warning`, `info` or `never`.
    pub fn parse(value: &str) -> Result<FailOn, ConfigError> {
        match value {
            "error" => Ok(FailOn::Error),
            "warning" => Ok(FailOn::Warning),
            "info" => Ok(FailOn::Info),
            "never" => Ok(FailOn::Never),
            _ => Err(ConfigError::InvalidFailOn(value.to_string())),
        }
    }

    /// Whether a finding of this severity fails the run.
    pub fn is_reached_by(self, severity: Severity) -> bool {
        match self {
            FailOn::Error => severity >= Severity::Error,
            FailOn::Warning => severity >= Severity::Warning,
            FailOn::Info => true,
            FailOn::Never => false,
        }
    }
}

/// The severity a code is reported at, or `Off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Not reported (and, for lints, not run).
    Off,
    /// Reported at this severity.
    At(Severity),
}

impl Level {
    fn parse(lint: &str, value: &str) -> Result<Level, ConfigError> {
        match value {
            "off" => Ok(Level::Off),
            "info" => Ok(Level::At(Severity::Info)),
            "warning" => Ok(Level::At(Severity::Warning)),
            "error" => Ok(Level::At(Severity::Error)),
            _ => Err(ConfigError::InvalidSeverity {
                lint: lint.to_string(),
                value: value.to_string(),
            }),
        }
    }
}

/// Settings of one code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LintSettings {
    /// Severity override; `None` keeps the default.
    pub level: Option<Level>,
    /// Chains this code is not reported on (exact names, or a prefix ending in `*`).
    pub allow_chains: Vec<String>,
}

/// The whole configuration. `Config::default()` runs every lint at its default severity and
/// fails on errors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// The lowest severity that fails the run.
    pub fail_on: FailOn,
    /// When set, only these codes are reported: codes, names, code prefixes (`RL2`) or `all`.
    pub select: Option<Vec<String>>,
    /// Codes not reported: codes, names or code prefixes.
    pub ignore: Vec<String>,
    /// Chains no code is reported on (exact names, or a prefix ending in `*`).
    pub allow_chains: Vec<String>,
    /// Per-code settings, keyed by code (`RL201`).
    pub lints: BTreeMap<&'static str, LintSettings>,
}

/// The file's shape. Kebab-case keys, unknown keys refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileConfig {
    fail_on: Option<String>,
    select: Option<Vec<String>>,
    #[serde(default)]
    ignore: Vec<String>,
    #[serde(default)]
    allow_chains: Vec<String>,
    #[serde(default)]
    lints: BTreeMap<String, FileLintSettings>,
}

/// `[lints] bare-drop = "warning"` or `[lints.bare-drop] severity = "warning"`.
#[derive(Deserialize)]
#[serde(untagged)]
enum FileLintSettings {
    Level(String),
    Table(FileLintTable),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileLintTable {
    severity: Option<String>,
    #[serde(default)]
    allow_chains: Vec<String>,
}

impl Config {
    /// Reads a `rulelint.toml`. Unknown keys, codes and severities are errors.
    ///
    /// ```
    /// use rulelint_lint::{Config, FailOn};
    /// let config = Config::from_toml(r#"
    /// fail-on = "warning"
    /// ignore = ["unreferenced-chain"]
    ///
    /// [lints.bare-drop]
    /// allow-chains = ["KUBE-CUSTOM-BLOCK"]
    ///
    /// [lints]
    /// duplicate-rule = "error"
    /// "#).unwrap();
    /// assert_eq!(config.fail_on, FailOn::Warning);
    /// assert!(config.lints.contains_key("RL302"));
    /// ```
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let file: FileConfig =
            toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;
        let mut config = Config {
            fail_on: match file.fail_on {
                Some(f) => FailOn::parse(&f)?,
                None => FailOn::default(),
            },
            select: None,
            ignore: Vec::new(),
            allow_chains: file.allow_chains,
            lints: BTreeMap::new(),
        };
        if let Some(select) = file.select {
            config.set_select(select)?;
        }
        config.set_ignore(file.ignore)?;
        for (key, settings) in file.lints {
            let entry = crate::registry::find_code(&key)
                .ok_or_else(|| ConfigError::UnknownLint(key.clone()))?;
            let parsed = match settings {
                FileLintSettings::Level(level) => LintSettings {
                    level: Some(Level::parse(&key, &level)?),
                    allow_chains: Vec::new(),
                },
                FileLintSettings::Table(t) => LintSettings {
                    level: t.severity.map(|s| Level::parse(&key, &s)).transpose()?,
                    allow_chains: t.allow_chains,
                },
            };
            let slot = config.lints.entry(entry.info.code).or_default();
            if parsed.level.is_some() {
                slot.level = parsed.level;
            }
            slot.allow_chains.extend(parsed.allow_chains);
        }
        Ok(config)
    }

    /// Replaces the selection, checking that every selector names something.
    pub fn set_select(&mut self, select: Vec<String>) -> Result<(), ConfigError> {
        check_selectors(&select)?;
        self.select = Some(select);
        Ok(())
    }

    /// Replaces the ignore list, checking that every selector names something.
    pub fn set_ignore(&mut self, ignore: Vec<String>) -> Result<(), ConfigError> {
        check_selectors(&ignore)?;
        self.ignore = ignore;
        Ok(())
    }

    /// The level a code is reported at under this configuration.
    pub fn level(&self, entry: &CodeEntry) -> Level {
        let selected = self
            .select
            .as_ref()
            .is_none_or(|s| s.iter().any(|sel| matches(sel, entry)));
        let ignored = self.ignore.iter().any(|sel| matches(sel, entry));
        if !selected || ignored {
            return Level::Off;
        }
        self.lints
            .get(entry.info.code)
            .and_then(|s| s.level)
            .unwrap_or(Level::At(entry.info.severity))
    }

    /// Whether findings of `code` about `chain` are left out.
    pub fn chain_allowed(&self, code: &str, chain: &str) -> bool {
        let per_lint = self
            .lints
            .get(code)
            .map_or(&[][..], |s| &s.allow_chains[..]);
        self.allow_chains
            .iter()
            .chain(per_lint)
            .any(|pattern| chain_matches(pattern, chain))
    }
}

fn check_selectors(selectors: &[String]) -> Result<(), ConfigError> {
    for sel in selectors {
        if !all_codes().any(|e| matches(sel, &e)) {
            return Err(ConfigError::UnknownLint(sel.clone()));
        }
    }
    Ok(())
}

/// A selector: `all`, a code, a name, or a code prefix of at least `RL` and one digit.
fn matches(selector: &str, entry: &CodeEntry) -> bool {
    let code = entry.info.code;
    selector == "all"
        || selector == entry.info.name
        || (selector.len() >= 3
            && code.len() >= selector.len()
            && code[..selector.len()].eq_ignore_ascii_case(selector))
}

/// An exact chain name, or a prefix ending in `*`.
fn chain_matches(pattern: &str, chain: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => chain.starts_with(prefix),
        None => pattern == chain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::find_code;

    fn level(config: &Config, code: &str) -> Level {
        config.level(&find_code(code).unwrap())
    }

    #[test]
    fn defaults_run_everything_at_default_severity() {
        let c = Config::default();
        assert_eq!(level(&c, "RL201"), Level::At(Severity::Error));
        assert_eq!(level(&c, "RL203"), Level::At(Severity::Info));
        assert_eq!(c.fail_on, FailOn::Error);
    }

    #[test]
    fn select_and_ignore_by_code_name_and_prefix() {
        let mut c = Config::default();
        c.set_select(vec!["RL2".into(), "bare-drop".into()])
            .unwrap();
        c.set_ignore(vec!["RL203".into()]).unwrap();
        assert_eq!(level(&c, "RL201"), Level::At(Severity::Error));
        assert_eq!(level(&c, "RL203"), Level::Off);
        assert_eq!(level(&c, "RL401"), Level::At(Severity::Error));
        assert_eq!(level(&c, "RL301"), Level::Off);
        assert_eq!(level(&c, "RL101"), Level::Off);
    }

    #[test]
    fn unknown_selectors_and_keys_are_errors() {
        let mut c = Config::default();
        assert!(matches!(
            c.set_select(vec!["no-such-lint".into()]),
            Err(ConfigError::UnknownLint(_))
        ));
        assert!(c.set_ignore(vec!["R".into()]).is_err());
        assert!(matches!(
            Config::from_toml("failon = \"error\""),
            Err(ConfigError::Toml(_))
        ));
        assert!(matches!(
            Config::from_toml("[lints]\nbare-drop = \"fatal\""),
            Err(ConfigError::InvalidSeverity { .. })
        ));
        assert!(matches!(
            Config::from_toml("fail-on = \"sometimes\""),
            Err(ConfigError::InvalidFailOn(_))
        ));
    }

    #[test]
    fn file_sets_levels_and_allowed_chains() {
        let c = Config::from_toml(
            "allow-chains = [\"LEGACY-*\"]\n[lints]\nunreferenced-chain = \"off\"\n\
             [lints.RL401]\nseverity = \"warning\"\nallow-chains = [\"KUBE-BLOCK\"]\n",
        )
        .unwrap();
        assert_eq!(level(&c, "RL203"), Level::Off);
        assert_eq!(level(&c, "RL401"), Level::At(Severity::Warning));
        assert!(c.chain_allowed("RL401", "KUBE-BLOCK"));
        assert!(!c.chain_allowed("RL301", "KUBE-BLOCK"));
        assert!(c.chain_allowed("RL301", "LEGACY-INPUT"));
    }

    #[test]
    fn fail_on_thresholds() {
        assert!(FailOn::Error.is_reached_by(Severity::Error));
        assert!(!FailOn::Error.is_reached_by(Severity::Warning));
        assert!(FailOn::Warning.is_reached_by(Severity::Warning));
        assert!(!FailOn::Warning.is_reached_by(Severity::Info));
        assert!(FailOn::Info.is_reached_by(Severity::Info));
        assert!(!FailOn::Never.is_reached_by(Severity::Error));
    }
}
