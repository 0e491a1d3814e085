//! The agent's Prometheus metrics (text exposition format 0.0.4, the `prometheus` crate) and
//! the small HTTP server that serves them at `/metrics`.
//!
//! Event and drop counters come from the capture; births, adoptions and runtime restarts from
//! a lineage [`Engine`] fed with the same events: adoptions from the engine's running totals
//! (which its retention never lowers), restarts as the engine's totals grow (a tally of the
//! last totals), births once per container from the stories updated per batch, so a counter
//! never goes down or counts twice when the engine is started afresh.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use prometheus::{Encoder, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder};

use crate::{Engine, Event};

/// Longest label value taken from a recording (a runtime or daemon name); longer is cut.
const MAX_LABEL: usize = 64;

fn label_value(value: &str) -> String {
    let v: String = value.chars().take(MAX_LABEL).collect();
    if v.is_empty() {
        "unknown".into()
    } else {
        v
    }
}

/// Increments counters by how much a total grew since the last look.
#[derive(Default)]
struct Tally {
    last: HashMap<String, u64>,
}

impl Tally {
    fn update(&mut self, now: HashMap<String, u64>, family: &IntCounterVec) {
        for (k, n) in &now {
            let before = self.last.get(k).copied().unwrap_or(0);
            if *n > before {
                family
                    .with_label_values(&[label_value(k).as_str()])
                    .inc_by(n - before);
            }
        }
        self.last = now;
    }
}

/// The metrics of one agent.
pub struct Metrics {
    registry: Registry,
    events: IntCounterVec,
    /// `events`' counter of each kind seen, resolved once: a handful, scanned per event
    /// instead of hashing the label under the family's lock.
    events_by_kind: Vec<(&'static str, IntCounter)>,
    dropped: IntCounter,
    births: IntCounterVec,
    adoptions: IntCounterVec,
    restarts: IntCounterVec,
    buffered: IntGauge,
    nats_dropped: IntCounter,
    nats_foreign_duplicates: IntCounter,
    nats_lost_in_stream: IntCounter,
    /// Births counted, by container id (or init pid): this engine's and the previous one's, so
    /// a birth that straddles a new segment (its processes in the new snapshot) counts once.
    births_seen: std::collections::HashSet<String>,
    births_seen_before: std::collections::HashSet<String>,
    /// The engine's stories, updated from what changed since the last look (a fresh engine
    /// is seen as such and told from the start).
    stories: crate::lineage::Stories,
    adoptions_tally: Tally,
    restarts_tally: Tally,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

fn counter_vec(r: &Registry, name: &str, help: &str, label: &str) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), &[label]).expect("valid metric name");
    r.register(Box::new(c.clone())).expect("registered once");
    c
}

fn counter(r: &Registry, name: &str, help: &str) -> IntCounter {
    let c = IntCounter::new(name, help).expect("valid metric name");
    r.register(Box::new(c.clone())).expect("registered once");
    c
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Metrics {
        let r = Registry::new();
        let buffered = IntGauge::new(
            "tracer_nats_buffered_events",
            "Events waiting in the local buffer for NATS",
        )
        .expect("valid metric name");
        r.register(Box::new(buffered.clone()))
            .expect("registered once");
        let m = Metrics {
            events: counter_vec(
                &r,
                "tracer_events_total",
                "Events captured, by kind",
                "kind",
            ),
            events_by_kind: Vec::new(),
            dropped: counter(
                &r,
                "tracer_dropped_events_total",
                "Events the kernel could not hand over (ring buffer full)",
            ),
            births: counter_vec(
                &r,
                "tracer_container_births_total",
                "Container births seen, by OCI runtime",
                "runtime",
            ),
            adoptions: counter_vec(
                &r,
                "tracer_adoptions_total",
                "Processes adopted after their parent exited, by who took them",
                "reason",
            ),
            restarts: counter_vec(
                &r,
                "tracer_runtime_restarts_total",
                "Container runtime daemon restarts, by daemon",
                "daemon",
            ),
            nats_dropped: counter(
                &r,
                "tracer_nats_dropped_events_total",
                "Events dropped because the local NATS buffer was full",
            ),
            nats_foreign_duplicates: counter(
                &r,
                "tracer_nats_foreign_duplicates_total",
                "Messages JetStream called duplicates of ids this agent never sent before (published by someone else first); each was published again under a new id",
            ),
            nats_lost_in_stream: counter(
                &r,
                "tracer_nats_stream_lost_events_total",
                "Events published that the stream no longer holds (the server lost its store), with those queued for the segments it lost; a new segment started after",
            ),
            buffered,
            registry: r,
            births_seen: Default::default(),
            births_seen_before: Default::default(),
            stories: Default::default(),
            adoptions_tally: Tally::default(),
            restarts_tally: Tally::default(),
        };
        // The reasons are a fixed set: shown at 0 from the start.
        for reason in REASONS {
            m.adoptions.with_label_values(&[reason]);
        }
        m
    }

    /// Counts one captured event.
    pub fn observe(&mut self, ev: &Event) {
        let kind = ev.kind.name();
        let i = match self.events_by_kind.iter().position(|(k, _)| *k == kind) {
            Some(i) => i,
            None => {
                let c = self.events.with_label_values(&[kind]);
                self.events_by_kind.push((kind, c));
                self.events_by_kind.len() - 1
            }
        };
        self.events_by_kind[i].1.inc();
    }

    /// The capture's cumulative drop count, and the buffer's state.
    pub fn set_counters(&mut self, kernel_drops: u64, buffered: u64, nats_drops: u64) {
        self.dropped
            .inc_by(kernel_drops.saturating_sub(self.dropped.get()));
        self.nats_dropped
            .inc_by(nats_drops.saturating_sub(self.nats_dropped.get()));
        self.buffered.set(buffered.min(i64::MAX as u64) as i64);
    }

    /// How many message ids someone else published first, so far.
    pub fn set_foreign_duplicates(&mut self, total: u64) {
        let c = &self.nats_foreign_duplicates;
        c.inc_by(total.saturating_sub(c.get()));
    }

    /// How many published events the stream lost, so far.
    pub fn set_lost_in_stream(&mut self, total: u64) {
        let c = &self.nats_lost_in_stream;
        c.inc_by(total.saturating_sub(c.get()));
    }

    /// Births, adoptions and restarts as `engine` sees them now.
    pub fn update_from(&mut self, engine: &Engine) {
        // `runc exec` runs a process in a container already born, and a death ends one:
        // neither is a birth.
        self.stories.update(engine);
        let births = self.stories.fresh().filter(|s| s.phase.is_birth());
        for s in births {
            let key = s
                .container_id
                .clone()
                .unwrap_or_else(|| format!("pid {}", s.init_pid));
            if self.births_seen_before.contains(&key) || !self.births_seen.insert(key) {
                continue;
            }
            let runtime = s.runtime.as_deref().unwrap_or("unknown");
            let name = runtime.split_whitespace().next().unwrap_or("unknown");
            self.births
                .with_label_values(&[label_value(name).as_str()])
                .inc();
        }
        let adoptions = engine.adoption_totals();
        let adoptions = adoptions.iter().map(|(k, n)| (k.to_string(), n)).collect();
        self.adoptions_tally.update(adoptions, &self.adoptions);
        let mut restarts = HashMap::new();
        for r in crate::lineage::restart::runtime_restarts(engine) {
            *restarts.entry(r.daemon).or_insert(0) += 1;
        }
        self.restarts_tally.update(restarts, &self.restarts);
    }

    /// A fresh engine replaces the old one: its totals start from zero, the counters go on.
    pub fn engine_replaced(&mut self) {
        self.births_seen_before = std::mem::take(&mut self.births_seen);
        self.adoptions_tally = Tally::default();
        self.restarts_tally = Tally::default();
    }

    /// The text exposition (format 0.0.4).
    pub fn encode(&self) -> String {
        let mut buf = Vec::new();
        // Encoding gathered families into a Vec cannot fail.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    }
}

/// Every value of `tracer_adoptions_total`'s `reason` label.
pub use crate::lineage::ADOPTION_KINDS as REASONS;

/// How many connections the endpoint holds at once; at the limit a new one evicts the oldest
/// (a scraper's request takes milliseconds, so the oldest is an idle or stalled one).
pub const MAX_CONNECTIONS: usize = 256;
/// The most a request's head may take (hyper's read buffer, headers included); a longer one is
/// answered 431 and the connection closed, so a header without a line end costs no more.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// How long a connection may take to send its request headers, the first or the next on a
/// kept-alive connection (idle connections are closed after it).
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
/// The most one connection may live, whatever it does.
pub const CONNECTION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// The pause after a failed accept (EMFILE, ENFILE, ENOBUFS...): the loop goes on after it.
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);

/// What renders the metrics text.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Serves `/metrics` from `render` on `addr` on a thread of its own (hyper, HTTP/1.1, with the
/// limits above); returns the address bound (port 0 picks one). `/metrics` ignores a query
/// string and a trailing slash; other paths are 404, methods other than GET and HEAD 405.
pub fn serve(addr: SocketAddr, render: Render) -> std::io::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    // The runtime is built on the thread itself: dropped inside the caller's async context
    // (a failed spawn), a runtime would panic.
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => return log::error!("metrics endpoint: {e}"),
            };
            rt.block_on(async move {
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => accept_loop(l, render).await,
                    Err(e) => log::error!("metrics endpoint: {e}"),
                }
            })
        })?;
    Ok(bound)
}

/// Accepts forever. Each connection gets a task and an eviction channel; at
/// [`MAX_CONNECTIONS`], or when the process is out of descriptors, the oldest is told to go.
async fn accept_loop(listener: tokio::net::TcpListener, render: Render) {
    let mut live: std::collections::VecDeque<tokio::sync::oneshot::Sender<()>> =
        std::collections::VecDeque::new();
    let evict_oldest = |live: &mut std::collections::VecDeque<tokio::sync::oneshot::Sender<()>>| {
        // Finished connections dropped their receiver.
        live.retain(|tx| !tx.is_closed());
        if let Some(tx) = live.pop_front() {
            let _ = tx.send(());
        }
    };
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                live.retain(|tx| !tx.is_closed());
                if live.len() >= MAX_CONNECTIONS {
                    evict_oldest(&mut live);
                }
                let (tx, rx) = tokio::sync::oneshot::channel();
                live.push_back(tx);
                tokio::spawn(connection(stream, render.clone(), rx));
            }
            Err(e) => {
                // Out of descriptors: free one, then go on after a pause (never give up:
                // the endpoint must answer once the pressure is gone).
                if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
                    evict_oldest(&mut live);
                }
                log::debug!("metrics endpoint: accept: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

/// One HTTP/1.1 connection under the limits, until it ends, times out or is evicted.
async fn connection(
    stream: tokio::net::TcpStream,
    render: Render,
    evicted: tokio::sync::oneshot::Receiver<()>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let service = hyper::service::service_fn(move |req| {
        let render = render.clone();
        async move { Ok::<_, std::convert::Infallible>(respond(&req, &*render)) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_REQUEST_BYTES)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn) => {}
        _ = evicted => {}
    }
}

type Body = http_body_util::Full<bytes::Bytes>;

/// The answer to one request.
fn respond<B>(req: &hyper::Request<B>, render: &dyn Fn() -> String) -> hyper::Response<Body> {
    use hyper::{header, Method, StatusCode};
    let reply = |status: StatusCode, text: String, content_type: &'static str| {
        let mut r = hyper::Response::new(Body::from(text));
        *r.status_mut() = status;
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(content_type),
        );
        r
    };
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "GET /metrics\n".into(),
            "text/plain",
        );
    }
    // Scrapers add parameters (`params:` in a scrape config) and some a trailing slash.
    let path = req.uri().path();
    if path != "/metrics" && path != "/metrics/" {
        return reply(
            StatusCode::NOT_FOUND,
            "not found: try /metrics\n".into(),
            "text/plain",
        );
    }
    reply(StatusCode::OK, render(), prometheus::TEXT_FORMAT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_only_ever_grow() {
        let f = IntCounterVec::new(Opts::new("t_total", "t"), &["runtime"]).unwrap();
        let mut t = Tally::default();
        t.update(HashMap::from([("runc".into(), 2)]), &f);
        t.update(HashMap::from([("runc".into(), 3)]), &f);
        assert_eq!(f.with_label_values(&["runc"]).get(), 3);
        // A fresh engine starts from zero again.
        let mut t = Tally::default();
        t.update(HashMap::from([("runc".into(), 1)]), &f);
        assert_eq!(f.with_label_values(&["runc"]).get(), 4);
    }

    #[test]
    fn a_birth_counts_once_across_engines() {
        let mut input = crate::demo::open().unwrap();
        let mut engine = input.seeded_engine();
        for ev in input.by_ref() {
            engine.apply(&ev.unwrap());
        }
        // Every container born once, whatever else ran in it (the pod demo `runc exec`s into one).
        let cids: std::collections::HashSet<_> = crate::lineage::stories(&engine)
            .into_iter()
            .filter_map(|s| s.container_id)
            .collect();
        let n = cids.len() as u64;
        assert!(n > 0);
        let mut m = Metrics::new();
        let total = |m: &Metrics| m.births.with_label_values(&["runc"]).get();
        m.update_from(&engine);
        m.update_from(&engine);
        assert_eq!(total(&m), n);
        // The same births seen again by the next segment's engine: not new.
        m.engine_replaced();
        m.update_from(&engine);
        assert_eq!(total(&m), n);
    }

    #[test]
    fn adoptions_count_once_each_however_many_records_the_retention_dropped() {
        use crate::lineage::{Engine, Retention};
        use crate::synth::{exit, fork};
        let mut e = Engine::with_retention(Retention {
            max_exited: 50,
            max_age_ns: u64::MAX,
        });
        let mut m = Metrics::new();
        let init = |m: &Metrics| m.adoptions.with_label_values(&["init"]).get();
        let mut seq = 0;
        // Each round: a process forks a child and exits; init adopts the child, which exits.
        for round in 0..20u32 {
            for i in 0..100 {
                let (parent, child) = (10_000 + round * 200 + i, 10_100 + round * 200 + i);
                for mut ev in [
                    fork(1, parent),
                    fork(parent, child),
                    exit(parent, 0),
                    exit(child, 0),
                ] {
                    seq += 1;
                    ev.seq = seq;
                    e.apply(&ev);
                }
            }
            e.prune_now(0);
            m.update_from(&e);
        }
        assert!(
            e.process_count() < 1000,
            "the retention dropped records: {} held, {} pruned",
            e.process_count(),
            e.pruned()
        );
        assert_eq!(init(&m), 2000);
        assert_eq!(
            e.adoption_totals().iter().find(|(k, _)| *k == "init"),
            Some(("init", 2000))
        );
    }

    #[test]
    fn exposition_names_every_metric() {
        let mut m = Metrics::new();
        m.set_counters(3, 7, 2);
        m.set_counters(3, 7, 2);
        m.set_lost_in_stream(4);
        m.set_lost_in_stream(4);
        let evs = crate::synth::sample_events();
        // Counted per kind: the same kind twice, another once.
        let other = evs
            .iter()
            .find(|e| e.kind.name() != evs[0].kind.name())
            .unwrap();
        m.observe(&evs[0]);
        m.observe(other);
        m.observe(&evs[0]);
        let text = m.encode();
        for name in [
            "tracer_dropped_events_total 3",
            "tracer_nats_buffered_events 7",
            "tracer_nats_dropped_events_total 2",
            "tracer_nats_stream_lost_events_total 4",
            &format!("tracer_events_total{{kind=\"{}\"}} 2", evs[0].kind.name()),
            &format!("tracer_events_total{{kind=\"{}\"}} 1", other.kind.name()),
            "tracer_adoptions_total{reason=\"subreaper\"} 0",
        ] {
            assert!(text.contains(name), "{name} missing in\n{text}");
        }
    }
}
