//! Wall-clock time of a recording's events, from the recording's own clock, never the reader's.
//!
//! Events carry `ts_ns` on the clock their source had: CLOCK_BOOTTIME for the probes (a trace
//! file's header says which wall time its start had: `start_wall_ns` at `start_boot_ns`),
//! seconds since the epoch for `strace -ttt`, the time of day of an unknown date for
//! `strace -t`/`-tt`, a running sum for `strace -r`, and nothing at all for a plain log.
//! [`Clock`] turns a `ts_ns` into what can be known of its wall time; [`Stamper`] prints it the
//! way strace's `-t`, `-tt`, `-ttt` and `-r` do; [`rfc3339`] is the JSON form (UTC, ns).

use serde::Serialize;

const NS: u64 = 1_000_000_000;
const DAY_NS: u64 = 86_400 * NS;

/// What a recording's `ts_ns` means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "clock", rename_all = "snake_case")]
pub enum Clock {
    /// CLOCK_BOOTTIME nanoseconds; the recording's start had wall time `start_wall_ns` (ns
    /// since the epoch, UTC) at boot time `start_boot_ns`.
    Boot {
        /// Wall time at the start, ns since the epoch.
        start_wall_ns: u64,
        /// CLOCK_BOOTTIME at the start, ns.
        start_boot_ns: u64,
    },
    /// Nanoseconds since the epoch (`strace -ttt`).
    Epoch,
    /// Nanoseconds since the midnight of a day the log does not name (`strace -t`, `-tt`:
    /// local time; a day is added each time the clock goes back over midnight).
    TimeOfDay,
    /// Time since the log's first line (`strace -r`, summed): durations, no wall time.
    Relative,
    /// No time at all (a plain `strace -f` log).
    #[default]
    None,
}

impl Clock {
    /// The clock of a trace file whose header says `start_wall_ns` at `start_boot_ns`; no
    /// wall time when the header has none (0).
    pub fn boot(start_wall_ns: u64, start_boot_ns: u64) -> Clock {
        if start_wall_ns == 0 {
            return Clock::Relative;
        }
        Clock::Boot {
            start_wall_ns,
            start_boot_ns,
        }
    }

    /// The clock of a capture starting now on this machine: the probes stamp CLOCK_BOOTTIME,
    /// which has this wall time now (what a trace file's header records of its start); no
    /// time at all when the boot time cannot be read.
    pub fn live() -> Clock {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(0));
        match boot_time_ns() {
            Some(boot) => Clock::boot(wall, boot),
            None => Clock::None,
        }
    }

    /// Nanoseconds since the epoch (UTC) of an event at `ts_ns`, when the clock has a date.
    pub fn epoch_ns(&self, ts_ns: u64) -> Option<i128> {
        match *self {
            Clock::Boot {
                start_wall_ns,
                start_boot_ns,
            } => Some(i128::from(start_wall_ns) + i128::from(ts_ns) - i128::from(start_boot_ns)),
            Clock::Epoch => Some(i128::from(ts_ns)),
            Clock::TimeOfDay | Clock::Relative | Clock::None => None,
        }
    }

    /// Whether `ts_ns` measures time at all (durations between events make sense).
    pub fn has_time(&self) -> bool {
        !matches!(self, Clock::None)
    }

    /// The time of day of `ts_ns` in the machine's local time zone (as strace's `-t` prints),
    /// ns since midnight; `None` for a clock with no wall time.
    pub fn local_time_of_day_ns(&self, ts_ns: u64) -> Option<u64> {
        self.time_of_day_in(ts_ns, &jiff::tz::TimeZone::system())
    }

    /// [`Clock::local_time_of_day_ns`] in the time zone `tz` (looked up once by a caller that
    /// stamps every line).
    fn time_of_day_in(&self, ts_ns: u64, tz: &jiff::tz::TimeZone) -> Option<u64> {
        if *self == Clock::TimeOfDay {
            return Some(ts_ns % DAY_NS);
        }
        let ts = timestamp(self.epoch_ns(ts_ns)?)?;
        let t = tz.to_datetime(ts).time();
        let secs = u64::from(t.hour() as u8) * 3600
            + u64::from(t.minute() as u8) * 60
            + u64::from(t.second() as u8);
        Some(secs * NS + u64::from(t.subsec_nanosecond().unsigned_abs()))
    }

    /// `07:40:09.123456789`: the time of day an strace `-t`/`-tt` log stamped, for a clock that
    /// has a time of day but no date (JSON's `time_of_day`); `None` for any other clock.
    pub fn time_of_day(&self, ts_ns: u64) -> Option<String> {
        if *self != Clock::TimeOfDay {
            return None;
        }
        let ns = ts_ns % DAY_NS;
        let s = ns / NS;
        Some(format!(
            "{:02}:{:02}:{:02}.{:09}",
            s / 3600,
            s / 60 % 60,
            s % 60,
            ns % NS
        ))
    }

    /// The RFC 3339 UTC time of `ts_ns` with nanoseconds (`2026-12-03T07:40:09.123456789Z`),
    /// when the clock has a date.
    pub fn rfc3339(&self, ts_ns: u64) -> Option<String> {
        rfc3339(self.epoch_ns(ts_ns)?)
    }
}

fn timestamp(epoch_ns: i128) -> Option<jiff::Timestamp> {
    jiff::Timestamp::from_nanosecond(epoch_ns).ok()
}

/// `epoch_ns` as RFC 3339 in UTC with nine fraction digits; `None` outside jiff's range
/// (a hostile header's wall time).
pub fn rfc3339(epoch_ns: i128) -> Option<String> {
    let ts = timestamp(epoch_ns)?;
    Some(format!("{ts:.9}"))
}

/// A duration in seconds the way a person reads it: `2.0 s`, `0.35 s`, `4 min 10 s`, `2 h 5 min`.
pub fn duration_text(ns: u64) -> String {
    let secs = ns / NS;
    if secs >= 3600 {
        return format!("{} h {} min", secs / 3600, secs % 3600 / 60);
    }
    if secs >= 60 {
        return format!("{} min {} s", secs / 60, secs % 60);
    }
    if ns >= NS {
        return format!("{:.1} s", ns as f64 / NS as f64);
    }
    if ns >= 1_000_000 {
        return format!("{:.0} ms", ns as f64 / 1e6);
    }
    format!("{:.0} µs", ns as f64 / 1e3)
}

/// strace's time-stamp styles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `-t`: `HH:MM:SS`.
    Seconds,
    /// `-tt`: `HH:MM:SS.uuuuuu`.
    Micros,
    /// `-ttt`: `SSSSSSSSSS.uuuuuu` since the epoch.
    Epoch,
    /// `-r`: seconds since the previous line, `S.uuuuuu`.
    Relative,
}

impl Style {
    /// From how many `-t` were given and whether `-r` was: `-r` wins, as in strace.
    pub fn from_flags(t_count: u8, relative: bool) -> Option<Style> {
        match (relative, t_count) {
            (true, _) => Some(Style::Relative),
            (false, 0) => None,
            (false, 1) => Some(Style::Seconds),
            (false, 2) => Some(Style::Micros),
            (false, _) => Some(Style::Epoch),
        }
    }
}

/// Prints each line's time stamp in one [`Style`] from the recording's [`Clock`]. A clock that
/// cannot give the style (a plain strace log, or `-ttt` of a time-of-day log) prints
/// `??:??:??`-like blanks of the same width, so columns stay aligned and nothing is invented.
#[derive(Clone, Debug)]
pub struct Stamper {
    clock: Clock,
    style: Style,
    last_ts: Option<u64>,
    /// The machine's time zone, looked up once, not per line.
    tz: jiff::tz::TimeZone,
}

impl Stamper {
    /// A stamper for `style` on `clock`.
    pub fn new(clock: Clock, style: Style) -> Stamper {
        Stamper {
            clock,
            style,
            last_ts: None,
            tz: jiff::tz::TimeZone::system(),
        }
    }

    /// The stamp of an event at `ts_ns`, with its trailing space (`07:40:09.123456 `).
    pub fn stamp(&mut self, ts_ns: u64) -> String {
        let text = match self.style {
            Style::Seconds => self.tod(ts_ns, false),
            Style::Micros => self.tod(ts_ns, true),
            Style::Epoch => self.clock.epoch_ns(ts_ns).map(|ns| {
                let us = ns.div_euclid(1000);
                format!(
                    "{}.{:06}",
                    us.div_euclid(1_000_000),
                    us.rem_euclid(1_000_000)
                )
            }),
            Style::Relative => self.clock.has_time().then(|| {
                let gap = self.last_ts.map_or(0, |last| ts_ns.saturating_sub(last));
                self.last_ts = Some(ts_ns);
                format!("{:>3}.{:06}", gap / NS, gap % NS / 1000)
            }),
        };
        let mut text = text.unwrap_or_else(|| self.blank());
        text.push(' ');
        text
    }

    fn tod(&self, ts_ns: u64, micros: bool) -> Option<String> {
        let ns = self.clock.time_of_day_in(ts_ns, &self.tz)?;
        let s = ns / NS;
        let hms = format!("{:02}:{:02}:{:02}", s / 3600 % 24, s / 60 % 60, s % 60);
        Some(match micros {
            true => format!("{hms}.{:06}", ns % NS / 1000),
            false => hms,
        })
    }

    fn blank(&self) -> String {
        match self.style {
            Style::Seconds => "??:??:??".into(),
            Style::Micros => "??:??:??.??????".into(),
            Style::Epoch => "??????????.??????".into(),
            Style::Relative => "  ?.??????".into(),
        }
    }
}

/// CLOCK_BOOTTIME now, from /proc/uptime (10 ms resolution; no unsafe code needed).
pub fn boot_time_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/uptime").ok()?;
    let first = text.split_whitespace().next()?;
    let (secs, frac) = first.split_once('.').unwrap_or((first, "0"));
    let secs: u64 = secs.parse().ok()?;
    let mut frac_ns: u64 = 0;
    let mut scale = 100_000_000u64;
    for c in frac.bytes().take(9) {
        frac_ns += u64::from(c.checked_sub(b'0').filter(|d| *d < 10)?) * scale;
        scale /= 10;
    }
    Some(secs.saturating_mul(1_000_000_000).saturating_add(frac_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    const START_WALL: u64 = 1_764_747_609_000_000_000; // 2025-12-03T07:40:09Z
    const START_BOOT: u64 = 5_000_000_000;

    #[test]
    fn boot_time_is_mapped_through_the_headers_wall_time() {
        let c = Clock::boot(START_WALL, START_BOOT);
        let t = c.rfc3339(START_BOOT + 1_500_000_001).unwrap();
        assert_eq!(t, "2025-12-03T07:40:10.500000001Z");
        // Before the start (a snapshot's process born earlier).
        assert_eq!(
            c.rfc3339(START_BOOT - NS).unwrap(),
            "2025-12-03T07:40:08.000000000Z"
        );
        assert_eq!(Clock::boot(0, START_BOOT).rfc3339(START_BOOT), None);
    }

    #[test]
    fn a_hostile_wall_time_gives_a_time_or_none_never_a_panic() {
        // The largest header and event values stay inside jiff's range (year 3139).
        let c = Clock::boot(u64::MAX, 0);
        assert!(c.rfc3339(u64::MAX).unwrap().starts_with("3139-"));
        assert!(Stamper::new(c, Style::Micros).stamp(u64::MAX).len() == 16);
        assert_eq!(rfc3339(i128::MAX), None);
        assert_eq!(rfc3339(-i128::from(u64::MAX) * 1_000_000), None);
    }

    #[test]
    fn strace_styles_print_as_strace_does() {
        let c = Clock::TimeOfDay;
        let ts = (7 * 3600 + 40 * 60 + 9) * NS + 123_456_789;
        assert_eq!(Stamper::new(c, Style::Seconds).stamp(ts), "07:40:09 ");
        assert_eq!(Stamper::new(c, Style::Micros).stamp(ts), "07:40:09.123456 ");
        // A time of day has no date: no epoch seconds are invented.
        assert_eq!(
            Stamper::new(c, Style::Epoch).stamp(ts),
            "??????????.?????? "
        );
        let mut r = Stamper::new(c, Style::Relative);
        assert_eq!(r.stamp(ts), "  0.000000 ");
        assert_eq!(r.stamp(ts + 2_000_250_000), "  2.000250 ");
        let e = Stamper::new(Clock::Epoch, Style::Epoch).stamp(START_WALL + 42_000);
        assert_eq!(e, "1764747609.000042 ");
        assert_eq!(
            Stamper::new(Clock::None, Style::Relative).stamp(5),
            "  ?.?????? "
        );
        assert_eq!(c.time_of_day(ts).as_deref(), Some("07:40:09.123456789"));
        assert_eq!(c.rfc3339(ts), None);
        assert_eq!(Clock::boot(START_WALL, START_BOOT).time_of_day(ts), None);
    }

    #[test]
    fn flags_choose_the_style_as_strace_does() {
        assert_eq!(Style::from_flags(0, false), None);
        assert_eq!(Style::from_flags(1, false), Some(Style::Seconds));
        assert_eq!(Style::from_flags(2, false), Some(Style::Micros));
        assert_eq!(Style::from_flags(3, false), Some(Style::Epoch));
        assert_eq!(Style::from_flags(2, true), Some(Style::Relative));
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration_text(2_000_000_000), "2.0 s");
        assert_eq!(duration_text(10_240_000_000), "10.2 s");
        assert_eq!(duration_text(250_000_000), "250 ms");
        assert_eq!(duration_text(300 * NS), "5 min 0 s");
        assert_eq!(duration_text(7_500 * NS), "2 h 5 min");
    }
}
