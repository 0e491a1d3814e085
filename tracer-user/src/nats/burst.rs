//! Repeated NATS errors said once a burst: a server (or a relay's peer) can answer every
//! request with `-ERR` lines, or a connection can flap, thousands of times a second; each
//! line escaped is still a line. The first of a burst is said as it comes; the others are
//! counted and said as one line with the count and the latest, at most once every [`QUIET`]
//! while the burst lasts and when the next burst starts. Each kind of report has its bursts
//! ([`offer`]): a flood of refusals does not hide that the connection was lost.

use std::time::{Duration, Instant};

/// A burst ends after this long without a line; while one lasts, its count is said at most
/// this often.
pub const QUIET: Duration = Duration::from_secs(10);

/// One stream of lines (one connection's reports).
#[derive(Debug, Default)]
pub struct Burst {
    last: Option<Instant>,
    said_at: Option<Instant>,
    held: u64,
    latest: String,
}

impl Burst {
    /// The lines to say now for `text`, which came at `now`.
    pub fn offer(&mut self, now: Instant, text: String) -> Vec<String> {
        let since = |t: Option<Instant>| t.map(|t| now.saturating_duration_since(t));
        let in_burst = since(self.last).is_some_and(|d| d < QUIET);
        self.last = Some(now);
        let mut out = Vec::new();
        if !in_burst {
            out.extend(self.count_line());
            self.said_at = Some(now);
            out.push(text);
            return out;
        }
        self.held += 1;
        self.latest = text;
        if since(self.said_at).is_some_and(|d| d >= QUIET) {
            out.extend(self.count_line());
            self.said_at = Some(now);
        }
        out
    }

    /// The held lines' count and the latest of them, if any were held.
    fn count_line(&mut self) -> Option<String> {
        let held = std::mem::take(&mut self.held);
        let latest = std::mem::take(&mut self.latest);
        (held > 0).then(|| format!("{held} more like it, the last: {latest}"))
    }
}

/// The bursts of one connection's reports, one per kind (a refusal, a lost connection, its
/// return, a failed connect): a kind's repeats are counted, another kind is said as it
/// comes (the kinds are the tool's words; the server's text is only in the lines).
pub type Shared = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<&'static str, Burst>>>;

/// The lines to say now for `text`, of kind `kind`, through `b`.
pub fn offer(b: &Shared, kind: &'static str, text: String) -> Vec<String> {
    let mut b = b.lock().unwrap_or_else(|e| e.into_inner());
    b.entry(kind).or_default().offer(Instant::now(), text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 6,000 errors in 10 s are two lines; after a quiet time the next is said again, with
    /// the count of the burst before.
    #[test]
    fn a_flood_is_a_line_and_a_count() {
        let t0 = Instant::now();
        let mut b = Burst::default();
        let mut said = Vec::new();
        for i in 0..6000u64 {
            let at = t0 + Duration::from_micros(i * 1700);
            said.extend(b.offer(at, format!("-ERR {i}")));
        }
        assert_eq!(said, ["-ERR 0", "5883 more like it, the last: -ERR 5883"]);
        let later = t0 + Duration::from_secs(60);
        let next = b.offer(later, "connected again".into());
        assert_eq!(
            next,
            ["116 more like it, the last: -ERR 5999", "connected again"]
        );
        // Lines far apart are each said.
        let far = later + QUIET;
        assert_eq!(b.offer(far, "x".into()), ["x"]);
    }
}
