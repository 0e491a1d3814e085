//! Servers the tests start on loopback ports (nats-server from Debian's package), and the
//! guard that never lets a child outlive its test.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed (and reaped) when dropped: servers and agents never outlive a test.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Guard {
    /// SIGTERM, then waits up to 10 s for the exit.
    pub fn terminate(&mut self) {
        // SAFETY: signals a child this test started and has not reaped yet.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Two different free loopback ports: NATS's and the metrics endpoint's.
pub fn two_ports() -> (u16, u16) {
    let first = free_port();
    let second = std::iter::repeat_with(free_port)
        .find(|p| *p != first)
        .expect("a second free port");
    (first, second)
}

pub fn wait_for(what: &str, secs: u64, ok: impl FnMut() -> bool) {
    wait_or(what, secs, ok, String::new);
}

/// Like [`wait_for`], with `context()` (a log, say) in the failure message.
pub fn wait_or(what: &str, secs: u64, mut ok: impl FnMut() -> bool, context: impl Fn() -> String) {
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out after {secs} s waiting for {what}\n{}", context());
}

pub fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// `nats-server -js` on 127.0.0.1:`port`, storing in `store`.
pub fn start_nats(port: u16, store: &Path, log: &Path) -> Guard {
    start_nats_with(port, store, log, &[])
}

/// [`start_nats`] with more server options.
pub fn start_nats_with(port: u16, store: &Path, log: &Path, extra: &[&std::ffi::OsStr]) -> Guard {
    let mut cmd = Command::new("nats-server");
    cmd.args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(store)
        .args(extra);
    spawn_nats(cmd, port, log)
}

/// `nats-server` without JetStream on 127.0.0.1:`port`: nothing answers a `$JS.API` request
/// there unless a test subscribes to it (a stream's leader that never answers, say).
pub fn start_core_nats(port: u16, log: &Path) -> Guard {
    let mut cmd = Command::new("nats-server");
    cmd.args(["-a", "127.0.0.1", "-p", &port.to_string()]);
    spawn_nats(cmd, port, log)
}

fn spawn_nats(mut cmd: Command, port: u16, log: &Path) -> Guard {
    let log = std::fs::File::create(log).expect("nats log");
    let child = cmd
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start nats-server");
    let g = Guard(child);
    wait_for("nats-server to listen", 10, || listening(port));
    g
}

/// `GET PATH` over HTTP/1.1 to 127.0.0.1:`port`, answered within `within`: (status line,
/// body).
pub fn get(port: u16, path: &str, within: Duration) -> Option<(String, String)> {
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), within).ok()?;
    s.set_read_timeout(Some(within)).ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_string(), body.to_string()))
}

/// The value of the sample `name` (with its labels, as exposed), 0 when absent.
pub fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// One server of a [`Cluster`]: its client, route and monitoring ports on loopback.
#[derive(Clone, Copy, Debug)]
pub struct ClusterPorts {
    /// Where clients connect.
    pub client: u16,
    /// Where the other servers route to.
    pub route: u16,
    /// Its HTTP monitoring (`/varz`, `/jsz`).
    pub monitor: u16,
}

/// A JetStream cluster of nats-servers on loopback: each with its own store, routes to every
/// other, one cluster name. A server that was killed is `None`.
pub struct Cluster {
    pub servers: Vec<Option<Guard>>,
    pub ports: Vec<ClusterPorts>,
    logs: Vec<std::path::PathBuf>,
}

/// `n` distinct free loopback ports.
pub fn free_ports(n: usize) -> Vec<u16> {
    let mut ports: Vec<u16> = Vec::with_capacity(n);
    while ports.len() < n {
        let p = free_port();
        if !ports.contains(&p) {
            ports.push(p);
        }
    }
    ports
}

impl Cluster {
    /// `n` servers (`s0`, `s1`...) in cluster `tracer-test`, stores and logs under `dir`;
    /// returns once every server names the same meta leader of a cluster of `n`.
    pub fn start(n: usize, dir: &Path) -> Cluster {
        let ports: Vec<ClusterPorts> = free_ports(3 * n)
            .chunks(3)
            .map(|c| ClusterPorts {
                client: c[0],
                route: c[1],
                monitor: c[2],
            })
            .collect();
        let routes: Vec<String> = ports
            .iter()
            .map(|p| format!("nats://127.0.0.1:{}", p.route))
            .collect();
        let logs: Vec<_> = (0..n).map(|i| dir.join(format!("nats-s{i}.log"))).collect();
        let servers = (0..n)
            .map(|i| Some(start_member(i, &ports[i], &routes.join(","), dir, &logs[i])))
            .collect();
        let c = Cluster {
            servers,
            ports,
            logs,
        };
        for p in &c.ports {
            wait_for("a cluster member to listen", 10, || listening(p.client));
        }
        c.wait_for_meta_leader(n);
        c
    }

    /// The client URLs of servers `which`, as a list: `nats://127.0.0.1:P,nats://...`.
    pub fn urls(&self, which: &[usize]) -> String {
        let urls: Vec<String> = which
            .iter()
            .map(|&i| format!("nats://127.0.0.1:{}", self.ports[i].client))
            .collect();
        urls.join(",")
    }

    /// A reader's URL of `node`'s stream through servers `which`:
    /// `nats://127.0.0.1:P,127.0.0.1:Q/NODE`.
    pub fn reader_url(&self, which: &[usize], node: &str) -> String {
        let hosts: Vec<String> = which
            .iter()
            .map(|&i| format!("127.0.0.1:{}", self.ports[i].client))
            .collect();
        format!("nats://{}/{node}", hosts.join(","))
    }

    /// Server `i`'s `GET /jsz?QUERY`, as JSON.
    pub fn jsz(&self, i: usize, query: &str) -> Option<serde_json::Value> {
        let (status, body) = get(
            self.ports[i].monitor,
            &format!("/jsz?{query}"),
            Duration::from_secs(5),
        )?;
        if !status.contains(" 200 ") {
            return None;
        }
        // Go sends a body of more than 2 KiB chunked.
        serde_json::from_str(&body)
            .ok()
            .or_else(|| serde_json::from_slice(&dechunked(body.as_bytes())?).ok())
    }

    /// The meta leader server `i` knows of, when it knows a cluster of `size`.
    pub fn meta_leader(&self, i: usize, size: usize) -> Option<String> {
        let jsz = self.jsz(i, "")?;
        let meta = &jsz["meta_cluster"];
        let leader = meta["leader"].as_str().filter(|l| !l.is_empty())?;
        (meta["cluster_size"].as_u64() == Some(size as u64)).then(|| leader.to_string())
    }

    /// Until every running server names the same meta leader of a cluster of `size`.
    pub fn wait_for_meta_leader(&self, size: usize) {
        wait_or(
            "the cluster's meta leader",
            60,
            || {
                let running = self.running();
                let leaders: Vec<_> = running.iter().map(|&i| self.meta_leader(i, size)).collect();
                leaders.iter().all(|l| l.is_some() && *l == leaders[0])
            },
            || self.logs_text(),
        );
    }

    /// The servers not killed.
    pub fn running(&self) -> Vec<usize> {
        (0..self.servers.len())
            .filter(|&i| self.servers[i].is_some())
            .collect()
    }

    /// Stream `stream`'s details as server `i` reports them (`/jsz`: its config, its cluster's
    /// leader and replicas, its state), when that server holds it.
    pub fn stream(&self, i: usize, stream: &str) -> Option<serde_json::Value> {
        let jsz = self.jsz(i, "accounts=true&streams=true&config=true")?;
        jsz["account_details"]
            .as_array()?
            .iter()
            .flat_map(|a| a["stream_detail"].as_array().into_iter().flatten())
            .find(|s| s["name"] == stream)
            .cloned()
    }

    /// The index of the server named `name` (`sN`).
    pub fn index_of(&self, name: &str) -> Option<usize> {
        name.strip_prefix('s')?
            .parse()
            .ok()
            .filter(|&i| i < self.servers.len())
    }

    /// SIGKILLs server `i` and reaps it: no goodbye to its routes or clients.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut g) = self.servers[i].take() {
            g.0.kill().expect("SIGKILL nats-server");
            g.0.wait().expect("reap nats-server");
        }
    }

    /// Every server's log, for a failure message.
    pub fn logs_text(&self) -> String {
        self.logs
            .iter()
            .map(|l| {
                let text = std::fs::read_to_string(l).unwrap_or_default();
                format!("== {}\n{text}", l.display())
            })
            .collect()
    }
}

/// An HTTP/1.1 chunked body's bytes (`SIZE\r\nBYTES\r\n`... up to a chunk of size 0).
fn dechunked(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = body.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&body[..eol]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        let chunk = body.get(eol + 2..eol + 2 + size)?;
        out.extend_from_slice(chunk);
        body = body.get(eol + 4 + size..)?;
    }
}

/// Server `i` of a cluster: `-js`, its store, name `sI`, routes to all (its own is ignored).
fn start_member(i: usize, p: &ClusterPorts, routes: &str, dir: &Path, log: &Path) -> Guard {
    let log = std::fs::File::create(log).expect("nats log");
    let child = Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-n", &format!("s{i}")])
        .args(["-p", &p.client.to_string(), "-m", &p.monitor.to_string()])
        .arg("-sd")
        .arg(dir.join(format!("store-s{i}")))
        .args(["--cluster_name", "tracer-test", "--cluster"])
        .arg(format!("nats://127.0.0.1:{}", p.route))
        .args(["--routes", routes])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start nats-server");
    Guard(child)
}
