//! `webtune smtp`'s flags, and the same after `--` of `lab run postfix` / `tune postfix`.

use crate::output_flags::{OutputFlags, OutputHelp};
use anyhow::bail;
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use webtune_model::parse_duration;

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:\n  \
    webtune smtp 127.0.0.1:2525 -c 10 -d 10s\n  \
    webtune smtp mail.lab:25 --users users.txt --recipients 3 --zipf --per-connection 5 \
    --rate 200 -d 1m --json mail.json")]
pub struct SmtpArgs {
    /// The server: HOST[:PORT] or smtp://HOST[:PORT] (port 25 by default).
    pub target: String,
    /// Mailboxes to send to, one address a line ('#' comments). Default: 1,000 generated
    /// addresses user1@example.com … user1000@example.com.
    #[arg(long = "users", value_name = "FILE")]
    pub users: Option<PathBuf>,
    /// Stop after exactly this many messages have been answered or failed.
    #[arg(short = 'n', long = "messages", conflicts_with = "duration")]
    pub messages: Option<u64>,
    /// Stop sending after this long (default 10s unless -n is given).
    #[arg(short = 'd', long = "duration", value_parser = parse_duration, value_name = "DURATION")]
    pub duration: Option<Duration>,
    /// Parallel SMTP sessions (closed loop; with --rate, the most opened). Several,
    /// comma-separated (1,10,100), sweep them: one run per level, a table and the knee.
    #[arg(
        short = 'c',
        long = "connections",
        default_value = "10",
        value_delimiter = ',',
        value_name = "N[,N…]"
    )]
    pub connections: Vec<u32>,
    /// Open loop: this many messages per second in all, latency from each message's
    /// intended start (coordinated-omission corrected).
    #[arg(long = "rate", value_name = "MSG/S")]
    pub rate: Option<f64>,
    /// Open loop: spacing of intended starts, uniform or poisson.
    #[arg(long = "arrival", default_value = "uniform", value_parser = ["uniform", "poisson"])]
    pub arrival: String,
    /// Message size range (headers and body), uniform: MIN..MAX or one SIZE; k and M units.
    #[arg(long = "size", default_value = "1k..10k", value_name = "MIN..MAX")]
    pub size: String,
    /// Recipients per message: uniformly 1..N.
    #[arg(long = "recipients", default_value_t = 1, value_name = "N")]
    pub recipients: u32,
    /// Draw recipients Zipf-distributed (the list's first mailboxes get most mail) instead
    /// of uniformly.
    #[arg(long = "zipf")]
    pub zipf: bool,
    /// Messages per connection before QUIT.
    #[arg(long = "per-connection", default_value_t = 1, value_name = "N")]
    pub per_connection: u64,
    /// Send 1..N messages per connection, drawn per connection (postal's -c).
    #[arg(long = "random-per-connection")]
    pub random_per_connection: bool,
    /// STARTTLS after EHLO (a server that does not offer it fails every session).
    #[arg(long = "starttls")]
    pub starttls: bool,
    /// STARTTLS: accept any server certificate.
    #[arg(long = "insecure", conflicts_with = "cacert")]
    pub insecure: bool,
    /// STARTTLS: trust the PEM certificate(s) in FILE instead of the system's roots.
    #[arg(long = "cacert", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Envelope sender and From: address.
    #[arg(
        long = "from",
        default_value = "webtune@example.com",
        value_name = "ADDR"
    )]
    pub from: String,
    /// The name sent in EHLO.
    #[arg(
        long = "helo",
        default_value = "webtune.example.com",
        value_name = "NAME"
    )]
    pub helo: String,
    /// Seed of the generated messages and recipient picks (same seed, same mail).
    #[arg(long = "seed", default_value_t = 1)]
    pub seed: u64,
    /// Send one command at a time even when the server offers PIPELINING.
    #[arg(long = "no-pipelining")]
    pub no_pipelining: bool,
    /// Worker threads (default: available cores; never more than connections).
    #[arg(short = 't', long = "threads")]
    pub threads: Option<u32>,
    /// Give up on a reply this long after its command (or the connect, for the banner).
    #[arg(long = "timeout", default_value = "30s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub timeout: Duration,
    /// Give up connecting (and on a STARTTLS handshake) after this long.
    #[arg(long = "connect-timeout", default_value = "5s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub connect_timeout: Duration,
    /// Keep the first stretch in the time series but out of the summary.
    #[arg(long = "warmup", value_parser = parse_duration, value_name = "DURATION")]
    pub warmup: Option<Duration>,
    /// Time-series interval.
    #[arg(long = "interval", default_value = "1s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub interval: Duration,
    /// Layout of the summary on stdout: text, json, csv or html.
    #[arg(
        short = 'f',
        long = "format",
        default_value = "text",
        value_name = "FORMAT"
    )]
    pub format: webtune_model::format::Format,
    #[command(flatten)]
    pub output: OutputFlags<SmtpOutput>,
    #[command(flatten)]
    pub gate: crate::flags::threshold::ThresholdArgs,
}

/// The help of smtp's output flags.
#[derive(Debug, Clone)]
pub struct SmtpOutput;

impl OutputHelp for SmtpOutput {
    const JSON: &'static str =
        "Write the full result as JSON (schema webtune.smtp/1) to FILE, or \"-\" for stdout";
    const HTML: &'static str = "Write a self-contained HTML report (SVG plots, no network) to FILE";
    const CSV: Option<&'static str> = Some(
        "Also write the summary as CSV (a header line and one line of figures) to FILE or \"-\"",
    );
    const REPEAT: Option<&'static str> =
        Some("Run the test N times and keep every run's summary (for compare's intervals)");
    const QUIET: &'static str =
        "No progress line and no text summary; files and a --format other than text still are";
}

/// `webtune smtp`'s flags after `--`, with the lab's own.
#[derive(Parser)]
#[command(name = "webtune lab run postfix --", disable_version_flag = true)]
pub struct SmtpLine {
    #[command(flatten)]
    pub smtp: SmtpArgs,
    /// After each level's load, wait at most this long for the queue to drain before the
    /// deliveries are counted (0: count at once and keep the queue for the next level).
    #[arg(long = "drain", value_parser = parse_duration, value_name = "DURATION")]
    pub drain: Option<Duration>,
}

pub fn parse_line(words: &[String]) -> anyhow::Result<SmtpLine> {
    // The target is the stack's: a placeholder fills smtp's HOST:PORT.
    let argv = ["webtune lab run postfix --".to_string(), "lab".to_string()]
        .into_iter()
        .chain(words.iter().cloned());
    match SmtpLine::try_parse_from(argv) {
        Ok(line) => Ok(line),
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            bail!(
                "smtp flags after --: {} (see webtune smtp --help)",
                first.trim_start_matches("error: ")
            )
        }
    }
}
