//! postal's output layout (`webtune postal`): a header line, then one line a minute of the
//! wall clock, "HH:MM,messages,data(K),errors,connections,SSL connections", each the
//! counts of the minute that ended then (the first one from the start, the last one up to the
//! stop). Counts come in as running totals; `MinuteLines` turns them into each line's
//! differences. The last line, of the minute cut short by the stop (postal prints none),
//! says so in its time field: "19:44 (partial 23s)", so it is not read as a minute's rate.
//! `MinuteClock` says when a line is due on the wall clock, in local time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// postal's header line.
pub const HEADER: &str = "time,messages,data(K),errors,connections,SSL connections";

/// Running totals of a run, as the progress reports give them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Messages the server accepted.
    pub messages: u64,
    /// Message bytes sent.
    pub data_bytes: u64,
    /// Messages that failed or were refused.
    pub errors: u64,
    /// Connections opened, and of them the ones that went TLS.
    pub connections: u64,
    pub tls_connections: u64,
}

/// Per-minute lines from running totals.
#[derive(Debug, Default)]
pub struct MinuteLines {
    last: Totals,
}

impl MinuteLines {
    /// The line for the minute ending at `hhmm`, given the totals now.
    pub fn line(&mut self, hhmm: &str, now: Totals) -> String {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let last = std::mem::replace(&mut self.last, now);
        format!(
            "{hhmm},{},{},{},{},{}",
            d(now.messages, last.messages),
            d(now.data_bytes, last.data_bytes) / 1024,
            d(now.errors, last.errors),
            d(now.connections, last.connections),
            d(now.tls_connections, last.tls_connections)
        )
    }
}

impl MinuteLines {
    /// The line of the part of a minute that ran `seconds` before the stop at `hhmm`.
    pub fn partial_line(&mut self, hhmm: &str, seconds: f64, now: Totals) -> String {
        self.line(&format!("{hhmm} (partial {:.0}s)", seconds.max(0.0)), now)
    }
}

/// "HH:MM" of a Unix time `unix_s` at a UTC offset of `offset_s` seconds (local time).
pub fn hhmm(unix_s: i64, offset_s: i64) -> String {
    let minutes = (unix_s + offset_s).div_euclid(60).rem_euclid(24 * 60);
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

/// postal's wall clock: a minute's line is due when the next minute begins (`tick`), the
/// last line is the part of the minute the stop cut short (`last`), each stamped in local
/// time, as postal prints it.
pub struct MinuteClock {
    started: SystemTime,
    minute: i64,
    lines: MinuteLines,
}

impl Default for MinuteClock {
    fn default() -> MinuteClock {
        MinuteClock::new()
    }
}

impl MinuteClock {
    /// A clock whose first minute runs from now.
    pub fn new() -> MinuteClock {
        MinuteClock {
            started: SystemTime::now(),
            minute: now_unix_s().div_euclid(60),
            lines: MinuteLines::default(),
        }
    }

    /// The line of the minute that ended since the last call, if one did, from the totals
    /// `now`.
    pub fn tick(&mut self, now: Totals) -> Option<String> {
        let at = now_unix_s();
        if at.div_euclid(60) == self.minute {
            return None;
        }
        self.minute = at.div_euclid(60);
        Some(self.lines.line(&local_hhmm(at), now))
    }

    /// The line of the minute the stop cut short: from its start (or the run's, if later)
    /// to now.
    pub fn last(&mut self, now: Totals) -> String {
        let at = now_unix_s();
        let stopped = SystemTime::now();
        let minute_start = UNIX_EPOCH + Duration::from_secs(at.div_euclid(60) as u64 * 60);
        let from = minute_start.max(self.started);
        let seconds = stopped
            .duration_since(from)
            .map_or(0.0, |d| d.as_secs_f64());
        self.lines.partial_line(&local_hhmm(at), seconds, now)
    }
}

fn now_unix_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// "HH:MM" of `unix_s` in this host's time zone.
fn local_hhmm(unix_s: i64) -> String {
    hhmm(unix_s, local_offset_s(unix_s))
}

/// This host's offset from UTC at `unix_s`, seconds (0 where it cannot be read).
fn local_offset_s(unix_s: i64) -> i64 {
    let t = unix_s as _;
    // SAFETY: localtime_r writes into the zeroed tm we own; nothing else is touched.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return 0;
    }
    tm.tm_gmtoff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_hold_each_minutes_own_counts() {
        let mut lines = MinuteLines::default();
        let t = |messages, data_bytes, connections| Totals {
            messages,
            data_bytes,
            errors: 0,
            connections,
            tls_connections: 0,
        };
        assert_eq!(
            lines.line("19:42", t(1283, 3658 * 1024, 639)),
            "19:42,1283,3658,0,639,0"
        );
        assert_eq!(
            lines.line("19:43", t(3167, 9145 * 1024 + 10, 1558)),
            "19:43,1884,5487,0,919,0"
        );
        assert_eq!(
            lines.partial_line("19:44", 23.4, t(3200, 9145 * 1024 + 10, 1570)),
            "19:44 (partial 23s),33,0,0,12,0"
        );
        assert_eq!(hhmm(0, 0), "00:00");
        assert_eq!(hhmm(19 * 3600 + 42 * 60 + 59, 3600), "20:42");
    }
}
