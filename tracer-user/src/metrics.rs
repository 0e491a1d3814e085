//! The agent's Prometheus metrics (text exposition format 0.0.4, the `prometheus` crate) and
//! the small HTTP server that serves them at `/metrics`.
//!
//! Event and drop counters come from the capture; births, adoptions and runtime restarts from
//! a lineage [`Engine`] fed with the same events: adoptions and restarts as the engine's totals
//! grow (a tally of the last totals), births once per container, so a counter never goes down
//! or counts twice when the engine is started afresh.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use prometheus::{Encoder, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder};

use crate::lineage::{How, Reaper, Reason};
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
    /// Births counted, by container id (or init pid): this engine's and the previous one's, so
    /// a birth that straddles a new segment (its processes in the new snapshot) counts once.
    births_seen: std::collections::HashSet<String>,
    births_seen_before: std::collections::HashSet<String>,
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
            buffered,
            registry: r,
            births_seen: Default::default(),
            births_seen_before: Default::default(),
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

    /// Births, adoptions and restarts as `engine` sees them now.
    pub fn update_from(&mut self, engine: &Engine) {
        // `runc exec` runs a process in a container already born: not a birth.
        let births = crate::lineage::stories(engine)
            .into_iter()
            .filter(|s| !s.runtime.as_deref().is_some_and(|r| r.ends_with(" exec")));
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
        let mut adoptions = HashMap::new();
        for p in engine.processes() {
            for l in p.lineage.iter().filter(|l| l.how == How::Adopted) {
                let reason = l.reason.map_or("unknown", reason_label);
                *adoptions.entry(reason.to_string()).or_insert(0) += 1;
            }
        }
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
pub const REASONS: [&str; 4] = ["subreaper", "init", "namespace_init", "kernel_reports"];

/// `tracer_adoptions_total`'s `reason` label.
pub fn reason_label(r: Reason) -> &'static str {
    match r {
        Reason::ParentExited { reaper, .. } => match reaper {
            Reaper::Subreaper(_) => "subreaper",
            Reaper::Init => "init",
            Reaper::NsInit(_) | Reaper::NsInitUnseen => "namespace_init",
        },
        Reason::KernelReports { .. } => "kernel_reports",
    }
}

/// Serves `/metrics` from `render` on `addr` on a thread of its own; returns the address bound
/// (port 0 picks one).
pub fn serve(
    addr: SocketAddr,
    render: Arc<dyn Fn() -> String + Send + Sync>,
) -> std::io::Result<SocketAddr> {
    let server = tiny_http::Server::http(addr).map_err(std::io::Error::other)?;
    let bound = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| std::io::Error::other("not an IP listener"))?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for req in server.incoming_requests() {
                let resp = if req.url() == "/metrics" {
                    let ct = tiny_http::Header::from_bytes("Content-Type", prometheus::TEXT_FORMAT)
                        .expect("static header is valid");
                    tiny_http::Response::from_string(render()).with_header(ct)
                } else {
                    tiny_http::Response::from_string("not found: try /metrics\n")
                        .with_status_code(404)
                };
                // A client that went away is its own problem.
                let _ = req.respond(resp);
            }
        })?;
    Ok(bound)
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
    fn exposition_names_every_metric() {
        let mut m = Metrics::new();
        m.set_counters(3, 7, 2);
        m.set_counters(3, 7, 2);
        let evs = crate::tracefile::tests::sample_events();
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
            &format!("tracer_events_total{{kind=\"{}\"}} 2", evs[0].kind.name()),
            &format!("tracer_events_total{{kind=\"{}\"}} 1", other.kind.name()),
            "tracer_adoptions_total{reason=\"subreaper\"} 0",
        ] {
            assert!(text.contains(name), "{name} missing in\n{text}");
        }
    }
}
