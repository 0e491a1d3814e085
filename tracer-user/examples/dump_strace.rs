fn main() {
    let path = std::env::args().nth(1).expect("LOG");
    let text = std::fs::read_to_string(path).expect("read");
    let import = tracer::strace::parse_log(&text).expect("parse");
    let mut e = tracer::lineage::Engine::new();
    for ev in &import.events {
        e.apply(ev);
        println!("{}", serde_json::to_string(ev).unwrap());
    }
    for w in e.warnings() {
        eprintln!("warning: {w:?}");
    }
}
