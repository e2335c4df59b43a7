fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let strings = rulelint_nft::Strings::new();
    let p = rulelint_nft::parse_json(&text, &strings);
    for d in &p.diagnostics { eprintln!("{} {:?} {}", d.code, d.span, d.message); }
    print!("{}", rulelint_nft::print(&p.ruleset));
}
