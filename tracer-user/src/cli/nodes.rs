//! `tracer nodes nats://HOST:PORT`: every node that published, its agent's last word, live or
//! silent, its pods then, its restarts and deaths of late (docs/nats.md).

use anyhow::Result;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;
use tracer::fleet;

#[derive(clap::Args, Debug)]
pub struct NodesArgs {
    /// The NATS server, `nats://HOST:PORT`.
    pub server: String,
    /// text: a block per node; json: `{"now", "window_secs", "nodes": [...]}`.
    #[arg(long, value_enum, default_value_t = super::OutputFormat::Text)]
    pub format: super::OutputFormat,
    /// Count restarts and deaths this far back (`1h`, `30m`, `90s`; a bare number is
    /// seconds).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = duration_arg)]
    pub window: Duration,
    /// Read the fleet again every interval (the agents' default heartbeat, 10 s) and redraw,
    /// until interrupted.
    #[arg(long)]
    pub watch: bool,
}

/// A duration as typed: `10s`, `500ms`, `5m`, `1h`, `2d`, or a bare number of seconds; more
/// than zero, at most a year.
pub fn duration_arg(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: f64 = n
        .parse()
        .map_err(|_| format!("{s:?}: a number and a unit (ms, s, m, h, d)"))?;
    let per = match unit {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (ms, s, m, h, d)")),
    };
    let secs = n * per;
    if !(secs > 0.0 && secs <= 366.0 * 86400.0) {
        return Err(format!("{s:?}: more than zero and at most a year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn write_table(out: &mut dyn Write, t: &fleet::Table, json: bool) -> std::io::Result<()> {
    if json {
        serde_json::to_writer_pretty(&mut *out, t)?;
        writeln!(out)
    } else {
        out.write_all(fleet::render(t).as_bytes())
    }
}

pub fn run(args: NodesArgs) -> Result<ExitCode> {
    let json = args.format == super::OutputFormat::Json;
    if !args.watch {
        let t = fleet::table(&args.server, args.window)?;
        super::output::to_stdout(|out| write_table(out, &t, json))?;
        return Ok(ExitCode::SUCCESS);
    }
    let tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
    loop {
        let t = fleet::table(&args.server, args.window)?;
        let mut buf = Vec::new();
        if tty {
            // Home and clear: the table redrawn in place.
            buf.extend_from_slice(b"\x1b[H\x1b[2J");
        }
        write_table(&mut buf, &t, json)?;
        let mut out = std::io::stdout().lock();
        match out.write_all(&buf).and_then(|()| out.flush()) {
            Ok(()) => {}
            // Whoever read it is gone (a closed pipe): done.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
            Err(e) => return Err(anyhow::Error::new(e).context("cannot write the output")),
        }
        drop(out);
        std::thread::sleep(tracer::nats::heartbeat::DEFAULT_INTERVAL);
    }
}

/// `tracer view nats://HOST:PORT`: the viewer's fleet mode, or its first frame as text
/// (`--screenshot`).
pub fn view(server: &str, screenshot: Option<tracer::tui::ScreenSize>) -> Result<ExitCode> {
    use tracer::tui::fleet;
    let Some(size) = screenshot else {
        fleet::run_fleet(server, fleet::DEFAULT_WINDOW)?;
        return Ok(ExitCode::SUCCESS);
    };
    let v = fleet::FleetView {
        server: tracer::nats::guard::shown(server),
        table: Some(tracer::fleet::table(server, fleet::DEFAULT_WINDOW).map_err(|e| e.to_string())),
        scroll: 0,
    };
    super::output::print_screenshot(&fleet::fleet_screenshot(&v, size))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_typed_and_nonsense_is_one_line() {
        assert_eq!(duration_arg("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(duration_arg("10"), Ok(Duration::from_secs(10)));
        assert_eq!(duration_arg("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration_arg("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(duration_arg("1.5m"), Ok(Duration::from_secs(90)));
        for bad in ["", "0s", "-1s", "1y", "s", "1e9", "400d", "NaN"] {
            let e = duration_arg(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
