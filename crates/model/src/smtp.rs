//! The SMTP run's own shapes: what a mail test was asked to send (`SmtpSpec`, recorded in
//! the spec) and what its sessions measured beyond the common counts (`SmtpSummary`: a
//! latency histogram per protocol phase, replies counted by code, messages accepted,
//! deferred (4xx) and rejected (5xx)). An SMTP result is a `RunResult` whose schema is
//! `webtune.smtp/1` and whose "requests" are messages: `compare`, `--threshold` and the
//! reports read it as they read an HTTP one.

use crate::histogram::{LatencyHistogram, Percentiles};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema of an SMTP run's result.
pub const SMTP_SCHEMA: &str = "webtune.smtp/1";

/// How recipients are drawn from the mailbox list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecipientPick {
    /// Every mailbox equally likely.
    #[default]
    Uniform,
    /// Zipf (s = 1): the first mailboxes of the list get most of the mail.
    Zipf,
}

/// What each SMTP message looks like and how sessions behave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmtpSpec {
    /// Envelope sender (MAIL FROM) and From: header.
    pub from: String,
    /// The name sent in EHLO / HELO.
    pub helo: String,
    /// Recipients per message: uniformly 1..=max_recipients.
    pub max_recipients: u32,
    pub pick: RecipientPick,
    /// Message size range, bytes (headers and body), uniform.
    pub min_size: u64,
    pub max_size: u64,
    /// Messages per connection (then QUIT): at most this many. `random_per_connection`
    /// draws 1..=N per connection (postal's -c).
    pub per_connection: u64,
    #[serde(default)]
    pub random_per_connection: bool,
    /// STARTTLS after EHLO (then EHLO again).
    #[serde(default)]
    pub starttls: bool,
    /// Use PIPELINING when the server advertises it.
    pub pipelining: bool,
    /// Seed of the generated messages and recipient picks.
    pub seed: u64,
    /// Mailboxes in the list the recipients came from.
    pub mailboxes: u64,
}

impl Default for SmtpSpec {
    fn default() -> Self {
        SmtpSpec {
            from: "webtune@example.com".into(),
            helo: "webtune.example.com".into(),
            max_recipients: 1,
            pick: RecipientPick::Uniform,
            min_size: 1024,
            max_size: 10 * 1024,
            per_connection: 1,
            random_per_connection: false,
            starttls: false,
            pipelining: true,
            seed: 1,
            mailboxes: 0,
        }
    }
}

impl SmtpSpec {
    /// Why these settings cannot run, in the flags' words.
    pub fn check(&self) -> Result<(), String> {
        if self.max_recipients == 0 {
            return Err("--recipients must be at least 1".into());
        }
        if self.per_connection == 0 {
            return Err("--per-connection must be at least 1".into());
        }
        if self.min_size > self.max_size {
            return Err(format!(
                "--size {}..{}: the minimum is above the maximum",
                self.min_size, self.max_size
            ));
        }
        if self.max_size > 1 << 30 {
            return Err("--size: at most 1 GiB per message".into());
        }
        for (flag, v) in [("--from", &self.from), ("--helo", &self.helo)] {
            if v.bytes()
                .any(|b| b == b'\r' || b == b'\n' || b == 0 || b == b'<' || b == b'>')
            {
                return Err(format!("{flag} must not contain CR, LF, NUL, '<' or '>'"));
            }
        }
        Ok(())
    }
}

/// A message size: bytes, or with a unit k/K (KiB) or m/M (MiB), e.g. "10k".
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], Some(c)),
        _ => (t, None),
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 2048, 10k, 1M)"))?;
    let scale = match unit {
        None => 1,
        Some('k' | 'K') => 1024,
        Some('m' | 'M') => 1024 * 1024,
        Some(_) => return Err(format!("{text:?}: the unit is k or M (e.g. 10k)")),
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// `--size MIN..MAX` (or one size for all), e.g. "1k..10k".
pub fn parse_size_range(text: &str) -> Result<(u64, u64), String> {
    let (lo, hi) = match text.split_once("..") {
        Some((lo, hi)) => (parse_size(lo)?, parse_size(hi)?),
        None => {
            let n = parse_size(text)?;
            (n, n)
        }
    };
    if lo > hi {
        return Err(format!("--size {text}: the minimum is above the maximum"));
    }
    Ok((lo, hi))
}

/// One SMTP phase's latency: its histogram and summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseLatency {
    pub histogram: LatencyHistogram,
    #[serde(default)]
    pub summary: Percentiles,
}

impl PhaseLatency {
    pub fn record(&mut self, us: u64) {
        self.histogram.record(us);
    }

    fn merge(&mut self, other: &PhaseLatency) {
        self.histogram.merge(&other.histogram);
    }

    fn finish(&mut self) {
        self.summary = self.histogram.percentiles();
    }
}

/// What an SMTP run measured beyond the common counts. Each phase's latency runs from when
/// its command went out (or, pipelined, the previous reply came in, whichever is later) to
/// its reply; `data` runs from the DATA command to the reply after the message's final dot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SmtpSummary {
    /// From the connect's end to the 220 greeting.
    pub banner: PhaseLatency,
    /// EHLO (or the HELO that followed a refused EHLO).
    pub ehlo: PhaseLatency,
    pub mail: PhaseLatency,
    /// One sample per recipient.
    pub rcpt: PhaseLatency,
    /// DATA through the reply to the final ".".
    pub data: PhaseLatency,
    /// STARTTLS's reply and the TLS handshake after it.
    #[serde(default)]
    pub starttls: PhaseLatency,
    /// Every reply the server sent, by code (greetings and RSET included).
    pub replies: BTreeMap<u16, u64>,
    /// Messages the server accepted (2xx after the final dot).
    pub accepted: u64,
    /// Messages refused with a temporary (4xx) reply at any step.
    pub deferred: u64,
    /// Messages refused with a permanent (5xx) reply at any step.
    pub rejected: u64,
    /// Recipients accepted and refused (RCPT replies).
    pub recipients_accepted: u64,
    pub recipients_refused: u64,
    /// Message bytes sent after DATA (headers and body, before dot-stuffing and the dot).
    pub message_bytes: u64,
    /// Sessions that had PIPELINING (advertised and used), and that fell back to HELO.
    pub pipelined_sessions: u64,
    pub helo_fallbacks: u64,
    /// Sessions that finished EHLO (or HELO).
    pub sessions: u64,
}

impl SmtpSummary {
    pub fn merge(&mut self, other: &SmtpSummary) {
        self.banner.merge(&other.banner);
        self.ehlo.merge(&other.ehlo);
        self.mail.merge(&other.mail);
        self.rcpt.merge(&other.rcpt);
        self.data.merge(&other.data);
        self.starttls.merge(&other.starttls);
        for (k, v) in &other.replies {
            *self.replies.entry(*k).or_insert(0) += v;
        }
        self.accepted += other.accepted;
        self.deferred += other.deferred;
        self.rejected += other.rejected;
        self.recipients_accepted += other.recipients_accepted;
        self.recipients_refused += other.recipients_refused;
        self.message_bytes += other.message_bytes;
        self.pipelined_sessions += other.pipelined_sessions;
        self.helo_fallbacks += other.helo_fallbacks;
        self.sessions += other.sessions;
    }

    /// Recompute every phase's percentiles from its histogram.
    pub fn finish(&mut self) {
        for p in [
            &mut self.banner,
            &mut self.ehlo,
            &mut self.mail,
            &mut self.rcpt,
            &mut self.data,
            &mut self.starttls,
        ] {
            p.finish();
        }
    }

    /// The phases in protocol order, with their names.
    pub fn phases(&self) -> [(&'static str, &PhaseLatency); 6] {
        [
            ("banner", &self.banner),
            ("starttls", &self.starttls),
            ("ehlo", &self.ehlo),
            ("mail", &self.mail),
            ("rcpt", &self.rcpt),
            ("data", &self.data),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_merge_exactly() {
        let mut a = SmtpSummary::default();
        a.mail.record(100);
        a.replies.insert(250, 3);
        a.accepted = 1;
        let mut b = SmtpSummary::default();
        b.mail.record(300);
        b.replies.insert(250, 2);
        b.replies.insert(451, 1);
        b.deferred = 1;
        a.merge(&b);
        a.finish();
        assert_eq!(a.mail.histogram.count(), 2);
        assert_eq!(a.replies[&250], 5);
        assert_eq!((a.accepted, a.deferred), (1, 1));
        assert!(a.mail.summary.max_us >= 299);
    }

    #[test]
    fn sizes_parse_with_units_and_ranges() {
        assert_eq!(parse_size_range("1k..10k"), Ok((1024, 10240)));
        assert_eq!(parse_size_range("500"), Ok((500, 500)));
        assert_eq!(parse_size_range("0..1M"), Ok((0, 1 << 20)));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert!(parse_size_range("10k..1k").is_err());
        assert!(parse_size("ten").is_err());
        assert!(parse_size("5q").is_err());
    }

    #[test]
    fn nonsense_settings_are_refused_in_the_flags_words() {
        let mut s = SmtpSpec {
            min_size: 10,
            max_size: 5,
            ..SmtpSpec::default()
        };
        assert!(s.check().unwrap_err().contains("--size"));
        s.max_size = 20;
        assert_eq!(s.check(), Ok(()));
        s.from = "a>\r\nRCPT".into();
        assert!(s.check().unwrap_err().contains("--from"));
    }
}
