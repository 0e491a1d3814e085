//! A bound on what a NATS server may send. The client library keeps reading a protocol line
//! until its end, and a message until its announced size, so a hostile or broken server could
//! grow a reader without limit. Plain-text connections therefore go through a relay on
//! loopback that checks the server's side of the protocol as it passes (control lines, message
//! sizes) and cuts the connection at the first violation, saying why. Over TLS the server is
//! the one the CA vouches for and the bytes cannot be checked in transit: the client connects
//! directly.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Longest control line taken from a server (INFO, MSG, -ERR...). nats-server's own limit
/// for what it accepts is 4 KiB by default; an INFO listing a big cluster is longer.
pub const MAX_LINE: usize = 64 << 10;
/// Largest message a server may announce (nats-server allows at most 64 MiB).
pub const MAX_PAYLOAD: u64 = 64 << 20;
/// Connections relayed at once (the client has one, and one more while it reconnects).
const MAX_RELAYED: usize = 4;

/// What broke the protocol.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// A control line longer than [`MAX_LINE`].
    #[error("the server sent a protocol line longer than {MAX_LINE} bytes")]
    LongLine,
    /// A message announced larger than [`MAX_PAYLOAD`].
    #[error("the server announced a {0}-byte message (at most {MAX_PAYLOAD})")]
    BigMessage(u64),
    /// A message line whose size is no number.
    #[error("the server sent a message line without a size")]
    NoSize,
}

/// The server's side of the protocol, checked as it streams by.
#[derive(Debug, Default)]
pub struct Checker {
    /// The control line read so far (at most [`MAX_LINE`]).
    line: Vec<u8>,
    /// Bytes of a message (and its CRLF) still to pass.
    payload_left: u64,
}

impl Checker {
    /// Takes the next bytes from the server.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<(), Violation> {
        while !data.is_empty() {
            if self.payload_left > 0 {
                let n = (self.payload_left.min(data.len() as u64)) as usize;
                self.payload_left -= n as u64;
                data = &data[n..];
                continue;
            }
            let end = data.iter().position(|&b| b == b'\n');
            let take = end.map_or(data.len(), |i| i + 1);
            if self.line.len() + take > MAX_LINE {
                return Err(Violation::LongLine);
            }
            self.line.extend_from_slice(&data[..take]);
            data = &data[take..];
            if end.is_some() {
                self.payload_left = payload_after(&self.line)?;
                self.line.clear();
            }
        }
        Ok(())
    }
}

/// The bytes that follow a control line: a message's (with its CRLF), else none.
fn payload_after(line: &[u8]) -> Result<u64, Violation> {
    let line = line.trim_ascii_end();
    let is_msg = line.len() > 4 && line[..4].eq_ignore_ascii_case(b"MSG ");
    let is_hmsg = line.len() > 5 && line[..5].eq_ignore_ascii_case(b"HMSG ");
    if !(is_msg || is_hmsg) {
        return Ok(0);
    }
    // The total size is the last field of both (HMSG: header size, then total size).
    let size = line
        .rsplit(|b| b.is_ascii_whitespace())
        .next()
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or(Violation::NoSize)?;
    if size > MAX_PAYLOAD {
        return Err(Violation::BigMessage(size));
    }
    Ok(size + 2)
}

/// A relay on loopback to one server: connect the client to `url`; `failed` tells the first
/// violation (the connection that carried it is cut).
pub struct Relay {
    /// `nats://127.0.0.1:PORT`.
    pub url: String,
    /// The server's first violation.
    pub failed: watch::Receiver<Option<Violation>>,
}

/// `host:port` of a plain `nats://host:port` (or `host:port`) server address; `None` for
/// anything else (TLS, websockets, credentials in the URL, several servers), which is
/// connected to directly.
pub fn plain_address(server: &str) -> Option<&str> {
    let rest = server.strip_prefix("nats://").unwrap_or(server);
    let plain = !rest.is_empty()
        && !rest.contains("://")
        && !rest.contains(['@', ',', '/', '?'])
        && rest
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
    plain.then_some(rest)
}

/// Starts a relay to `upstream` (`host:port`) on the current runtime.
pub async fn start(upstream: &str) -> std::io::Result<Relay> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let local = listener.local_addr()?;
    let url = format!("nats://{local}");
    let (tx, failed) = watch::channel(None);
    let upstream = upstream.to_string();
    tokio::spawn(async move {
        let open = std::sync::Arc::new(());
        loop {
            // Ends when the client's side let go of the reports.
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = tx.closed() => return,
            };
            let Ok((client, peer)) = accepted else {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            };
            // Each relayed connection holds a clone: the count of clones is the count open.
            if !is_ours(peer, local) || std::sync::Arc::strong_count(&open) > MAX_RELAYED {
                continue;
            }
            let (tx, upstream, held) = (tx.clone(), upstream.clone(), open.clone());
            tokio::spawn(async move {
                let mut client = client;
                if let Ok(mut server) = TcpStream::connect(&upstream).await {
                    // Told before the sockets close, so the client's failure is explained.
                    if let Err(v) = relay(&mut client, &mut server).await {
                        let _ = tx.send(Some(v));
                    }
                }
                drop(held);
            });
        }
    });
    Ok(Relay { url, failed })
}

/// Whether the connection from `peer` to the relay at `local` is this process's own (its
/// socket is one of our descriptors). Every local user can reach a port on loopback; their
/// connections are closed at once, so none can take the relay's slots or its memory.
fn is_ours(peer: SocketAddr, local: SocketAddr) -> bool {
    // /proc/net/tcp prints an IPv4 address as the u32 of its bytes in memory order.
    let hex = |a: SocketAddr| match a {
        SocketAddr::V4(v) => format!(
            "{:08X}:{:04X}",
            u32::from_le_bytes(v.ip().octets()),
            v.port()
        ),
        SocketAddr::V6(_) => String::new(),
    };
    let (from, to) = (hex(peer), hex(local));
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    let inode = table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        match (f.get(1), f.get(2), f.get(9)) {
            (Some(a), Some(b), Some(inode)) if *a == from && *b == to => Some(inode.to_string()),
            _ => None,
        }
    });
    let Some(inode) = inode else {
        return false;
    };
    let socket = format!("socket:[{inode}]");
    std::fs::read_dir("/proc/self/fd").is_ok_and(|fds| {
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == socket.as_str()))
    })
}

/// Passes bytes both ways until either side closes; the server's are checked first.
async fn relay(client: &mut TcpStream, server: &mut TcpStream) -> Result<(), Violation> {
    let (mut cr, mut cw) = client.split();
    let (mut sr, mut sw) = server.split();
    let up = async {
        let _ = tokio::io::copy(&mut cr, &mut sw).await;
        let _ = sw.shutdown().await;
    };
    let down = async {
        let mut check = Checker::default();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match sr.read(&mut buf).await {
                Ok(0) | Err(_) => return Ok(()),
                Ok(n) => n,
            };
            check.feed(&buf[..n])?;
            if cw.write_all(&buf[..n]).await.is_err() {
                return Ok(());
            }
        }
    };
    tokio::select! {
        _ = up => Ok(()),
        r = down => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_messages_are_bounded_wherever_the_reads_cut_them() {
        let good = b"INFO {\"max_payload\":1048576}\r\nPING\r\nMSG a.b 1 5\r\nhe\r\no\r\nHMSG a 2 _INBOX.x 12 14\r\nNATS/1.0\r\n\r\nhi\r\n+OK\r\n";
        for cut in 1..good.len() {
            let mut c = Checker::default();
            c.feed(&good[..cut]).unwrap();
            c.feed(&good[cut..]).unwrap();
            assert_eq!(c.payload_left, 0, "cut at {cut}");
            assert!(c.line.is_empty());
        }
        // A payload holding what looks like a huge line is a payload.
        let mut c = Checker::default();
        let mut msg = b"MSG a 1 70000\r\n".to_vec();
        msg.extend(std::iter::repeat_n(b'x', 70_000));
        msg.extend(b"\r\nPONG\r\n");
        c.feed(&msg).unwrap();

        let mut c = Checker::default();
        let long = vec![b'A'; MAX_LINE];
        c.feed(b"INFO ").unwrap();
        assert_eq!(c.feed(&long), Err(Violation::LongLine));
        let mut c = Checker::default();
        assert_eq!(
            c.feed(b"MSG a 1 99999999999\r\n"),
            Err(Violation::BigMessage(99_999_999_999))
        );
        assert_eq!(
            Checker::default().feed(b"HMSG a 1 x\r\n"),
            Err(Violation::NoSize)
        );
    }

    #[test]
    fn our_own_connection_is_ours_and_a_strangers_is_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let ours = std::net::TcpStream::connect(local).unwrap();
        let (_accepted, peer) = listener.accept().unwrap();
        assert_eq!(peer, ours.local_addr().unwrap());
        assert!(is_ours(peer, local));
        // Another process's connection: a socket handed to a child as its stdin, ours closed.
        let theirs = std::net::TcpStream::connect(local).unwrap();
        let (_accepted2, peer2) = listener.accept().unwrap();
        let fd = std::os::fd::OwnedFd::from(theirs);
        let mut stranger = std::process::Command::new("sleep")
            .arg("30")
            .stdin(std::process::Stdio::from(fd))
            .spawn()
            .unwrap();
        assert!(!is_ours(peer2, local), "a child's socket is not ours");
        assert!(!is_ours("127.0.0.1:1".parse().unwrap(), local));
        let _ = stranger.kill();
        let _ = stranger.wait();
    }

    #[test]
    fn only_plain_single_servers_are_relayed() {
        assert_eq!(plain_address("nats://10.0.0.1:4222"), Some("10.0.0.1:4222"));
        assert_eq!(
            plain_address("nats.example:4222"),
            Some("nats.example:4222")
        );
        for s in [
            "tls://h:4222",
            "nats://u:p@h:4222",
            "nats://a:1,nats://b:2",
            "ws://h:1",
            "h",
        ] {
            assert_eq!(plain_address(s), None, "{s}");
        }
    }
}
