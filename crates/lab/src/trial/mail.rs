//! `lab run postfix` and `lab sweep postfix` as a request: the lab's private Postfix with
//! its settings, loaded by the SMTP engine at each level on one start (the queue kept
//! between levels), sent to the stack's generated mailboxes (the trial reads its users.txt)
//! unless the caller names others, each level's deliveries counted after its queue drained
//! for at most `drain`.

use super::{Level, Target, Trial};
use crate::host::{self, HostSettings};
use crate::stacks::{settings_for, StackKind};
use crate::LabError;
use std::time::Duration;
use webtune_engine::Workload;
use webtune_model::RunSpec;

/// Is this the mail stack's name?
pub fn is_mail(stack: Option<&str>) -> bool {
    stack.is_some_and(|s| s.eq_ignore_ascii_case(StackKind::Postfix.name()))
}

/// The mail stack and how it is loaded.
#[derive(Debug, Clone)]
pub struct MailRequest {
    /// `NAME=VALUE` (`lab params postfix`).
    pub set: Vec<String>,
    /// Other mailboxes than the stack's own (`--users`).
    pub mailboxes: Option<Workload>,
    /// Sessions at each level.
    pub connections: Vec<u32>,
    /// Runs per level.
    pub repeat: u32,
    /// After each level, wait at most this long for the queue to drain (zero: count at
    /// once and keep the queue for the next level).
    pub drain: Duration,
    pub pause: Duration,
    pub sample_interval: Duration,
    pub keep: bool,
    /// CPU sets (Postfix listens on 127.0.0.1 only).
    pub host: HostSettings,
}

impl Default for MailRequest {
    /// One level, its queue drained for at most 30 s.
    fn default() -> MailRequest {
        MailRequest {
            set: Vec::new(),
            mailboxes: None,
            connections: Vec::new(),
            repeat: 1,
            drain: Duration::from_secs(30),
            pause: Duration::ZERO,
            sample_interval: crate::DEFAULT_INTERVAL,
            keep: false,
            host: HostSettings::default(),
        }
    }
}

impl MailRequest {
    /// The trial of `spec` (an SMTP load; its URL is the stack's) on the postfix stack.
    pub fn trial(&self, spec: RunSpec) -> Result<Trial, LabError> {
        let stack = StackKind::Postfix;
        let settings = settings_for(stack, &self.set)?;
        host::check_privilege(&settings)?;
        let mut spec = spec;
        spec.url = String::new();
        let mut trial = Trial::new(
            Target::Stack {
                kind: stack,
                settings,
            },
            spec,
        );
        if let Some(mailboxes) = &self.mailboxes {
            trial.workload = mailboxes.clone();
        }
        trial.levels = self
            .connections
            .iter()
            .map(|&c| Level::Connections(c))
            .collect();
        trial.repeat = self.repeat;
        trial.mail_drain = self.drain;
        trial.pause = self.pause;
        trial.sample_interval = self.sample_interval;
        trial.keep_dir = self.keep;
        trial.host = HostSettings {
            addresses: 1,
            ..self.host.clone()
        };
        Ok(trial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mail_stack_is_loaded_at_each_level_on_its_own_address() {
        let request = MailRequest {
            connections: vec![1, 10],
            drain: Duration::ZERO,
            host: HostSettings {
                addresses: 4,
                ..HostSettings::default()
            },
            ..MailRequest::default()
        };
        let spec = RunSpec {
            url: "smtp://127.0.0.1:25".into(),
            ..RunSpec::default()
        };
        let trial = request.trial(spec).unwrap();
        assert_eq!(trial.target.name(), "postfix");
        assert_eq!(trial.load.url, "");
        assert_eq!(
            trial.levels,
            [Level::Connections(1), Level::Connections(10)]
        );
        assert_eq!(trial.mail_drain, Duration::ZERO);
        assert_eq!(trial.host.addresses, 1);
        assert!(is_mail(Some("Postfix")) && !is_mail(Some("nginx")) && !is_mail(None));
        let bad = MailRequest {
            set: vec!["NoSuchThing=1".into()],
            ..request
        };
        assert!(bad.trial(RunSpec::default()).is_err());
    }
}
