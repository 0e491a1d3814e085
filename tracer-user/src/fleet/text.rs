//! The fleet table as people read it: a block per node, every name from the stream escaped.

use super::{NodeRow, State, Table};
use crate::escape::escape;

/// The duration `ms` as people say it (`10s`, `1.5s`).
fn interval_text(ms: u64) -> String {
    crate::clock::duration_text(ms.saturating_mul(1_000_000))
}

/// `live`, `silent since T`, or `unknown`.
fn state_text(r: &NodeRow) -> String {
    match (r.state, &r.last_word) {
        (State::Live, _) => "live".into(),
        (State::Silent, Some(t)) => format!("silent since {t}"),
        (State::Silent, None) | (State::Unknown, _) => "unknown (no word with a time)".into(),
    }
}

/// A node's lines: its state and last word, its counters, the outage it came back from, its
/// live pods and containers, its restarts and deaths in the window.
pub fn node_lines(r: &NodeRow, window_secs: u64) -> Vec<String> {
    let node = escape(&r.node);
    if let Some(e) = &r.error {
        return vec![format!("{node}: cannot be read: {}", escape(e))];
    }
    let mut head = format!("{node}: {}", state_text(r));
    if let (Some(t), State::Live) = (&r.last_word, r.state) {
        head.push_str(&format!("; last word {t}"));
    }
    match r.interval_ms {
        Some(ms) => head.push_str(&format!("; heartbeat every {}", interval_text(ms))),
        None => head.push_str("; no heartbeat (an agent before heartbeats)"),
    }
    let mut out = vec![head];
    if let Some(h) = &r.heartbeat {
        out.push(format!(
            "  {} events, {} dropped by the kernel, {} buffered, {} dropped for a full buffer",
            h.events, h.kernel_drops, h.buffered, h.dropped
        ));
    }
    if let Some(b) = &r.back {
        out.push(format!(
            "  back since {}, {} events buffered, {} dropped (publishing failed from {})",
            b.since.as_deref().unwrap_or("?"),
            b.buffered,
            b.dropped,
            b.down_since.as_deref().unwrap_or("?")
        ));
    }
    out.extend(pod_lines(r));
    out.push(format!(
        "  last {}: {} restarts, {} deaths",
        crate::clock::duration_text(window_secs.saturating_mul(1_000_000_000)),
        r.restarts,
        r.deaths
    ));
    for e in &r.ends {
        out.push(format!(
            "    {} {} {} at {}",
            e.phase,
            escape(e.pod.as_deref().unwrap_or("?")),
            escape(e.container.as_deref().unwrap_or("(sandbox)")),
            e.time.as_deref().unwrap_or("?")
        ));
    }
    out.extend(r.notes.iter().map(|n| format!("  note: {}", escape(n))));
    out
}

fn pod_lines(r: &NodeRow) -> Vec<String> {
    let at = match r.state {
        State::Live => "live pods",
        _ => "pods at its last word",
    };
    let n = r.pods.len() + r.pods_left_out;
    let mut out = vec![format!("  {at}: {n}")];
    for p in &r.pods {
        let mut cs: Vec<String> = p.containers.iter().map(|c| escape(c).into()).collect();
        if p.containers_left_out > 0 {
            cs.push(format!("and {} more", p.containers_left_out));
        }
        out.push(format!(
            "    {}/{}: {}",
            escape(&p.namespace),
            escape(&p.name),
            if cs.is_empty() {
                "(no container)".to_string()
            } else {
                cs.join(", ")
            }
        ));
    }
    if r.pods_left_out > 0 {
        out.push(format!("    and {} more pods", r.pods_left_out));
    }
    out
}

/// The whole table: its moment and window, then each node's block.
pub fn render(t: &Table) -> String {
    let mut out = format!(
        "{} nodes at {}\n",
        t.nodes.len(),
        t.now.as_deref().unwrap_or("?")
    );
    for r in &t.nodes {
        for line in node_lines(r, t.window_secs) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    if t.left_out > 0 {
        let max = crate::nats::MAX_NODES;
        out.push_str(&format!(
            "({} more nodes left out: at most {max} are listed)\n",
            t.left_out
        ));
    }
    if t.not_agents > 0 {
        out.push_str(&format!(
            "({} subjects skipped: their first message is none of an agent's)\n",
            t.not_agents
        ));
    }
    out
}
