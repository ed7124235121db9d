//! `webtune smtp`'s flags (`SmtpArgs`, mapped onto a `RunSpec` with an `SmtpSpec`), the
//! mailbox list they name, and the same flags after `--` of the lab's mail stack
//! (`SmtpLine`: `lab run postfix`, `lab sweep postfix`, `tune postfix`).

use crate::flags::bench::{available_cores, load_mode, stop_condition};
use crate::output_flags::{OutputFlags, OutputHelp};
use anyhow::{bail, Context};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use webtune_engine::smtp::Mailboxes;
use webtune_engine::Workload;
use webtune_model::smtp::{parse_size_range, RecipientPick};
use webtune_model::{parse_duration, RunSpec, SmtpSpec, TlsOptions};

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
    pub format: webtune_report::Format,
    #[command(flatten)]
    pub output: OutputFlags<SmtpOutput>,
    #[command(flatten)]
    pub gate: crate::gate::ThresholdArgs,
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

/// "HOST[:PORT]" or "smtp://HOST[:PORT]" as an smtp:// URL.
pub fn smtp_url(target: &str) -> String {
    if target.starts_with("smtp://") {
        target.to_string()
    } else {
        format!("smtp://{target}")
    }
}

impl SmtpArgs {
    /// The run these flags describe, checked by `RunSpec::validate`.
    pub fn to_spec(&self) -> anyhow::Result<RunSpec> {
        let (min_size, max_size) = parse_size_range(&self.size).map_err(anyhow::Error::msg)?;
        let smtp = SmtpSpec {
            from: self.from.clone(),
            helo: self.helo.clone(),
            max_recipients: self.recipients,
            pick: if self.zipf {
                RecipientPick::Zipf
            } else {
                RecipientPick::Uniform
            },
            min_size,
            max_size,
            per_connection: self.per_connection,
            random_per_connection: self.random_per_connection,
            starttls: self.starttls,
            pipelining: !self.no_pipelining,
            seed: self.seed,
            mailboxes: 0,
        };
        let spec = RunSpec {
            url: smtp_url(&self.target),
            connections: self
                .connections
                .first()
                .copied()
                .unwrap_or(webtune_model::spec::DEFAULT_CONNECTIONS),
            threads: self.threads.unwrap_or_else(available_cores),
            stop: stop_condition(self.messages, self.duration),
            load: load_mode(self.rate, &self.arrival),
            timeout_ms: self.timeout.as_millis() as u64,
            connect_timeout_ms: self.connect_timeout.as_millis() as u64,
            warmup_s: self.warmup.map_or(0.0, |d| d.as_secs_f64()),
            interval_ms: self.interval.as_millis() as u64,
            expect_status: vec![(200, 299)],
            method: "SMTP".into(),
            tls: TlsOptions {
                insecure: self.insecure,
                cacert: self.cacert.as_ref().map(|p| p.display().to_string()),
                no_resume: false,
            },
            smtp: Some(smtp),
            ..RunSpec::default()
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// The mailboxes of `--users FILE` (`what` names the file in messages), or the generated
/// default list.
pub fn mailboxes(users: Option<&PathBuf>, what: &str) -> anyhow::Result<Workload> {
    match users {
        Some(path) => {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {what} {name}"))?;
            let list = Mailboxes::parse(&text, &name).map_err(anyhow::Error::msg)?;
            Ok(Workload::mailboxes(list, &name))
        }
        None => Ok(Workload::mailboxes(
            Mailboxes::generated(1000, "example.com"),
            "generated: user1..user1000@example.com",
        )),
    }
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

/// `tune postfix -- SMTP FLAGS`: the load of every trial (the stack's own mailboxes).
pub fn tune_load(words: &[String]) -> anyhow::Result<webtune_model::RunSpec> {
    let line = parse_line(words)?;
    if line.smtp.users.is_some() || line.smtp.connections.len() > 1 {
        bail!("tune postfix: give one -c (levels go in --levels) and no --users");
    }
    let mut spec = line.smtp.to_spec()?;
    spec.url = String::new();
    Ok(spec)
}
