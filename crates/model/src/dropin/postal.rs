//! postal's flags with postal's meaning (`webtune postal`): its server argument and the
//! SMTP run its flags ask for (`PostalOptions::to_spec`). The per-minute layout is
//! `webtune_report::postal`'s.

use super::{unchecked_tls, OptionError};
use crate::smtp::RecipientPick;
use crate::{Arrival, LoadMode, RunSpec, SmtpSpec, StopCondition};
use std::time::Duration;

/// postal's flags that shape the run, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct PostalOptions {
    /// -m, KiB
    pub max_kb: u64,
    /// -M, KiB
    pub min_kb: u64,
    /// -t: parallel sessions
    pub threads: u32,
    /// -c: messages per connection (N > 1: 1..N at random; -1 without end)
    pub per_connection: i64,
    /// -r: messages a minute at most
    pub per_minute: Option<f64>,
    /// -s: percentage of connections with STARTTLS
    pub ssl_percent: u32,
    /// -L (refused)
    pub lmtp: bool,
    /// -l (refused)
    pub local: bool,
    /// -p (refused: the port goes in the server)
    pub port: bool,
    /// --duration (postal runs until killed)
    pub duration: Option<Duration>,
    /// The server argument, as postal takes it.
    pub server: String,
}

/// postal's server argument as HOST:PORT: "[10.0.0.1]2525", "+host", "host" (port 25).
pub fn server_address(text: &str) -> Result<String, OptionError> {
    let t = text.trim().trim_start_matches('+');
    if t.contains(',') {
        bail!("postal server {text:?}: one server only (round-robin lists are not supported)");
    }
    if let Some(rest) = t.strip_prefix('[') {
        let Some((host, port)) = rest.split_once(']') else {
            bail!("postal server {text:?}: no closing ']'");
        };
        let port = if port.is_empty() { "25" } else { port };
        if port.parse::<u16>().is_err() {
            bail!("postal server {text:?}: bad port");
        }
        return Ok(format!("{host}:{port}"));
    }
    Ok(match t.rsplit_once(':') {
        Some((_, p)) if p.parse::<u16>().is_ok() => t.to_string(),
        _ => format!("{t}:25"),
    })
}

impl PostalOptions {
    /// The SMTP run postal would make, sending from `from`, on `cores` threads at most.
    pub fn to_spec(&self, from: String, cores: u32) -> Result<RunSpec, OptionError> {
        if self.lmtp {
            bail!("-L (LMTP) is not supported: webtune postal speaks SMTP");
        }
        if self.local {
            bail!("-l (local addresses) is not supported");
        }
        if self.port {
            bail!("-p (the port) is not supported: give it in the server, e.g. '[127.0.0.1]2525'");
        }
        let starttls = match self.ssl_percent {
            0 => false,
            100 => true,
            n => bail!("-s {n}: webtune postal supports -s 0 or -s 100 (all or no STARTTLS)"),
        };
        let (per_connection, random) = match self.per_connection {
            -1 => (u64::MAX / 2, false),
            n if n < 1 => bail!("-c {n}: give 1 or more messages per connection, or -1"),
            1 => (1, false),
            n => (n as u64, true),
        };
        if self.min_kb > self.max_kb {
            bail!("-M {} is above -m {}", self.min_kb, self.max_kb);
        }
        let load = match self.per_minute {
            None => LoadMode::Closed,
            Some(r) => LoadMode::Open {
                rate: r / 60.0,
                arrival: Arrival::Uniform,
            },
        };
        let spec = RunSpec {
            url: format!("smtp://{}", server_address(&self.server)?),
            connections: self.threads,
            threads: cores.min(self.threads.max(1)),
            stop: StopCondition::Duration {
                seconds: self.duration.map_or(1e9, |d| d.as_secs_f64()),
            },
            load,
            expect_status: vec![(200, 299)],
            method: "SMTP".into(),
            tls: unchecked_tls(),
            smtp: Some(SmtpSpec {
                from,
                max_recipients: 1,
                pick: RecipientPick::Uniform,
                min_size: self.min_kb * 1024,
                max_size: self.max_kb * 1024,
                per_connection,
                random_per_connection: random,
                starttls,
                ..SmtpSpec::default()
            }),
            ..RunSpec::default()
        };
        spec.validate().map_err(|e| OptionError(e.to_string()))?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_read_as_postal_writes_them() {
        assert_eq!(server_address("[127.0.0.1]2525").unwrap(), "127.0.0.1:2525");
        assert_eq!(
            server_address("mail.example.com").unwrap(),
            "mail.example.com:25"
        );
        assert_eq!(server_address("+mail:26").unwrap(), "mail:26");
        assert_eq!(server_address("[10.0.0.1]").unwrap(), "10.0.0.1:25");
        assert!(server_address("a,b").is_err());
        assert!(server_address("[1.2.3.4]x").is_err());
    }

    #[test]
    fn postals_flags_make_an_smtp_run() {
        let o = PostalOptions {
            max_kb: 10,
            min_kb: 0,
            threads: 3,
            per_connection: 5,
            per_minute: Some(120.0),
            ssl_percent: 0,
            lmtp: false,
            local: false,
            port: false,
            duration: Some(Duration::from_secs(2)),
            server: "[127.0.0.1]2525".into(),
        };
        let spec = o.to_spec("a@b".into(), 8).unwrap();
        assert_eq!(spec.url, "smtp://127.0.0.1:2525");
        assert_eq!(spec.threads, 3);
        let smtp = spec.smtp.unwrap();
        assert_eq!((smtp.per_connection, smtp.random_per_connection), (5, true));
        assert_eq!(
            spec.load,
            LoadMode::Open {
                rate: 2.0,
                arrival: Arrival::Uniform
            }
        );
        let e = PostalOptions {
            ssl_percent: 50,
            ..o
        }
        .to_spec(String::new(), 1);
        assert!(e.unwrap_err().to_string().starts_with("-s 50"));
    }
}
