//! Root tests: who may speak for a container is decided by what the kernel says of a
//! process's credentials and executable. nobody's fake runc (with runc init's renames and
//! CLONE_PARENT clones), a shim name given with `exec -a`, a copy of `sleep` called
//! containerd, and a container's own fake shim change nothing the tool says or counts.
//! Run by `cargo xtask test` as root (`--ignored`).
#![cfg(feature = "capture")]

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};
use tests::{busybox_bundle, capture_command, temp_dir, which, Captured, RING};
use tracer::lineage::identity::{Refusal, Standing};
use tracer::lineage::{stories, Engine, Role, WarningKind};
use tracer::EventKind;

const ACTOR: &str = env!("CARGO_BIN_EXE_actor");
const VICTIM: &str = "0123456789abcdef0123456789abcdef";
const NOBODY: u32 = 65534;

/// A copy of `src` at `dir/name` owned by nobody, as a user would plant it.
fn plant(dir: &Path, src: &str, name: &str) -> String {
    let to = dir.join(name);
    std::fs::copy(src, &to).expect("copy");
    std::os::unix::fs::chown(&to, Some(NOBODY), Some(NOBODY)).expect("chown");
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    to.to_string_lossy().into_owned()
}

fn nobody_dir(tag: &str) -> std::path::PathBuf {
    assert!(
        which("setpriv").is_some(),
        "setpriv (util-linux) is not installed"
    );
    let dir = temp_dir(tag).expect("temp dir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

/// The pids that exec'd a file whose path or argv[0] names `what`.
fn execs_of(c: &Captured, what: &str) -> Vec<u32> {
    let mut pids: Vec<u32> = c
        .events
        .iter()
        .filter(|ev| {
            let EventKind::ExecEnter { filename, argv, .. } = &ev.kind else {
                return false;
            };
            filename.value.contains(what) || argv.first().is_some_and(|a| a.contains(what))
        })
        .map(|ev| ev.tgid)
        .collect();
    pids.dedup();
    pids
}

/// `script` run by bash as nobody (setpriv), captured with no drop, and the engine of it;
/// `dir` removed after.
fn as_nobody(script: &str, dir: &Path) -> (Captured, Engine) {
    let (u, g) = (format!("--reuid={NOBODY}"), format!("--regid={NOBODY}"));
    let argv = [
        "setpriv",
        &u,
        &g,
        "--clear-groups",
        "--",
        "bash",
        "-c",
        script,
    ];
    let c = capture_command(&argv, RING, true, false).expect("capture");
    let _ = std::fs::remove_dir_all(dir);
    assert_eq!(c.drops, 0);
    let e = tests::seeded_with_command(&c, "setpriv");
    (c, e)
}

fn refusal(e: &Engine, pid: u32) -> Option<Refusal> {
    e.warnings().iter().find_map(|w| match w.kind {
        WarningKind::RoleRefused { pid: p, why, .. } if p == pid => Some(why),
        _ => None,
    })
}

#[test]
#[ignore = "root"]
fn nobodys_fake_runc_and_exec_a_shim_change_nothing_the_tool_says() {
    let dir = nobody_dir("speakers");
    let runc = plant(&dir, ACTOR, "runc");
    let script = format!(
        "{runc} create --bundle /b {VICTIM} -- stages; \
         (exec -a containerd-shim-runc-v2 /bin/sleep 0.1 -namespace k8s.io -id {VICTIM}); true"
    );
    let (c, e) = as_nobody(&script, &dir);
    let fakes = [execs_of(&c, &runc), execs_of(&c, "containerd-shim")].concat();
    assert!(
        fakes.len() >= 2,
        "the fakes' execs were not seen: {fakes:?}"
    );
    // runc init's stages: the CLONE_PARENT clones the fake runc made (setpriv's children).
    let stages: Vec<u32> = e
        .processes()
        .filter(|p| p.comm.as_bytes().starts_with(b"runc:["))
        .map(|p| p.pid)
        .collect();
    assert_eq!(stages.len(), 3, "stages {stages:?}");
    for pid in fakes.iter().chain(&stages) {
        let p = e.process(*pid).expect("record");
        let label = tracer::lineage::node_label(p, Default::default());
        assert_eq!((p.role, p.container_id.as_deref()), (None, None), "{label}");
        assert!(p.k8s.is_none(), "{label}");
        // The uid setpriv gave it, as the kernel reported it.
        assert_eq!((p.uid, p.euid), (NOBODY, NOBODY), "{label}");
        assert!(label.contains("(uid 65534)"), "{label}");
    }
    for pid in &fakes {
        assert_eq!(refusal(&e, *pid), Some(Refusal::NotRoot), "pid {pid}");
    }
    assert!(stories(&e).is_empty(), "a story was told of the fakes");
}

#[test]
#[ignore = "root"]
fn nobodys_copy_of_sleep_called_containerd_is_never_the_daemon_followed() {
    let dir = nobody_dir("fake-daemon");
    let fake = plant(&dir, "/bin/sleep", "containerd");
    let mut child = std::process::Command::new("setpriv")
        .args([&format!("--reuid={NOBODY}"), &format!("--regid={NOBODY}")])
        .args(["--clear-groups", "--", &fake, "60"])
        .spawn()
        .expect("setpriv");
    let pid = child.id();
    // Truth from /proc: it runs under the daemon's name, as nobody.
    let deadline = Instant::now() + Duration::from_secs(20);
    let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    while comm(pid).trim() != "containerd" {
        assert!(Instant::now() < deadline, "the fake never exec'd");
        std::thread::sleep(Duration::from_millis(20));
    }
    let procs = tracer::capture::procfs::snapshot();
    let chosen = tracer::agent::daemon_in(&procs);
    let told = tracer::agent::passed_over(&procs);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert_ne!(
        chosen.map(|c| c.0),
        Some(pid),
        "nobody's containerd was followed"
    );
    let line = format!("pid {pid} is named containerd but is not followed: it is not root");
    assert!(told.contains(&line), "{told:?}");
}

#[test]
#[ignore = "root"]
fn a_containers_own_fake_shim_stays_its_containers_process() {
    assert!(
        which("runc").is_some(),
        "runc is not installed (cargo xtask setup installs it)"
    );
    let dir = temp_dir("own-shim").expect("temp dir");
    // Root inside the container (no user namespace: uid 0 on the host) runs a binary it
    // named after the shim, with another container's id (/dev is the container's writable,
    // executable tmpfs).
    let fake = "/dev/containerd-shim-runc-v2";
    let script = format!("cp /bin/busybox {fake} && {fake} -namespace k8s.io -id {VICTIM}; true");
    let bundle = busybox_bundle(&dir, &["sh", "-c", &script]).expect("bundle");
    let id = format!("tracer-own-shim-{}", std::process::id());
    let b = bundle.to_string_lossy().to_string();
    let c = capture_command(&["runc", "run", "--bundle", &b, &id], RING, true, false);
    let _ = std::process::Command::new("runc")
        .args(["delete", "-f", &id])
        .status();
    let _ = std::fs::remove_dir_all(&dir);
    let c = c.expect("capture");
    assert_eq!(c.drops, 0);
    let e = tests::seeded_with_command(&c, "runc");
    let shims = execs_of(&c, fake);
    assert_eq!(shims.len(), 1, "the fake shim's exec: {shims:?}");
    let p = e.process(shims[0]).expect("record");
    assert_eq!(p.role, Some(Role::Container));
    assert_eq!(p.container_id.as_deref(), Some(id.as_str()));
    assert_eq!(p.standing, Standing::Refused(Refusal::ContainerPidNs));
    assert_eq!(refusal(&e, p.pid), Some(Refusal::ContainerPidNs));
    // The runtime itself: root on the host, running root's runc.
    let runc = e.process(c.pid).expect("runc");
    assert_eq!(runc.standing, Standing::Trusted);
    // Its stories (birth, death) are the container's own; none is the fake's.
    let told = stories(&e);
    let text = tracer::lineage::story_text(&told);
    assert!(
        told.iter()
            .all(|s| s.container_id.as_deref() == Some(id.as_str())),
        "{text}"
    );
    assert!(!told.is_empty(), "the container's birth was not told");
    assert!(!text.contains(VICTIM), "{text}");
}

/// The setuid bit of a file of root's, as `stat` shows it (the test's premise).
fn setuid_root(path: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|m| m.uid() == 0 && m.mode() & 0o4000 != 0)
}

/// nobody runs setuid-root programs under the runtime's names — through a symlink named like
/// the shim and with `exec -a` — with a victim's container id: root by their effective uid,
/// nobody by their real one; they take no role, id, pod, story or metric.
#[test]
#[ignore = "root"]
fn nobodys_setuid_programs_under_runtime_names_speak_for_no_container() {
    for f in ["/usr/bin/passwd", "/usr/bin/chfn"] {
        assert!(setuid_root(f), "{f} is not setuid root here");
    }
    let dir = nobody_dir("setuid-fakes");
    let link = dir.join("containerd-shim-runc-v2");
    std::os::unix::fs::symlink("/usr/bin/passwd", &link).expect("symlink");
    let link = link.to_string_lossy().into_owned();
    let script = format!(
        "{link} -namespace k8s.io -id {VICTIM} </dev/null; \
         (exec -a containerd-shim-runc-v2 /usr/bin/chfn -id {VICTIM} </dev/null); \
         (exec -a 'runc:[2:INIT]' /usr/bin/passwd -S </dev/null); true"
    );
    let (c, e) = as_nobody(&script, &dir);
    let fakes = [
        execs_of(&c, &link),
        execs_of(&c, "/usr/bin/chfn"),
        execs_of(&c, "/usr/bin/passwd"),
    ]
    .concat();
    assert_eq!(fakes.len(), 3, "the fakes' execs: {fakes:?}");
    for pid in &fakes {
        let p = e.process(*pid).expect("record");
        let label = tracer::lineage::node_label(p, Default::default());
        assert_eq!((p.role, p.container_id.as_deref()), (None, None), "{label}");
        assert!(p.k8s.is_none(), "{label}");
        // root by the file's setuid bit, nobody by the real uid the kernel keeps
        assert_eq!((p.uid, p.euid), (NOBODY, 0), "{label}");
        assert_eq!(p.standing, Standing::Refused(Refusal::SetId), "{label}");
    }
    assert!(stories(&e).is_empty(), "a story was told of the fakes");
    let mut m = tracer::metrics::Metrics::new();
    m.update_from(&e);
    let text = m.encode();
    let counted: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.ends_with(" 0"))
        .filter(|l| l.starts_with("tracer_container") || l.starts_with("tracer_runtime"))
        .collect();
    assert!(counted.is_empty(), "{counted:?}");
}

/// A long-running process of `argv`, its pid once /proc shows `comm` (up to 20 s).
fn running(mut cmd: std::process::Command, comm: &str) -> std::process::Child {
    let child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    let now = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    while now(pid).trim() != comm {
        assert!(
            Instant::now() < deadline,
            "{comm} never ran: {:?}",
            now(pid)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// nobody's `passwd` through a symlink named containerd (setuid root; waiting at its prompt).
fn nobodys_setuid_containerd(dir: &Path) -> std::process::Child {
    let link = dir.join("containerd");
    std::os::unix::fs::symlink("/usr/bin/passwd", &link).expect("symlink");
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args([&format!("--reuid={NOBODY}"), &format!("--regid={NOBODY}")])
        .args(["--clear-groups", "--"])
        .arg(&link);
    running(cmd, "containerd")
}

fn stop(mut c: std::process::Child) {
    let _ = c.kill();
    let _ = c.wait();
}

/// The agent's choice on this host now, and what it says of the others.
fn agents_choice() -> (Option<(u32, &'static str)>, Vec<String>) {
    let procs = tracer::capture::procfs::snapshot();
    (
        tracer::agent::daemon_in(&procs),
        tracer::agent::passed_over(&procs),
    )
}

/// A node whose only root daemon is CRI-O (a root-owned copy of `sleep` installed at crio's
/// path, CRI-O itself not being installable here) while nobody's setuid fake containerd
/// runs: the agent follows crio, and says why not the fake.
#[test]
#[ignore = "root"]
fn the_agent_follows_roots_crio_not_nobodys_setuid_containerd() {
    assert!(
        setuid_root("/usr/bin/passwd"),
        "/usr/bin/passwd is not setuid root here"
    );
    let crio = Path::new("/usr/bin/crio");
    // Never replaces a file it did not make: a real crio here would be this test's error.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(crio)
        .expect("/usr/bin/crio exists: this test installs its own there");
    std::io::copy(
        &mut std::fs::File::open("/bin/sleep").expect("sleep"),
        &mut f,
    )
    .expect("copy");
    drop(f);
    let dir = nobody_dir("setuid-daemon");
    let fake = nobodys_setuid_containerd(&dir);
    let mut cmd = std::process::Command::new(crio);
    cmd.arg("60");
    let daemon = running(cmd, "crio");
    let (chosen, told) = agents_choice();
    let (fake_pid, crio_pid) = (fake.id(), daemon.id());
    stop(fake);
    stop(daemon);
    let _ = std::fs::remove_file(crio);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(chosen, Some((crio_pid, "crio")), "{told:?}");
    let line = format!(
        "pid {fake_pid} is named containerd but is not followed: it is root only by a setuid exec (its real uid is not 0)"
    );
    assert!(told.contains(&line), "{told:?}");
}

/// Root's real containerd (a private one: its own root, state and socket) beside nobody's
/// setuid fake of the same name: the agent follows root's.
#[test]
#[ignore = "root"]
fn the_agent_follows_roots_containerd_not_nobodys_setuid_one() {
    tests::packages::install(
        "speakers",
        &[("containerd", "the daemon the agent follows")],
    )
    .expect("install containerd");
    assert!(
        setuid_root("/usr/bin/passwd"),
        "/usr/bin/passwd is not setuid root here"
    );
    let dir = nobody_dir("real-daemon");
    let fake = nobodys_setuid_containerd(&dir);
    let d = dir.join("ctd");
    let config = dir.join("config.toml");
    let d = d.to_string_lossy();
    let text = format!(
        "version = 2\nroot = \"{d}/root\"\nstate = \"{d}/state\"\n\
         disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
         [grpc]\n  address = \"{d}/containerd.sock\"\n\
         [ttrpc]\n  address = \"{d}/containerd.sock.ttrpc\"\n"
    );
    std::fs::write(&config, text).expect("config");
    let bin = which("containerd").expect("containerd on PATH");
    let mut cmd = std::process::Command::new(&bin);
    cmd.arg("--config").arg(&config);
    let real = running(cmd, "containerd");
    let (chosen, told) = agents_choice();
    let (fake_pid, real_pid) = (fake.id(), real.id());
    stop(fake);
    stop(real);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(chosen, Some((real_pid, "containerd")), "{told:?}");
    assert!(
        told.iter()
            .any(|l| l.starts_with(&format!("pid {fake_pid} is named containerd"))),
        "{told:?}"
    );
}
