//! The words of a rule -> tokens: options with their values, `-m` modules, the `-j`/`-g`
//! target, negations. The hot loop of parsing: words are told apart by their bytes. The
//! classifier borrows only what it writes (the token and diagnostic lists) rather than the whole
//! parser; split out so, the parse of a 100k-rule dump took 4% less time.

use crate::codes;
use crate::diagnostic::Diagnostic;
use crate::lexer::offset_in;
use crate::model::{Family, Rule, Token, TokenKind};
use crate::span::Span;
use crate::views::{AddressError, parse_address};
use ipnet::IpNet;

/// Turns the words of a rule after `-A CHAIN` into tokens appended to `tokens`, reporting
/// misplaced words to `diags` and noting the address family of `-s`/`-d` values in `family`.
/// Returns the rule's first token's index and its target token's index (or
/// `Rule::NO_TARGET`).
pub(crate) fn rule_tokens(
    src: &str,
    words: &[Span],
    tokens: &mut Vec<Token>,
    diags: &mut Vec<Diagnostic>,
    family: &mut Option<Family>,
) -> (u32, u32) {
    RuleTokens {
        src,
        tokens,
        diags,
        family,
    }
    .classify(words)
}

/// What a word of a rule is, from its bytes alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WordClass {
    /// `!`
    Not,
    /// `-m` / `--match`
    Module,
    /// `-j` / `--jump`
    Jump,
    /// `-g` / `--goto`
    Goto,
    /// `[unsupported` (of `[unsupported revision]`)
    Unsupported,
    /// An option name; `Some(n)`: a basic option taking `n` values.
    Option(Option<u8>),
    /// Anything else: a value.
    Arg,
}

/// The option whose values are being read, while classifying a rule's words.
#[derive(Clone, Copy)]
struct OpenOption {
    /// Index of its token.
    token: usize,
    /// Values read so far.
    args: u8,
    /// The number of values a basic option takes; `None` for a module's option.
    arity: Option<u8>,
    /// `-s` or `-d`: its value is checked as an address.
    address: bool,
}

/// Classifies a word by bytes: the hot path of parsing, so no string matching chains. Most
/// words are values, told apart by their first byte.
#[inline(always)]
fn classify_word(word: &[u8]) -> WordClass {
    match word {
        [b'-', _, ..] => classify_dash_word(word),
        [b'!'] => WordClass::Not,
        b"[unsupported" => WordClass::Unsupported,
        _ => WordClass::Arg,
    }
}

/// Classifies a word of two or more bytes that starts with `-`.
fn classify_dash_word(word: &[u8]) -> WordClass {
    match word {
        [b'-', c] => match c {
            b'm' => WordClass::Module,
            b'j' => WordClass::Jump,
            b'g' => WordClass::Goto,
            b's' | b'd' | b'p' | b'i' | b'o' => WordClass::Option(Some(1)),
            b'f' | b'4' | b'6' => WordClass::Option(Some(0)),
            b'c' => WordClass::Option(Some(2)),
            c if c.is_ascii_alphabetic() => WordClass::Option(None),
            _ => WordClass::Arg,
        },
        [b'-', b'-', first, rest @ ..] if first.is_ascii_alphanumeric() => match (*first, rest) {
            (b'm', b"atch") => WordClass::Module,
            (b'j', b"ump") => WordClass::Jump,
            (b'g', b"oto") => WordClass::Goto,
            (b's', b"ource")
            | (b'd', b"estination")
            | (b'p', b"rotocol")
            | (b'i', b"n-interface")
            | (b'o', b"ut-interface") => WordClass::Option(Some(1)),
            (b'f', b"ragment") | (b'i', b"pv4") | (b'i', b"pv6") => WordClass::Option(Some(0)),
            (b's', b"et-counters") => WordClass::Option(Some(2)),
            _ => WordClass::Option(None),
        },
        [b'-', c, ..] if c.is_ascii_alphabetic() => WordClass::Option(None),
        _ => WordClass::Arg,
    }
}

/// What the classifier writes to, borrowed from the parser for one rule.
struct RuleTokens<'p, 'a> {
    src: &'a str,
    tokens: &'p mut Vec<Token>,
    diags: &'p mut Vec<Diagnostic>,
    family: &'p mut Option<Family>,
}

impl<'a> RuleTokens<'_, 'a> {
    fn text(&self, span: Span) -> &'a str {
        &self.src[span.range()]
    }

    /// Turns `words` into tokens. Returns the first token's index and the target token's index
    /// (or `Rule::NO_TARGET`).
    fn classify(&mut self, words: &[Span]) -> (u32, u32) {
        let tokens_start = self.tokens.len() as u32;
        let mut target = Rule::NO_TARGET;
        let mut pending_not: Option<Span> = None;
        let mut option: Option<OpenOption> = None;
        let bytes = self.src.as_bytes();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            let next = words.get(i + 1).copied();
            match classify_word(&bytes[w.range()]) {
                WordClass::Not => {
                    let next_is_option = next.is_some_and(|n| {
                        !matches!(
                            classify_word(&bytes[n.range()]),
                            WordClass::Arg | WordClass::Not
                        )
                    });
                    match option {
                        Some(o) if o.args == 0 && !next_is_option && o.arity != Some(0) => {
                            self.tokens[o.token].add_flags(Token::NEGATED | Token::NEGATED_AFTER);
                        }
                        _ if pending_not.is_some() => self.unexpected(
                            w,
                            "`!` twice in a row",
                            "write one `!` before the option it negates",
                        ),
                        _ => pending_not = Some(w),
                    }
                    i += 1;
                }
                class @ (WordClass::Module | WordClass::Jump | WordClass::Goto) => {
                    self.close_option(option.take());
                    let name = next.filter(|n| {
                        matches!(
                            classify_word(&bytes[n.range()]),
                            WordClass::Arg | WordClass::Not
                        )
                    });
                    let Some(name) = name else {
                        let flag = self.text(w);
                        let is_module = class == WordClass::Module;
                        let what = if is_module { "module name" } else { "target" };
                        self.diags.push(
                            Diagnostic::new(
                                &codes::MISSING_ARGUMENT,
                                w,
                                format!("`{flag}` has no {what} after it"),
                            )
                            .with_label(format!("{what} missing"))
                            .with_help(if is_module {
                                "write `-m MODULE` followed by its options"
                            } else {
                                "write `-j TARGET` (a chain or an extension such as ACCEPT)"
                            }),
                        );
                        i += 1;
                        continue;
                    };
                    if let Some(not) = pending_not.take() {
                        self.unexpected(
                            not,
                            "`!` before a module or target",
                            "put `!` before the option it negates, after `-m MODULE`",
                        );
                    }
                    if class == WordClass::Module {
                        self.push_named(w, name, TokenKind::Module, 0);
                    } else {
                        if target != Rule::NO_TARGET {
                            self.unexpected(
                                w.cover(name),
                                "a second target in one rule",
                                "a rule has one `-j` or `-g`",
                            );
                        }
                        target = self.tokens.len() as u32;
                        let flags = if class == WordClass::Goto {
                            Token::GOTO
                        } else {
                            0
                        };
                        self.push_named(w, name, TokenKind::Target, flags);
                    }
                    i += 2;
                }
                WordClass::Unsupported
                    if next.is_some_and(|n| &bytes[n.range()] == b"revision]") =>
                {
                    self.close_option(option.take());
                    self.push_token(w.cover(words[i + 1]), TokenKind::Unsupported, 0);
                    i += 2;
                }
                WordClass::Option(arity) => {
                    self.close_option(option.take());
                    let mut flags = if arity.is_some() { Token::BASIC } else { 0 };
                    if pending_not.take().is_some() {
                        flags |= Token::NEGATED;
                    }
                    option = Some(OpenOption {
                        token: self.tokens.len(),
                        args: 0,
                        arity,
                        address: arity == Some(1)
                            && matches!(
                                &bytes[w.range()],
                                b"-s" | b"-d" | b"--source" | b"--destination"
                            ),
                    });
                    self.push_token(w, TokenKind::Option, flags);
                    i += 1;
                }
                WordClass::Arg | WordClass::Unsupported => {
                    match &mut option {
                        Some(o) => {
                            o.args = o.args.saturating_add(1);
                            if o.arity.is_some_and(|a| o.args > a) {
                                let text = self.text(w);
                                let name =
                                    crate::model::token_text(self.src, &self.tokens[o.token]);
                                self.unexpected(
                                    w,
                                    &format!(
                                        "`{text}` after `{name}`, which takes {} value(s)",
                                        o.arity.unwrap_or(0)
                                    ),
                                    "remove the extra word or add the option it belongs to",
                                );
                            } else if o.address {
                                self.check_addresses(w);
                            }
                        }
                        None => {
                            let text = self.text(w);
                            self.unexpected(w, &format!("`{text}` is not an option or an option's argument"), "every word after `-A CHAIN` is an option (`-p`, `--dport`) or its value");
                        }
                    }
                    if let Some(not) = pending_not.take() {
                        self.unexpected(
                            not,
                            "`!` before a value",
                            "put `!` before the option it negates: `! -s 10.0.0.0/8`",
                        );
                    }
                    self.push_token(w, TokenKind::Arg, 0);
                    i += 1;
                }
            }
        }
        self.close_option(option);
        if let Some(not) = pending_not {
            self.unexpected(
                not,
                "`!` at the end of the rule",
                "put `!` before the option it negates",
            );
        }
        (tokens_start, target)
    }

    fn push_token(&mut self, span: Span, kind: TokenKind, flags: u8) {
        // Single words are below 64 KiB (the lexer checks); two-word tokens use `push_named`.
        let span = if span.len() > u16::MAX as usize {
            Span::new(span.end as usize - u16::MAX as usize, span.end as usize)
        } else {
            span
        };
        self.tokens.push(Token::new(span, kind, flags, 0));
    }

    /// A `-m NAME` or `-j NAME` token: spans both words and remembers where the name starts.
    fn push_named(&mut self, flag: Span, name: Span, kind: TokenKind, flags: u8) {
        let offset = name.start - flag.start;
        let token = if offset <= u8::MAX as u32 && name.end - flag.start <= u16::MAX as u32 {
            Token::new(flag.cover(name), kind, flags, offset as u8)
        } else {
            // Absurd spacing between flag and name: keep the name alone.
            Token::new(name, kind, flags, 0)
        };
        self.tokens.push(token);
    }

    fn unexpected(&mut self, span: Span, message: &str, help: &str) {
        self.diags.push(
            Diagnostic::new(&codes::UNEXPECTED_WORD, span, message.to_string())
                .with_label("unexpected here")
                .with_help(help.to_string()),
        );
    }

    /// A basic option must have its value; a module or target option known to take exactly
    /// one value must have one, and no more. Most module options have one value, so the name
    /// is looked up only when an option ends with none or several.
    #[inline]
    fn close_option(&mut self, option: Option<OpenOption>) {
        if let Some(o) = option {
            match o.arity {
                Some(arity) if o.args < arity => self.missing_value(o.token),
                None if o.args != 1 => self.check_single_valued(o),
                _ => {}
            }
        }
    }

    /// Reports a module or target option that takes exactly one value and ended with none, or
    /// with several (an unquoted `--comment` of several words): iptables-restore rejects both.
    /// The rule keeps all its words.
    #[cold]
    fn check_single_valued(&mut self, o: OpenOption) {
        let token = self.tokens[o.token];
        let name = crate::model::token_text(self.src, &token);
        if !takes_one_value(name) {
            return;
        }
        if o.args == 0 {
            self.missing_value(o.token);
            return;
        }
        let first = o.token + 1;
        let (Some(value), Some(extra), Some(last)) = (
            self.tokens.get(first).copied(),
            self.tokens.get(first + 1).copied(),
            self.tokens.get(o.token + o.args as usize).copied(),
        ) else {
            return;
        };
        let extra_span = extra.span().cover(last.span());
        let value_text = self.text(value.span());
        let extra_text = self.text(extra_span);
        let free_text = matches!(name, "--comment" | "--log-prefix" | "--nflog-prefix");
        let help = if free_text {
            format!(
                "quote a value with blanks: `{name} \"{value_text} {extra_text}\"`; rulelint read the words as one value"
            )
        } else {
            String::from(
                "remove the extra words or add the option they belong to; rulelint kept them as values",
            )
        };
        self.diags.push(
            Diagnostic::new(
                &codes::UNEXPECTED_WORD,
                extra_span,
                format!("`{extra_text}` after `{name} {value_text}`, which takes one value"),
            )
            .with_label(if free_text {
                "unquoted words of the value"
            } else {
                "extra words"
            })
            .with_help(help),
        );
    }

    /// Reports a basic option that ended without its value: rare, so kept out of line.
    #[cold]
    fn missing_value(&mut self, option_token: usize) {
        let token = self.tokens[option_token];
        let name = crate::model::token_text(self.src, &token);
        self.diags.push(
            Diagnostic::new(
                &codes::MISSING_ARGUMENT,
                token.span(),
                format!("`{name}` has no value"),
            )
            .with_label("value missing after this option")
            .with_help(match name {
                "-s" | "--source" | "-d" | "--destination" => {
                    "write an address or network, e.g. `-s 10.0.0.0/8`"
                }
                "-p" | "--protocol" => "write a protocol, e.g. `-p tcp`",
                "--reject-with" => "write the reply, e.g. `--reject-with icmp-port-unreachable`",
                "--to-destination" => {
                    "write the address (and port), e.g. `--to-destination 10.244.1.5:8080`"
                }
                "--to-source" => "write the address, e.g. `--to-source 192.168.1.10`",
                "--comment" | "--log-prefix" => "write the text in quotes, or remove the option",
                _ => "write the option's value after it; iptables-restore fails with \"option requires an argument\"",
            }),
        );
    }

    /// Checks the value of `-s`/`-d` (one address or network, or a list split by commas) and
    /// notes the address family.
    fn check_addresses(&mut self, value: Span) {
        let text = self.text(value);
        // Most values are one address. A list never parses whole, and is checked part by part.
        if let Ok(net) = parse_address(text) {
            self.note_family(&net);
            return;
        }
        for part in text.split(',') {
            self.check_address(part);
        }
    }

    fn note_family(&mut self, net: &IpNet) {
        if self.family.is_none() {
            *self.family = Some(if net.addr().is_ipv6() {
                Family::Ipv6
            } else {
                Family::Ipv4
            });
        }
    }

    fn check_address(&mut self, part: &'a str) {
        match parse_address(part) {
            Ok(net) => self.note_family(&net),
            Err(AddressError::Hostname) => {}
            Err(e) => {
                let o = offset_in(self.src, part);
                self.diags.push(
                    Diagnostic::new(&codes::INVALID_ADDRESS, Span::new(o, o + part.len()), format!("`{part}` is not a valid address or network: {e}"))
                        .with_label("invalid address")
                        .with_help("write an IPv4 or IPv6 address, optionally with `/prefix`, e.g. `10.0.0.0/8` or `fd00::/64`"),
                );
            }
        }
    }
}

/// Module and target options that take exactly one value (one word) in every extension that
/// has them: iptables-restore fails when such an option has no value ("option requires an
/// argument") or is followed by another word ("Bad argument"). Options that take two words
/// (`--match-set`, `--tcp-flags`), none (`--syn`, `--random-fully`) or a value in some
/// extensions only are left out: an unknown option is never an error.
fn takes_one_value(name: &str) -> bool {
    matches!(
        name,
        // Matches.
        "--comment"
            | "--dport"
            | "--sport"
            | "--destination-port"
            | "--source-port"
            | "--dports"
            | "--sports"
            | "--destination-ports"
            | "--source-ports"
            | "--ports"
            | "--ctstate"
            | "--ctstatus"
            | "--ctorigsrc"
            | "--ctorigdst"
            | "--ctreplsrc"
            | "--ctrepldst"
            | "--state"
            | "--mark"
            | "--mode"
            | "--probability"
            | "--every"
            | "--packet"
            | "--dst-type"
            | "--src-type"
            | "--icmp-type"
            | "--icmpv6-type"
            | "--uid-owner"
            | "--gid-owner"
            | "--limit"
            | "--limit-burst"
            | "--physdev-in"
            | "--physdev-out"
            | "--pkt-type"
            | "--src-range"
            | "--dst-range"
            | "--connlimit-above"
            | "--connlimit-upto"
            | "--connlimit-mask"
            | "--seconds"
            | "--hitcount"
            | "--helper"
            | "--length"
            | "--algo"
            | "--dscp"
            | "--dscp-class"
            | "--tos"
            | "--ttl-eq"
            | "--ttl-gt"
            | "--ttl-lt"
            // Targets.
            | "--to-destination"
            | "--to-source"
            | "--to-ports"
            | "--reject-with"
            | "--set-xmark"
            | "--set-mark"
            | "--and-mark"
            | "--or-mark"
            | "--xor-mark"
            | "--nfmask"
            | "--ctmask"
            | "--log-prefix"
            | "--log-level"
            | "--nflog-group"
            | "--nflog-prefix"
            | "--nflog-threshold"
            | "--nflog-range"
            | "--nflog-size"
            | "--on-port"
            | "--on-ip"
            | "--tproxy-mark"
            | "--queue-num"
            | "--queue-balance"
            | "--set-mss"
            | "--set-dscp"
            | "--set-dscp-class"
            | "--set-tos"
            | "--ttl-set"
            | "--ttl-inc"
            | "--ttl-dec"
            | "--hl-set"
            | "--zone"
            | "--helper-name"
            | "--gateway"
            | "--set-class"
            | "--to"
    )
}
