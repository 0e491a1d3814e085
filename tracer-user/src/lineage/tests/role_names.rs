//! Roles and container ids from names and argv.

use super::*;

#[test]
fn roles_from_names_and_argv() {
    assert_eq!(
        cls("containerd", None, &[]),
        Some((Role::RuntimeDaemon, None))
    );
    assert_eq!(
        cls("", Some("/usr/bin/dockerd"), &["dockerd"]),
        Some((Role::RuntimeDaemon, None))
    );
    assert_eq!(cls("crio", None, &[]), Some((Role::RuntimeDaemon, None)));
    assert_eq!(
        cls(
            "containerd-shim",
            Some("/usr/bin/containerd-shim-runc-v2"),
            &[
                "/usr/bin/containerd-shim-runc-v2",
                "-namespace",
                "k8s.io",
                "-id",
                "abc123",
                "-address",
                "/run/c.sock"
            ]
        ),
        Some((Role::Shim, Some("abc123".into())))
    );
    assert_eq!(
        cls(
            "conmon",
            Some("/usr/bin/conmon"),
            &[
                "/usr/bin/conmon",
                "--api-version",
                "1",
                "-c",
                "deadbeef",
                "-u",
                "x"
            ]
        ),
        Some((Role::Shim, Some("deadbeef".into())))
    );
    assert_eq!(
        cls("conmon", None, &["conmon", "--cid=feed", "-u", "x"]),
        Some((Role::Shim, Some("feed".into())))
    );
    assert_eq!(
        cls("pause", Some("/pause"), &["/pause"]),
        Some((Role::Sandbox, None))
    );
    assert_eq!(
        cls(
            "bridge",
            Some("/opt/cni/bin/bridge"),
            &["/opt/cni/bin/bridge"]
        ),
        Some((Role::CniPlugin, None))
    );
    assert_eq!(cls("bash", Some("/bin/bash"), &["bash"]), None);
    assert_eq!(
        cls("runc:[1:CHILD]", None, &[]),
        Some((
            Role::OciInit {
                stage: Some(InitStage::Child)
            },
            None
        ))
    );
    assert_eq!(
        cls("exe", Some("/proc/self/exe"), &["runc", "init"]),
        Some((Role::OciInit { stage: None }, None))
    );
}

#[test]
fn oci_runtime_subcommands_and_container_ids() {
    let rt = |sub| Role::OciRuntime {
        subcommand: Some(sub),
    };
    assert_eq!(
        cls(
            "runc",
            Some("/usr/bin/runc"),
            &[
                "runc",
                "--root",
                "/run/containerd/runc/k8s.io",
                "--log",
                "/run/x/log.json",
                "--log-format",
                "json",
                "create",
                "--bundle",
                "/run/containerd/io.containerd.runtime.v2.task/k8s.io/ID1",
                "--pid-file",
                "/run/x/init.pid",
                "ID1",
            ]
        ),
        Some((rt(OciCommand::Create), Some("ID1".into())))
    );
    // (argv, subcommand, id); argv cut short before the id: the bundle's basename (ID7).
    use OciCommand as C;
    let cases = [
        ("runc start ID2", C::Start, "ID2"),
        ("runc kill ID3 9", C::Kill, "ID3"),
        ("runc delete --force ID4", C::Delete, "ID4"),
        ("runc state ID5", C::State, "ID5"),
        ("runc run -d --bundle=/srv/b/ ID6", C::Run, "ID6"),
        ("runc create --bundle /run/x/default/ID7", C::Create, "ID7"),
        ("crun exec ID8 sh", C::Exec, "ID8"),
    ];
    for (line, sub, id) in cases {
        let argv: Vec<&str> = line.split(' ').collect();
        let want = Some((rt(sub), Some(id.to_string())));
        assert_eq!(cls(argv[0], None, &argv), want, "{line}");
    }
    assert_eq!(
        cls("runc", None, &["runc", "list"]),
        Some((rt(OciCommand::List), None))
    );
    assert_eq!(
        cls("runc", None, &["runc"]),
        Some((Role::OciRuntime { subcommand: None }, None))
    );
    assert_eq!(
        Role::OciRuntime {
            subcommand: Some(OciCommand::Create)
        }
        .to_string(),
        "oci-runtime create"
    );
    assert_eq!(
        Role::OciInit {
            stage: Some(InitStage::Init)
        }
        .to_string(),
        "oci-init 2:INIT"
    );
}

#[test]
fn oci_init_exec_becomes_container_or_sandbox_with_inherited_id() {
    let mut b = Stream::default();
    b.fork(1, 100);
    b.exec(100, "/usr/bin/runc", &["runc", "create", "C1"]);
    b.fork(100, 101);
    b.exec_comm(101, 101, "/proc/self/exe", &["runc", "init"], "exe");
    b.rename(101, 101, "runc:[2:INIT]");
    b.fork(100, 102);
    b.exec_comm(102, 102, "/proc/self/exe", &["runc", "init"], "exe");
    let s1 = b.exec(101, "/bin/sleep", &["sleep", "1"]);
    let s2 = b.exec(102, "/pause", &["/pause"]);
    b.exec(101, "/bin/ls", &["ls"]);
    let e = b.engine();
    assert_eq!(e.process(101).unwrap().role, Some(Role::Container));
    assert_eq!(e.process(101).unwrap().container_id.as_deref(), Some("C1"));
    assert_eq!(e.process(101).unwrap().workload_exec_seq(), Some(s1));
    assert_eq!(e.process(102).unwrap().role, Some(Role::Sandbox));
    assert_eq!(e.process(102).unwrap().workload_exec_seq(), Some(s2));
    // A plain process exec'ing something unknown has no role.
    let mut b = Stream::default();
    b.fork(1, 100);
    b.exec(100, "/usr/bin/containerd", &["containerd"]);
    b.fork(100, 101);
    b.exec(101, "/bin/true", &["true"]);
    assert_eq!(b.engine().process(101).unwrap().role, None);
}
