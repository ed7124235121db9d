//! ab's output layout (ApacheBench 2.3), its `-e` percentile CSV and its `-g` gnuplot file,
//! rendered from a `RunResult`.
//!
//! ab keeps one record per request; webtune keeps HdrHistograms. Every count and the
//! "Total" row and percentile table are exact (to the histogram's 3 significant digits).
//! The "Connect" row is exact too: requests that reused a connection are ab's zero connect
//! times, so its quantiles are those of the mixture of zeros and the connect histogram.
//! "Processing" and "Waiting" subtract the mean connect time per request from the total and
//! first-byte figures (webtune does not pair the three times per request). The `-g` file is
//! rebuilt rank by rank from the histograms (sorted by total time, as ab sorts it).

use crate::units::{ctime_utc, round_ms};
use std::fmt::Write as _;
use webtune_model::{ErrorKind, LatencyHistogram, RunResult};

/// ab's progress on stderr: "Completed N requests" each time `every` more requests are
/// done, then "Finished N requests". ab's rule (ab.c, ApacheBench 2.3, checked against the
/// installed ab): none at all with -q or for 150 requests or fewer (the dots and "done"
/// follow "Benchmarking" on stdout instead), else every tenth of the requests, at least
/// every 100; -t counts as its 50,000 requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbHeartbeat {
    every: u64,
    shown: u64,
}

impl AbHeartbeat {
    /// The heartbeat of a run of `requests` (None: ab shows the dots instead).
    pub fn new(requests: u64, quiet: bool) -> Option<AbHeartbeat> {
        (!quiet && requests > 150).then(|| AbHeartbeat {
            every: (requests / 10).max(100),
            shown: 0,
        })
    }

    /// The "Completed N requests" lines due now that `done` requests are done (each once).
    pub fn lines_up_to(&mut self, done: u64) -> String {
        let mut out = String::new();
        while self.shown + self.every <= done {
            self.shown += self.every;
            let _ = writeln!(out, "Completed {} requests", self.shown);
        }
        out
    }
}

/// The ab options that change what its report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbLayout {
    /// `-l`: the document length may vary; length differences are not failures.
    pub variable_length: bool,
    /// Not `-d`: print the "Percentage of the requests served" table.
    pub percentiles: bool,
    /// Not `-S`: print mean ± sd and median in the Connection Times table.
    pub confidence: bool,
}

impl Default for AbLayout {
    fn default() -> Self {
        AbLayout {
            variable_length: false,
            percentiles: true,
            confidence: true,
        }
    }
}

/// ab's failure counts: what its "Failed requests" line adds up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AbFailures {
    pub connect: u64,
    pub receive: u64,
    pub length: u64,
    pub exceptions: u64,
}

impl AbFailures {
    pub fn of(result: &RunResult, layout: &AbLayout) -> AbFailures {
        let e = &result.errors;
        AbFailures {
            connect: ErrorKind::ALL
                .into_iter()
                // ab counts a failed SSL handshake as a failed connect.
                .filter(|k| k.is_connect() || k.is_tls())
                .map(|k| e.get(k))
                .sum(),
            receive: e.get(ErrorKind::Reset)
                + e.get(ErrorKind::RequestTimeout)
                + e.get(ErrorKind::ClosedEarly),
            length: if layout.variable_length {
                0
            } else {
                result.length_varies
            },
            exceptions: e.get(ErrorKind::Malformed) + e.get(ErrorKind::HeaderTooLarge),
        }
    }

    pub fn total(&self) -> u64 {
        self.connect + self.receive + self.length + self.exceptions
    }
}

/// Host, port and path of a URL as ab prints them.
pub fn split_url(url: &str) -> (String, u16, String) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let default_port = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if let Some(stripped) = authority.strip_prefix('[') {
        match stripped.split_once(']') {
            Some((h, p)) => (
                h.to_string(),
                p.strip_prefix(':').and_then(|p| p.parse().ok()),
            ),
            None => (stripped.to_string(), None),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse().ok()),
            None => (authority.to_string(), None),
        }
    };
    (host, port.unwrap_or(default_port), path)
}

/// Summary figures of one row of ab's Connection Times table, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct TimeRow {
    min: f64,
    mean: f64,
    sd: f64,
    median: f64,
    max: f64,
}

impl TimeRow {
    fn of(h: &LatencyHistogram) -> TimeRow {
        TimeRow {
            min: h.min() as f64,
            mean: h.mean(),
            sd: h.stdev(),
            median: h.percentile(50.0) as f64,
            max: h.max() as f64,
        }
    }

    fn shifted_down(self, by: f64) -> TimeRow {
        let sub = |v: f64| (v - by).max(0.0);
        TimeRow {
            min: sub(self.min),
            mean: sub(self.mean),
            sd: self.sd,
            median: sub(self.median),
            max: sub(self.max),
        }
    }
}

/// Connect times over *all* requests: the ones that reused a connection count as 0, as in ab.
struct ConnectMixture<'a> {
    connect: &'a LatencyHistogram,
    /// Fraction of requests that reused a connection (connect time 0).
    zero_share: f64,
}

impl<'a> ConnectMixture<'a> {
    fn new(result: &'a RunResult) -> Self {
        let requests = result.histograms.total.count();
        let connects = result.histograms.connect.count().min(requests);
        let zero_share = if requests == 0 {
            0.0
        } else {
            (requests - connects) as f64 / requests as f64
        };
        ConnectMixture {
            connect: &result.histograms.connect,
            zero_share,
        }
    }

    /// Value at quantile q (0..=1).
    fn quantile(&self, q: f64) -> f64 {
        if self.connect.is_empty() || q <= self.zero_share {
            0.0
        } else {
            let within = ((q - self.zero_share) / (1.0 - self.zero_share)).clamp(0.0, 1.0);
            self.connect.percentile(within * 100.0) as f64
        }
    }

    fn row(&self) -> TimeRow {
        if self.connect.is_empty() {
            return TimeRow {
                min: 0.0,
                mean: 0.0,
                sd: 0.0,
                median: 0.0,
                max: 0.0,
            };
        }
        let share = 1.0 - self.zero_share;
        let mean_c = self.connect.mean();
        let sd_c = self.connect.stdev();
        let mean = mean_c * share;
        let second_moment = share * (sd_c * sd_c + mean_c * mean_c);
        TimeRow {
            min: if self.zero_share > 0.0 {
                0.0
            } else {
                self.connect.min() as f64
            },
            mean,
            sd: (second_moment - mean * mean).max(0.0).sqrt(),
            median: self.quantile(0.5),
            max: self.connect.max() as f64,
        }
    }
}

/// The percentages ab's table lists.
pub const AB_PERCENTAGES: [u32; 9] = [50, 66, 75, 80, 90, 95, 98, 99, 100];

/// Render a result in ab's layout, from "Server Software:" to the percentile table.
pub fn render_ab(result: &RunResult, layout: &AbLayout) -> String {
    let mut out = String::new();
    let spec = &result.spec;
    let (host, port, path) = split_url(&spec.url);
    let _ = writeln!(
        out,
        "Server Software:        {}",
        result.server_software.as_deref().unwrap_or("")
    );
    let _ = writeln!(out, "Server Hostname:        {host}");
    let _ = writeln!(out, "Server Port:            {port}");
    if let Some(tls) = &result.tls {
        let version = tls.version.as_deref().unwrap_or("-");
        let cipher = tls.cipher.as_deref().unwrap_or("-");
        let _ = writeln!(out, "SSL/TLS Protocol:       {version},{cipher}");
        let _ = writeln!(out, "TLS Server Name:        {host}");
    }
    out.push('\n');
    let _ = writeln!(out, "Document Path:          {path}");
    if layout.variable_length {
        let _ = writeln!(out, "Document Length:        Variable");
    } else {
        let _ = writeln!(
            out,
            "Document Length:        {} bytes",
            result.first_body_bytes.unwrap_or(0)
        );
    }
    out.push('\n');
    let complete = result.attempted();
    let failures = AbFailures::of(result, layout);
    let seconds = result.duration_s;
    let _ = writeln!(out, "Concurrency Level:      {}", spec.connections);
    let _ = writeln!(out, "Time taken for tests:   {seconds:.3} seconds");
    let _ = writeln!(out, "Complete requests:      {complete}");
    let _ = writeln!(out, "Failed requests:        {}", failures.total());
    if failures.total() > 0 {
        let _ = writeln!(
            out,
            "   (Connect: {}, Receive: {}, Length: {}, Exceptions: {})",
            failures.connect, failures.receive, failures.length, failures.exceptions
        );
    }
    let non_2xx: u64 = result
        .status
        .iter()
        .filter(|(code, _)| !(200..300).contains(*code))
        .map(|(_, n)| n)
        .sum();
    if non_2xx > 0 {
        let _ = writeln!(out, "Non-2xx responses:      {non_2xx}");
    }
    if spec.keepalive {
        // ab counts the responses the server offered to keep the connection open for.
        let _ = writeln!(
            out,
            "Keep-Alive requests:    {}",
            result.keepalive_responses
        );
    }
    let _ = writeln!(
        out,
        "Total transferred:      {} bytes",
        result.bytes_received
    );
    let sends_body = spec.body_bytes > 0;
    if sends_body {
        let _ = writeln!(out, "Total body sent:        {}", result.bytes_sent);
    }
    let _ = writeln!(out, "HTML transferred:       {} bytes", result.body_bytes);
    if seconds > 0.0 && complete > 0 {
        let per_request_ms = seconds * 1000.0 / complete as f64;
        let _ = writeln!(
            out,
            "Requests per second:    {:.2} [#/sec] (mean)",
            result.requests_per_s
        );
        let _ = writeln!(
            out,
            "Time per request:       {:.3} [ms] (mean)",
            per_request_ms * spec.connections as f64
        );
        let _ = writeln!(
            out,
            "Time per request:       {per_request_ms:.3} [ms] (mean, across all concurrent requests)"
        );
        let received = result.bytes_received as f64 / 1024.0 / seconds;
        let _ = writeln!(
            out,
            "Transfer rate:          {received:.2} [Kbytes/sec] received"
        );
        if sends_body {
            let sent = result.bytes_sent as f64 / 1024.0 / seconds;
            let _ = writeln!(out, "                        {sent:.2} kb/s sent");
            let _ = writeln!(
                out,
                "                        {:.2} kb/s total",
                sent + received
            );
        }
    }
    if result.histograms.total.count() > 0 {
        write_connection_times(&mut out, result, layout);
    }
    if layout.percentiles && result.histograms.total.count() > 1 {
        out.push('\n');
        let _ = writeln!(
            out,
            "Percentage of the requests served within a certain time (ms)"
        );
        for (pct, ms) in ab_percentile_table(result) {
            if pct == 100 {
                let _ = writeln!(out, " 100%  {ms:5} (longest request)");
            } else {
                let _ = writeln!(out, "  {pct}%  {ms:5}");
            }
        }
    }
    out
}

/// ab's percentile table: (percent, whole milliseconds) of the total time.
pub fn ab_percentile_table(result: &RunResult) -> Vec<(u32, i64)> {
    let total = &result.histograms.total;
    AB_PERCENTAGES
        .iter()
        .map(|&p| {
            let us = if p == 100 {
                total.max()
            } else {
                total.percentile(p as f64)
            };
            (p, round_ms(us as f64))
        })
        .collect()
}

fn time_rows(result: &RunResult) -> [(&'static str, TimeRow); 4] {
    let mixture = ConnectMixture::new(result);
    let connect = mixture.row();
    let total = TimeRow::of(&result.histograms.total);
    let first_byte = TimeRow::of(&result.histograms.first_byte);
    [
        ("Connect:    ", connect),
        ("Processing: ", total.shifted_down(connect.mean)),
        ("Waiting:    ", first_byte.shifted_down(connect.mean)),
        ("Total:      ", total),
    ]
}

fn write_connection_times(out: &mut String, result: &RunResult, layout: &AbLayout) {
    out.push('\n');
    let _ = writeln!(out, "Connection Times (ms)");
    let rows = time_rows(result);
    if layout.confidence {
        let _ = writeln!(out, "              min  mean[+/-sd] median   max");
        for (label, row) in rows {
            let _ = writeln!(
                out,
                "{label}{:5} {:4} {:5.1} {:6} {:7}",
                round_ms(row.min),
                round_ms(row.mean),
                row.sd / 1000.0,
                round_ms(row.median),
                round_ms(row.max)
            );
        }
    } else {
        let _ = writeln!(out, "              min   avg   max");
        for (label, row) in rows {
            let _ = writeln!(
                out,
                "{label}{:5} {:5} {:4}",
                round_ms(row.min),
                round_ms(row.mean),
                round_ms(row.max)
            );
        }
    }
}

/// What ab writes with `-e FILE`: the time (ms) within which each percentage 0..=100 of the
/// requests was served.
pub fn ab_percentile_csv(result: &RunResult) -> String {
    let total = &result.histograms.total;
    let mut out = String::from("Percentage served,Time in ms\n");
    for pct in 0..=100u32 {
        let us = match pct {
            0 => total.min(),
            100 => total.max(),
            p => total.percentile(p as f64),
        };
        let _ = writeln!(out, "{pct},{:.3}", us as f64 / 1000.0);
    }
    out
}

/// Expand a histogram into its values in ascending order (one per recorded request).
fn sorted_values(h: &LatencyHistogram) -> Vec<u64> {
    let mut values = Vec::with_capacity(h.count() as usize);
    for (value, count) in h.iter_recorded() {
        values.extend((0..count).map(|_| value));
    }
    values
}

/// What ab writes with `-g FILE`: a tab-separated row per request, sorted by total time:
/// starttime, seconds, ctime, dtime, ttime, wait (whole milliseconds). Rebuilt from the
/// histograms rank by rank; the start time is the run's start for every row.
pub fn ab_gnuplot(result: &RunResult) -> String {
    let total = sorted_values(&result.histograms.total);
    let first_byte = sorted_values(&result.histograms.first_byte);
    let mixture = ConnectMixture::new(result);
    let connect_mean = mixture.row().mean;
    let start = ctime_utc(result.started_at_unix_ms);
    let seconds = result.started_at_unix_ms / 1000;
    let n = total.len();
    let mut out = String::from("starttime\tseconds\tctime\tdtime\tttime\twait\n");
    for (rank, &ttime_us) in total.iter().enumerate() {
        let q = (rank as f64 + 0.5) / n as f64;
        let ctime = round_ms(mixture.quantile(q));
        let ttime = round_ms(ttime_us as f64);
        let wait_us = if first_byte.is_empty() {
            0.0
        } else {
            let i = ((q * first_byte.len() as f64) as usize).min(first_byte.len() - 1);
            (first_byte[i] as f64 - connect_mean).max(0.0)
        };
        let _ = writeln!(
            out,
            "{start}\t{seconds}\t{ctime}\t{}\t{ttime}\t{}",
            (ttime - ctime).max(0),
            round_ms(wait_us)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heartbeat_is_abs_every_tenth_at_least_every_hundred() {
        assert_eq!(AbHeartbeat::new(150, false), None);
        assert_eq!(AbHeartbeat::new(1000, true), None);
        let mut beat = AbHeartbeat::new(151, false).unwrap();
        assert_eq!(beat.lines_up_to(151), "Completed 100 requests\n");
        let mut beat = AbHeartbeat::new(2500, false).unwrap();
        assert_eq!(beat.lines_up_to(249), "");
        assert_eq!(
            beat.lines_up_to(600),
            "Completed 250 requests\nCompleted 500 requests\n"
        );
        assert_eq!(beat.lines_up_to(600), "");
    }
    use webtune_testkit::results::synthetic_result;

    #[test]
    fn url_parts_as_ab_prints_them() {
        assert_eq!(
            split_url("http://127.0.0.1:8080/a?b=1"),
            ("127.0.0.1".into(), 8080, "/a?b=1".into())
        );
        assert_eq!(
            split_url("https://example.org"),
            ("example.org".into(), 443, "/".into())
        );
        assert_eq!(
            split_url("http://[::1]:81/x"),
            ("::1".into(), 81, "/x".into())
        );
    }

    #[test]
    fn counts_and_failures_follow_ab() {
        let mut r = synthetic_result(1000, &[1_000, 2_000, 3_000, 4_000]);
        r.keepalive_responses = 990;
        let text = render_ab(&r, &AbLayout::default());
        assert!(text.contains("Server Software:        nginx/1.22.1\n"));
        assert!(text.contains("Server Port:            8080\n"));
        assert!(text.contains("Document Path:          /forum/index.php?f=2\n"));
        assert!(text.contains("Document Length:        1234 bytes\n"));
        assert!(text.contains("Complete requests:      1005\n"), "{text}");
        // 3 connect + 2 receive + 50 length
        assert!(text.contains("Failed requests:        55\n"));
        assert!(text.contains("   (Connect: 3, Receive: 2, Length: 50, Exceptions: 0)\n"));
        // ab's order: Non-2xx, then Keep-Alive (the responses the server kept alive)
        assert!(text.contains("Non-2xx responses:      20\nKeep-Alive requests:    990\n"));
        assert!(text.contains("Requests per second:    100.00 [#/sec] (mean)\n"));
        assert!(text.contains(" 100%      4 (longest request)\n"), "{text}");
        assert!(text.contains("  50%      2\n"));
        let variable = render_ab(
            &r,
            &AbLayout {
                variable_length: true,
                ..AbLayout::default()
            },
        );
        assert!(variable.contains("Document Length:        Variable\n"));
        assert!(variable.contains("Length: 0,"));
    }

    #[test]
    fn connect_row_counts_reused_connections_as_zero() {
        // 1 in 10 requests opened a connection: ab's median connect time is 0.
        let r = synthetic_result(1000, &[50_000]);
        let rows = time_rows(&r);
        let connect = rows[0].1;
        assert_eq!(connect.median, 0.0);
        assert_eq!(connect.min, 0.0);
        assert!((connect.mean - 500.0).abs() < 5.0, "{connect:?}");
        assert!(connect.max >= 4_990.0);
        let text = render_ab(&r, &AbLayout::default());
        assert!(
            text.contains("Connect:        0    1   1.5      0       5\n"),
            "{text}"
        );
        assert!(text.contains("Total:         50   50   0.0     50      50\n"));
    }

    #[test]
    fn e_and_g_files_have_abs_shape() {
        let r = synthetic_result(200, &[1_000, 2_000]);
        let csv = ab_percentile_csv(&r);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 102);
        assert_eq!(lines[0], "Percentage served,Time in ms");
        assert_eq!(lines[1], "0,1.000");
        assert_eq!(lines[101], "100,2.000");
        let g = ab_gnuplot(&r);
        let rows: Vec<&str> = g.lines().collect();
        assert_eq!(rows[0], "starttime\tseconds\tctime\tdtime\tttime\twait");
        assert_eq!(rows.len(), 201);
        let ttimes: Vec<i64> = rows[1..]
            .iter()
            .map(|l| l.split('\t').nth(4).unwrap().parse().unwrap())
            .collect();
        assert!(ttimes.windows(2).all(|w| w[0] <= w[1]));
        assert!(rows[1].starts_with("Tue Nov 14 22:13:20 2023\t1700000000\t"));
    }
}
