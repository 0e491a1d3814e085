//! The kubelet's side of the pod lab: a CRI v1 client (the `k8s-cri` bindings over tonic) on
//! containerd's gRPC socket, with the requests kubelet sends to create and remove a pod.

use anyhow::{Context, Result};
use hyper_util::rt::TokioIo;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{
    ContainerConfig, ContainerMetadata, ContainerStatusRequest, CreateContainerRequest,
    ExecSyncRequest, ImageSpec, LinuxContainerConfig, LinuxContainerSecurityContext,
    LinuxPodSandboxConfig, LinuxSandboxSecurityContext, NamespaceMode, NamespaceOption,
    PodSandboxConfig, PodSandboxMetadata, PodSandboxStatusRequest, RemovePodSandboxRequest,
    RunPodSandboxRequest, StartContainerRequest, StopPodSandboxRequest, VersionRequest,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint, Uri};

/// A pod as kubelet describes it to the runtime.
#[derive(Clone, Debug)]
pub struct PodSpec {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub hostname: String,
    /// Containers share one pid namespace, whose init is the sandbox (pause).
    pub share_pid: bool,
    /// cgroupfs parent of the pod's containers.
    pub cgroup_parent: String,
}

/// One container of a pod.
#[derive(Clone, Debug)]
pub struct ContainerSpec {
    pub name: String,
    pub image: String,
    pub command: Vec<String>,
}

/// A connection to one containerd's CRI service.
pub struct Cri {
    rt: tokio::runtime::Runtime,
    client: RuntimeServiceClient<Channel>,
}

impl Cri {
    /// Connects to the gRPC socket at `socket` (a unix path).
    pub fn connect(socket: &Path) -> Result<Cri> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let path: PathBuf = socket.to_path_buf();
        let channel = rt.block_on(async move {
            // The URI is required by tonic but unused: the connector dials the socket.
            Endpoint::try_from("http://[::]:50051")?
                .connect_timeout(Duration::from_secs(5))
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        let s = tokio::net::UnixStream::connect(path).await?;
                        Ok::<_, std::io::Error>(TokioIo::new(s))
                    }
                }))
                .await
        })?;
        Ok(Cri {
            rt,
            client: RuntimeServiceClient::new(channel),
        })
    }

    /// `Version`: the runtime's name and version (also a readiness probe).
    pub fn version(&mut self) -> Result<String> {
        let r = self
            .rt
            .block_on(self.client.version(VersionRequest::default()))?
            .into_inner();
        Ok(format!(
            "{} {} (CRI {})",
            r.runtime_name, r.runtime_version, r.runtime_api_version
        ))
    }

    /// `RunPodSandbox`: pause container plus network namespace wired by CNI. The sandbox id.
    pub fn run_pod(&mut self, pod: &PodSpec) -> Result<String> {
        let req = RunPodSandboxRequest {
            config: Some(sandbox_config(pod)),
            runtime_handler: String::new(),
        };
        let r = self.rt.block_on(self.client.run_pod_sandbox(req))?;
        Ok(r.into_inner().pod_sandbox_id)
    }

    /// `PodSandboxStatus` (verbose): the pod's IP and the runtime's info (JSON).
    pub fn pod_status(&mut self, id: &str) -> Result<(String, serde_json::Value)> {
        let req = PodSandboxStatusRequest {
            pod_sandbox_id: id.to_string(),
            verbose: true,
        };
        let r = self
            .rt
            .block_on(self.client.pod_sandbox_status(req))?
            .into_inner();
        let ip = r
            .status
            .and_then(|s| s.network)
            .map(|n| n.ip)
            .unwrap_or_default();
        Ok((ip, info_json(&r.info)))
    }

    /// `CreateContainer` + `StartContainer` in the pod. The container id.
    pub fn start_container(
        &mut self,
        pod: &PodSpec,
        sandbox: &str,
        c: &ContainerSpec,
    ) -> Result<String> {
        let req = CreateContainerRequest {
            pod_sandbox_id: sandbox.to_string(),
            config: Some(container_config(pod, c)),
            sandbox_config: Some(sandbox_config(pod)),
        };
        let id = self
            .rt
            .block_on(self.client.create_container(req))
            .with_context(|| format!("CreateContainer {}", c.name))?
            .into_inner()
            .container_id;
        let req = StartContainerRequest {
            container_id: id.clone(),
        };
        self.rt
            .block_on(self.client.start_container(req))
            .with_context(|| format!("StartContainer {}", c.name))?;
        Ok(id)
    }

    /// The host pid of a running container (or sandbox: `ContainerStatus` knows both ids
    /// only for containers; a sandbox's pid is in `pod_status`'s info).
    pub fn container_pid(&mut self, id: &str) -> Result<u32> {
        let req = ContainerStatusRequest {
            container_id: id.to_string(),
            verbose: true,
        };
        let r = self
            .rt
            .block_on(self.client.container_status(req))?
            .into_inner();
        info_pid(&info_json(&r.info)).with_context(|| format!("no pid for container {id}"))
    }

    /// `ExecSync`: runs `cmd` in the container; its exit code and stdout.
    pub fn exec_sync(&mut self, id: &str, cmd: &[&str]) -> Result<(i32, String)> {
        let req = ExecSyncRequest {
            container_id: id.to_string(),
            cmd: cmd.iter().map(|s| s.to_string()).collect(),
            timeout: 10,
        };
        let r = self.rt.block_on(self.client.exec_sync(req))?.into_inner();
        Ok((r.exit_code, String::from_utf8_lossy(&r.stdout).into_owned()))
    }

    /// `StopPodSandbox` (stops every container, tears the network down) + `RemovePodSandbox`.
    pub fn remove_pod(&mut self, id: &str) -> Result<()> {
        let stop = StopPodSandboxRequest {
            pod_sandbox_id: id.to_string(),
        };
        self.rt.block_on(self.client.stop_pod_sandbox(stop))?;
        let rm = RemovePodSandboxRequest {
            pod_sandbox_id: id.to_string(),
        };
        self.rt.block_on(self.client.remove_pod_sandbox(rm))?;
        Ok(())
    }
}

/// containerd puts its verbose status under the key `info`, as JSON text.
fn info_json(info: &HashMap<String, String>) -> serde_json::Value {
    info.get("info")
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// The `pid` of a verbose status.
pub fn info_pid(info: &serde_json::Value) -> Option<u32> {
    info["pid"].as_u64().and_then(|p| u32::try_from(p).ok())
}

/// The network namespace path of a verbose sandbox status (from its OCI spec).
pub fn info_netns(info: &serde_json::Value) -> Option<String> {
    info["runtimeSpec"]["linux"]["namespaces"]
        .as_array()?
        .iter()
        .find(|n| n["type"] == "network")
        .and_then(|n| n["path"].as_str())
        .map(str::to_string)
}

fn pid_mode(pod: &PodSpec) -> i32 {
    if pod.share_pid {
        NamespaceMode::Pod as i32
    } else {
        NamespaceMode::Container as i32
    }
}

/// kubelet's namespaces: network and IPC per pod, pid per container unless shared.
fn namespaces(pod: &PodSpec) -> NamespaceOption {
    NamespaceOption {
        network: NamespaceMode::Pod as i32,
        pid: pid_mode(pod),
        ipc: NamespaceMode::Pod as i32,
        ..Default::default()
    }
}

fn sandbox_config(pod: &PodSpec) -> PodSandboxConfig {
    PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: pod.name.clone(),
            uid: pod.uid.clone(),
            namespace: pod.namespace.clone(),
            attempt: 0,
        }),
        hostname: pod.hostname.clone(),
        labels: HashMap::from([
            ("app".to_string(), pod.name.clone()),
            ("tracer-lab".to_string(), "pod".to_string()),
        ]),
        linux: Some(LinuxPodSandboxConfig {
            cgroup_parent: pod.cgroup_parent.clone(),
            security_context: Some(LinuxSandboxSecurityContext {
                namespace_options: Some(namespaces(pod)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn container_config(pod: &PodSpec, c: &ContainerSpec) -> ContainerConfig {
    ContainerConfig {
        metadata: Some(ContainerMetadata {
            name: c.name.clone(),
            attempt: 0,
        }),
        image: Some(ImageSpec {
            image: c.image.clone(),
            ..Default::default()
        }),
        command: c.command.clone(),
        labels: HashMap::from([("tracer-lab".to_string(), "pod".to_string())]),
        linux: Some(LinuxContainerConfig {
            security_context: Some(LinuxContainerSecurityContext {
                namespace_options: Some(namespaces(pod)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}
