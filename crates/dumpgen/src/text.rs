//! Low-level text helpers: number and address formatting, `iptables-save`
//! string quoting, probabilities, `ctime(3)` dates, and the SHA-256 + base32
//! hash kube-proxy uses to name its chains.

use std::fmt::Write as _;
use std::net::Ipv6Addr;

/// Appends the decimal form of `v`.
pub(crate) fn push_u64(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &digit in &buf[i..] {
        out.push(char::from(digit));
    }
}

/// Appends an address: the low 32 bits in dotted-quad form when `v6` is
/// false, otherwise the RFC 5952 form `inet_ntop(3)` (and so `ip6tables-save`)
/// prints.
pub(crate) fn push_ip(out: &mut String, addr: u128, v6: bool) {
    if v6 {
        let _ = write!(out, "{}", Ipv6Addr::from(addr));
    } else {
        let a = addr as u32;
        push_u64(out, u64::from(a >> 24));
        out.push('.');
        push_u64(out, u64::from((a >> 16) & 0xff));
        out.push('.');
        push_u64(out, u64::from((a >> 8) & 0xff));
        out.push('.');
        push_u64(out, u64::from(a & 0xff));
    }
}

/// Appends an address with its host prefix (`/32` or `/128`), as
/// `iptables-save` prints `-s`/`-d` values.
pub(crate) fn push_host(out: &mut String, addr: u128, v6: bool) {
    push_ip(out, addr, v6);
    out.push_str(if v6 { "/128" } else { "/32" });
}

/// Appends `ip:port` (IPv4) or `[ip]:port` (IPv6): Go's `net.JoinHostPort`,
/// which is also how `--to-destination` is printed back.
pub(crate) fn push_host_port(out: &mut String, addr: u128, port: u16, v6: bool) {
    if v6 {
        out.push('[');
        push_ip(out, addr, true);
        out.push(']');
    } else {
        push_ip(out, addr, false);
    }
    out.push(':');
    push_u64(out, u64::from(port));
}

/// Appends a string argument the way `xtables_save_string` does: bare when it
/// is made only of `[A-Za-z0-9_-]`, otherwise in double quotes with `"`, `\`
/// and `'` escaped by a backslash.
pub(crate) fn push_save_string(out: &mut String, s: &str) {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        out.push_str(s);
        return;
    }
    out.push('"');
    for c in s.chars() {
        if matches!(c, '"' | '\\' | '\'') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// The `--probability` text `iptables-save` prints for kube-proxy's `1/n`.
///
/// kube-proxy passes `fmt.Sprintf("%0.10f", 1.0/float64(n))`; the statistic
/// extension stores `lround(0x80000000 * p)` in the kernel and prints
/// `value / 0x80000000` back with `%.11f`. So `1/3` reads back as
/// `0.33333333349`, and `1/2` as `0.50000000000`.
pub(crate) fn probability(n: usize) -> String {
    let given = format!("{:.10}", 1.0 / n as f64);
    let p: f64 = given.parse().unwrap_or(0.0);
    let stored = (2_147_483_648.0 * p).round();
    format!("{:.11}", stored / 2_147_483_648.0)
}

/// `ctime(3)` without the trailing newline, for a UTC Unix time:
/// `Sat Mar  7 09:25:55 2026`.
pub(crate) fn ctime(unix: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix / 86_400;
    let secs = unix % 86_400;
    // Howard Hinnant's civil_from_days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        secs / 3600,
        (secs / 60) % 60,
        secs % 60,
        year
    )
}

/// The 16-character tag kube-proxy appends to its per-service chain
/// prefixes: the first 16 characters of
/// `base32.StdEncoding.EncodeToString(sha256.Sum256(input))`.
///
/// Sixteen base32 characters carry 80 bits, so only the first 10 bytes of
/// the digest are encoded.
pub(crate) fn chain_hash(input: &[u8]) -> [u8; 16] {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let digest = sha256(input);
    let mut bits: u128 = 0;
    for &b in &digest[..10] {
        bits = (bits << 8) | u128::from(b);
    }
    let mut out = [0u8; 16];
    for (i, slot) in out.iter_mut().enumerate() {
        let shift = 75 - 5 * i;
        *slot = ALPHABET[((bits >> shift) & 31) as usize];
    }
    out
}

/// SHA-256 (FIPS 180-4). Used only to name chains the way kube-proxy does,
/// so a small local implementation avoids a dependency.
pub(crate) fn sha256(input: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let bit_len = (input.len() as u64).wrapping_mul(8);
    let mut tail = [0u8; 128];
    let full = input.len() / 64 * 64;
    let rest = &input[full..];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()] = 0x80;
    let tail_len = if rest.len() < 56 { 64 } else { 128 };
    tail[tail_len - 8..tail_len].copy_from_slice(&bit_len.to_be_bytes());

    let blocks = input[..full]
        .chunks_exact(64)
        .chain(tail[..tail_len].chunks_exact(64));
    for block in blocks {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha256_known_vectors() {
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // 56 bytes: the padding spills into a second block.
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        let million = vec![b'a'; 1_000_000];
        assert_eq!(
            hex(&sha256(&million)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn chain_hash_matches_kube_proxy() {
        // Chain names seen on every cluster (service port name + protocol).
        let svc = |s: &str| String::from_utf8(chain_hash(s.as_bytes()).to_vec()).unwrap();
        assert_eq!(svc("default/kubernetes:httpstcp"), "NPX46M4PTMTKRN6Y");
        assert_eq!(svc("kube-system/kube-dns:dnsudp"), "TCOU7JCQXEZGVUNU");
        assert_eq!(svc("kube-system/kube-dns:dns-tcptcp"), "ERIFXISQEP7F7OF4");
        assert_eq!(svc("kube-system/kube-dns:metricstcp"), "JD5MR3NA4I4DYORP");
        // Endpoint chains: name + protocol + "ip:port".
        assert_eq!(
            svc("default/kubernetes:httpstcp172.18.0.5:6443"),
            "OJCTP5LCEHQJ3D72"
        );
        assert_eq!(
            svc("kube-system/kube-dns:dnsudp10.244.0.3:53"),
            "6E7XQMQ4RAYOWTTM"
        );
    }

    #[test]
    fn probabilities_read_back_like_iptables_save() {
        assert_eq!(probability(2), "0.50000000000");
        assert_eq!(probability(3), "0.33333333349");
        assert_eq!(probability(4), "0.25000000000");
        assert_eq!(probability(5), "0.20000000019");
    }

    #[test]
    fn ctime_format() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(1_664_346_293), "Wed Sep 28 06:24:53 2022");
        assert_eq!(ctime(1_772_875_555), "Sat Mar  7 09:25:55 2026");
    }

    #[test]
    fn save_string_quoting() {
        let q = |s: &str| {
            let mut o = String::new();
            push_save_string(&mut o, s);
            o
        };
        assert_eq!(q("plain-word_1"), "plain-word_1");
        assert_eq!(q("ns/svc:http"), "\"ns/svc:http\"");
        assert_eq!(q("a \"b\""), "\"a \\\"b\\\"\"");
    }

    #[test]
    fn addresses() {
        let mut o = String::new();
        push_host_port(&mut o, 0x0af4_010a, 8080, false);
        o.push(' ');
        push_host_port(&mut o, 0xfd00_0010_0244_0001_0000_0000_0000_000a, 80, true);
        o.push(' ');
        push_host(&mut o, 0xfd00_0010_0096_0000_0000_0000_0000_0001, true);
        assert_eq!(
            o,
            "10.244.1.10:8080 [fd00:10:244:1::a]:80 fd00:10:96::1/128"
        );
    }
}
