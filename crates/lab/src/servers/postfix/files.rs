//! The private Postfix instance on disk: where its config, queue, data directory, log and
//! Maildirs go under the stack's private directory, main.cf and master.cf as the lab
//! renders them (loopback only, no relay, delivery by `virtual` into Maildirs), and the
//! preparation before the master starts: the queue's directories with Postfix's owners and
//! modes (as its `postfix-files` lists them), the generated mailboxes and their map
//! (`postmap`), and Postfix's own reading of the config (`postconf -c DIR`), which must
//! warn of nothing and must show that no mail can leave the lab.

use crate::LabError;
use std::ffi::CString;
use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The lab's one mail domain.
pub const DOMAIN: &str = "lab.test";

/// The paths of one private instance.
#[derive(Debug, Clone)]
pub struct PostfixFiles {
    /// `DIR/postfix`: everything of the instance.
    pub root: PathBuf,
    /// `config_directory` (main.cf, master.cf, the mailbox map).
    pub config_dir: PathBuf,
    pub queue_dir: PathBuf,
    pub data_dir: PathBuf,
    /// `virtual_mailbox_base`: one Maildir per mailbox under `lab.test/`.
    pub mail_dir: PathBuf,
    /// `maillog_file`, written by postlogd.
    pub maillog: PathBuf,
    /// The generated addresses, one a line (the SMTP load's `--users`).
    pub users: PathBuf,
}

impl PostfixFiles {
    pub fn in_dir(dir: &Path) -> PostfixFiles {
        let root = dir.join("postfix");
        PostfixFiles {
            config_dir: root.join("etc"),
            queue_dir: root.join("queue"),
            data_dir: root.join("data"),
            mail_dir: root.join("mail"),
            maillog: root.join("maillog"),
            users: root.join("users.txt"),
            root,
        }
    }

    /// The Maildir of mailbox `n`.
    pub fn maildir(&self, n: u64) -> PathBuf {
        self.mail_dir.join(DOMAIN).join(format!("user{n}"))
    }
}

/// The address of mailbox `n`.
pub fn address(n: u64) -> String {
    format!("user{n}@{DOMAIN}")
}

/// main.cf's marker line that carries the mailbox count to `prepare`.
const MAILBOX_MARK: &str = "# webtune mailboxes: ";

/// main.cf and master.cf (names relative to the private directory) for `values` (every
/// parameter of the module, by name, as text).
pub fn render_configs(
    files: &PostfixFiles,
    port: u16,
    values: &[(String, String)],
) -> Result<Vec<(String, String)>, LabError> {
    let get = |name: &str| {
        values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    };
    let path = |p: &Path| -> Result<String, LabError> {
        crate::vocab::check_path_is_plain(p)?;
        Ok(p.display().to_string())
    };
    let (etc, queue, data, mail, log, root) = (
        path(&files.config_dir)?,
        path(&files.queue_dir)?,
        path(&files.data_dir)?,
        path(&files.mail_dir)?,
        path(&files.maillog)?,
        path(&files.root)?,
    );
    let mut main = String::new();
    let _ = writeln!(
        main,
        "# main.cf of the webtune lab's private Postfix (stack postfix)."
    );
    let _ = writeln!(main, "{MAILBOX_MARK}{}", get(super::MAILBOXES));
    let _ = write!(
        main,
        "compatibility_level = 3.6\n\
         queue_directory = {queue}\n\
         data_directory = {data}\n\
         mail_owner = postfix\n\
         setgid_group = postdrop\n\
         maillog_file = {log}\n\
         maillog_file_prefixes = {root}\n\
         myhostname = mail.{DOMAIN}\n\
         mydomain = {DOMAIN}\n\
         myorigin = {DOMAIN}\n\
         # Loopback only, and nothing leaves the lab: no relay host, every transport but\n\
         # virtual(8) into the lab's Maildirs is error(8).\n\
         inet_interfaces = 127.0.0.1\n\
         inet_protocols = ipv4\n\
         mynetworks = 127.0.0.1/32\n\
         mydestination =\n\
         relayhost =\n\
         relay_domains =\n\
         default_transport = error:the webtune lab delivers nothing outside\n\
         relay_transport = error:the webtune lab relays nothing\n\
         local_transport = error:the webtune lab has no local delivery\n\
         smtpd_relay_restrictions = reject_unauth_destination\n\
         # The load comes from 127.0.0.1: without this, mynetworks would be exempt from the\n\
         # per-client limits, and smtpd_client_connection_* would do nothing.\n\
         smtpd_client_event_limit_exceptions =\n\
         alias_maps =\n\
         alias_database =\n\
         biff = no\n\
         smtputf8_enable = no\n\
         virtual_mailbox_domains = {DOMAIN}\n\
         virtual_mailbox_base = {mail}\n\
         virtual_mailbox_maps = {map}:{etc}/vmailbox\n\
         virtual_uid_maps = static:{uid}\n\
         virtual_gid_maps = static:{gid}\n",
        map = get(super::MAP_TYPE),
        uid = mail_account().0,
        gid = mail_account().1,
    );
    // Postfix warns and raises it when it is below the active limit: set it so, in the open.
    let active: u64 = get("qmgr_message_active_limit").parse().unwrap_or(20_000);
    let _ = writeln!(
        main,
        "qmgr_message_recipient_limit = {}",
        active.max(20_000)
    );
    let _ = writeln!(main, "# Tunable parameters (webtune lab params postfix):");
    for (name, value) in values {
        if name == super::MAILBOXES || name == super::MAP_TYPE {
            continue;
        }
        let _ = writeln!(main, "{name} = {value}{}", super::unit(name));
    }
    let master = format!(
        "# master.cf of the webtune lab's private Postfix: no chroot, no network client.\n\
         127.0.0.1:{port} inet n - n - - smtpd\n\
         pickup    unix  n - n 60    1 pickup\n\
         cleanup   unix  n - n -     0 cleanup\n\
         qmgr      unix  n - n 300   1 qmgr\n\
         rewrite   unix  - - n -     - trivial-rewrite\n\
         bounce    unix  - - n -     0 bounce\n\
         defer     unix  - - n -     0 bounce\n\
         trace     unix  - - n -     0 bounce\n\
         verify    unix  - - n -     1 verify\n\
         flush     unix  n - n 1000? 0 flush\n\
         proxymap  unix  - - n -     - proxymap\n\
         showq     unix  n - n -     - showq\n\
         error     unix  - - n -     - error\n\
         retry     unix  - - n -     - error\n\
         discard   unix  - - n -     - discard\n\
         virtual   unix  - n n -     - virtual\n\
         anvil     unix  - - n -     1 anvil\n\
         scache    unix  - - n -     1 scache\n\
         postlog   unix-dgram n - n - 1 postlogd\n"
    );
    let rel = |p: &Path| {
        p.strip_prefix(files.root.parent().unwrap_or(Path::new("/")))
            .unwrap_or(p)
            .display()
            .to_string()
    };
    Ok(vec![
        (rel(&files.config_dir.join("main.cf")), main),
        (rel(&files.config_dir.join("master.cf")), master),
    ])
}

/// The account `virtual` delivers as: nobody/nogroup (65534 when they are missing).
fn mail_account() -> (u32, u32) {
    (
        lookup_id("/etc/passwd", "nobody").unwrap_or(65534),
        lookup_id("/etc/group", "nogroup").unwrap_or(65534),
    )
}

/// The numeric id of `name` in a passwd or group file.
fn lookup_id(file: &str, name: &str) -> Option<u32> {
    std::fs::read_to_string(file).ok()?.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next() == Some(name))
            .then(|| f.nth(1).and_then(|id| id.parse().ok()))
            .flatten()
    })
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> LabError {
    move |e| LabError::io(what, e)
}

fn chown(path: &Path, uid: u32, gid: u32) -> Result<(), LabError> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| LabError::Inconsistent(format!("{} has a NUL", path.display())))?;
    // SAFETY: a valid NUL-terminated path; chown has no other preconditions.
    if unsafe { libc::chown(c.as_ptr(), uid, gid) } != 0 {
        return Err(LabError::io(
            format!("chown {}", path.display()),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

fn chmod(path: &Path, mode: u32) -> Result<(), LabError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(io(format!("chmod {}", path.display())))
}

/// A new file with this mode.
fn write_new(path: &Path, text: &str, mode: u32) -> Result<(), LabError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .map_err(io(format!("writing {}", path.display())))?;
    chmod(path, mode)
}

/// A new directory with this owner and mode.
fn make(path: &Path, uid: u32, gid: u32, mode: u32) -> Result<(), LabError> {
    std::fs::create_dir(path).map_err(io(format!("creating {}", path.display())))?;
    chown(path, uid, gid)?;
    chmod(path, mode)
}

/// Everything the master needs before it starts (the configs are written): run as root
/// only (Postfix's master refuses anything else).
pub fn prepare(files: &PostfixFiles) -> Result<(), LabError> {
    if !crate::servers::privileged() {
        return Err(LabError::Inconsistent(
            "the postfix stack needs root: Postfix's master runs as root and drops to its own account".into(),
        ));
    }
    let postfix = lookup_id("/etc/passwd", "postfix").ok_or_else(|| LabError::MissingProgram {
        program: "the postfix account".into(),
        hint: "install the Debian package postfix".into(),
    })?;
    let postfix_gid = lookup_id("/etc/group", "postfix").unwrap_or(postfix);
    let postdrop = lookup_id("/etc/group", "postdrop").unwrap_or(postfix_gid);
    // Postfix's daemons run as postfix and the deliveries as nobody: they must pass through
    // the private directory (traverse only; its files stay the root's).
    let private = files.root.parent().unwrap_or(Path::new("/"));
    chmod(private, 0o711)?;
    chmod(&files.root, 0o711)?;
    let queue = &files.queue_dir;
    make(queue, 0, 0, 0o755)?;
    // As Postfix's postfix-files: owner, group, mode.
    for sub in [
        "active", "bounce", "corrupt", "defer", "deferred", "flush", "hold", "incoming", "private",
        "saved", "trace",
    ] {
        make(&queue.join(sub), postfix, 0, 0o700)?;
    }
    make(&queue.join("maildrop"), postfix, postdrop, 0o730)?;
    make(&queue.join("public"), postfix, postdrop, 0o710)?;
    make(&queue.join("pid"), 0, 0, 0o755)?;
    make(&files.data_dir, postfix, postfix_gid, 0o700)?;
    let (uid, gid) = mail_account();
    make(&files.mail_dir, uid, gid, 0o700)?;
    // The mailboxes: the map virtual(8) delivers by, and the list the load sends to.
    let main = std::fs::read_to_string(files.config_dir.join("main.cf"))
        .map_err(io("reading main.cf".into()))?;
    let count: u64 = main
        .lines()
        .find_map(|l| l.strip_prefix(MAILBOX_MARK))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(1000);
    let map_type = main
        .lines()
        .find_map(|l| l.strip_prefix("virtual_mailbox_maps = "))
        .and_then(|m| m.split(':').next())
        .unwrap_or("hash")
        .to_string();
    let mut map = String::with_capacity(count as usize * 40);
    let mut users = String::with_capacity(count as usize * 20);
    for n in 1..=count {
        let _ = writeln!(map, "{} {DOMAIN}/user{n}/", address(n));
        let _ = writeln!(users, "{}", address(n));
    }
    write_new(&files.config_dir.join("vmailbox"), &map, 0o644)?;
    write_new(&files.users, &users, 0o644)?;
    let etc = files.config_dir.display().to_string();
    postfix_tool(
        "postmap",
        &["-c", &etc, &format!("{map_type}:{etc}/vmailbox")],
    )?;
    for name in ["main.cf", "master.cf"] {
        chmod(&files.config_dir.join(name), 0o644)?;
    }
    chmod(&files.config_dir, 0o755)?;
    // Postfix's own reading of the config: no warning, and no way out of the lab.
    let warnings = postfix_tool("postconf", &["-c", &etc, "-n"])?;
    if !warnings.trim().is_empty() {
        return Err(LabError::ConfigRejected {
            server: "postfix".into(),
            config: files.config_dir.join("main.cf"),
            message: warnings.trim().replace('\n', " | "),
        });
    }
    check_no_relay(&files.config_dir)
}

/// Run a Postfix tool; its stderr (warnings) when it succeeds, an error when it fails.
fn postfix_tool(program: &str, args: &[&str]) -> Result<String, LabError> {
    let path = super::super::find_program(&[program]).ok_or_else(|| LabError::MissingProgram {
        program: program.into(),
        hint: "install the Debian package postfix".into(),
    })?;
    let out = Command::new(&path)
        .args(args)
        .env_remove("MAIL_CONFIG")
        .output()
        .map_err(io(format!("running {program}")))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(LabError::StartFailed {
            server: "postfix".into(),
            message: format!("{program} failed: {}", stderr.trim().replace('\n', " | ")),
        });
    }
    Ok(stderr)
}

/// The values of `names` as Postfix reads the config in `etc` (`postconf -c etc -h`).
pub fn postconf_values(etc: &Path, names: &[&str]) -> Result<Vec<String>, LabError> {
    let path =
        super::super::find_program(&["postconf"]).ok_or_else(|| LabError::MissingProgram {
            program: "postconf".into(),
            hint: "install the Debian package postfix".into(),
        })?;
    let mut cmd = Command::new(path);
    cmd.arg("-c").arg(etc).arg("-h").args(names);
    let out = cmd.output().map_err(io("running postconf".into()))?;
    if !out.status.success() {
        return Err(LabError::StartFailed {
            server: "postfix".into(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// Refuse a config (as Postfix reads it) that could deliver outside the lab: a relay host,
/// a transport map, a non-loopback listener, or a default, relay or local transport that
/// is not `error`.
pub fn check_no_relay(etc: &Path) -> Result<(), LabError> {
    let names = [
        "relayhost",
        "default_transport",
        "relay_transport",
        "local_transport",
        "transport_maps",
        "sender_dependent_relayhost_maps",
        "sender_dependent_default_transport_maps",
        "inet_interfaces",
        "fallback_transport",
        "luser_relay",
    ];
    let values = postconf_values(etc, &names)?;
    refuse_relay(
        &names
            .iter()
            .copied()
            .zip(values.iter().map(String::as_str))
            .collect::<Vec<_>>(),
    )
}

/// The rule of `check_no_relay` on (name, value) pairs.
pub fn refuse_relay(values: &[(&str, &str)]) -> Result<(), LabError> {
    for (name, value) in values {
        let value = value.trim();
        let bad = match *name {
            "default_transport" | "relay_transport" | "local_transport" => {
                !(value == "error" || value.starts_with("error:"))
            }
            "inet_interfaces" => value != "127.0.0.1" && value != "loopback-only",
            _ => !value.is_empty(),
        };
        if bad {
            return Err(LabError::Inconsistent(format!(
                "postfix: {name} = {value} could deliver mail outside the lab; refused"
            )));
        }
    }
    Ok(())
}
