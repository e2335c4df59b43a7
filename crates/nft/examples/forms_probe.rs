fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let strings = rulelint_nft::Strings::new();
    let p = if path.ends_with(".json") {
        rulelint_nft::parse_json(&text, &strings)
    } else {
        rulelint_nft::parse_transaction(&text)
    };
    for d in &p.diagnostics {
        eprintln!("{} {:?} {}", d.code, d.span, d.message);
    }
    print!("{}", rulelint_nft::print(&p.ruleset));
}
