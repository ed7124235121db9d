//! `webtune smtp`'s flags (`webtune_cli::flags::smtp::SmtpArgs`) mapped onto a `RunSpec` with
//! an `SmtpSpec`, the mailbox list they name, and the load of `tune postfix` (the flags after
//! `--`).

use crate::flags::bench::{available_cores, load_mode, stop_condition};
use anyhow::{bail, Context};
use std::path::PathBuf;
use webtune_cli::flags::smtp::SmtpArgs;
use webtune_engine::smtp::Mailboxes;
use webtune_engine::Workload;
use webtune_model::smtp::{parse_size_range, RecipientPick};
use webtune_model::{RunSpec, SmtpSpec, TlsOptions};

/// "HOST[:PORT]" or "smtp://HOST[:PORT]" as an smtp:// URL.
pub fn smtp_url(target: &str) -> String {
    if target.starts_with("smtp://") {
        target.to_string()
    } else {
        format!("smtp://{target}")
    }
}

/// What the binary makes of `SmtpArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait SmtpArgsExt {
    /// The run these flags describe, checked by `RunSpec::validate`.
    fn to_spec(&self) -> anyhow::Result<RunSpec>;
}

impl SmtpArgsExt for SmtpArgs {
    fn to_spec(&self) -> anyhow::Result<RunSpec> {
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

/// `tune postfix -- SMTP FLAGS`: the load of every trial (the stack's own mailboxes).
pub fn tune_load(words: &[String]) -> anyhow::Result<webtune_model::RunSpec> {
    let line = webtune_cli::flags::smtp::parse_line(words)?;
    if line.smtp.users.is_some() || line.smtp.connections.len() > 1 {
        bail!("tune postfix: give one -c (levels go in --levels) and no --users");
    }
    let mut spec = line.smtp.to_spec()?;
    spec.url = String::new();
    Ok(spec)
}
