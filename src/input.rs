//! Reading dumps: files, `-` for stdin, `.gz` transparently.

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

/// Reads `path` (`-` for stdin). A `.gz` file, or any input starting with the gzip magic, is
/// decompressed.
pub fn read(path: &str) -> Result<Input, String> {
    let mut bytes = Vec::new();
    let name = if path == "-" {
        io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        String::from("<stdin>")
    } else {
        File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|e| format!("cannot read `{path}`: {e}"))?;
        path.to_string()
    };
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::with_capacity(bytes.len() * 8);
        MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| format!("cannot decompress `{name}`: {e}"))?;
        bytes = out;
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(Input { name, text })
}
