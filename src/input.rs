//! Reading dumps: files, `-` for stdin, `.gz` transparently; bounded in size, binary refused,
//! UTF-16 decoded, and what was replaced said.

use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, Read};

/// A dump read into memory.
pub struct Input {
    /// The name to show (`-` is shown as `<stdin>`).
    pub name: String,
    /// The text; invalid UTF-8 is replaced, so spans stay valid for rendering.
    pub text: String,
}

/// How standard input (`-`) is named in messages and reports.
pub(crate) const STDIN_NAME: &str = "<stdin>";

/// The largest dump read, in MiB, unless `RULELINT_MAX_DUMP_MB` says otherwise: a 1M-rule node
/// is about 250 MB; a gzip bomb stops here instead of filling memory.
const DEFAULT_MAX_DUMP_MB: u64 = 4096;

/// The environment variable that sets the largest dump read, in MiB.
pub const MAX_DUMP_ENV: &str = "RULELINT_MAX_DUMP_MB";

/// How much of the start is looked at to tell text from binary and UTF-16 from UTF-8.
const SNIFF_BYTES: usize = 8192;

pub(crate) fn max_dump_bytes() -> u64 {
    std::env::var(MAX_DUMP_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_MAX_DUMP_MB)
        .saturating_mul(1 << 20)
}

/// Reads `path` (`-` for stdin). A `.gz` file, or any input starting with the gzip magic, is
/// decompressed. Notes about the encoding (UTF-16, NUL bytes, invalid UTF-8) go to stderr. A
/// folder is one node's outputs in several files ([`read_node`]), read as one text.
pub fn read(path: &str) -> Result<Input, String> {
    if path != "-" && std::path::Path::new(path).is_dir() {
        let files = crate::folders::node_files(path)?;
        return read_node(path, &files).map(|(input, _)| input);
    }
    read_limited(path, max_dump_bytes())
}

/// One file of a node read from several ([`read_node`]): its name and where its text starts in
/// the node's text.
pub struct Part {
    /// The file's name as shown.
    pub name: String,
    /// Its byte offset in the node's text.
    pub start: usize,
}

/// Reads the files of one node (`iptables-save`, `ipset save`, `ipvsadm -Ln` saved apart) as
/// one text, as `cat` would join them (a newline added where a file lacks its last one), with
/// where each file starts. `name` names the node.
pub fn read_node(name: &str, paths: &[String]) -> Result<(Input, Vec<Part>), String> {
    let limit = max_dump_bytes();
    let mut text = String::new();
    let mut parts = Vec::with_capacity(paths.len());
    for path in paths {
        let input = read_limited(path, limit)?;
        if (text.len() + input.text.len()) as u64 > limit {
            return Err(format!(
                "the files of `{name}` hold more than {} MiB, the largest dump rulelint reads (set {MAX_DUMP_ENV} to read more)",
                limit >> 20
            ));
        }
        parts.push(Part {
            name: input.name,
            start: text.len(),
        });
        text.push_str(&input.text);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    Ok((
        Input {
            name: name.to_string(),
            text,
        },
        parts,
    ))
}

/// [`read`] with the size limit (of the file, and of what it decompresses to) given.
fn read_limited(path: &str, limit: u64) -> Result<Input, String> {
    let too_big = |name: &str, what: &str| {
        format!(
            "`{name}` {what} more than {} MiB, the largest dump rulelint reads (set {MAX_DUMP_ENV} to read more)",
            limit >> 20
        )
    };
    let mut bytes = Vec::new();
    let name = if path == "-" {
        io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        String::from(STDIN_NAME)
    } else {
        let mut file = File::open(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
        let known = file
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        if known.is_some_and(|len| len > limit) {
            return Err(too_big(path, "holds"));
        }
        // Sized once from the file's length: a buffer grown by doubling peaks near twice it.
        // (`take` hides the length from `read_to_end`; a pipe reports none.)
        bytes.reserve_exact(known.unwrap_or(0) as usize);
        // Read into huge pages where the kernel gives them on request: copying a large dump in
        // faulted a 4 KiB page at a time (a fifth of the faults of a 5,000-Service node).
        rulelint_parser::huge_pages::advise(&bytes);
        file.by_ref()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read `{path}`: {e}"))?;
        path.to_string()
    };
    if bytes.len() as u64 > limit {
        return Err(too_big(&name, "holds"));
    }
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::with_capacity((bytes.len() * 8).min(limit as usize + 1));
        let mut decoder = MultiGzDecoder::new(&bytes[..]).take(limit + 1);
        // The start first: binary content (a bomb of zeros) is refused before the rest is
        // decompressed, so it costs its first bytes, not the size limit.
        decoder
            .by_ref()
            .take(SNIFF_BYTES as u64)
            .read_to_end(&mut out)
            .map_err(|e| format!("cannot decompress `{name}`: {e}"))?;
        if utf16_kind(&out).is_none() {
            refuse_binary(&name, &out)?;
        }
        decoder
            .read_to_end(&mut out)
            .map_err(|e| format!("cannot decompress `{name}`: {e}"))?;
        if out.len() as u64 > limit {
            return Err(too_big(&name, "decompresses to"));
        }
        bytes = out;
    }
    let text = decode(&name, bytes)?;
    Ok(Input { name, text })
}

/// The text of `bytes`: UTF-8 (invalid sequences replaced) or UTF-16 (by byte-order mark or by
/// its zero bytes, as a Windows shell redirect writes it); binary input is refused.
fn decode(name: &str, bytes: Vec<u8>) -> Result<String, String> {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if let Some(utf16) = utf16_kind(head) {
        eprintln!("rulelint: `{name}`: read as {} text", utf16.describe());
        return Ok(utf16.decode(&bytes));
    }
    refuse_binary(name, head)?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let first = e.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            let (line, column) = line_column(e.as_bytes(), first);
            eprintln!(
                "rulelint: `{name}`: invalid UTF-8 (first at line {line}, column {column}) read as U+FFFD"
            );
            text
        }
    };
    if let Some(at) = memchr::memchr(0, text.as_bytes()) {
        let (line, column) = line_column(text.as_bytes(), at);
        let count = bytecount::count(text.as_bytes(), 0);
        eprintln!(
            "rulelint: `{name}`: {count} NUL byte{} (first at line {line}, column {column}): the file may be corrupt",
            if count == 1 { "" } else { "s" }
        );
    }
    Ok(text)
}

/// An error naming what `head`, the start of the input, is, when it is binary.
fn refuse_binary(name: &str, head: &[u8]) -> Result<(), String> {
    match binary_kind(head) {
        Some(kind) => Err(format!(
            "`{name}` is {kind}, not a text dump (iptables-save or nft list ruleset output)"
        )),
        None => Ok(()),
    }
}

/// 1-based line and column (in bytes) of `offset`.
fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = bytecount::count(before, b'\n') + 1;
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    (line, offset - line_start + 1)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Utf16 {
    Little,
    Big,
}

impl Utf16 {
    fn describe(self) -> &'static str {
        match self {
            Utf16::Little => "UTF-16LE",
            Utf16::Big => "UTF-16BE",
        }
    }

    /// The text, without a byte-order mark; unpaired surrogates become U+FFFD.
    fn decode(self, bytes: &[u8]) -> String {
        let units = bytes.chunks_exact(2).map(|pair| match self {
            Utf16::Little => u16::from_le_bytes([pair[0], pair[1]]),
            Utf16::Big => u16::from_be_bytes([pair[0], pair[1]]),
        });
        let text: String = char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect();
        match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_string(),
            None => text,
        }
    }
}

/// UTF-16 by its byte-order mark, or (without one) by ASCII text's zero high bytes: most even
/// (little-endian) or odd (big-endian) bytes zero, the others not.
fn utf16_kind(head: &[u8]) -> Option<Utf16> {
    if head.starts_with(&[0xff, 0xfe]) {
        return Some(Utf16::Little);
    }
    if head.starts_with(&[0xfe, 0xff]) {
        return Some(Utf16::Big);
    }
    let pairs = head.len() / 2;
    if pairs < 8 {
        return None;
    }
    let (mut zero_odd, mut zero_even) = (0, 0);
    for pair in head.chunks_exact(2) {
        zero_even += usize::from(pair[0] == 0);
        zero_odd += usize::from(pair[1] == 0);
    }
    if zero_odd * 10 >= pairs * 9 && zero_even * 10 <= pairs {
        Some(Utf16::Little)
    } else if zero_even * 10 >= pairs * 9 && zero_odd * 10 <= pairs {
        Some(Utf16::Big)
    } else {
        None
    }
}

/// What a binary start of input is, if it is one: known magic numbers, else more than 1 in 100
/// bytes NUL or another control character that text does not hold (a dump with one corrupt byte
/// is still read, and the byte named).
fn binary_kind(head: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x7fELF", "an ELF executable"),
        (b"MZ", "a Windows executable"),
        (b"%PDF", "a PDF document"),
        (b"\x89PNG", "a PNG image"),
        (b"PK\x03\x04", "a zip archive"),
        (b"\x28\xb5\x2f\xfd", "a zstd archive"),
        (b"\xfd7zXZ", "an xz archive"),
        (b"BZh", "a bzip2 archive"),
    ];
    if let Some((_, kind)) = MAGIC.iter().find(|(magic, _)| head.starts_with(magic)) {
        // `MZ` and `BZh` are also the start of words: only binary if the rest agrees.
        if !matches!(*kind, "a Windows executable" | "a bzip2 archive") || controls(head) > 0 {
            return Some(kind);
        }
    }
    (controls(head) * 100 > head.len()).then_some("binary data")
}

/// Bytes of `head` that text does not hold: NUL and the C0 controls other than tab, newline,
/// vertical tab, form feed, carriage return and escape.
fn controls(head: &[u8]) -> usize {
    head.iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1b))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n";

    #[test]
    fn utf16_with_and_without_a_byte_order_mark_reads_as_the_text() {
        let le: Vec<u8> = DUMP.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = DUMP.encode_utf16().flat_map(u16::to_be_bytes).collect();
        for (bytes, kind) in [
            ([&[0xff, 0xfe][..], &le].concat(), Utf16::Little),
            (le.clone(), Utf16::Little),
            ([&[0xfe, 0xff][..], &be].concat(), Utf16::Big),
            (be.clone(), Utf16::Big),
        ] {
            assert_eq!(utf16_kind(&bytes), Some(kind));
            assert_eq!(decode("t", bytes).expect("text"), DUMP);
        }
        assert_eq!(utf16_kind(DUMP.as_bytes()), None);
    }

    #[test]
    fn binary_input_is_refused_and_a_corrupt_byte_is_not() {
        let elf = [&b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0"[..], &[0u8; 64]].concat();
        assert!(decode("ls", elf).unwrap_err().contains("ELF executable"));
        let random: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert!(decode("r", random).unwrap_err().contains("binary data"));
        let mut corrupt = DUMP.repeat(50).into_bytes();
        corrupt[100] = 0;
        assert!(decode("c", corrupt).is_ok());
        // Words that start like magic numbers are text.
        assert!(decode("m", b"MZ rules\n*filter\nCOMMIT\n".to_vec()).is_ok());
    }

    #[test]
    fn a_gzip_bomb_of_zeros_is_refused_by_its_start() {
        use std::io::Write;
        let path = std::env::temp_dir().join(format!("rulelint-bomb-{}.gz", std::process::id()));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&vec![0u8; 4 << 20]).expect("compress");
        std::fs::write(&path, gz.finish().expect("compress")).expect("write");
        // Past the limit of 1 MiB: refused as binary from its first bytes, before the limit is
        // reached (which would say "decompresses to more than").
        let err = read_limited(path.to_str().expect("path"), 1 << 20).err();
        std::fs::remove_file(&path).ok();
        assert!(
            err.as_deref().is_some_and(|e| e.contains("binary data")),
            "{err:?}"
        );
    }

    #[test]
    fn line_and_column_of_an_offset() {
        assert_eq!(line_column(b"ab\ncd\n", 4), (2, 2));
        assert_eq!(line_column(b"ab", 0), (1, 1));
    }
}
