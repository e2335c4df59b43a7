//! `rulelint serve`: the web page on 127.0.0.1, from files embedded in the binary.
//!
//! A tiny std-only HTTP/1.1 server: GET and HEAD of a fixed set of embedded files, one request
//! per connection. There is no file system access, so no path can escape the page: a request
//! names an embedded file or gets 404. The analysis runs in the browser; nothing is posted here.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));

/// Flags of `rulelint serve`.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Port on 127.0.0.1; 0 picks a free one (the URL printed says which).
    #[arg(long, default_value_t = 8080)]
    port: u16,
}

/// Sent with every response, and the same as the page's `<meta>` policy (plus what only a header
/// can say): no connection anywhere, scripts and wasm only from the page itself.
const CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; \
                   style-src 'self'; img-src 'self' data:; connect-src 'none'; \
                   form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

/// The largest request head read; the page's requests are a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;
/// Connections served at once (a browser opens about six); a new one past this closes the
/// oldest (see `Slots`).
const MAX_CONNECTIONS: usize = 64;
/// The whole request head must arrive within this time, however the bytes trickle in.
const HEAD_DEADLINE: Duration = Duration::from_secs(10);

/// The message when the binary was built before the wasm module.
pub(crate) const NOT_BUILT: &str = "this binary was built without the web page's wasm module: \
     install it with `cargo install --path . --features page` (after `rustup target add \
     wasm32-unknown-unknown`), or run `bash scripts/build-web.sh` and rebuild rulelint \
     (`cargo build --release`)";

pub(crate) fn run(args: ServeArgs, out: &mut impl Write) -> io::Result<u8> {
    if !WASM_BUILT {
        eprintln!("rulelint: {NOT_BUILT}");
        return Ok(crate::EXIT_INPUT);
    }
    let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, args.port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("rulelint: cannot listen on 127.0.0.1:{}: {e}", args.port);
            return Ok(crate::EXIT_INPUT);
        }
    };
    let port = listener.local_addr()?.port();
    writeln!(
        out,
        "rulelint: serving the web page at http://127.0.0.1:{port}/ (Ctrl-C stops)"
    )?;
    out.flush()?;
    accept_loop(&listener, port);
    Ok(0)
}

/// The connections being served, oldest first. When every slot is taken, a new connection
/// closes the oldest one: clients that trickle their request a byte at a time (or never read the
/// answer) cannot keep the page unreachable, while a browser's request, which takes
/// milliseconds, is never the oldest for long.
#[derive(Default)]
struct Slots {
    next_id: u64,
    open: Vec<(u64, TcpStream)>,
}

fn accept_loop(listener: &TcpListener, port: u16) {
    let slots = Arc::new(Mutex::new(Slots::default()));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let Ok(handle) = stream.try_clone() else {
            continue;
        };
        let id = {
            let mut slots = slots.lock().unwrap_or_else(PoisonError::into_inner);
            if slots.open.len() >= MAX_CONNECTIONS {
                let (_, oldest) = slots.open.remove(0);
                // Its blocked read or write returns, and its thread ends.
                let _ = oldest.shutdown(Shutdown::Both);
            }
            slots.next_id += 1;
            let id = slots.next_id;
            slots.open.push((id, handle));
            id
        };
        let slots = Arc::clone(&slots);
        std::thread::spawn(move || {
            // A failed connection concerns only that client.
            let _ = serve_connection(stream, port);
            let mut slots = slots.lock().unwrap_or_else(PoisonError::into_inner);
            slots.open.retain(|(open_id, _)| *open_id != id);
        });
    }
}

fn serve_connection(mut stream: TcpStream, port: u16) -> io::Result<()> {
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let deadline = Instant::now() + HEAD_DEADLINE;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return stream.write_all(&status(431, "Request Header Fields Too Large"));
        }
        // A timeout per read would let a byte every few seconds hold the connection forever.
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return stream.write_all(&status(408, "Request Timeout"));
        }
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    stream.write_all(&respond(&head, port))?;
    stream.flush()
}

/// The whole response to a request head.
fn respond(head: &[u8], port: u16) -> Vec<u8> {
    let Ok(head) = std::str::from_utf8(head) else {
        return status(400, "Bad Request");
    };
    let mut lines = head.split("\r\n");
    let mut request = lines.next().unwrap_or("").split(' ');
    let (Some(method), Some(target), Some(version), None) = (
        request.next(),
        request.next(),
        request.next(),
        request.next(),
    ) else {
        return status(400, "Bad Request");
    };
    if !version.starts_with("HTTP/1.") {
        return status(505, "HTTP Version Not Supported");
    }
    // Only our own names: a DNS-rebinding page cannot read through another host name.
    let host = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("host"))
        .map(|(_, v)| v.trim());
    let allowed = [format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    if !host.is_some_and(|h| allowed.iter().any(|a| a == h)) {
        return status(421, "Misdirected Request");
    }
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return status(405, "Method Not Allowed"),
    };
    let path = target.split(['?', '#']).next().unwrap_or("");
    let Some(path) = path.strip_prefix('/') else {
        return status(400, "Bad Request");
    };
    let name = if path.is_empty() { "index.html" } else { path };
    let Some((_, body)) = ASSETS.iter().find(|(n, _)| *n == name) else {
        return status(404, "Not Found");
    };
    let mut response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}\r\n",
        mime(name),
        body.len(),
        common_headers()
    )
    .into_bytes();
    if !head_only {
        response.extend_from_slice(body);
    }
    response
}

/// Headers on every response: the policy, no caching of a page that changes with the binary,
/// no sniffing, no referrer, one request per connection.
fn common_headers() -> String {
    format!(
        "Content-Security-Policy: {CSP}\r\nCache-Control: no-cache\r\n\
         X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n\
         Cross-Origin-Opener-Policy: same-origin\r\nCross-Origin-Resource-Policy: same-origin\r\n\
         Connection: close\r\n"
    )
}

fn status(code: u16, reason: &str) -> Vec<u8> {
    let body = format!("{code} {reason}\n");
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n{}\r\n{body}",
        body.len(),
        common_headers()
    )
    .into_bytes()
}

fn mime(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, e)| e) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(target: &str) -> String {
        let head = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
        String::from_utf8_lossy(&respond(head.as_bytes(), 8080)).into_owned()
    }

    #[test]
    fn serves_the_index_at_the_root_with_the_policy() {
        let r = get("/");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("Content-Type: text/html; charset=utf-8\r\n"));
        assert!(r.contains("connect-src 'none'"));
        assert!(r.contains("data-testid=\"analyse\""));
        assert_eq!(get("/index.html?x=1"), r);
    }

    #[test]
    fn nothing_outside_the_embedded_files() {
        for target in [
            "/../Cargo.toml",
            "/..%2fCargo.toml",
            "/pkg/../../build.rs",
            "//etc/passwd",
            "/%2e%2e/src/main.rs",
            "/tests/",
            "/pkg",
        ] {
            assert!(get(target).starts_with("HTTP/1.1 404 "), "{target}");
        }
        assert!(
            String::from_utf8_lossy(&respond(
                b"GET http://example.invalid/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
                8080
            ))
            .starts_with("HTTP/1.1 400 ")
        );
    }

    #[test]
    fn refuses_other_hosts_methods_and_garbage() {
        let other = b"GET / HTTP/1.1\r\nHost: attacker.example:8080\r\n\r\n";
        assert!(String::from_utf8_lossy(&respond(other, 8080)).starts_with("HTTP/1.1 421 "));
        let post = b"POST / HTTP/1.1\r\nHost: localhost:8080\r\n\r\n";
        assert!(String::from_utf8_lossy(&respond(post, 8080)).starts_with("HTTP/1.1 405 "));
        for garbage in [
            &b"\xff\xfe\r\n\r\n"[..],
            b"GET\r\n\r\n",
            b"GET / x y z\r\n\r\n",
        ] {
            assert!(String::from_utf8_lossy(&respond(garbage, 8080)).starts_with("HTTP/1.1 400 "));
        }
        let head = b"HEAD / HTTP/1.1\r\nhost: localhost:8080\r\n\r\n";
        let r = String::from_utf8_lossy(&respond(head, 8080)).into_owned();
        assert!(
            r.starts_with("HTTP/1.1 200 ") && r.ends_with("\r\n\r\n"),
            "{r}"
        );
    }

    #[test]
    fn wasm_and_scripts_have_their_mime_types() {
        assert_eq!(mime("pkg/rulelint_wasm_bg.wasm"), "application/wasm");
        assert_eq!(mime("worker.js"), "text/javascript; charset=utf-8");
        assert_eq!(mime("style.css"), "text/css; charset=utf-8");
        if WASM_BUILT {
            let r = get("/pkg/rulelint_wasm_bg.wasm");
            assert!(r.contains("Content-Type: application/wasm\r\n"));
        }
    }

    #[test]
    fn trickling_clients_cannot_keep_the_page_unreachable() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || accept_loop(&listener, port));
        // More clients than slots, each holding its connection with one byte of a request.
        let trickling: Vec<TcpStream> = (0..MAX_CONNECTIONS + 8)
            .map(|_| {
                let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
                s.write_all(b"G").unwrap();
                s
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let mut browser = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
        browser
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let request = format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        browser.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let _ = browser.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:.200}");
        drop(trickling);
    }

    #[test]
    fn the_missing_wasm_message_names_the_build_command() {
        assert!(NOT_BUILT.contains("bash scripts/build-web.sh"));
    }
}
