//! Running the `rulelint` binary as a user does.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs `rulelint` in `dir` (the package root when `None`) with `stdin` piped in.
pub fn rulelint_in(dir: Option<&Path>, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rulelint"))
        .args(args)
        .current_dir(dir.unwrap_or(Path::new(env!("CARGO_MANIFEST_DIR"))))
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rulelint runs");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(bytes) = stdin {
        // A run that exits before reading its input (a usage error, an unreadable file) closes
        // the pipe first: that is its answer, not a failure to write.
        match input.write_all(bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => other.expect("write stdin"),
        }
    }
    drop(input);
    child.wait_with_output().expect("rulelint finishes")
}

/// Runs `rulelint` in the package root.
pub fn rulelint(args: &[&str], stdin: Option<&[u8]>) -> Output {
    rulelint_in(None, args, stdin)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("rulelint-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write temp file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
