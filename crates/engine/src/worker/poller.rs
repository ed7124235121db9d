//! How a worker waits for its sockets: the two backends behind one seam (`--io`).
//!
//! `Poller::Epoll` is mio's edge-triggered epoll. `Poller::Uring` (`uring`) uses an
//! io_uring: as a readiness source, one multishot `IORING_OP_POLL_ADD` per socket (and for
//! the open loop's timerfd), whose completions carry the same readiness the epoll path hands
//! the workers (`Readiness`), and one `io_uring_enter` per turn that both submits what the
//! turn queued and waits. A multishot poll posts on each wake-up of the socket, as
//! edge-triggered epoll reports, so the workers' rules ("a short read drained the socket; a
//! later arrival raises a new edge") hold unchanged, and the h2, TLS and SMTP code above
//! does not know which backend it runs on.
//!
//! Under io_uring the HTTP/1.1 worker also hands a plain-TCP request's bytes to the ring
//! (`queue_send`) and receives its answer through it (`recv`: a multishot receive into a
//! provided buffer ring): the bytes arrive in `wait`'s `received` and go to the same parser
//! a `read` feeds. Such a socket is polled only once for its connect and when a write would
//! block (`writable_once`). `resolve` turns `--io auto` into a backend once per process.

pub(crate) use super::readiness::{Completions, Readiness, Received};
use super::uring::{new_ring, Uring};
use io_uring::opcode;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::time::Duration;
use webtune_model::{IoBackend, IoChoice};

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
            IoBackend::Uring => {
                let buffers = if std::env::var_os("WEBTUNE_URING_NO_RECV").is_some() {
                    0
                } else {
                    // An internal knob for tests and bench/: the size of the buffer ring.
                    std::env::var("WEBTUNE_URING_RECV_BUFFERS")
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| Uring::recv_buffers_for(connections))
                };
                let mut u = Uring::new(connections, buffers)?;
                u.sends = std::env::var_os("WEBTUNE_URING_NO_SEND").is_none();
                Poller::Uring(Box::new(u))
            }
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

    /// io_uring: report `fd` writable (or failed) once, under `token`: the end of a connect,
    /// or room again after a write that would block, for a socket read by `recv`.
    pub fn writable_once(&mut self, fd: RawFd, token: Token) -> io::Result<()> {
        match self {
            Poller::Epoll { .. } => Err(io::ErrorKind::Unsupported.into()),
            Poller::Uring(u) => u.arm_writable_once(fd, token.0 as u64),
        }
    }

    /// `fd` is about to be closed. Epoll drops a closed file from its set by itself; a
    /// ring's requests must be cancelled, or they keep the file (and the connection) open.
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

    /// Does the wait time itself to the nanosecond (io_uring's timeout in the enter call),
    /// so an open loop needs no timerfd? Epoll's timeout has millisecond steps.
    /// `WEBTUNE_URING_TIMERFD` keeps the timerfd under io_uring (for bench/ to compare).
    pub fn times_precisely(&self) -> bool {
        matches!(self, Poller::Uring(_)) && std::env::var_os("WEBTUNE_URING_TIMERFD").is_none()
    }

    /// Can sockets be read through the ring (`recv`: io_uring with a buffer ring, unless
    /// `WEBTUNE_URING_NO_RECV` is set)?
    pub fn receives(&self) -> bool {
        matches!(self, Poller::Uring(u) if u.receives())
    }

    /// io_uring: receive on `fd` through the ring from now on; what comes arrives in
    /// `wait`'s `received` under `token` (until end of file, an error or `closing`).
    pub fn recv(&mut self, fd: RawFd, token: Token) -> io::Result<()> {
        match self {
            Poller::Uring(u) if u.receives() => u.arm_recv(fd, token.0 as u64),
            _ => Err(io::ErrorKind::Unsupported.into()),
        }
    }

    /// The bytes of a `Received::Bytes` from the last wait (valid until the next).
    pub fn received_bytes(&self, bid: u16, len: u32) -> &[u8] {
        match self {
            Poller::Uring(u) => u.bytes(bid, len),
            Poller::Epoll { .. } => &[],
        }
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
                u.queue_send(fd, token.0 as u64, bytes.as_ptr(), bytes.len() as u32)
            }
        }
    }

    /// Submit what is queued and wait up to `timeout` for readiness; `out` gets what came.
    pub fn wait(&mut self, out: &mut Completions, timeout: Duration) -> io::Result<()> {
        match self {
            Poller::Epoll { poll, events } => {
                out.clear();
                poll.poll(events, Some(timeout))?;
                out.ready
                    .extend(events.iter().map(|e| (e.token(), Readiness::from_mio(e))));
                Ok(())
            }
            Poller::Uring(u) => u.wait(out, timeout),
        }
    }
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
            && probe.is_supported(opcode::AsyncCancel::CODE))
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

    /// A ring's poll holds its file: without the cancellation `closing` queues, the peer would
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
        let mut out = Completions::default();
        poller.wait(&mut out, Duration::from_millis(100)).unwrap();
        assert!(
            out.ready
                .iter()
                .any(|(t, r)| *t == Token(7) && r.is_writable()),
            "{:?}",
            out.ready
        );
        poller.closing(client.as_raw_fd());
        drop(client);
        poller.wait(&mut out, Duration::ZERO).unwrap();
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
