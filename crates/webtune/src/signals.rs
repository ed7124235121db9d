//! Signal handling for every command, installed once in `main`. SIGINT, SIGTERM and SIGHUP
//! all set the one stop token (`stop_token()`) that the engine, the lab and every loop over
//! runs read: the run stops sending, in-flight requests get a second, what was measured is
//! written, lab stacks are stopped, and the command exits `exit::INTERRUPTED` (130).
//!
//! SIGHUP is what a process gets when its ssh session or terminal goes away, so it is a stop
//! like SIGTERM, and a terminal that hung up is swapped for /dev/null so that writing the
//! report cannot fail (files asked for are still written). A second SIGINT or SIGTERM exits
//! at once (the user insists; lab servers left then are reaped by the next `lab` command or
//! `lab clean`); a repeated SIGHUP does not, because a hang-up often delivers it twice (the
//! kernel to the foreground group, the shell to each of its jobs).
//!
//! While a command has nothing measured to keep (reading its inputs, which may block on a
//! FIFO or take long on a huge file), it holds an `AtOnce` guard: the first signal then exits
//! 130 at once, with one line on stderr, since a blocked read never looks at the token.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::io::Write;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::OnceLock;
use webtune_model::StopToken;

static STOP: OnceLock<StopToken> = OnceLock::new();
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// How many `AtOnce` guards are held.
static AT_ONCE: AtomicUsize = AtomicUsize::new(0);

/// While held, a stop signal exits the process at once with `exit::INTERRUPTED` (see the
/// module's header). Taking one after a signal already came exits at once too.
#[must_use = "the guard works only while it is held"]
pub struct AtOnce(());

/// Hold this while the command has nothing measured that a stop should keep.
pub fn exit_at_once() -> AtOnce {
    AT_ONCE.fetch_add(1, Ordering::SeqCst);
    if stop_token().stop_requested() {
        exit_interrupted();
    }
    AtOnce(())
}

impl Drop for AtOnce {
    fn drop(&mut self) {
        AT_ONCE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Exit 130 now, saying why on stderr: nothing measured is lost.
fn exit_interrupted() -> ! {
    let by = first_signal_name().unwrap_or("a signal");
    let _ = writeln!(
        std::io::stderr(),
        "webtune: stopped by {by}; nothing was written"
    );
    std::process::exit(crate::exit::INTERRUPTED);
}

/// The process's stop token (a fresh one that nothing sets when `install` was not called).
pub fn stop_token() -> StopToken {
    STOP.get_or_init(StopToken::new).clone()
}

/// True once a stop signal came: a command that finished its work anyway exits 130.
pub fn stop_requested() -> bool {
    stop_token().stop_requested()
}

/// The name of the first stop signal received, if any.
pub fn first_signal_name() -> Option<&'static str> {
    match FIRST_SIGNAL.load(Ordering::SeqCst) {
        SIGINT => Some("SIGINT"),
        SIGTERM => Some("SIGTERM"),
        SIGHUP => Some("SIGHUP"),
        _ => None,
    }
}

/// Route SIGINT, SIGTERM and SIGHUP to the stop token, from a thread of their own.
pub fn install() -> anyhow::Result<()> {
    let token = stop_token();
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|e| anyhow::anyhow!("cannot install the signal handlers: {e}"))?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if signal == SIGHUP {
                    detach_hung_up_terminal();
                }
                let insisting = token.stop_requested() && signal != SIGHUP;
                if insisting {
                    std::process::exit(crate::exit::INTERRUPTED);
                }
                let _ =
                    FIRST_SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
                token.request_stop();
                if AT_ONCE.load(Ordering::SeqCst) > 0 {
                    exit_interrupted();
                }
            }
        })
        .map_err(|e| anyhow::anyhow!("cannot start the signal thread: {e}"))?;
    Ok(())
}

/// Point stdout and stderr at /dev/null when they are a terminal that hung up (every write
/// to it would fail with EIO); leave files and pipes alone.
fn detach_hung_up_terminal() {
    // SAFETY: plain libc calls on descriptors this process owns; open's path is a valid
    // NUL-terminated string, and a failed call leaves the descriptor as it was.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null < 0 {
            return;
        }
        for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
            if libc::isatty(fd) == 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EIO)
            {
                libc::dup2(null, fd);
            }
        }
        libc::close(null);
    }
}
