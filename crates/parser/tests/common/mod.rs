//! Strategies shared by the parser's property tests.

use proptest::prelude::*;

/// Lines a dump, a cut paste or noise may hold (valid, broken, prefixed, continued), and
/// arbitrary text: the parser must read any sequence of them without panicking, and read it
/// the same way on one thread or two.
pub fn odd_dump_lines() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop_oneof![
            Just("*filter".to_string()),
            Just("*nat".to_string()),
            Just("COMMIT".to_string()),
            Just(":INPUT ACCEPT [0:0]".to_string()),
            Just(":X - [0:0]".to_string()),
            Just("-A X -j X".to_string()),
            Just("-A INPUT ! -s 10.0.0.0/8 -m tcp --dport 80 -j ACCEPT \\".to_string()),
            Just("-A X -s fd00::/8 -j DROP".to_string()),
            Just("-A X -d 10.0.0.1 -p tcp -j DNAT --to-destination 1.2.3.4:80".to_string()),
            Just("\t-j DROP".to_string()),
            Just("-A INPUT -m comment --comment \"open".to_string()),
            Just("[1:2] -A INPUT -j X".to_string()),
            Just("-I INPUT 3 -p".to_string()),
            Just("-N Y".to_string()),
            Just("> -A X -j X".to_string()),
            Just(">".to_string()),
            Just(":FORWARD DROP [0:0]".to_string()),
            Just("-P FORWARD DROP".to_string()),
            Just("-A Y_mangle -j TPROXY --on-port".to_string()),
            Just("2026-11-21T10:00:00.1Z stdout F -A X -j Y".to_string()),
            Just("  # *mangle".to_string()),
            "\\PC{0,40}",
            "-A [-!\\[\\]\" :*#a-zA-Z0-9\\\\\t./]{0,40}",
            "[-!\\[\\]\" :*#a-zA-Z0-9\\\\\t]{0,40}",
        ],
        0..30,
    )
}
