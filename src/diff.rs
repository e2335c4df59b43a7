//! `rulelint diff`: compares two node dumps, or many (files or folders), and reports drift.
//! A dump is iptables-save, `nft list ruleset` text, or both.

use crate::folders::Entry;
use crate::{EXIT_INPUT, Loaded, load_all, write_json};
use rulelint_lint::diff::{
    CollectedFacts, Comparison, FactOptions, Group, Node, NodeBackend, NodeFacts, NodeInput,
    RuleTexts, report, rule_changes,
};
use rulelint_lint::summary;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Exit status when the nodes drift.
const EXIT_DRIFT: u8 = 1;

/// Output formats.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// Grouped text, coloured on a terminal.
    Human,
    /// The stable JSON document (format version 1, documented in the README).
    Json,
}

/// A node's name from its file: the file name without `.gz`, `.txt`, `.save`, `.rules`, `.iptables`.
pub(crate) fn name_from_path(path: &str) -> String {
    let mut name = Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
    for ext in [".gz", ".txt", ".save", ".rules", ".iptables", ".dump"] {
        if let Some(stem) = name.strip_suffix(ext)
            && !stem.is_empty()
        {
            name = stem.to_string();
        }
    }
    name
}

/// Names nodes from their files, falling back to the whole path when two files share a name.
pub(crate) fn node_names(loaded: &[&Loaded]) -> Vec<String> {
    let short: Vec<String> = loaded.iter().map(|l| name_from_path(&l.name)).collect();
    short
        .iter()
        .zip(loaded)
        .map(|(s, l)| {
            if short.iter().filter(|o| *o == s).count() > 1 {
                l.name.clone()
            } else {
                s.clone()
            }
        })
        .collect()
}

/// Runs `rulelint diff`. Inputs are dumps or node summaries, told apart by content. Two dumps
/// are read whole (the rule level needs their rules); otherwise each input is read, reduced to
/// its facts and dropped, on every core, and only the facts are compared.
pub fn run(paths: &[String], format: Format, color: bool, out: &mut impl Write) -> io::Result<u8> {
    let entries = match crate::folders::expand(paths) {
        Ok(f) => f,
        Err(message) => {
            eprintln!("rulelint: {message}");
            return Ok(EXIT_INPUT);
        }
    };
    // Two inputs are compared whole, with their rules; so is standard input named twice.
    if entries.len() == 2 || entries.iter().filter(|e| e.path == "-").count() > 1 {
        return run_whole(&entries, format, color, out);
    }
    // Standard input cannot be read twice, and a mixed cluster's inputs are read twice: it is
    // read once, here, and held (one node's text) while the other inputs stream past it.
    let stdin = entries
        .iter()
        .any(|e| e.path == "-")
        .then(|| crate::input::read("-"));
    let stdin = stdin.as_ref();
    let digests = entries.len() > 2;
    let options = FactOptions {
        digests,
        catalog: false,
    };
    // Facts go into the group as each input is read; the input is dropped then.
    let mut group = Group::new(entries.len());
    let mut status: Vec<Status> = (0..entries.len())
        .map(|_| Status::Failed(String::new()))
        .collect();
    let indexes: Vec<usize> = (0..entries.len()).collect();
    let take = |i: usize, outcome: Outcome, group: &mut Group, status: &mut Vec<Status>| {
        status[i] = match outcome {
            Outcome::Facts {
                facts,
                declared,
                summary,
                path,
            } => {
                let kept = Status::Kept {
                    declared,
                    summary,
                    path,
                    backend: facts.info.backend,
                    catalog: facts.catalog.is_some(),
                };
                group.insert(i, facts);
                kept
            }
            // Its lines stay in its file: read back for the facts the report shows.
            Outcome::Chunked { summary, path } => {
                match group.insert_summary_from(i, &summary, &path) {
                    Ok(()) => Status::Kept {
                        declared: true,
                        summary: true,
                        path,
                        backend: summary.info.backend,
                        catalog: summary.has_catalog,
                    },
                    Err(e) => Status::Failed(format!("`{path}`: {e}")),
                }
            }
            Outcome::Skipped(path) => Status::Skipped(path),
            Outcome::Failed(message) => Status::Failed(message),
        };
    };
    read_facts(&entries, &indexes, options, stdin, threads(), |i, o| {
        take(i, o, &mut group, &mut status)
    });
    // Comparisons with nftables nodes read every node's Service catalogue: read the
    // iptables nodes again for theirs (mixed clusters only).
    let mixed = status
        .iter()
        .any(|s| matches!(s, Status::Kept { backend, .. } if *backend != NodeBackend::Iptables));
    if mixed {
        let again: Vec<usize> = (0..status.len())
            .filter(|&i| matches!(status[i], Status::Kept { catalog: false, .. }))
            .collect();
        let catalog = FactOptions {
            digests,
            catalog: true,
        };
        read_facts(&entries, &again, catalog, stdin, threads(), |i, o| {
            take(i, o, &mut group, &mut status)
        });
    }
    // Messages in the order of the inputs, whatever order the threads finished in.
    let mut failed = false;
    let mut kept: Vec<usize> = Vec::new();
    for (i, s) in status.iter().enumerate() {
        match s {
            Status::Kept { .. } => kept.push(i),
            Status::Skipped(path) => {
                eprintln!("rulelint: skipping `{path}`: {}", crate::NO_RULESET_SHORT)
            }
            Status::Failed(message) => {
                eprintln!("rulelint: {message}");
                failed = true;
            }
        }
    }
    if failed {
        return Ok(EXIT_INPUT);
    }
    if too_few(kept.len()) {
        return Ok(EXIT_INPUT);
    }
    let kept_entries: Vec<&Entry> = kept.iter().map(|&i| &entries[i]).collect();
    // Two dumps left once the rest were skipped: the pair, with its rule level.
    if kept.len() == 2
        && kept
            .iter()
            .all(|&i| matches!(status[i], Status::Kept { summary: false, .. }))
    {
        let pair: Vec<Entry> = kept_entries
            .iter()
            .map(|e| Entry {
                path: e.path.clone(),
                from_folder: e.from_folder,
            })
            .collect();
        return run_whole(&pair, format, color, out);
    }
    let mut paths = Vec::with_capacity(kept.len());
    let mut summaries = Vec::new();
    for (slot, (&i, name)) in kept.iter().zip(names_of(&kept_entries)).enumerate() {
        if let Status::Kept {
            declared,
            summary,
            path,
            ..
        } = &status[i]
        {
            if !declared {
                group.rename(i, name);
            }
            if *summary {
                summaries.push(slot);
            }
            paths.push(path.as_str());
        }
    }
    group.keep(&kept);
    group.read_lines_with(read_at);
    let mut comparison = group.compare();
    if kept.len() == 2 {
        comparison.notes.push(pair_note(&comparison, &summaries));
    }
    write_report(&comparison, &paths, format, color, out)
}

/// What is known of an input once read (its facts are in the group).
enum Status {
    Kept {
        declared: bool,
        summary: bool,
        path: String,
        backend: NodeBackend,
        catalog: bool,
    },
    Skipped(String),
    Failed(String),
}

/// Whether `count` dumps are too few to compare; says so on standard error.
fn too_few(count: usize) -> bool {
    if count < 2 {
        eprintln!(
            "rulelint: diff needs at least two dumps (files, or a folder holding them); got {count}"
        );
    }
    count < 2
}

/// The note of a pair compared from summaries: rule text is in the dumps.
fn pair_note(comparison: &Comparison<'_>, summaries: &[usize]) -> String {
    let names: Vec<&str> = summaries
        .iter()
        .map(|&i| comparison.nodes[i].name.as_str())
        .collect();
    format!(
        "rule level left out: {} read from a summary, which holds no rule text; diff the dumps of {} and {} for rule changes",
        names.join(" and "),
        comparison.nodes[0].name,
        comparison.nodes[1].name
    )
}

fn write_report(
    comparison: &Comparison<'_>,
    paths: &[&str],
    format: Format,
    color: bool,
    out: &mut impl Write,
) -> io::Result<u8> {
    let doc = report::document(comparison, paths);
    match format {
        Format::Json => write_json(out, &doc)?,
        Format::Human => out.write_all(report::human(&doc, color).as_bytes())?,
    }
    Ok(if doc.agree { 0 } else { EXIT_DRIFT })
}

/// Node names of inputs from their file names (a `# node:` line or a summary's name wins).
fn names_of(entries: &[&Entry]) -> Vec<String> {
    let loaded: Vec<Loaded> = entries
        .iter()
        .map(|e| Loaded {
            // As `input::read` names it, so that the names are those of the inputs read whole.
            name: if e.path == "-" {
                crate::input::STDIN_NAME.to_string()
            } else {
                e.path.clone()
            },
            text: String::new(),
        })
        .collect();
    node_names(&loaded.iter().collect::<Vec<_>>())
}

/// What reading one input gave.
enum Outcome {
    /// Its facts.
    Facts {
        facts: NodeFacts,
        /// The input named its node (`# node:` line, summary).
        declared: bool,
        /// Read from a summary.
        summary: bool,
        /// The input's name as given (`Loaded::name`).
        path: String,
    },
    /// A version 2 summary, its chunks found but not read: the group reads only those no
    /// other node holds.
    Chunked {
        summary: summary::v2::Summary,
        /// The input's name as given.
        path: String,
    },
    /// A file found in a folder that holds no dump.
    Skipped(String),
    /// Unreadable, or a named file with no dump: the message.
    Failed(String),
}

/// Threads for reading inputs: `RULELINT_THREADS`, else one per core.
fn threads() -> usize {
    std::env::var("RULELINT_THREADS")
        .ok()
        .and_then(|t| t.parse::<usize>().ok())
        .filter(|&t| t > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Standard input as read once, before the other inputs ([`run`]).
type ReadStdin = Result<crate::input::Input, String>;

/// Reads the inputs `which` on `threads` threads and hands each outcome to `take` on this
/// thread as it comes, so that an input's facts are packed, and its text and rules dropped,
/// while the next ones are read. An input `-` is `stdin`'s text.
fn read_facts(
    entries: &[Entry],
    which: &[usize],
    options: FactOptions,
    stdin: Option<&ReadStdin>,
    threads: usize,
    mut take: impl FnMut(usize, Outcome),
) {
    let next = AtomicUsize::new(0);
    let threads = threads.clamp(1, which.len().max(1));
    let mut received = vec![false; entries.len()];
    let (send, receive) = std::sync::mpsc::sync_channel::<(usize, Outcome)>(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let send = send.clone();
                let next = &next;
                scope.spawn(move || {
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&i) = which.get(k) else { break };
                        let outcome = read_one(&entries[i], options, stdin);
                        if send.send((i, outcome)).is_err() {
                            break;
                        }
                    }
                })
            })
            .collect();
        drop(send);
        for (i, outcome) in receive {
            received[i] = true;
            take(i, outcome);
        }
        // A worker that panicked left its input unread: reported below, not re-raised.
        for worker in workers {
            let _ = worker.join();
        }
    });
    for &i in which.iter().filter(|&&i| !received[i]) {
        take(
            i,
            Outcome::Failed(format!("`{}` could not be read", entries[i].path)),
        );
    }
}

/// Reads one input (`-` is `stdin`'s text, read before) and reduces it to its facts.
fn read_one(entry: &Entry, options: FactOptions, stdin: Option<&ReadStdin>) -> Outcome {
    let read_here;
    let input = match stdin {
        Some(read) if entry.path == "-" => match read {
            Ok(input) => input,
            Err(message) => return Outcome::Failed(message.clone()),
        },
        _ => {
            match read_v2(&entry.path) {
                Ok(Some(summary)) => {
                    return Outcome::Chunked {
                        summary,
                        path: entry.path.clone(),
                    };
                }
                Ok(None) => {}
                Err(message) => return Outcome::Failed(message),
            }
            read_here = match crate::input::read(&entry.path) {
                Ok(i) => i,
                Err(message) => return Outcome::Failed(message),
            };
            &read_here
        }
    };
    if summary::is_summary(&input.text) {
        return match summary::from_json(&input.text) {
            Ok(mut facts) => {
                // An iptables node's catalogue is read only when some node has nftables (then
                // the summary is read again, as a dump would be): half the facts to keep.
                if !options.catalog && facts.info.backend == NodeBackend::Iptables {
                    facts.catalog = None;
                }
                Outcome::Facts {
                    facts,
                    declared: true,
                    summary: true,
                    path: input.name.clone(),
                }
            }
            Err(e) => Outcome::Failed(format!("`{}`: {e}", input.name)),
        };
    }
    match facts_of_dump(&input.text, name_from_path(&input.name), options) {
        Some((facts, declared)) => Outcome::Facts {
            facts,
            declared,
            summary: false,
            path: input.name.clone(),
        },
        None if entry.from_folder => Outcome::Skipped(entry.path.clone()),
        None => Outcome::Failed(format!("`{}` holds {}", input.name, crate::NO_RULESET,)),
    }
}

/// `len` bytes at `offset` of a file: lines a group left in a summary file.
fn read_at(path: &str, offset: u64, len: u32) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    file.seek(SeekFrom::Start(offset)).ok()?;
    let mut bytes = vec![0; len as usize];
    file.read_exact(&mut bytes).ok()?;
    Some(bytes)
}

/// A version 2 summary file, found by its first bytes and read without inflating it; `None`
/// for any other input (read as text then).
fn read_v2(path: &str) -> Result<Option<summary::v2::Summary>, String> {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        // The text reader says why, as for any input.
        return Ok(None);
    };
    let mut head = [0u8; 32];
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(_) => return Ok(None),
        }
    }
    if !summary::v2::is_v2(&head[..got]) {
        return Ok(None);
    }
    // As large as a dump may be: the same bound against a runaway file.
    let limit = crate::input::max_dump_bytes();
    let mut bytes = head[..got].to_vec();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read `{path}`: {e}"))?;
    if bytes.len() as u64 >= limit {
        return Err(format!("`{path}` is larger than a summary may be"));
    }
    summary::v2::Summary::parse(bytes)
        .map(Some)
        .map_err(|e| format!("`{path}`: {e}"))
}

/// A dump's facts, and whether it names its node; `None` when it holds no dump.
pub(crate) fn facts_of_dump(
    text: &str,
    name: String,
    options: FactOptions,
) -> Option<(NodeFacts, bool)> {
    let strings = rulelint_nft::Strings::new();
    let input = NodeInput::read_with(text, &strings);
    if input.has_no_content() {
        return None;
    }
    let node = Node::from_input(name.clone(), &input);
    let node = if options.catalog {
        node.with_catalog()
    } else {
        node
    };
    let declared = node.name != name;
    Some((NodeFacts::from_node(&node, options), declared))
}

/// Two dumps (or any inputs with standard input): read whole, compared with the rule level.
/// Each input is read, parsed, modelled and reduced to its facts on a thread of its own.
fn run_whole(
    entries: &[Entry],
    format: Format,
    color: bool,
    out: &mut impl Write,
) -> io::Result<u8> {
    let mut loaded = match load_parallel(entries) {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    // Summaries among them are compared from their facts.
    if loaded.iter().any(|l| summary::is_summary(&l.text)) {
        return run_loaded_facts(entries, &loaded, format, color, out);
    }
    if let Some(status) = run_bounded_pair(entries, &mut loaded, format, color, out) {
        return status;
    }
    // Digests only matter to three or more nodes; a pair's comparison leaves them out.
    let options = FactOptions {
        digests: loaded.len() > 2,
        catalog: false,
    };
    // What each thread reads and builds lives here, so that the nodes can borrow it.
    let mut strings: Vec<rulelint_nft::Strings> = loaded
        .iter()
        .map(|_| rulelint_nft::Strings::new())
        .collect();
    let mut inputs: Vec<Option<NodeInput<'_>>> = loaded.iter().map(|_| None).collect();
    // Each thread packs its node's facts into the one group as soon as it is read: the
    // first node in sizes the tables, the others find most of their names and subjects in
    // them by following its lists, so a second set of tables (a million names and subjects
    // for a 1M-chain dump) is never built. Parsing, most of the work, still runs on every
    // core; only packing waits for the lock.
    let group = std::sync::Mutex::new(Group::new(loaded.len()));
    let read: Vec<Option<Node<'_>>> = std::thread::scope(|scope| {
        let group = &group;
        let building: Vec<_> = loaded
            .iter()
            .zip(strings.iter_mut().zip(inputs.iter_mut()))
            .enumerate()
            .map(|(i, (l, (strings, slot)))| {
                scope.spawn(move || {
                    // `Strings` is not `Sync`: each thread holds its own, lent for good.
                    let strings: &rulelint_nft::Strings = strings;
                    let input: &NodeInput<'_> = slot.insert(NodeInput::read_with(&l.text, strings));
                    if input.has_no_content() {
                        return None;
                    }
                    // Named once the inputs that hold dumps are known; a name the dump
                    // declares is never empty.
                    let mut node = Node::from_input(String::new(), input);
                    // An nftables node's catalogue is in its facts; an iptables node's is
                    // added below if the other nodes turn out to need it.
                    insert_into(group, i, &node, options);
                    node.release_graph();
                    Some(node)
                })
            })
            .collect();
        building
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let mut group = group
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A file found in a folder that holds no dump (a README, notes) is skipped; a file named
    // on the command line must be a dump.
    let mut kept = Vec::with_capacity(read.len());
    let mut nodes = Vec::with_capacity(read.len());
    let mut empty = false;
    for (i, (entry, node)) in entries.iter().zip(read).enumerate() {
        if let Some(node) = node {
            kept.push(i);
            nodes.push(node);
        } else if entry.from_folder {
            eprintln!(
                "rulelint: skipping `{}`: {}",
                entry.path,
                crate::NO_RULESET_SHORT,
            );
        } else {
            eprintln!("rulelint: `{}` holds {}", loaded[i].name, crate::NO_RULESET,);
            empty = true;
        }
    }
    if empty {
        return Ok(EXIT_INPUT);
    }
    if too_few(kept.len()) {
        return Ok(EXIT_INPUT);
    }
    // Comparisons with nftables nodes read every node's Service catalogue, which needs the
    // iptables nodes' graphs again.
    let mixed = nodes.iter().any(|n| n.backend != NodeBackend::Iptables);
    if mixed {
        nodes
            .iter_mut()
            .filter(|n| n.backend == NodeBackend::Iptables)
            .for_each(Node::restore_graph);
    }
    let kept_loaded: Vec<&Loaded> = kept.iter().map(|&i| &loaded[i]).collect();
    let mut renamed = Vec::new();
    for ((&i, node), name) in kept.iter().zip(&mut nodes).zip(node_names(&kept_loaded)) {
        if node.name.is_empty() {
            node.name.clone_from(&name);
            renamed.push((i, name));
        }
    }
    let paths: Vec<&str> = kept_loaded.iter().map(|l| l.name.as_str()).collect();
    // The rule level reads the dumps only: it is found on a thread of its own while the
    // facts are compared.
    let status = std::thread::scope(|scope| {
        let nodes = &nodes;
        let rules = scope.spawn(|| rule_changes(nodes));
        for (&i, node) in kept.iter().zip(nodes) {
            if mixed && node.backend == NodeBackend::Iptables {
                let options = FactOptions {
                    catalog: true,
                    ..options
                };
                group.insert_node(i, node, options);
            }
        }
        for (i, name) in renamed {
            group.rename(i, name);
        }
        group.keep(&kept);
        let comparison = group.compare();
        let changes = rules
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        let comparison = comparison.with_rule_changes(nodes, changes);
        let status = write_report(&comparison, &paths, format, color, out);
        std::mem::forget(comparison);
        std::mem::forget(group);
        status
    });
    // The process ends with this command: freeing two parsed dumps' many small allocations
    // one by one took a quarter of the work left after the threads. The memory is the
    // system's again at exit.
    std::mem::forget(nodes);
    std::mem::forget(inputs);
    std::mem::forget(strings);
    std::mem::forget(loaded);
    status
}

/// Above this many bytes read in all, two iptables dumps are compared without holding both
/// parses ([`run_bounded_pair`]): a 1M-chain pair (77 MB) then peaks at about 4x its bytes
/// rather than 5.5x, while pairs below (250k rules a node, 55 MB) keep both cores for
/// parsing. `RULELINT_DIFF_BOUNDED_BYTES` sets it (tests set 0 to read every pair this way).
const BOUNDED_PAIR_BYTES: usize = 64 << 20;

fn bounded_pair_bytes() -> usize {
    std::env::var("RULELINT_DIFF_BOUNDED_BYTES")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(BOUNDED_PAIR_BYTES)
}

/// Two large iptables dumps compared in bounded memory: the first is parsed, its facts packed
/// and its parse dropped, keeping the spans of its rules (`RuleTexts`); then the second. Only
/// when some chains' rules differ is the first read again, with every other chain's rules
/// blanked out, for the rule level of those chains. The report is the one `run_whole` writes,
/// byte for byte. `None` when the pair is not for this path (small, nftables or IPVS
/// sections, no content, standard input): the caller compares it as before.
fn run_bounded_pair(
    entries: &[Entry],
    loaded: &mut [Loaded],
    format: Format,
    color: bool,
    out: &mut impl Write,
) -> Option<io::Result<u8>> {
    use rulelint_lint::diff::{kube_addresses_of, rules::diff_where};
    let bytes: usize = loaded.iter().map(|l| l.text.len()).sum();
    if loaded.len() != 2 || entries.iter().any(|e| e.path == "-") || bytes < bounded_pair_bytes() {
        return None;
    }
    map_large_buffers_apart();
    let options = FactOptions::default();
    let mut group = Group::new(2);
    let (first, second) = loaded.split_at_mut(1);
    let (la, lb) = (&mut first[0], &second[0]);
    // The first node: its facts packed, then only what its rule level needs kept.
    let (texts, services, mut kube, name_a) = {
        let strings = rulelint_nft::Strings::new();
        let input = NodeInput::read_with(&la.text, &strings);
        if input.has_no_content() {
            return None;
        }
        let node = Node::from_input(String::new(), &input);
        if node.backend != NodeBackend::Iptables {
            return None;
        }
        let texts = RuleTexts::of(&node, &la.text)?;
        group.insert_node(0, &node, options);
        let kept = (
            texts,
            node.chain_services(),
            kube_addresses_of(&node),
            node.name.clone(),
        );
        // Freed now, not at exit: this is the memory the path saves.
        drop(node);
        drop(input);
        kept
    };
    let strings_b = rulelint_nft::Strings::new();
    let input_b = NodeInput::read_with(&lb.text, &strings_b);
    let mut node_b = Node::from_input(String::new(), &input_b);
    if input_b.has_no_content() || node_b.backend != NodeBackend::Iptables {
        return None;
    }
    group.insert_node(1, &node_b, options);
    node_b.release_graph();
    kube.extend(kube_addresses_of(&node_b));
    let names = node_names(&[&*la, lb]);
    if name_a.is_empty() {
        group.rename(0, names[0].clone());
    }
    if node_b.name.is_empty() {
        node_b.name.clone_from(&names[1]);
        group.rename(1, names[1].clone());
    }
    group.keep(&[0, 1]);
    let differing = texts.differing(&la.text, &node_b);
    let paths = [la.name.clone(), lb.name.clone()];
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let comparison = group.compare();
    if differing.is_empty() {
        // No chain's rules differ: the rule level is empty, as `rules::diff` would find.
        let status = write_report(&comparison, &paths, format, color, out);
        std::mem::forget(comparison);
        std::mem::forget(group);
        std::mem::forget(node_b);
        return Some(status);
    }
    // The first dump read again with the rules of the differing chains only; if its lines
    // cannot be blanked safely, or do not read back as they were, it is read whole.
    let text = std::mem::take(&mut la.text);
    la.text = match texts.blank(text, &differing) {
        Ok(blanked) => blanked,
        Err(whole) => whole,
    };
    let strings_a = rulelint_nft::Strings::new();
    let mut input_a = NodeInput::read_with(&la.text, &strings_a);
    let mut reread = Node::from_input(String::new(), &input_a);
    let mut filtered = true;
    if !texts.check(&la.text, &reread, &differing) {
        // Not expected; the file is read again from disk rather than reported wrong.
        drop(reread);
        drop(input_a);
        match crate::input::read(&entries[0].path) {
            Ok(i) => la.text = i.text,
            Err(message) => {
                eprintln!("rulelint: {message}");
                return Some(Ok(EXIT_INPUT));
            }
        }
        input_a = NodeInput::read_with(&la.text, &strings_a);
        reread = Node::from_input(String::new(), &input_a);
        filtered = false;
    }
    let node_a = if filtered {
        reread.with_chain_services(services)
    } else {
        reread
    };
    let nodes = [node_a, node_b];
    let changes = diff_where(&nodes[0], &nodes[1], &kube, |table, chain| {
        !filtered
            || differing
                .get(&table)
                .is_some_and(|names| names.contains(chain))
    });
    let comparison = comparison.with_rule_changes(&nodes, Some(changes));
    let status = write_report(&comparison, &paths, format, color, out);
    std::mem::forget(comparison);
    std::mem::forget(group);
    std::mem::forget(nodes);
    Some(status)
}

/// Has glibc map every buffer of 1 MiB or more on its own, given back when freed. By default
/// it raises that threshold to the size of each such buffer freed (up to 32 MiB), so once the
/// first dump's parse is dropped, the second's buffers grow inside the heap, whose freed
/// space stays resident: 17 MB more at the peak of a 1M-chain pair. `check` too: the lints'
/// buffers freed on one thread stay in its own heap, which no other thread reuses. Elsewhere,
/// nothing.
pub(crate) fn map_large_buffers_apart() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets a tuning parameter of the allocator (under its own lock);
    // a refusal (return 0) leaves the default, which is harmless.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Inserts a node's facts into the shared group. When another node holds the lock, its facts
/// are collected first (walking the model, finding their lines) and only packed under the
/// lock: otherwise the nodes' collection runs one after the other, and the last node's is
/// time the other core sits idle.
fn insert_into(
    group: &std::sync::Mutex<Group>,
    index: usize,
    node: &Node<'_>,
    options: FactOptions,
) {
    use std::sync::{PoisonError, TryLockError};
    // Built before the lock is taken: the first node in packs under it (a fifth of its
    // packing time on a 250k-rule pair went to parsing endpoint addresses).
    node.endpoint_ips();
    match group.try_lock() {
        Ok(mut group) => group.insert_node(index, node, options),
        Err(TryLockError::Poisoned(poisoned)) => {
            poisoned.into_inner().insert_node(index, node, options);
        }
        Err(TryLockError::WouldBlock) => CollectedFacts::with(node, options, |facts| {
            group
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert_collected(index, facts);
        }),
    }
}

/// Reads the inputs, each on a thread of its own (standard input, when named twice, is read
/// in order); messages in the order of the inputs. Exit 2 when one cannot be read.
fn load_parallel(entries: &[Entry]) -> Result<Vec<Loaded>, u8> {
    let files: Vec<String> = entries.iter().map(|e| e.path.clone()).collect();
    if files.iter().filter(|f| *f == "-").count() > 1 {
        return load_all(&files);
    }
    let read: Vec<Result<crate::input::Input, String>> = std::thread::scope(|scope| {
        let reading: Vec<_> = files
            .iter()
            .map(|f| scope.spawn(move || crate::input::read(f)))
            .collect();
        reading
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    crate::gather(read)
}

/// Inputs read whole, some of them summaries: each reduced to its facts (with its catalogue,
/// since whether a comparison needs it is known only once all are read).
fn run_loaded_facts(
    entries: &[Entry],
    loaded: &[Loaded],
    format: Format,
    color: bool,
    out: &mut impl Write,
) -> io::Result<u8> {
    let options = FactOptions {
        digests: loaded.len() > 2,
        catalog: true,
    };
    let mut failed = false;
    let mut kept = Vec::new();
    for (i, (entry, l)) in entries.iter().zip(loaded).enumerate() {
        let outcome = if summary::is_summary(&l.text) {
            match summary::from_json(&l.text) {
                Ok(facts) => Ok((facts, true, true)),
                Err(e) => Err(format!("`{}`: {e}", l.name)),
            }
        } else {
            match facts_of_dump(&l.text, name_from_path(&l.name), options) {
                Some((facts, declared)) => Ok((facts, declared, false)),
                None if entry.from_folder => {
                    eprintln!(
                        "rulelint: skipping `{}`: {}",
                        entry.path,
                        crate::NO_RULESET_SHORT,
                    );
                    continue;
                }
                None => Err(format!("`{}` holds {}", l.name, crate::NO_RULESET,)),
            }
        };
        match outcome {
            Ok(o) => kept.push((i, o)),
            Err(message) => {
                eprintln!("rulelint: {message}");
                failed = true;
            }
        }
    }
    if failed {
        return Ok(EXIT_INPUT);
    }
    if too_few(kept.len()) {
        return Ok(EXIT_INPUT);
    }
    let kept_loaded: Vec<&Loaded> = kept.iter().map(|(i, _)| &loaded[*i]).collect();
    let names = node_names(&kept_loaded);
    let mut group = Group::new(kept.len());
    let mut summaries = Vec::new();
    for (slot, ((_, (mut facts, declared, summary)), name)) in
        kept.into_iter().zip(names).enumerate()
    {
        if !declared {
            facts.info.name = name;
        }
        if summary {
            summaries.push(slot);
        }
        group.insert(slot, facts);
    }
    let mut comparison = group.compare();
    if group.len() == 2 {
        comparison.notes.push(pair_note(&comparison, &summaries));
    }
    let paths: Vec<&str> = kept_loaded.iter().map(|l| l.name.as_str()).collect();
    write_report(&comparison, &paths, format, color, out)
}

#[cfg(test)]
mod tests {
    use super::name_from_path;

    #[test]
    fn node_names_from_files() {
        assert_eq!(name_from_path("dumps/node-17.txt"), "node-17");
        assert_eq!(name_from_path("node-17.txt.gz"), "node-17");
        assert_eq!(name_from_path("worker-a"), "worker-a");
        assert_eq!(name_from_path(".txt"), ".txt");
    }
}
