//! Root tests of `tracer agent` and its readers over TLS: the CA from the environment, and
//! the shipped NATS authorization (deploy/nats-authorization.conf) keeping each node to its
//! own subject. Run by `cargo xtask test` as root (`--ignored`).
#![cfg(feature = "capture")]

use std::path::{Path, PathBuf};
use std::time::Duration;

use tests::agent::{export, has_exec, marker, openssl, prerequisites, start_agent, TlsSetup};
use tests::prereq::require_program;
use tests::servers::{start_nats_with, two_ports, wait_or, Guard};

#[test]
#[ignore = "root: loads the probes, starts nats-server with TLS"]
fn the_agent_and_readers_use_tls_from_the_environment() {
    if !(prerequisites() && require_program("openssl", "openssl")) {
        return;
    }
    let TlsSetup {
        tracer,
        dirs,
        ca,
        cert,
        key,
    } = TlsSetup::new("agent-tls");
    let dir = &dirs.dir;
    let (nats_port, metrics_port) = two_ports();
    let tls = [
        "--tls".as_ref(),
        "--tlscert".as_ref(),
        cert.as_os_str(),
        "--tlskey".as_ref(),
        key.as_os_str(),
    ];
    let mut nats = start_nats_with(nats_port, &dir.join("store"), &dir.join("nats.log"), &tls);
    let with_ca = [("TRACER_NATS_CA", ca.as_path())];
    let log = dir.join("agent.log");
    let mut agent = start_agent(&tracer, (nats_port, metrics_port), "n1", &log, &with_ca);
    let url = format!("nats://127.0.0.1:{nats_port}/n1");
    let tag = format!("tracer-tls-{}", std::process::id());
    let pid = marker(&tag);
    let read = |env: &[(&str, &Path)]| export(&tracer, &url, env);
    // The marker's exec arrives over TLS, read back over TLS.
    let has_marker = |out: &std::process::Output| has_exec(out, pid);
    let why = || {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        let reader = String::from_utf8_lossy(&read(&with_ca).stderr).into_owned();
        format!("reader: {reader}\nagent log:\n{log}")
    };
    wait_or(
        "the marker in the stream, over TLS",
        30,
        || has_marker(&read(&with_ca)),
        why,
    );
    // Without the CA the server's certificate is not trusted: a one-line error, no panic.
    let untrusted = read(&[]);
    agent.terminate();
    nats.terminate();
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert_eq!(untrusted.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot connect to nats://127.0.0.1"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// A client certificate for `cn` signed by the CA of [`make_certificates`] in `dir`:
/// (cert, key).
fn client_certificate(dir: &Path, cn: &str) -> (PathBuf, PathBuf) {
    let (key, csr, cert) = (
        format!("{cn}.key"),
        format!("{cn}.csr"),
        format!("{cn}.pem"),
    );
    let subj = format!("/CN={cn}");
    openssl(
        dir,
        &[
            "req",
            "-subj",
            &subj,
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
        ],
    );
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").expect("ext");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-days",
            "1",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-extfile",
            "client.ext",
            "-out",
            &cert,
        ],
    );
    (dir.join(cert), dir.join(key))
}

/// nats-server with TLS, each client certificate mapped to a user, and the users and rights
/// of deploy/nats-authorization.conf (copied as it is).
fn start_nats_with_authorization(dir: &Path, port: u16) -> Guard {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/nats-authorization.conf");
    std::fs::copy(&shipped, dir.join("nats-authorization.conf")).expect("copy the rights");
    let conf = format!(
        "tls {{\n  cert_file: \"{d}/server.pem\"\n  key_file: \"{d}/server.key\"\n  \
         ca_file: \"{d}/ca.pem\"\n  verify_and_map: true\n}}\ninclude ./nats-authorization.conf\n",
        d = dir.display()
    );
    let path = dir.join("nats.conf");
    std::fs::write(&path, conf).expect("nats.conf");
    start_nats_with(
        port,
        &dir.join("store"),
        &dir.join("nats.log"),
        &["-c".as_ref(), path.as_os_str()],
    )
}

/// What [`as_user`] tries.
enum Try {
    /// Publishing one message on the subject.
    Publish(&'static str),
    /// Subscribing to the subject.
    Subscribe(&'static str),
}

/// Connects as the user of the client certificate `(cert, key)`, tries `what`, and returns
/// what the server answered (its errors, as the client reports them).
fn as_user(port: u16, ca: &Path, (cert, key): (&Path, &Path), what: Try) -> Vec<String> {
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let heard = said.clone();
    rt.block_on(async move {
        let client = async_nats::ConnectOptions::new()
            .add_root_certificates(ca.to_path_buf())
            .add_client_certificate(cert.to_path_buf(), key.to_path_buf())
            .require_tls(true)
            .event_callback(move |e| {
                heard.lock().unwrap().push(e.to_string());
                async {}
            })
            .connect(format!("nats://127.0.0.1:{port}"))
            .await
            .expect("connect");
        let _sub = match what {
            Try::Publish(subject) => {
                client
                    .publish(subject, "forged".into())
                    .await
                    .expect("publish");
                None
            }
            Try::Subscribe(subject) => Some(client.subscribe(subject).await.expect("subscribe")),
        };
        client.flush().await.expect("flush");
        // The refusal comes back asynchronously.
        tokio::time::sleep(Duration::from_secs(1)).await;
    });
    let said = said.lock().unwrap().clone();
    said
}

#[test]
#[ignore = "root: loads the probes, starts nats-server with TLS users"]
fn per_node_rights_keep_each_node_to_its_own_subject() {
    if !(prerequisites() && require_program("openssl", "openssl")) {
        return;
    }
    let TlsSetup {
        tracer, dirs, ca, ..
    } = TlsSetup::new("agent-rights");
    let dir = &dirs.dir;
    let (node_cert, node_key) = client_certificate(dir, "tracer-node-1");
    let (reader_cert, reader_key) = client_certificate(dir, "tracer-reader");
    let (nats_port, metrics_port) = two_ports();
    let nats_log = dir.join("nats.log");
    let mut nats = start_nats_with_authorization(dir, nats_port);
    let node1 = [
        ("TRACER_NATS_CA", ca.as_path()),
        ("TRACER_NATS_CERT", node_cert.as_path()),
        ("TRACER_NATS_KEY", node_key.as_path()),
    ];
    let reader = [
        ("TRACER_NATS_CA", ca.as_path()),
        ("TRACER_NATS_CERT", reader_cert.as_path()),
        ("TRACER_NATS_KEY", reader_key.as_path()),
    ];
    let log = dir.join("agent.log");
    let mut agent = start_agent(
        &tracer,
        (nats_port, metrics_port),
        "tracer-node-1",
        &log,
        &node1,
    );
    let url = |node: &str| format!("nats://127.0.0.1:{nats_port}/{node}");
    let pid = marker(&format!("tracer-rights-{}", std::process::id()));
    let server_log = || std::fs::read_to_string(&nats_log).unwrap_or_default();
    wait_or(
        "node 1's marker, read by the reader",
        30,
        || has_exec(&export(&tracer, &url("tracer-node-1"), &reader), pid),
        || {
            let out = export(&tracer, &url("tracer-node-1"), &reader);
            format!(
                "reader: {}\nagent log:\n{}\nserver log:\n{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(&log).unwrap_or_default(),
                server_log()
            )
        },
    );
    agent.terminate();
    let ids = [(&*node_cert, &*node_key), (&*reader_cert, &*reader_key)];
    assert_refused(nats_port, &ca, ids, &nats_log);
    for subject in ["tracer.tracer-node-2.events", "tracer.tracer-node-1.events"] {
        let logged = server_log().lines().any(|l| {
            l.contains("Publish Violation") && l.contains(&format!("Subject \"{subject}\""))
        });
        assert!(logged, "the server did not log refusing {subject}");
    }
    // Node 2's history stays empty; node 1's certificate reads nothing (it may only publish).
    let out = export(&tracer, &url("tracer-node-2"), &reader);
    assert!(!out.status.success(), "node 2 has a history");
    let out = export(&tracer, &url("tracer-node-1"), &node1);
    assert!(!out.status.success(), "a node read the stream");
    nats.terminate();
}

/// Node 1 publishing as node 2, the reader publishing at all, node 1 listening to the
/// replies readers get: the server answers each with a permissions violation.
fn assert_refused(
    nats_port: u16,
    ca: &Path,
    [node1_ids, reader_ids]: [(&Path, &Path); 2],
    log: &Path,
) {
    let said = [
        as_user(
            nats_port,
            ca,
            node1_ids,
            Try::Publish("tracer.tracer-node-2.events"),
        ),
        as_user(
            nats_port,
            ca,
            reader_ids,
            Try::Publish("tracer.tracer-node-1.events"),
        ),
        as_user(nats_port, ca, node1_ids, Try::Subscribe("_INBOX.>")),
    ];
    for (what, answer) in [
        ("Publish to \"tracer.tracer-node-2.events\"", &said[0]),
        ("Publish to \"tracer.tracer-node-1.events\"", &said[1]),
        ("Subscription to \"_INBOX.>\"", &said[2]),
    ] {
        assert!(
            answer
                .iter()
                .any(|e| e.contains("Permissions Violation") && e.contains(what)),
            "not refused: {what}: {answer:?}\nserver log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }
}
