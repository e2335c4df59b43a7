//! Any bytes in, as `rulelint trace DUMP --dst ...` reads a file: the first byte picks the
//! packet (destination, protocol, origin, state), the rest is the dump. The trace, its JSON and
//! its human report. No panic, every outcome's probability in (0, 1].
#![no_main]

use libfuzzer_sys::fuzz_target;
use rulelint_lint::trace::{ConnState, Origin, PacketSpec, TraceNode, report, trace};
use rulelint_parser::parse;

const DESTINATIONS: [&str; 6] = [
    "10.96.0.10:53",
    "10.1.2.3:80",
    "127.0.0.1:22",
    "192.168.0.10:30080",
    "10.244.1.5",
    "[fd00::1]:80",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let Ok(dst) = DESTINATIONS[usize::from(pick) % DESTINATIONS.len()].parse() else {
        return;
    };
    let mut spec = PacketSpec::to(dst);
    spec.protocol = Some([6u8, 17, 1, 132][usize::from(pick >> 3) % 4]);
    spec.from = Some([Origin::Pod, Origin::Outside, Origin::Host][usize::from(pick >> 5) % 3]);
    if pick & 0x80 != 0 {
        spec.state = Some(ConnState::Established);
    }
    let parsed = parse(&text);
    let node = TraceNode::new("fuzz", &parsed.ruleset);
    let t = trace(&node, &spec);
    for o in &t.outcomes {
        assert!(o.probability > 0.0 && o.probability <= 1.0 + 1e-9);
    }
    let doc = report::document(vec![report::node_doc(&node, "fuzz.txt", &t)]);
    let _ = serde_json::to_vec(&doc);
    let _ = report::human(&doc);
});
