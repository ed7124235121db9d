//! `webtune postal`: postal's flags and its per-minute output ("time,messages,data(K),
//! errors,connections,SSL connections", one line a minute of the wall clock), on webtune's
//! SMTP engine. Like postal it runs until stopped (Ctrl-C, SIGTERM); `--duration` bounds it.
//! The last, partial minute is printed at the stop (postal prints none). What the flags
//! mean is `webtune_model::dropin::postal`'s, the layout `webtune_report::postal`'s; the
//! run is `webtune smtp`'s.

use crate::exit;
use crate::flags::bench::available_cores;
use crate::running::ProgressLine;
use std::io::Write;
use webtune_cli::postal::PostalArgs;
use webtune_model::dropin::postal::PostalOptions;
use webtune_model::RunSpec;
use webtune_report::postal::{MinuteClock, Totals, HEADER};

/// What the binary makes of `PostalArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait PostalArgsExt {
    /// The SMTP run postal would make (`webtune_model::dropin::postal`), sending from `from`.
    fn to_spec(&self, from: String) -> anyhow::Result<RunSpec>;
}

impl PostalArgsExt for PostalArgs {
    fn to_spec(&self, from: String) -> anyhow::Result<RunSpec> {
        let options = PostalOptions {
            max_kb: self.max_kb,
            min_kb: self.min_kb,
            threads: self.threads,
            per_connection: self.per_connection,
            per_minute: self.per_minute,
            ssl_percent: self.ssl_percent,
            lmtp: self.lmtp,
            local: self.local.is_some(),
            port: self.port.is_some(),
            duration: self.duration,
            server: self.server.clone(),
        };
        Ok(options.to_spec(from, available_cores())?)
    }
}

fn print_line(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

pub fn run(args: PostalArgs) -> anyhow::Result<i32> {
    for (flag, given) in [
        ("-a", args.all_logging),
        ("-b", args.breakage.is_some()),
        (
            "-z/-Z",
            args.debug.is_some() || args.debug_per_connection.is_some(),
        ),
    ] {
        if given {
            crate::output::warn(&format!("webtune: postal's {flag} is ignored"));
        }
    }
    let at_once = crate::signals::exit_at_once();
    // The flags first: a bad one is reported before any file is read.
    args.to_spec(String::new())?;
    let workload = crate::flags::smtp::mailboxes(Some(&args.users), "the user list")?;
    let first_user = workload
        .mailbox_list()
        .and_then(|m| m.0.first().cloned())
        .unwrap_or_default();
    let from = match &args.senders {
        Some(path) => crate::flags::smtp::mailboxes(Some(path), "the sender list (-f)")?
            .mailbox_list()
            .and_then(|m| m.0.first().cloned())
            .unwrap_or(first_user),
        None => first_user,
    };
    let spec = args.to_spec(from)?;
    drop(at_once);
    print_line(HEADER);
    let starttls = spec.smtp.as_ref().is_some_and(|s| s.starttls);
    let totals = |messages, data_bytes, errors, connections| Totals {
        messages,
        data_bytes,
        errors,
        connections,
        tls_connections: if starttls { connections } else { 0 },
    };
    let mut clock = MinuteClock::new();
    let mut progress = ProgressLine::new("", true);
    let control = crate::signals::stop_token();
    let result = webtune_engine::run(&spec, &workload, &control, &mut |p| {
        progress.update(p);
        let refused = p
            .error_counts
            .get(webtune_model::ErrorKind::UnexpectedStatus);
        let t = totals(
            p.responses.saturating_sub(refused),
            p.message_bytes,
            p.errors,
            p.connections_opened,
        );
        if let Some(line) = clock.tick(t) {
            print_line(&line);
        }
    })?;
    let sum = result.smtp.clone().unwrap_or_default();
    let t = totals(
        sum.accepted,
        sum.message_bytes,
        result.errors.total(),
        result.connections_opened,
    );
    print_line(&clock.last(t));
    Ok(if result.interrupted {
        exit::INTERRUPTED
    } else {
        exit::SUCCESS
    })
}
