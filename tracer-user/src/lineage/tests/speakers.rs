//! Who may speak for a container (identity.rs): a name or argv never makes a runtime, a shim,
//! an init stage or a container id; the kernel's word on credentials does.

use super::*;
use crate::event::ExecCred;
use crate::synth::root_cred;

/// nobody (uid 65534) on the host, running a file of their own.
fn nobody() -> ExecCred {
    let mut c = root_cred();
    c.euid = 65534;
    c.fsuid = 65534;
    if let Some(x) = c.exe.as_mut() {
        x.uid = 65534;
    }
    c
}

/// Root in a container: its own pid and mount namespaces, no user namespace.
fn container_root() -> ExecCred {
    ExecCred {
        pidns_level: 1,
        host_mnt: false,
        ..root_cred()
    }
}

/// Every exec of `b` from event `from` on happens as `uid` with the credentials `cred`.
fn as_cred(b: &mut Stream, from: usize, uid: u32, cred: ExecCred) {
    for ev in &mut b.events[from..] {
        ev.uid = uid;
        if let EventKind::Exec { cred: c, .. } = &mut ev.kind {
            *c = Some(cred);
        }
    }
}

/// The containerd story with every exec root's on the host.
fn trusted_node() -> Stream {
    let (mut b, _) = containerd_story();
    as_cred(&mut b, 0, 0, root_cred());
    b
}

/// What the tool says of the real container: its stories and the labels of its processes.
fn told(e: &Engine) -> (String, Vec<String>) {
    let stories = story_text(&stories(e));
    let labels = (1000..1014)
        .filter_map(|pid| e.process(pid))
        .map(|p| node_label(p, TreeOpts::default()))
        .collect();
    (stories, labels)
}

/// `p` speaks for no container: no role, container id or pod.
fn speaks_for_none(e: &Engine, pid: u32) {
    let p = e.process(pid).expect("record");
    assert_eq!(
        (p.role, p.container_id.as_deref(), p.k8s.is_some()),
        (None, None, false),
        "{}",
        node_label(p, TreeOpts::default())
    );
}

/// A shim's argv naming the victim container, as a fake gives it.
const SHIM_ARGV: [&str; 5] = [
    "containerd-shim-runc-v2",
    "-namespace",
    "k8s.io",
    "-id",
    CID,
];

fn refused(e: &Engine, pid: u32) -> Option<identity::Refusal> {
    e.warnings().iter().find_map(|w| match w.kind {
        WarningKind::RoleRefused { pid: p, why, .. } if p == pid => Some(why),
        _ => None,
    })
}

#[test]
fn nobodys_fake_runc_with_stage_renames_and_clone_parent_changes_nothing() {
    let before = told(&trusted_node().engine());
    let mut b = trusted_node();
    let from = b.events.len();
    // nobody's own `runc` (a copy in /tmp) imitating `runc create` of the victim container.
    b.fork(1, 5000);
    b.exec(
        5000,
        "/tmp/x/runc",
        &["runc", "create", "--bundle", "/b", CID],
    );
    b.fork(5000, 5001);
    b.exec_comm(5001, 5001, "/proc/self/exe", &["runc", "init"], "exe");
    b.rename(5001, 5001, "runc:[0:PARENT]");
    b.clone(5001, 5002, cf::CLONE_PARENT);
    b.rename(5002, 5002, "runc:[1:CHILD]");
    b.clone(5002, 5003, cf::CLONE_PARENT);
    b.rename(5003, 5003, "runc:[2:INIT]");
    b.exit(5002, 0);
    b.exit(5001, 0);
    b.exec_comm(
        5003,
        5003,
        "/tmp/x/cryptominer",
        &["cryptominer"],
        "cryptominer",
    );
    as_cred(&mut b, from, 65534, nobody());
    let e = b.engine();
    for pid in 5000..=5003 {
        speaks_for_none(&e, pid);
    }
    assert_eq!(refused(&e, 5000), Some(identity::Refusal::NotRoot));
    assert_eq!(refused(&e, 5001), Some(identity::Refusal::NotRoot));
    assert_eq!(told(&e), before, "the real container's story changed");
    let p = e.process(5003).unwrap();
    assert_eq!((p.uid, p.standing.as_str()), (65534, "not_root"));
    assert!(node_label(p, TreeOpts::default()).contains("(uid 65534)"));
}

#[test]
fn nobodys_exec_a_shim_name_with_the_victims_id_changes_nothing() {
    let before = told(&trusted_node().engine());
    let mut b = trusted_node();
    let from = b.events.len();
    // `exec -a containerd-shim-runc-v2 sleep … -id VICTIM`: argv[0] and comm lie.
    b.fork(1, 6000);
    let argv = SHIM_ARGV;
    b.exec_comm(6000, 6000, "/usr/bin/sleep", &argv, "containerd-shim");
    b.fork(6000, 6001);
    b.exec(6001, "/tmp/cryptominer", &["cryptominer"]);
    as_cred(&mut b, from, 65534, nobody());
    let e = b.engine();
    speaks_for_none(&e, 6000);
    speaks_for_none(&e, 6001);
    assert_eq!(told(&e), before);
}

#[test]
fn a_containers_own_fake_shim_stays_its_containers_process() {
    let mut b = trusted_node();
    let from = b.events.len();
    // Root inside the container (its workload is 1013) runs a binary it named after the
    // shim, with another container's id.
    b.fork(1013, 1100);
    let argv = [
        "/usr/bin/containerd-shim-runc-v2",
        "-id",
        "feedfacefeedface",
    ];
    b.exec(1100, "/usr/bin/containerd-shim-runc-v2", &argv);
    b.fork(1100, 1101);
    b.exec(
        1101,
        "/usr/bin/runc",
        &["runc", "create", "--bundle", "/b", "other"],
    );
    as_cred(&mut b, from, 0, container_root());
    let e = b.engine();
    for pid in [1100, 1101] {
        let p = e.process(pid).unwrap();
        assert_eq!(p.role, Some(Role::Container), "{pid}");
        assert_eq!(p.container_id.as_deref(), Some(CID), "{pid}");
    }
    assert_eq!(refused(&e, 1100), Some(identity::Refusal::ContainerPidNs));
    assert_eq!(stories(&e).len(), 1, "a story was started by the fake");
}

#[test]
fn the_real_runtime_speaks_and_a_source_without_credentials_is_taken_at_its_word() {
    // Root on the host, with the kernel's word: the story as always, nothing refused.
    let e = trusted_node().engine();
    assert!(e.warnings().is_empty(), "{:?}", e.warnings());
    assert_eq!(
        e.process(1010).unwrap().standing,
        identity::Standing::Trusted
    );
    assert_eq!(stories(&e).len(), 1);
    // An strace log (no credentials): the same story.
    let (plain, _) = containerd_story();
    let e2 = plain.engine();
    assert_eq!(told(&e2), told(&e));
    assert_eq!(
        e2.process(1010).unwrap().standing,
        identity::Standing::Unverified
    );
}

#[test]
fn renaming_to_a_runtime_name_makes_no_role() {
    let mut b = trusted_node();
    let from = b.events.len();
    b.fork(1, 7000);
    b.exec(7000, "/usr/bin/sleep", &["sleep", "9"]);
    b.rename(7000, 7000, "containerd");
    b.rename(7000, 7000, "runc:[2:INIT]");
    // Even root's: a process that exec'd no runtime takes no role from a name.
    as_cred(&mut b, from, 0, root_cred());
    let e = b.engine();
    speaks_for_none(&e, 7000);
    assert_eq!(stories(&e).len(), 1);
}

/// Each exec of `b` judged as the capture judges it on a node whose runtimes are installed at
/// their paths: runc's own re-exec (`/proc/self/exe`) is runc's file; anything else is
/// none of theirs.
fn judged(b: &mut Stream) {
    use identity::Program;
    for ev in &mut b.events {
        if let EventKind::Exec {
            cred: Some(c),
            filename,
            ..
        } = &mut ev.kind
        {
            c.program = Some(match filename.value.as_str() {
                "/usr/bin/containerd-shim-runc-v2" => Program::ContainerdShim,
                "/usr/bin/runc" | "/proc/self/exe" => Program::Runc,
                _ => Program::Other,
            });
        }
    }
}

#[test]
fn the_runtimes_installed_files_tell_the_story_their_names_told() {
    let by_name = told(&trusted_node().engine());
    let mut b = trusted_node();
    judged(&mut b);
    let e = b.engine();
    assert_eq!(told(&e), by_name);
    assert!(!by_name.0.is_empty(), "no story");
    let init = e.process(1013).expect("init");
    assert_eq!(init.role, Some(Role::Container));
}

#[test]
fn a_setuid_program_or_roots_other_file_under_a_runtime_name_speaks_for_none() {
    let before = told(&trusted_node().engine());
    let mut b = trusted_node();
    let from = b.events.len();
    let argv = SHIM_ARGV;
    // nobody's `exec -a containerd-shim-runc-v2 /usr/bin/chfn`: setuid root, real uid nobody.
    b.fork(1, 7000);
    b.exec_comm(7000, 7000, "/usr/bin/chfn", &argv, "containerd-shim");
    // root's `sleep` through a symlink named like the shim.
    b.fork(1, 7001);
    b.exec_comm(
        7001,
        7001,
        "/tmp/containerd-shim-runc-v2",
        &argv,
        "containerd-shim",
    );
    // root's real runc, run as the shim by name: runc it is (its file), with no shim's id.
    b.fork(1, 7002);
    b.exec_comm(7002, 7002, "/usr/bin/runc", &argv, "containerd-shim");
    as_cred(&mut b, from, 0, root_cred());
    for ev in b.events[from..].iter_mut().filter(|ev| ev.tgid == 7000) {
        ev.uid = 65534;
    }
    judged(&mut b);
    let e = b.engine();
    speaks_for_none(&e, 7000);
    speaks_for_none(&e, 7001);
    assert_eq!(refused(&e, 7000), Some(identity::Refusal::SetId));
    assert_eq!(refused(&e, 7001), Some(identity::Refusal::NotInstalled));
    let runc = e.process(7002).expect("runc");
    assert!(
        matches!(runc.role, Some(Role::OciRuntime { .. })),
        "{:?}",
        runc.role
    );
    assert_eq!(runc.container_id, None);
    assert_eq!(told(&e), before, "the real container's story changed");
}

/// A bundle's pod comes with the runtime's exec call, before the exec: it is the runtime's
/// when the exec runs the runtime's file (a root shell running `runc run`), and nobody's
/// when it runs another (root's copy of busybox named runc).
#[test]
fn a_bundles_pod_is_judged_by_the_file_its_caller_execs() {
    use crate::synth::PodAnnotations;
    let run = |pid: u32, file: &str| {
        let mut b = Stream::default();
        b.fork(1, pid - 1);
        b.exec(pid - 1, "/bin/bash", &["bash"]);
        b.fork(pid - 1, pid);
        let argv = ["runc", "run", "--bundle", "/b", CID];
        b.exec_enter(pid, pid, file, &argv);
        let meta = PodAnnotations::new("shop", "web")
            .named("app")
            .meta(pid, CID);
        b.push(pid, pid, "bash", meta);
        let kind = EventKind::Exec {
            cred: None,
            old_tid: pid,
            filename: crate::event::CapturedStr::new(file),
        };
        b.push(pid, pid, "runc", kind);
        as_cred(&mut b, 0, 0, root_cred());
        judged(&mut b);
        let e = b.engine();
        let pod = e
            .process(pid)
            .and_then(|p| p.k8s.clone())
            .and_then(|k| k.pod.clone());
        (pod.map(|p| p.name.to_string()), refused(&e, pid))
    };
    assert_eq!(run(801, "/usr/bin/runc"), (Some("web".into()), None));
    assert_eq!(
        run(901, "/tmp/runc"),
        (None, Some(identity::Refusal::NotInstalled))
    );
}
