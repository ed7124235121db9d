//! `webtune postal`'s flags: postal's command line.

use std::path::PathBuf;
use std::time::Duration;
use webtune_model::parse_duration;

#[derive(clap::Args, Debug, Clone)]
#[command(
    after_help = "As postal: webtune postal -t 10 -c 3 -m 10 '[127.0.0.1]2525' users.txt\n\
    Runs until Ctrl-C (or --duration); one line a minute, the last (cut short by the stop) \
    labelled \"HH:MM (partial Ns)\".\n\n\
    The rate: postal's flags mean what they mean to postal (-t sessions, each sending its \
    next message as soon as the last is answered; -r a cap in messages a minute), but \
    webtune sends far faster than postal does with the same flags: against one smtp-sink, \
    126,981 messages a minute where postal sent 1,903 (issue 39; postal's own per-message \
    work is its limit). To load at postal's pace, give its rate: -r MSG/MIN (open loop, \
    e.g. -r 1900), or webtune smtp --rate MSG/S.\n\n\
    Not supported: -p (the port: give it in the server, '[IP]PORT'), -L (LMTP), -l (local \
    address), -s other than 0 or 100; -a, -b, -z and -Z are accepted and ignored."
)]
pub struct PostalArgs {
    /// Maximum message body size in KiB (bodies are 0..max, or -M..max).
    #[arg(short = 'm', default_value_t = 10, value_name = "KB")]
    pub max_kb: u64,
    /// Minimum message body size in KiB.
    #[arg(short = 'M', default_value_t = 0, value_name = "KB")]
    pub min_kb: u64,
    /// Threads: parallel SMTP sessions.
    #[arg(short = 't', default_value_t = 1, value_name = "N")]
    pub threads: u32,
    /// Messages per connection: N > 1 sends 1..N (random per connection); -1 without end.
    #[arg(
        short = 'c',
        default_value_t = 1,
        value_name = "N",
        allow_hyphen_values = true
    )]
    pub per_connection: i64,
    /// Messages per minute at most (open loop at that rate); default: as fast as the server
    /// answers, far faster than postal itself sends (see below: -r gives postal's pace).
    #[arg(short = 'r', value_name = "MSG/MIN")]
    pub per_minute: Option<f64>,
    /// Percentage of connections with TLS (STARTTLS): 0 or 100.
    #[arg(short = 's', default_value_t = 0, value_name = "PERCENT")]
    pub ssl_percent: u32,
    /// LMTP instead of SMTP (not supported).
    #[arg(short = 'L')]
    pub lmtp: bool,
    /// Local address(es) to connect from (not supported).
    #[arg(short = 'l', value_name = "ADDR")]
    pub local: Option<String>,
    /// postal's port (not supported: the port goes in the server, '[IP]PORT'); caught here
    /// so that the error names it instead of clap's generic one.
    #[arg(short = 'p', value_name = "PORT", hide = true)]
    pub port: Option<String>,
    /// postal: log all I/O (ignored).
    #[arg(short = 'a')]
    pub all_logging: bool,
    /// postal: Netscape breakage strings (ignored).
    #[arg(short = 'b', value_name = "[no]netscape")]
    pub breakage: Option<String>,
    /// postal: a debug file base per thread (ignored).
    #[arg(short = 'z', value_name = "FILE")]
    pub debug: Option<String>,
    /// postal: a debug file per connection too (ignored).
    #[arg(short = 'Z', value_name = "FILE")]
    pub debug_per_connection: Option<String>,
    /// Senders (envelope and From:): the first address of this file (postal picks one per
    /// message; default: the user list's first).
    #[arg(short = 'f', value_name = "FILE")]
    pub senders: Option<PathBuf>,
    /// webtune: stop after this long (postal runs until killed).
    #[arg(long = "duration", value_parser = parse_duration, value_name = "DURATION")]
    pub duration: Option<Duration>,
    /// The server: HOST (port 25), [IP]PORT as postal writes it, or HOST:PORT.
    pub server: String,
    /// The user list: one address a line.
    pub users: PathBuf,
}
