use super::*;

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/strace").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn dump_fixtures() {
    for f in ["runc.log", "runc-stderr.log", "ctr.log", "podman.log"] {
        let imp = parse_log(&fixture(f)).unwrap();
        eprintln!("== {f}: lines {} skipped {} unreadable {} events {}", imp.lines, imp.skipped, imp.unreadable, imp.events.len());
        for u in &imp.first_unreadable { eprintln!("  unreadable {:?}", u); }
        for e in &imp.events {
            match &e.kind {
                EventKind::Fork { .. } | EventKind::Exec { .. } | EventKind::TaskExit { .. } | EventKind::PrctlEnter { name: Some(_), .. } | EventKind::ExecEnter { .. } =>
                    eprintln!("  {} {} {}/{} {:?}", e.seq, e.ts_ns, e.tgid, e.tid, e.kind),
                _ => {}
            }
        }
    }
}
