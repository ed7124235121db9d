//! SMTP as a protocol of the HTTP worker (`worker::smtp_io` drives it on the same loop,
//! pacing, recorder and schedule): what every connection of a run shares (`SmtpSetup`:
//! pre-encoded commands, the mailbox list and its picker, a block of generated text the
//! message bodies are cut from), the reply parser (`reply`) and a connection's session
//! state (`session`). A "request" of an SMTP run is one message: MAIL, RCPT…, DATA and the
//! message, answered by the reply to its final dot.

pub mod message;
pub mod reply;
pub mod session;

use crate::rng::Rng;
use crate::EngineError;
use std::sync::Arc;
use webtune_model::smtp::RecipientPick;
use webtune_model::SmtpSpec;

/// The mailbox list recipients are drawn from (`--users FILE`, or generated).
#[derive(Debug, Clone, PartialEq)]
pub struct Mailboxes(pub Vec<String>);

impl Mailboxes {
    /// `count` addresses user1@DOMAIN … userN@DOMAIN.
    pub fn generated(count: usize, domain: &str) -> Mailboxes {
        Mailboxes((1..=count).map(|n| format!("user{n}@{domain}")).collect())
    }

    /// One address a line; blank lines and lines starting with '#' are skipped. An address
    /// with CR, NUL, '<' or '>' (it would break the command it is sent in) is refused.
    pub fn parse(text: &str, name: &str) -> Result<Mailboxes, String> {
        let mut out = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let addr = line.trim();
            if addr.is_empty() || addr.starts_with('#') {
                continue;
            }
            if addr
                .bytes()
                .any(|b| b == b'\r' || b == 0 || b == b'<' || b == b'>' || b == b' ')
            {
                return Err(format!(
                    "{name}:{}: {addr:?} is not a mailbox address (no spaces, '<' or '>')",
                    n + 1
                ));
            }
            out.push(addr.to_string());
        }
        if out.is_empty() {
            return Err(format!("{name} holds no mailbox address (one a line)"));
        }
        Ok(Mailboxes(out))
    }
}

/// What every connection of an SMTP run shares; built once before the run.
#[derive(Debug)]
pub struct SmtpSetup {
    pub spec: SmtpSpec,
    /// "EHLO name\r\n", "HELO name\r\n", "MAIL FROM:<from>\r\n".
    pub ehlo: Vec<u8>,
    pub helo: Vec<u8>,
    pub mail_from: Vec<u8>,
    /// "RCPT TO:<addr>\r\n" per mailbox.
    pub rcpt: Vec<Vec<u8>>,
    /// The mailboxes themselves (the To: header).
    pub mailboxes: Vec<String>,
    /// Zipf: the cumulative weights of the mailboxes (empty: uniform).
    zipf_cdf: Vec<f64>,
    /// Text the bodies are cut from (lines of `message::LINE` bytes).
    pub text: Vec<u8>,
}

impl SmtpSetup {
    pub fn new(spec: &SmtpSpec, mailboxes: &Mailboxes) -> Result<Arc<SmtpSetup>, EngineError> {
        spec.check().map_err(EngineError::BadLoad)?;
        if mailboxes.0.is_empty() {
            return Err(EngineError::BadLoad("no mailbox to send to".into()));
        }
        let zipf_cdf = match spec.pick {
            RecipientPick::Uniform => Vec::new(),
            RecipientPick::Zipf => {
                let mut sum = 0.0;
                mailboxes
                    .0
                    .iter()
                    .enumerate()
                    .map(|(k, _)| {
                        sum += 1.0 / (k as f64 + 1.0);
                        sum
                    })
                    .collect()
            }
        };
        Ok(Arc::new(SmtpSetup {
            ehlo: format!("EHLO {}\r\n", spec.helo).into_bytes(),
            helo: format!("HELO {}\r\n", spec.helo).into_bytes(),
            mail_from: format!("MAIL FROM:<{}>\r\n", spec.from).into_bytes(),
            rcpt: mailboxes
                .0
                .iter()
                .map(|a| format!("RCPT TO:<{a}>\r\n").into_bytes())
                .collect(),
            mailboxes: mailboxes.0.clone(),
            zipf_cdf,
            text: message::text_block(spec.max_size, spec.seed),
            spec: spec.clone(),
        }))
    }

    /// One recipient, by the run's distribution.
    #[inline]
    pub fn pick_mailbox(&self, rng: &mut Rng) -> usize {
        if self.zipf_cdf.is_empty() {
            return rng.below(self.rcpt.len() as u64) as usize;
        }
        let total = self.zipf_cdf[self.zipf_cdf.len() - 1];
        let x = rng.unit() * total;
        self.zipf_cdf
            .partition_point(|&c| c <= x)
            .min(self.zipf_cdf.len() - 1)
    }

    /// How many messages a new connection sends before QUIT.
    pub fn messages_per_connection(&self, rng: &mut Rng) -> u64 {
        let n = self.spec.per_connection.max(1);
        if self.spec.random_per_connection {
            rng.between(1, n)
        } else {
            n
        }
    }
}

/// An SMTP run's shared setup, and the STARTTLS settings if asked for; (None, None) for an
/// HTTP run. The mailboxes are the workload's (the caller hands them in: the workload holds
/// SMTP's mailboxes beside HTTP's scenario and this module does not know it), or 1,000
/// generated ones at example.com.
pub(crate) type Setup = (Option<Arc<SmtpSetup>>, Option<crate::tls::TlsTarget>);

pub(crate) fn setup_for(
    spec: &webtune_model::RunSpec,
    mailboxes: Option<&Mailboxes>,
    host: &str,
) -> Result<Setup, EngineError> {
    let Some(s) = &spec.smtp else {
        return Ok((None, None));
    };
    let generated;
    let list = match mailboxes {
        Some(list) => list,
        None => {
            generated = Mailboxes::generated(1000, "example.com");
            &generated
        }
    };
    let starttls = s
        .starttls
        .then(|| crate::tls::TlsTarget::new(&spec.tls, host, &[]))
        .transpose()?;
    Ok((Some(SmtpSetup::new(s, list)?), starttls))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_favours_the_first_mailboxes_and_uniform_does_not() {
        let boxes = Mailboxes::generated(100, "example.com");
        let mut spec = SmtpSpec {
            pick: RecipientPick::Zipf,
            ..SmtpSpec::default()
        };
        let setup = SmtpSetup::new(&spec, &boxes).unwrap();
        let mut rng = Rng::seeded(7);
        let mut counts = [0u32; 100];
        for _ in 0..10_000 {
            counts[setup.pick_mailbox(&mut rng)] += 1;
        }
        assert!(counts[0] > 5 * counts[50], "{:?}", &counts[..5]);
        spec.pick = RecipientPick::Uniform;
        let setup = SmtpSetup::new(&spec, &boxes).unwrap();
        let mut counts = [0u32; 100];
        for _ in 0..10_000 {
            counts[setup.pick_mailbox(&mut rng)] += 1;
        }
        assert!(counts.iter().all(|&c| c > 50), "{counts:?}");
    }

    #[test]
    fn user_lists_skip_comments_and_refuse_injection() {
        let m = Mailboxes::parse("# users\na@example.com\n\n b@example.com \n", "u").unwrap();
        assert_eq!(m.0, vec!["a@example.com", "b@example.com"]);
        assert!(Mailboxes::parse("a>\n", "u").unwrap_err().contains("u:1"));
        assert!(Mailboxes::parse("\n# none\n", "u").is_err());
    }
}
