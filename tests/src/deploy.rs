//! deploy/daemonset.yaml turned into the `podman run` flags that give its container what a
//! kubelet would: host pid (and network) namespace, the capability set, a read-only root, no
//! privilege escalation, the seccomp profile, the memory limit, the hostPath mounts, the
//! environment and the arguments with `$(VAR)` expanded. The root test runs the image with
//! exactly these, so editing the manifest changes what is tested.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::Path;
use yaml_rust2::{Yaml, YamlLoader};

/// The DaemonSet's container as podman runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodmanRun {
    /// Options before the image.
    pub flags: Vec<String>,
    /// The container's arguments (after the image), `$(VAR)` expanded.
    pub args: Vec<String>,
    /// The capabilities the manifest adds (`BPF`, ...), in its order.
    pub cap_add: Vec<String>,
}

impl PodmanRun {
    /// The same run without the capability `cap` (`BPF`, `PERFMON`, ...).
    pub fn without_capability(&self, cap: &str) -> PodmanRun {
        let flag = format!("--cap-add=CAP_{cap}");
        PodmanRun {
            flags: self.flags.iter().filter(|f| **f != flag).cloned().collect(),
            args: self.args.clone(),
            cap_add: self.cap_add.iter().filter(|c| *c != cap).cloned().collect(),
        }
    }
}

/// What the kubelet would fill in: values of `fieldRef`s (`spec.nodeName`, `status.podIP`) and
/// environment values replaced for this machine (the NATS URL of a test server).
#[derive(Default)]
pub struct Cluster<'a> {
    pub fields: BTreeMap<&'a str, &'a str>,
    pub env: BTreeMap<&'a str, &'a str>,
    /// hostPath directories given another place on this machine (a test's own directory
    /// for the node's key, not the machine's /var/lib/tracer).
    pub host_paths: BTreeMap<&'a str, &'a str>,
}

/// Reads the manifest at `path` and translates its DaemonSet's single container.
pub fn daemonset_run(path: &Path, cluster: &Cluster) -> Result<PodmanRun> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let docs = YamlLoader::load_from_str(&text).context("the manifest is not YAML")?;
    let ds = docs
        .iter()
        .find(|d| d["kind"].as_str() == Some("DaemonSet"))
        .context("no DaemonSet in the manifest")?;
    translate(&ds["spec"]["template"]["spec"], cluster)
}

fn translate(pod: &Yaml, cluster: &Cluster) -> Result<PodmanRun> {
    let containers = pod["containers"].as_vec().context("no containers")?;
    let [c] = containers.as_slice() else {
        bail!(
            "the DaemonSet has {} containers; one expected",
            containers.len()
        );
    };
    let mut flags = namespace_flags(pod);
    let (security, cap_add) = security_flags(&pod["securityContext"], &c["securityContext"])?;
    flags.extend(security);
    if let Some(mem) = c["resources"]["limits"]["memory"].as_str() {
        flags.push(format!("--memory={}", memory_bytes(mem)?));
    }
    flags.extend(volume_flags(pod, c, cluster)?);
    let env = environment(c, cluster)?;
    flags.extend(env.iter().map(|(k, v)| format!("--env={k}={v}")));
    if let Some(cmd) = c["command"].as_vec() {
        flags.push(format!("--entrypoint={}", json_strings(cmd)?));
    }
    let args = c["args"]
        .as_vec()
        .map(|a| strings(a))
        .transpose()?
        .unwrap_or_default()
        .iter()
        .map(|a| expand(a, &env))
        .collect();
    Ok(PodmanRun {
        flags,
        args,
        cap_add,
    })
}

fn namespace_flags(pod: &Yaml) -> Vec<String> {
    let mut flags = Vec::new();
    for (key, flag) in [
        ("hostPID", "--pid=host"),
        ("hostNetwork", "--network=host"),
        ("hostIPC", "--ipc=host"),
    ] {
        if pod[key].as_bool() == Some(true) {
            flags.push(flag.to_string());
        }
    }
    flags
}

/// The security context: the container's fields override the pod's (as the kubelet merges
/// them). Without a seccomp profile the kubelet (SeccompDefault off) runs the container
/// Unconfined; RuntimeDefault is podman's default profile.
fn security_flags(pod: &Yaml, c: &Yaml) -> Result<(Vec<String>, Vec<String>)> {
    let field = |k: &str| if c[k].is_badvalue() { &pod[k] } else { &c[k] };
    let mut flags = Vec::new();
    if field("privileged").as_bool() == Some(true) {
        flags.push("--privileged".into());
    }
    if let Some(uid) = field("runAsUser").as_i64() {
        flags.push(format!("--user={uid}"));
    }
    if c["readOnlyRootFilesystem"].as_bool() == Some(true) {
        // The kubelet mounts no tmpfs on /tmp or /run: neither may podman.
        flags.extend(["--read-only".into(), "--read-only-tmpfs=false".into()]);
    }
    if c["allowPrivilegeEscalation"].as_bool() == Some(false) {
        flags.push("--security-opt=no-new-privileges".into());
    }
    match field("seccompProfile")["type"].as_str() {
        None | Some("Unconfined") => flags.push("--security-opt=seccomp=unconfined".into()),
        Some("RuntimeDefault") => {}
        Some(other) => bail!("seccompProfile type {other} is not translated"),
    }
    let caps = &c["capabilities"];
    for cap in caps["drop"]
        .as_vec()
        .map(|v| strings(v))
        .transpose()?
        .unwrap_or_default()
    {
        flags.push(format!("--cap-drop={}", cap_name(&cap)));
    }
    let add = caps["add"]
        .as_vec()
        .map(|v| strings(v))
        .transpose()?
        .unwrap_or_default();
    flags.extend(add.iter().map(|cap| format!("--cap-add={}", cap_name(cap))));
    Ok((flags, add))
}

/// Kubernetes names capabilities without the prefix (`BPF`), podman with it (`CAP_BPF`);
/// `ALL` is `all` to both.
fn cap_name(cap: &str) -> String {
    if cap == "ALL" {
        "all".into()
    } else {
        format!("CAP_{cap}")
    }
}

/// hostPath volumes mounted where the container's volumeMounts say; any other kind of volume
/// is refused (the test could not give it what a cluster would).
fn volume_flags(pod: &Yaml, c: &Yaml, cluster: &Cluster) -> Result<Vec<String>> {
    let mut host_paths = BTreeMap::new();
    for v in pod["volumes"].as_vec().into_iter().flatten() {
        let name = v["name"].as_str().context("a volume without a name")?;
        let Some(path) = v["hostPath"]["path"].as_str() else {
            bail!("volume {name} is not a hostPath volume");
        };
        host_paths.insert(name, cluster.host_paths.get(path).copied().unwrap_or(path));
    }
    let mut flags = Vec::new();
    for m in c["volumeMounts"].as_vec().into_iter().flatten() {
        let name = m["name"].as_str().context("a volumeMount without a name")?;
        let host = host_paths
            .get(name)
            .with_context(|| format!("volumeMount {name} names no volume"))?;
        let at = m["mountPath"]
            .as_str()
            .context("a volumeMount without mountPath")?;
        let ro = if m["readOnly"].as_bool() == Some(true) {
            ":ro"
        } else {
            ""
        };
        flags.push(format!("--volume={host}:{at}{ro}"));
    }
    Ok(flags)
}

/// The container's environment, in order: literal values (or the cluster's replacement) and
/// `fieldRef`s resolved from the cluster.
fn environment(c: &Yaml, cluster: &Cluster) -> Result<Vec<(String, String)>> {
    let mut env = Vec::new();
    for e in c["env"].as_vec().into_iter().flatten() {
        let name = e["name"].as_str().context("an env entry without a name")?;
        let value = if let Some(v) = cluster.env.get(name) {
            v.to_string()
        } else if let Some(v) = e["value"].as_str() {
            v.to_string()
        } else if let Some(path) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            cluster
                .fields
                .get(path)
                .with_context(|| format!("env {name}: no value for fieldRef {path}"))?
                .to_string()
        } else {
            bail!("env {name}: neither a value nor a fieldRef");
        };
        env.push((name.to_string(), value));
    }
    Ok(env)
}

/// `$(VAR)` replaced by the variable's value when it is defined, as the kubelet expands
/// `args`; `$$` is a literal `$`.
pub fn expand(arg: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("$$") {
            out.push('$');
            rest = t;
        } else if let Some((name, after)) = tail
            .strip_prefix("$(")
            .and_then(|t| t.split_once(')'))
            .filter(|(n, _)| env.iter().any(|(k, _)| k == n))
        {
            let value = env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
            out.push_str(value.unwrap_or_default());
            rest = after;
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Kubernetes quantities for memory (`512Mi`, `1Gi`, `64M`, plain bytes) in bytes.
fn memory_bytes(q: &str) -> Result<u64> {
    let units: [(&str, u64); 6] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("K", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
    ];
    for (suffix, mul) in units {
        if let Some(n) = q.strip_suffix(suffix) {
            return Ok(n.parse::<u64>().with_context(|| format!("memory {q}"))? * mul);
        }
    }
    q.parse().with_context(|| format!("memory {q}"))
}

fn strings(v: &[Yaml]) -> Result<Vec<String>> {
    v.iter()
        .map(|y| {
            y.as_str()
                .map(String::from)
                .with_context(|| format!("{y:?} is not a string"))
        })
        .collect()
}

fn json_strings(v: &[Yaml]) -> Result<String> {
    Ok(serde_json::to_string(&strings(v)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_run() -> PodmanRun {
        let cluster = Cluster {
            fields: [("spec.nodeName", "n1"), ("status.podIP", "127.0.0.1")].into(),
            env: [("NATS_URL", "nats://127.0.0.1:4222")].into(),
            host_paths: [("/var/lib/tracer", "/tmp/keys")].into(),
        };
        daemonset_run(
            &crate::workspace_root().join("deploy/daemonset.yaml"),
            &cluster,
        )
        .expect("the manifest translates")
    }

    #[test]
    fn the_manifest_becomes_the_podman_flags_a_kubelet_would_give() {
        let run = manifest_run();
        for flag in [
            "--pid=host",
            "--cap-drop=all",
            "--read-only",
            "--read-only-tmpfs=false",
            "--security-opt=no-new-privileges",
            "--volume=/sys/kernel/btf:/sys/kernel/btf:ro",
            "--volume=/sys/kernel/tracing:/sys/kernel/tracing:ro",
            "--volume=/tmp/keys:/var/lib/tracer",
            "--env=NODE_NAME=n1",
        ] {
            assert!(
                run.flags.iter().any(|f| f == flag),
                "{flag} missing: {run:?}"
            );
        }
        assert_eq!(run.cap_add, ["BPF", "PERFMON", "SYS_PTRACE"]);
        assert!(
            run.args
                .contains(&"--nats=nats://127.0.0.1:4222".to_string()),
            "{run:?}"
        );
        assert!(run.args.contains(&"--node=n1".to_string()), "{run:?}");
        let fewer = run.without_capability("BPF");
        assert!(!fewer.flags.iter().any(|f| f == "--cap-add=CAP_BPF"));
        assert_eq!(fewer.cap_add, ["PERFMON", "SYS_PTRACE"]);
    }

    #[test]
    fn args_expand_defined_variables_only() {
        let env = vec![("A".to_string(), "x".to_string())];
        assert_eq!(expand("--a=$(A):$(B)$$(A)$", &env), "--a=x:$(B)$(A)$");
        assert_eq!(memory_bytes("512Mi").unwrap(), 512 << 20);
        assert_eq!(memory_bytes("1G").unwrap(), 1_000_000_000);
    }
}
