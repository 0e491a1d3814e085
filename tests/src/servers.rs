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
    let log = std::fs::File::create(log).expect("nats log");
    let child = Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(store)
        .args(extra)
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
