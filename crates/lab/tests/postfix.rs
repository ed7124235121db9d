//! The lab's private Postfix for real (Debian's postfix, as root; the system's Postfix is
//! neither started nor read for config): it starts with its own config, queue and data
//! directories, its parameters reach main.cf as `postconf -c DIR -n` reads them, a trial
//! sends N messages with the SMTP engine to its generated mailboxes and finds them
//! accepted and then delivered into the Maildirs (counted), relay to any other domain is
//! refused, and nothing of it is left after the stop.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;
use webtune_engine::Workload;
use webtune_lab::servers::postfix::files::{self, PostfixFiles};
use webtune_lab::trial::{self, Target, Trial};
use webtune_lab::{settings_for, RunningStack, StackKind, StartOptions};
use webtune_model::{RunSpec, SmtpSpec, StopCondition, StopToken};

mod support;

/// Can this host run the stack? Otherwise the test fails unless the run opts out.
fn runnable() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        support::opt_out::opt_out("root", "Postfix's master runs as root only");
        return false;
    }
    if webtune_lab::servers::postfix::daemon_directory().is_none() {
        support::opt_out::opt_out("postfix", "Postfix's master is not installed");
        return false;
    }
    true
}

/// Live processes whose command line names `dir`, or in one of `sessions`.
fn left(dir: &Path, sessions: &[i32]) -> Vec<i32> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let session = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(3))
            .and_then(|s| s.parse::<i32>().ok());
        let zombie = stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'));
        if !zombie
            && (String::from_utf8_lossy(&cmd).contains(&needle)
                || session.is_some_and(|s| sessions.contains(&s)))
        {
            found.push(pid);
        }
    }
    found
}

/// One SMTP exchange: each command's reply line (the last of a multi-line reply).
fn converse(port: u16, commands: &[&str]) -> Vec<String> {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let mut read_reply = || {
        let mut line = String::new();
        loop {
            line.clear();
            reader.read_line(&mut line).expect("reply");
            if line.len() < 4 || line.as_bytes()[3] != b'-' {
                return line.trim_end().to_string();
            }
        }
    };
    let mut replies = vec![read_reply()];
    for c in commands {
        write!(writer, "{c}\r\n").unwrap();
        replies.push(read_reply());
    }
    replies
}

#[test]
fn postfix_accepts_n_messages_and_delivers_them_into_maildirs_and_refuses_relay() {
    if !runnable() {
        return;
    }
    let stack = StackKind::Postfix;
    let sets: Vec<String> = [
        "mailboxes=40",
        "default_process_limit=17",
        "smtpd_timeout=77",
        "in_flow_delay=0",
        "virtual_destination_concurrency_limit=7",
        "qmgr_message_active_limit=50000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let settings = settings_for(stack, &sets).expect("settings");
    // First the parameters as Postfix reads them, and the refusal of relay.
    let running = RunningStack::start(stack, &settings, StartOptions::default()).expect("start");
    let dir = running.private_dir().to_path_buf();
    let sessions = running.sessions();
    let files = PostfixFiles::in_dir(&dir);
    assert!(
        files.queue_dir.join("pid/master.pid").exists(),
        "its own pid file"
    );
    assert!(
        files.data_dir.join("master.lock").exists(),
        "its own data dir"
    );
    let names = [
        "default_process_limit",
        "smtpd_timeout",
        "in_flow_delay",
        "virtual_destination_concurrency_limit",
        "queue_directory",
        "default_transport",
        "relay_transport",
        "inet_interfaces",
        "relayhost",
        "qmgr_message_recipient_limit",
    ];
    let got = files::postconf_values(&files.config_dir, &names).expect("postconf");
    assert_eq!(got[0], "17");
    assert_eq!(got[1], "77s");
    assert_eq!(got[2], "0s");
    assert_eq!(got[3], "7");
    assert_eq!(got[4], files.queue_dir.display().to_string());
    assert!(got[5].starts_with("error"), "{got:?}");
    assert!(got[6].starts_with("error"), "{got:?}");
    assert_eq!(got[7], "127.0.0.1");
    assert_eq!(got[8], "");
    // Postfix would raise it (with a warning) below the active limit: set to match.
    assert_eq!(got[9], "50000");
    let users = std::fs::read_to_string(&files.users).unwrap();
    assert_eq!(users.lines().count(), 40);
    assert_eq!(users.lines().next(), Some("user1@lab.test"));
    let port = running.front_address().port();
    let replies = converse(
        port,
        &[
            "EHLO test.example",
            "MAIL FROM:<a@example.org>",
            "RCPT TO:<someone@example.com>",
            "RCPT TO:<user999@lab.test>",
            "RCPT TO:<user1@lab.test>",
            "QUIT",
        ],
    );
    assert!(replies[0].starts_with("220"), "{replies:?}");
    assert!(replies[3].starts_with("554"), "relay refused: {replies:?}");
    assert!(replies[3].contains("Relay access denied"), "{replies:?}");
    assert!(
        replies[4].starts_with("550"),
        "unknown mailbox: {replies:?}"
    );
    assert!(replies[5].starts_with("250"), "{replies:?}");
    running.stop().expect("clean stop");
    assert!(
        left(&dir, &sessions).is_empty(),
        "{:?}",
        left(&dir, &sessions)
    );
    assert!(!dir.exists(), "queue, Maildirs and config removed");

    // Then a trial: N messages through the engine, accepted, then in the Maildirs.
    const N: u64 = 60;
    let load = RunSpec {
        url: String::new(),
        connections: 4,
        threads: 1,
        stop: StopCondition::Requests { count: N },
        method: "SMTP".into(),
        expect_status: vec![(200, 299)],
        smtp: Some(SmtpSpec {
            per_connection: 3,
            min_size: 500,
            max_size: 2000,
            ..SmtpSpec::default()
        }),
        ..RunSpec::default()
    };
    let mut t = Trial::new(
        Target::Stack {
            kind: stack,
            settings: settings.clone(),
        },
        load,
    );
    t.workload = Workload::request();
    t.mail_drain = Duration::from_secs(30);
    let outcome = trial::run(&t, &StopToken::new(), &mut trial::Silent).expect("trial");
    assert!(
        outcome.base_url.starts_with("smtp://127.0.0.1:"),
        "{}",
        outcome.base_url
    );
    let result = &outcome.levels[0].result;
    let smtp = result.smtp.as_ref().expect("smtp summary");
    assert_eq!(smtp.accepted, N, "{:?}", smtp.replies);
    let server = result.server.as_ref().expect("server samples");
    let mail = server.mail.as_ref().expect("mail section");
    assert_eq!(mail.accepted, N);
    assert_eq!(mail.delivered, N, "{mail:?}");
    assert_eq!(mail.left_in_queue(), 0, "{mail:?}");
    assert!(!mail.samples.is_empty());
    assert_eq!(mail.samples.last().unwrap().delivered, N, "{mail:?}");
    assert!(
        result
            .spec
            .scenario
            .as_deref()
            .is_some_and(|s| s.ends_with("users.txt")),
        "the load used the stack's mailboxes: {:?}",
        result.spec.scenario
    );
}

#[test]
fn configs_that_could_deliver_outside_the_lab_are_refused() {
    use files::refuse_relay;
    assert!(refuse_relay(&[
        ("relayhost", ""),
        ("default_transport", "error:x"),
        ("relay_transport", "error"),
        ("inet_interfaces", "127.0.0.1"),
    ])
    .is_ok());
    for bad in [
        ("relayhost", "[mx.example.com]:25"),
        ("default_transport", "smtp"),
        ("relay_transport", "relay"),
        ("local_transport", "local:$myhostname"),
        ("transport_maps", "hash:/etc/postfix/transport"),
        ("inet_interfaces", "all"),
    ] {
        let e = refuse_relay(&[bad]).expect_err("refused");
        assert!(e.to_string().contains("outside the lab"), "{e}");
    }
}

#[test]
fn postfix_parameters_are_listed_with_their_directives() {
    let stack = StackKind::from_name("postfix").unwrap();
    let names: Vec<String> = stack.parameters().into_iter().map(|p| p.name).collect();
    for want in [
        "default_process_limit",
        "smtpd_client_connection_count_limit",
        "smtpd_client_connection_rate_limit",
        "qmgr_message_active_limit",
        "in_flow_delay",
        "smtpd_timeout",
        "map_type",
        "mailboxes",
        "os.somaxconn",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert_eq!(
        stack.directive_line("in_flow_delay", "0").unwrap(),
        "in_flow_delay = 0s"
    );
    assert!(settings_for(stack, &["mailboxes=0".to_string()]).is_err());
}
