//! [`PodAnnotations`]: a pod's annotations as containerd's CRI plugin writes them into a
//! bundle's `config.json`, for the events, bundles and configs tests build.

use std::collections::BTreeMap;

use crate::event::EventKind;

/// The `io.kubernetes.cri.*` annotations of one container of a pod: the pod's name and
/// namespace always, the rest when set.
#[derive(Clone, Copy, Debug)]
pub struct PodAnnotations<'a> {
    namespace: &'a str,
    pod: &'a str,
    uid: Option<&'a str>,
    sandbox_id: Option<&'a str>,
    container_type: Option<&'a str>,
    container_name: Option<&'a str>,
}

impl<'a> PodAnnotations<'a> {
    /// Pod `pod` of namespace `namespace`.
    pub fn new(namespace: &'a str, pod: &'a str) -> Self {
        PodAnnotations {
            namespace,
            pod,
            uid: None,
            sandbox_id: None,
            container_type: None,
            container_name: None,
        }
    }

    /// With the pod's uid (`sandbox-uid`).
    pub fn uid(self, uid: &'a str) -> Self {
        Self {
            uid: Some(uid),
            ..self
        }
    }

    /// With the pod's sandbox container id (`sandbox-id`).
    pub fn sandbox_id(self, id: &'a str) -> Self {
        Self {
            sandbox_id: Some(id),
            ..self
        }
    }

    /// The pod's sandbox (`container-type: sandbox`).
    pub fn sandbox(self) -> Self {
        Self {
            container_type: Some("sandbox"),
            ..self
        }
    }

    /// The pod's container `name` (`container-type: container`, `container-name`).
    pub fn container(self, name: &'a str) -> Self {
        Self {
            container_type: Some("container"),
            ..self.named(name)
        }
    }

    /// Only a `container-name`, no type (as a bundle that says less does).
    pub fn named(self, name: &'a str) -> Self {
        Self {
            container_name: Some(name),
            ..self
        }
    }

    /// The annotations, by key.
    pub fn map(&self) -> BTreeMap<String, String> {
        let set = [
            ("container-type", self.container_type),
            ("container-name", self.container_name),
            ("sandbox-id", self.sandbox_id),
            ("sandbox-name", Some(self.pod)),
            ("sandbox-namespace", Some(self.namespace)),
            ("sandbox-uid", self.uid),
        ];
        set.into_iter()
            .filter_map(|(k, v)| Some((format!("io.kubernetes.cri.{k}"), v?.to_string())))
            .collect()
    }

    /// The annotations as a bundle's `config.json` holds them (its `annotations` object).
    pub fn json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.map()
                .into_iter()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect(),
        )
    }

    /// What runtime `pid` read of container `container_id`'s bundle with these annotations.
    pub fn meta(&self, pid: u32, container_id: &str) -> EventKind {
        EventKind::ContainerMeta {
            pid,
            container_id: container_id.into(),
            annotations: self.map(),
        }
    }
}
