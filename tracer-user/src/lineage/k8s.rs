//! Kubernetes identity from an OCI bundle's annotations: which pod, which container.
//!
//! containerd's CRI plugin writes `io.kubernetes.cri.*` annotations into every bundle it asks
//! the runtime to create (pkg/cri/annotations); CRI-O writes `io.kubernetes.pod.*`,
//! `io.kubernetes.container.name` and `io.kubernetes.cri-o.*`. Everything here comes from a
//! file the traced host wrote: keys are matched exactly, values bounded.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

pub use crate::event::MAX_CONFIG_BYTES;
/// Longest annotation value kept (a pod name is at most 253 bytes).
pub const MAX_VALUE_BYTES: usize = 256;
/// Longest container id kept (runtimes use 64 hex digits).
pub const MAX_ID_BYTES: usize = 256;

/// The annotation keys that name pods and containers (containerd, then CRI-O).
pub const KNOWN_KEYS: &[&str] = &[
    "io.kubernetes.cri.container-type",
    "io.kubernetes.cri.container-name",
    "io.kubernetes.cri.sandbox-id",
    "io.kubernetes.cri.sandbox-name",
    "io.kubernetes.cri.sandbox-namespace",
    "io.kubernetes.cri.sandbox-uid",
    "io.kubernetes.cri-o.ContainerType",
    "io.kubernetes.cri-o.SandboxID",
    "io.kubernetes.container.name",
    "io.kubernetes.pod.name",
    "io.kubernetes.pod.namespace",
    "io.kubernetes.pod.uid",
];

/// Why a bundle's annotations could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BundleError {
    /// Larger than [`MAX_CONFIG_BYTES`].
    #[error("config.json is larger than {MAX_CONFIG_BYTES} bytes")]
    TooLarge,
    /// Not JSON, or not an object where the OCI spec has one.
    #[error("config.json is not an OCI runtime config ({0})")]
    NotOci(String),
}

/// The known annotations of an OCI `config.json` (`{"annotations": {...}}`), values cut to
/// [`MAX_VALUE_BYTES`]. No annotations at all is an empty map, not an error.
pub fn annotations_from_config(bytes: &[u8]) -> Result<BTreeMap<String, String>, BundleError> {
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(BundleError::TooLarge);
    }
    let v: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| BundleError::NotOci(e.to_string()))?;
    let obj = v
        .as_object()
        .ok_or_else(|| BundleError::NotOci("not a JSON object".into()))?;
    let Some(ann) = obj.get("annotations") else {
        return Ok(BTreeMap::new());
    };
    let ann = ann
        .as_object()
        .ok_or_else(|| BundleError::NotOci("`annotations` is not an object".into()))?;
    Ok(bounded_annotations(ann.iter().filter_map(|(k, v)| {
        Some((k.clone(), v.as_str()?.to_string()))
    })))
}

/// The annotations an event may carry, whatever it came from (a bundle read live, a trace
/// file, a NATS stream): the [`KNOWN_KEYS`] only, values cut to [`MAX_VALUE_BYTES`]. Every
/// reader applies it, so a forged recording holds no more than a live capture would.
pub fn bounded_annotations(
    raw: impl IntoIterator<Item = (String, String)>,
) -> BTreeMap<String, String> {
    raw.into_iter()
        .filter(|(k, _)| KNOWN_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k, bounded(&v, MAX_VALUE_BYTES)))
        .collect()
}

/// `v` cut to at most `max` bytes, at a character boundary.
pub fn bounded(v: &str, max: usize) -> String {
    let mut end = v.len().min(max);
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    v[..end].to_string()
}

/// A pod, as its annotations name it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct PodRef {
    /// Its Kubernetes namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

/// Who a container is in Kubernetes' terms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct K8sIdentity {
    /// The pod, when the annotations name it (namespace and name at least).
    pub pod: Option<Arc<PodRef>>,
    /// The container's name in the pod spec (none for the sandbox).
    pub container_name: Option<Arc<str>>,
    /// The pod's sandbox (`pause`) rather than an app container.
    pub sandbox: bool,
    /// The sandbox's container id (for an app container: the pod it joins).
    pub sandbox_id: Option<Arc<str>>,
    /// The runtime's own namespace (containerd's `k8s.io`), from a shim's `-namespace`.
    pub runtime_namespace: Option<Arc<str>>,
}

impl K8sIdentity {
    /// From the known annotations (containerd's first, CRI-O's when those are absent).
    pub fn from_annotations(a: &BTreeMap<String, String>) -> K8sIdentity {
        let get = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| a.get(*k).filter(|v| !v.is_empty()))
                .cloned()
        };
        let namespace = get(&[
            "io.kubernetes.cri.sandbox-namespace",
            "io.kubernetes.pod.namespace",
        ]);
        let name = get(&["io.kubernetes.cri.sandbox-name", "io.kubernetes.pod.name"]);
        let uid = get(&["io.kubernetes.cri.sandbox-uid", "io.kubernetes.pod.uid"]);
        let kind = get(&[
            "io.kubernetes.cri.container-type",
            "io.kubernetes.cri-o.ContainerType",
        ]);
        let pod = match (namespace, name) {
            (Some(namespace), Some(name)) => Some(Arc::new(PodRef {
                namespace,
                name,
                uid: uid.unwrap_or_default(),
            })),
            _ => None,
        };
        let sandbox = kind.as_deref() == Some("sandbox");
        K8sIdentity {
            pod,
            container_name: get(&[
                "io.kubernetes.cri.container-name",
                "io.kubernetes.container.name",
            ])
            .filter(|_| !sandbox)
            .map(Arc::from),
            sandbox,
            sandbox_id: get(&[
                "io.kubernetes.cri.sandbox-id",
                "io.kubernetes.cri-o.SandboxID",
            ])
            .map(Arc::from),
            runtime_namespace: None,
        }
    }

    /// What a containerd shim's argv tells without a bundle (an strace log has no bundle):
    /// the runtime namespace (`-namespace k8s.io`) and the sandbox it serves (`-id`, one shim
    /// per pod). `None` when it names neither.
    pub fn from_shim_argv(argv: &[String], id: Option<&str>) -> Option<K8sIdentity> {
        let ns = argv
            .iter()
            .position(|a| a == "-namespace" || a == "--namespace")
            .and_then(|i| argv.get(i + 1))
            .map(|v| Arc::from(bounded(v, MAX_VALUE_BYTES)));
        if ns.is_none() && id.is_none() {
            return None;
        }
        Some(K8sIdentity {
            runtime_namespace: ns,
            sandbox_id: id.map(|i| Arc::from(bounded(i, MAX_VALUE_BYTES))),
            ..K8sIdentity::default()
        })
    }

    /// Says nothing (no annotation named anything).
    pub fn is_empty(&self) -> bool {
        self.pod.is_none() && self.container_name.is_none() && !self.sandbox
    }

    /// `shop/web-7d9f` (the pod), when known.
    pub fn pod_text(&self) -> Option<String> {
        self.pod
            .as_ref()
            .map(|p| format!("{}/{}", p.namespace, p.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTAINERD: &str = r#"{"ociVersion":"1.0.2","process":{"args":["nginx"]},
        "annotations":{"io.kubernetes.cri.container-type":"container",
        "io.kubernetes.cri.container-name":"nginx","io.kubernetes.cri.sandbox-id":"abc",
        "io.kubernetes.cri.sandbox-name":"web-7d9f","io.kubernetes.cri.sandbox-namespace":"shop",
        "io.kubernetes.cri.sandbox-uid":"u-42","other":"kept out"}}"#;

    #[test]
    fn containerd_annotations_name_pod_and_container() {
        let a = annotations_from_config(CONTAINERD.as_bytes()).unwrap();
        assert!(!a.contains_key("other"));
        let id = K8sIdentity::from_annotations(&a);
        assert_eq!(
            id.pod.as_deref(),
            Some(&PodRef {
                namespace: "shop".into(),
                name: "web-7d9f".into(),
                uid: "u-42".into()
            })
        );
        assert_eq!(id.container_name.as_deref(), Some("nginx"));
        assert_eq!(id.sandbox_id.as_deref(), Some("abc"));
        assert!(!id.sandbox);
        assert_eq!(id.pod_text().as_deref(), Some("shop/web-7d9f"));
    }

    #[test]
    fn crio_annotations_and_a_sandbox() {
        let cfg = r#"{"annotations":{"io.kubernetes.pod.name":"db-0","io.kubernetes.pod.namespace":"data",
            "io.kubernetes.pod.uid":"u-1","io.kubernetes.cri-o.ContainerType":"sandbox",
            "io.kubernetes.container.name":"POD"}}"#;
        let id = K8sIdentity::from_annotations(&annotations_from_config(cfg.as_bytes()).unwrap());
        assert!(id.sandbox);
        assert_eq!(id.pod_text().as_deref(), Some("data/db-0"));
        // The sandbox has no container name of its own.
        assert_eq!(id.container_name, None);
    }

    #[test]
    fn a_shims_argv_names_the_runtime_namespace_and_the_sandbox() {
        let argv: Vec<String> =
            "containerd-shim-runc-v2 -namespace k8s.io -id abc -address /run/c.sock"
                .split(' ')
                .map(String::from)
                .collect();
        let id = K8sIdentity::from_shim_argv(&argv, Some("abc")).unwrap();
        assert_eq!(id.runtime_namespace.as_deref(), Some("k8s.io"));
        assert_eq!(id.sandbox_id.as_deref(), Some("abc"));
        assert_eq!(id.pod, None);
        assert!(K8sIdentity::from_shim_argv(&argv[..1], None).is_none());
    }

    #[test]
    fn missing_keys_bad_json_and_huge_files() {
        let none = annotations_from_config(br#"{"ociVersion":"1.0.2"}"#).unwrap();
        assert!(none.is_empty());
        assert!(K8sIdentity::from_annotations(&none).is_empty());
        // A pod needs its namespace and name; a lone uid names nothing.
        let partial = annotations_from_config(
            br#"{"annotations":{"io.kubernetes.cri.sandbox-uid":"u","io.kubernetes.cri.sandbox-name":"x"}}"#,
        )
        .unwrap();
        assert_eq!(K8sIdentity::from_annotations(&partial).pod, None);
        for bad in [&b"{"[..], b"[]", b"\xff\xfe", br#"{"annotations":[1]}"#] {
            assert!(
                matches!(annotations_from_config(bad), Err(BundleError::NotOci(_))),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let huge = vec![b' '; MAX_CONFIG_BYTES as usize + 1];
        assert_eq!(annotations_from_config(&huge), Err(BundleError::TooLarge));
        // Non-string values are ignored, long ones cut on a char boundary.
        let long = format!(
            r#"{{"annotations":{{"io.kubernetes.cri.sandbox-name":"{}","io.kubernetes.cri.sandbox-namespace":7}}}}"#,
            "é".repeat(300)
        );
        let a = annotations_from_config(long.as_bytes()).unwrap();
        assert_eq!(a.len(), 1);
        assert!(a["io.kubernetes.cri.sandbox-name"].len() <= MAX_VALUE_BYTES);
    }
}
