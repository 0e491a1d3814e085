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

/// A relay on loopback to one server: connect the client to `url` (the server's own URL
/// with the relay's address); `failed` tells the first
/// violation (the connection that carried it is cut).
pub struct Relay {
    /// `nats://127.0.0.1:PORT`.
    pub url: String,
    /// The server's first violation.
    pub failed: watch::Receiver<Option<Violation>>,
}

/// A plain-text server the client reaches through a relay: where the relay connects, and
/// the URL the client is given instead (the same URL, credentials and options kept, with the
/// relay's address).
#[derive(Debug)]
pub struct Plain {
    /// `host:port` of the server (4222 when the URL names none).
    pub upstream: String,
    url: async_nats::ServerAddr,
}

impl Plain {
    /// The server's URL with the relay's loopback address in place of its own.
    pub fn via(&self, relay: SocketAddr) -> String {
        let mut url = self.url.clone().into_inner();
        // Both only fail for URLs that cannot have a host (a `nats://` URL always can).
        let _ = url.set_ip_host(relay.ip());
        let _ = url.set_port(Some(relay.port()));
        url.to_string()
    }
}

/// How the client reaches `server`: through a relay for every `nats://` URL, however it is
/// written (`user:pass@` or `token@` before the host, no port, a query string: the client
/// library reads them all, so each is a way to the same unguarded reads); `None` for a
/// scheme the bytes of which cannot be checked in transit (`tls://`, `ws://`, `wss://`). An
/// address the client library cannot parse (several servers in one string among them) is an
/// error here, as the client would refuse it too.
pub fn plain_server(server: &str) -> std::io::Result<Option<Plain>> {
    let url: async_nats::ServerAddr = server.parse()?;
    if url.scheme() != "nats" {
        return Ok(None);
    }
    let host = url.host();
    if host.is_empty() || server.contains(',') {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "one server, nats://[USER:PASS@]HOST[:PORT]",
        ));
    }
    let upstream = if host.contains(':') {
        format!("[{host}]:{}", url.port())
    } else {
        format!("{host}:{}", url.port())
    };
    Ok(Some(Plain { upstream, url }))
}

/// `server` as messages show it: without the credentials a URL may hold (`USER:PASS@`,
/// `TOKEN@`) nor its query string, which end up in logs otherwise. A list of servers
/// (`A,B,...`) is shown item by item.
pub fn shown(server: &str) -> String {
    let items: Vec<String> = server.split(',').map(shown_one).collect();
    items.join(",")
}

/// Whether `item` of a list reads as `[SCHEME://]HOST[:PORT][?...]` with no credentials: an
/// item that does not may be the start of a password with a comma in it.
fn plain_item(item: &str) -> bool {
    let item = item.split_once('?').map_or(item, |(s, _)| s);
    let host = item.split_once("://").map_or(item, |(_, h)| h);
    match host.rsplit_once(':') {
        _ if host.contains('@') => false,
        Some((h, port)) => !h.is_empty() && port.bytes().all(|b| b.is_ascii_digit()),
        None => !host.is_empty(),
    }
}

fn shown_one(server: &str) -> String {
    if !server.contains('@') && !plain_item(server) {
        return "***".to_string();
    }
    let server = server.split_once('?').map_or(server, |(s, _)| s);
    let (scheme, rest) = match server.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), server),
    };
    match rest.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}***@{host}"),
        None => server.to_string(),
    }
}

/// Starts a relay to `server` on the current runtime.
pub async fn start(server: &Plain) -> std::io::Result<Relay> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let local = listener.local_addr()?;
    let url = server.via(local);
    let (tx, failed) = watch::channel(None);
    let upstream = server.upstream.clone();
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
    fn every_nats_url_form_is_relayed_with_its_credentials_and_options() {
        let relay: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        for (server, upstream, via) in [
            (
                "nats://10.0.0.1:4222",
                "10.0.0.1:4222",
                "nats://127.0.0.1:5000",
            ),
            (
                "nats.example:4222",
                "nats.example:4222",
                "nats://127.0.0.1:5000",
            ),
            ("nats://u:p@h:1", "h:1", "nats://u:p@127.0.0.1:5000"),
            ("nats://tok@h:1", "h:1", "nats://tok@127.0.0.1:5000"),
            ("nats://h:1?x=1", "h:1", "nats://127.0.0.1:5000?x=1"),
            ("nats://h", "h:4222", "nats://127.0.0.1:5000"),
            ("nats://[::1]:7", "[::1]:7", "nats://127.0.0.1:5000"),
        ] {
            let p = plain_server(server).unwrap().expect(server);
            assert_eq!(p.upstream, upstream, "{server}");
            assert_eq!(p.via(relay).trim_end_matches('/'), via, "{server}");
        }
        assert_eq!(shown("nats://u:p@w@h:1?token=t"), "nats://***@h:1");
        assert_eq!(shown("tok@h:1"), "***@h:1");
        assert_eq!(shown("nats://h:1"), "nats://h:1");
        assert_eq!(shown("nats://a:1,u:p@b:2,c"), "nats://a:1,***@b:2,c");
        // A password with a comma: its first part is not shown either.
        assert_eq!(shown("nats://u:p,q@h:1"), "***,***@h:1");
        for s in ["tls://h:4222", "ws://h:1", "wss://h:1"] {
            assert!(plain_server(s).unwrap().is_none(), "{s}");
        }
        for s in [
            "nats://a:1,nats://b:2",
            "nats://a:1,b:2",
            "http://h:1",
            "nats://",
        ] {
            assert!(plain_server(s).is_err(), "{s}");
        }
    }
}
