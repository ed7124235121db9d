//! How a worker waits for its sockets: the two backends behind one seam (`--io`).
//!
//! `Poller::Epoll` is mio's edge-triggered epoll. `Poller::Uring` uses an io_uring as a
//! readiness source: one multishot `IORING_OP_POLL_ADD` per socket (and for the open
//! loop's timerfd), whose completions carry the same readiness the epoll path hands the
//! workers (`Readiness`), and one `io_uring_enter` per turn that both submits what the turn
//! queued (new polls, removals) and waits, its timeout in the call (`IORING_ENTER_EXT_ARG`).
//! A multishot poll posts on each wake-up of the socket, as edge-triggered epoll reports,
//! so the workers' rules ("a short read drained the socket; a later arrival raises a new
//! edge") hold unchanged, and the HTTP/1.1, h2, TLS and SMTP code above does not know which
//! backend it runs on.
//!
//! Under io_uring a worker may also hand a request's bytes to the ring (`queue_send`)
//! instead of writing them: the sends of every connection due in a turn then go in with
//! the turn's one `io_uring_enter`, and their completions come back beside the readiness.
//!
//! A poll request holds a reference to its file: closing a socket under io_uring first
//! queues the removal of its poll (else the kernel would keep the connection open); the
//! removal goes in with the next wait, before any poll queued after it, so a reused file
//! number is never confused. `resolve` turns `--io auto` into a backend once per process.

use io_uring::{cqueue, opcode, types, IoUring};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::time::Duration;
use webtune_model::{IoBackend, IoChoice};

/// What a wake-up says about a socket (the bits the workers look at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Readiness(u8);

const READABLE: u8 = 1;
const WRITABLE: u8 = 2;
const READ_CLOSED: u8 = 4;
const ERROR: u8 = 8;

impl Readiness {
    fn from_mio(e: &mio::event::Event) -> Readiness {
        let mut r = 0;
        if e.is_readable() {
            r |= READABLE;
        }
        if e.is_writable() {
            r |= WRITABLE;
        }
        if e.is_read_closed() {
            r |= READ_CLOSED;
        }
        if e.is_error() {
            r |= ERROR;
        }
        Readiness(r)
    }

    /// From a poll(2) mask, with mio's reading of the epoll bits (read closed: a hang-up,
    /// or readable with the peer's write side shut).
    fn from_poll(mask: u32) -> Readiness {
        let has = |bit: libc::c_short| mask & (bit as u16 as u32) != 0;
        let mut r = 0;
        if has(libc::POLLIN) || has(libc::POLLPRI) {
            r |= READABLE;
        }
        if has(libc::POLLOUT) {
            r |= WRITABLE;
        }
        if has(libc::POLLHUP) || (has(libc::POLLIN) && has(libc::POLLRDHUP)) {
            r |= READ_CLOSED;
        }
        if has(libc::POLLERR) {
            r |= ERROR;
        }
        Readiness(r)
    }

    pub fn is_readable(self) -> bool {
        self.0 & READABLE != 0
    }
    pub fn is_writable(self) -> bool {
        self.0 & WRITABLE != 0
    }
    pub fn is_read_closed(self) -> bool {
        self.0 & READ_CLOSED != 0
    }
    pub fn is_error(self) -> bool {
        self.0 & ERROR != 0
    }
}

/// A worker's way to wait for I/O.
pub(crate) enum Poller {
    Epoll { poll: Poll, events: Events },
    Uring(Box<Uring>),
}

impl Poller {
    /// A poller of `backend` for about `connections` sockets.
    pub fn new(backend: IoBackend, connections: usize) -> io::Result<Poller> {
        Ok(match backend {
            IoBackend::Epoll => Poller::Epoll {
                poll: Poll::new()?,
                events: Events::with_capacity(1024),
            },
            IoBackend::Uring => Poller::Uring(Box::new(Uring::new(connections)?)),
        })
    }

    /// Watch `fd` under `token`: readable (with hang-ups and errors), and writable if asked.
    pub fn register(&mut self, fd: RawFd, token: Token, writable: bool) -> io::Result<()> {
        match self {
            Poller::Epoll { poll, .. } => {
                let interest = if writable {
                    Interest::READABLE | Interest::WRITABLE
                } else {
                    Interest::READABLE
                };
                poll.registry()
                    .register(&mut SourceFd(&fd), token, interest)
            }
            Poller::Uring(u) => u.arm(fd, token.0 as u64, writable),
        }
    }

    /// `fd` is about to be closed. Epoll drops a closed file from its set by itself; a
    /// ring's poll must be removed, or it keeps the file (and the connection) open.
    pub fn closing(&mut self, fd: RawFd) {
        if let Poller::Uring(u) = self {
            u.remove(fd);
        }
    }

    /// Does `queue_send` take sends (io_uring, unless `WEBTUNE_URING_NO_SEND` is set: the
    /// readiness-only mode, kept for bench/ to measure each step)?
    pub fn queues_sends(&self) -> bool {
        matches!(self, Poller::Uring(u) if u.sends)
    }

    /// io_uring: queue a send of `bytes` on `fd` for the socket `token`; it goes in with the
    /// next wait, and its completion (bytes sent, or -errno) comes back in `wait`'s `sent`.
    ///
    /// # Safety
    /// `bytes` must stay where they are, unchanged, until that completion or the end of this
    /// poller.
    pub unsafe fn queue_send(&mut self, fd: RawFd, token: Token, bytes: &[u8]) -> io::Result<()> {
        match self {
            Poller::Epoll { .. } => Err(io::ErrorKind::Unsupported.into()),
            Poller::Uring(u) => {
                let sqe = opcode::Send::new(types::Fd(fd), bytes.as_ptr(), bytes.len() as u32)
                    .build()
                    .user_data(SEND | token.0 as u64);
                u.push(&sqe)
            }
        }
    }

    /// Submit what is queued and wait up to `timeout` for readiness; `out` gets what came,
    /// `sent` the completions of queued sends (io_uring only).
    pub fn wait(
        &mut self,
        out: &mut Vec<(Token, Readiness)>,
        sent: &mut Vec<(Token, i32)>,
        timeout: Duration,
    ) -> io::Result<()> {
        out.clear();
        sent.clear();
        match self {
            Poller::Epoll { poll, events } => {
                poll.poll(events, Some(timeout))?;
                out.extend(events.iter().map(|e| (e.token(), Readiness::from_mio(e))));
                Ok(())
            }
            Poller::Uring(u) => u.wait(out, sent, timeout),
        }
    }
}

/// The user data of a poll removal's own completion (socket tokens stay below 2^63, and
/// the timer's is `usize::MAX`).
const REMOVAL: u64 = u64::MAX - 1;
const NO_TOKEN: u64 = u64::MAX - 2;
const TIMER_DATA: u64 = u64::MAX;
/// The top bit over a socket's token: the completion of a send queued for it.
const SEND: u64 = 1 << 63;

/// io_uring as a readiness source.
pub(crate) struct Uring {
    ring: IoUring,
    /// Per file number, the token of the poll armed on it (NO_TOKEN: none).
    by_fd: Vec<u64>,
    /// Which of them asked for writable too.
    writable: Vec<bool>,
    /// Requests may be sent through the ring (`queues_sends`).
    sends: bool,
}

impl Uring {
    fn new(connections: usize) -> io::Result<Uring> {
        let ring = new_ring(connections)?;
        Ok(Uring {
            ring,
            by_fd: Vec::new(),
            writable: Vec::new(),
            sends: std::env::var_os("WEBTUNE_URING_NO_SEND").is_none(),
        })
    }

    fn arm(&mut self, fd: RawFd, token: u64, writable: bool) -> io::Result<()> {
        let slot = fd as usize;
        if self.by_fd.len() <= slot {
            self.by_fd.resize(slot + 1, NO_TOKEN);
            self.writable.resize(slot + 1, false);
        }
        self.by_fd[slot] = token;
        self.writable[slot] = writable;
        let mut mask = libc::POLLIN | libc::POLLRDHUP;
        if writable {
            mask |= libc::POLLOUT;
        }
        let sqe = opcode::PollAdd::new(types::Fd(fd), mask as u16 as u32)
            .multi(true)
            .build()
            .user_data(token);
        self.push(&sqe)
    }

    fn remove(&mut self, fd: RawFd) {
        let Some(token) = self.by_fd.get_mut(fd as usize) else {
            return;
        };
        if *token == NO_TOKEN {
            return;
        }
        let sqe = opcode::PollRemove::new(*token).build().user_data(REMOVAL);
        *token = NO_TOKEN;
        // A removal that cannot be queued (the ring failed) leaves the file to the ring's end.
        let _ = self.push(&sqe);
    }

    /// Queue `sqe`, submitting what is queued first when the queue is full.
    fn push(&mut self, sqe: &io_uring::squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: poll entries point at no memory of ours.
            if unsafe { self.ring.submission().push(sqe) }.is_ok() {
                return Ok(());
            }
            self.ring.submit()?;
        }
    }

    fn wait(
        &mut self,
        out: &mut Vec<(Token, Readiness)>,
        sent: &mut Vec<(Token, i32)>,
        timeout: Duration,
    ) -> io::Result<()> {
        let ts = types::Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos());
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => {}
            // The timeout passed, or the completion queue is full (drained below).
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        let mut ended = false;
        for cqe in self.ring.completion() {
            let token = cqe.user_data();
            if token == REMOVAL {
                continue;
            }
            let res = cqe.result();
            if token != TIMER_DATA && token & SEND != 0 {
                sent.push((Token((token & !SEND) as usize), res));
                continue;
            }
            if !cqueue::more(cqe.flags()) && res != -libc::ECANCELED {
                // The kernel ended this poll (a full completion queue, or an error), not a
                // removal of ours.
                ended = true;
            }
            if res >= 0 {
                out.push((Token(token as usize), Readiness::from_poll(res as u32)));
            } else if res != -libc::ECANCELED {
                out.push((Token(token as usize), Readiness(ERROR)));
            }
        }
        if ended {
            self.arm_ended()?;
        }
        Ok(())
    }

    /// Arm again the polls the kernel ended whose sockets are still open (rare: it takes a
    /// completion queue that overflowed). Arming reports the present state at once.
    fn arm_ended(&mut self) -> io::Result<()> {
        // Which polls are still armed cannot be asked of the kernel cheaply; cancel them all
        // and arm every open socket again (a removal of a poll that ended finds nothing).
        let armed: Vec<(RawFd, u64, bool)> = self
            .by_fd
            .iter()
            .enumerate()
            .filter(|(_, &t)| t != NO_TOKEN)
            .map(|(fd, &t)| (fd as RawFd, t, self.writable[fd]))
            .collect();
        for &(fd, token, writable) in &armed {
            let sqe = opcode::PollRemove::new(token).build().user_data(REMOVAL);
            self.push(&sqe)?;
            self.arm(fd, token, writable)?;
        }
        Ok(())
    }
}

/// A ring for about `connections` sockets: room in the completion queue for a wake-up of
/// each, the kernel's completion work run only when the worker waits (single issuer,
/// deferred task work) where the kernel has it.
fn new_ring(connections: usize) -> io::Result<IoUring> {
    let cq = (connections.max(256) * 2).next_power_of_two().min(1 << 16) as u32;
    let ring = IoUring::builder()
        .setup_cqsize(cq)
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(256)
        .or_else(|_| IoUring::builder().setup_cqsize(cq).build(256))?;
    if !ring.params().is_feature_ext_arg() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this kernel's io_uring has no timed wait (IORING_FEAT_EXT_ARG, Linux 5.11)",
        ));
    }
    Ok(ring)
}

/// The backend `choice` runs on: Ok with the reason io_uring was passed over when `auto`
/// fell back to epoll; Err(reason) when `uring` was asked for and cannot be had. The
/// kernel is asked once per process.
pub fn resolve(choice: IoChoice) -> Result<(IoBackend, Option<String>), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    let probe = || PROBE.get_or_init(probe_uring).clone();
    match choice {
        IoChoice::Epoll => Ok((IoBackend::Epoll, None)),
        IoChoice::Uring => probe().map(|()| (IoBackend::Uring, None)),
        IoChoice::Auto => Ok(match probe() {
            Ok(()) => (IoBackend::Uring, None),
            Err(why) => (IoBackend::Epoll, Some(why)),
        }),
    }
}

/// Can this process use io_uring as the workers do? Err says why not.
fn probe_uring() -> Result<(), String> {
    let ring = match new_ring(1) {
        Ok(ring) => ring,
        Err(e) => return Err(why_no_ring(&e)),
    };
    let mut probe = io_uring::Probe::new();
    if ring.submitter().register_probe(&mut probe).is_ok()
        && !(probe.is_supported(opcode::PollAdd::CODE)
            && probe.is_supported(opcode::PollRemove::CODE))
    {
        return Err("this kernel's io_uring cannot poll sockets".into());
    }
    Ok(())
}

/// One line on why `io_uring_setup` failed.
fn why_no_ring(e: &io::Error) -> String {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .map(|s| s.trim().to_string());
    match e.raw_os_error() {
        Some(libc::ENOSYS) => "io_uring_setup: not in this kernel (ENOSYS)".into(),
        Some(libc::EPERM) | Some(libc::EACCES) => match disabled.as_deref() {
            Some("2") => "io_uring_setup: EPERM (kernel.io_uring_disabled is 2)".into(),
            Some("1") => "io_uring_setup: EPERM (kernel.io_uring_disabled is 1 and this user \
                          is not in kernel.io_uring_group)"
                .into(),
            _ => "io_uring_setup: EPERM (a seccomp filter, e.g. a container's, forbids it)".into(),
        },
        _ => format!("io_uring_setup: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_masks_read_as_mio_reads_epoll_bits() {
        let m = |bits: &[libc::c_short]| bits.iter().fold(0u32, |a, &b| a | b as u16 as u32);
        let r = Readiness::from_poll(m(&[libc::POLLIN, libc::POLLOUT]));
        assert!(r.is_readable() && r.is_writable() && !r.is_read_closed() && !r.is_error());
        let r = Readiness::from_poll(m(&[libc::POLLIN, libc::POLLRDHUP]));
        assert!(r.is_readable() && r.is_read_closed());
        let r = Readiness::from_poll(m(&[libc::POLLRDHUP]));
        assert!(
            !r.is_read_closed(),
            "RDHUP without IN is not read-closed (as mio)"
        );
        let r = Readiness::from_poll(m(&[libc::POLLHUP, libc::POLLERR]));
        assert!(r.is_read_closed() && r.is_error() && !r.is_readable());
    }

    /// A ring's poll holds its file: without the removal `closing` queues, the peer would
    /// never see the connection end.
    #[test]
    fn a_socket_closed_under_io_uring_reaches_its_peer_as_end_of_file() {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let mut poller =
            Poller::new(IoBackend::Uring, 1).expect("io_uring (kernel.io_uring_disabled=0)");
        poller.register(client.as_raw_fd(), Token(7), true).unwrap();
        let (mut out, mut sent) = (Vec::new(), Vec::new());
        poller
            .wait(&mut out, &mut sent, Duration::from_millis(100))
            .unwrap();
        assert!(
            out.iter().any(|(t, r)| *t == Token(7) && r.is_writable()),
            "{out:?}"
        );
        poller.closing(client.as_raw_fd());
        drop(client);
        poller.wait(&mut out, &mut sent, Duration::ZERO).unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(
            server.read(&mut buf).expect("end of file, not a timeout"),
            0
        );
    }

    #[test]
    fn epoll_is_always_there_and_auto_says_why_it_fell_back() {
        assert_eq!(resolve(IoChoice::Epoll), Ok((IoBackend::Epoll, None)));
        match resolve(IoChoice::Auto) {
            Ok((IoBackend::Uring, None)) => assert!(resolve(IoChoice::Uring).is_ok()),
            Ok((IoBackend::Epoll, Some(why))) => {
                assert!(
                    why.starts_with("io_uring") || why.contains("kernel"),
                    "{why}"
                );
                assert!(resolve(IoChoice::Uring).is_err());
            }
            other => panic!("{other:?}"),
        }
    }
}
