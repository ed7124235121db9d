//! The io_uring backend of `poller`: a readiness source (one multishot `IORING_OP_POLL_ADD`
//! per socket and for the open loop's timerfd, one-shot polls for a connect and a blocked
//! write), sends handed to the ring (`IORING_OP_SEND`), and multishot receive
//! (`IORING_OP_RECV` with `IORING_RECV_MULTISHOT`) into a provided buffer ring (`buf_ring`),
//! so a kept-alive request costs no `recvfrom`. One `io_uring_enter` per turn both submits
//! what the turn queued and waits, its timeout in the call (`IORING_ENTER_EXT_ARG`).
//!
//! A completion's user data is the socket's token, with a top bit saying what it answers:
//! none (a multishot poll), `ONCE` (a one-shot poll), `SEND`, `RECV`; cancellations answer
//! under `REMOVAL` and are dropped.
//!
//! Receives: a completion with bytes names the buffer they are in; the worker reads them
//! (`bytes`), and every buffer lent out in a turn goes back to the kernel at the next wait.
//! A receive the kernel ended while the socket is open is armed again after the turn: when
//! the buffer ring ran dry (`ENOBUFS`, counted in `no_buffers`; the bytes wait in the
//! socket) and when a completion came without `IORING_CQE_F_MORE`. End of file (0) and
//! errors end it for good and reach the worker as `Received::End`.
//!
//! Requests hold references to their file: closing a socket first cancels its receive and
//! its polls (else the kernel would keep the connection open). Polls are ended with
//! `IORING_OP_ASYNC_CANCEL`, not `IORING_OP_POLL_REMOVE`: a poll whose wake-up is pending
//! (an answer came and the ring was not entered since; with deferred task work that wake-up
//! owns the request until the next enter) answers a POLL_REMOVE with EALREADY and stays
//! armed, so the closed socket stayed open for good, while a cancel marks it cancelled and
//! its owner ends it (Linux's io_uring/poll.c: `io_poll_disarm` against
//! `io_poll_cancel_req`). A request queued for a file number and not yet submitted would
//! be resolved against whatever socket gets that number next, so `closing` submits at once
//! when its file has one in the queue.

use super::buf_ring::BufRing;
use super::readiness::{Completions, Readiness, Received};
use io_uring::{cqueue, opcode, types, IoUring};
use mio::Token;
use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// The user data of a cancellation's own completion (socket tokens stay below
/// 2^61, and the timer's is `usize::MAX`).
const REMOVAL: u64 = u64::MAX - 1;
const NO_TOKEN: u64 = u64::MAX - 2;
const TIMER_DATA: u64 = u64::MAX;
/// The top bits over a socket's token: what the completion answers.
const SEND: u64 = 1 << 63;
const RECV: u64 = 1 << 62;
const ONCE: u64 = 1 << 61;
const KIND: u64 = SEND | RECV | ONCE;
/// The buffer group of the receive buffers (one per ring).
const GROUP: u16 = 0;
/// Bytes per receive buffer, and how many buffers a worker's ring has at least and at most
/// (about one per connection in between): 1024 × 16 KiB of address space per worker, of
/// which a small answer touches one page per buffer.
pub(crate) const RECV_BUFFER: u32 = 16 * 1024;
const MIN_BUFFERS: usize = 64;
const MAX_BUFFERS: usize = 1024;

pub(crate) struct Uring {
    ring: IoUring,
    /// Per file number, the token of the multishot poll armed on it (NO_TOKEN: none).
    by_fd: Vec<u64>,
    /// Which of them asked for writable too.
    writable: Vec<bool>,
    /// Per file number, the token of a one-shot poll that may be armed on it.
    once_by_fd: Vec<u64>,
    /// Per file number, the token of the receive armed on it; and back, token to file.
    recv_by_fd: Vec<u64>,
    recv_fds: HashMap<u64, RawFd>,
    /// Per file number, the submission count at the time a request on it was last queued:
    /// equal to `submits` while it waits in the queue.
    queued_at: Vec<u64>,
    submits: u64,
    /// Requests may be sent through the ring (`queues_sends`).
    pub sends: bool,
    /// The receive buffers (None: receives are not used, sockets are read on readiness).
    bufs: Option<BufRing>,
    /// Buffers handed to the worker in the last wait, given back at the next.
    lent: Vec<u16>,
    /// Receives to arm again after this turn (tokens).
    rearm: Vec<u64>,
    /// Times a receive found the buffer ring empty.
    pub no_buffers: u64,
    /// The last wait's completions (user data, result, flags), kept for their room.
    cqes: Vec<(u64, i32, u32)>,
}

impl Uring {
    /// A ring for about `connections` sockets; `recv_buffers` buffers to receive into (0: no
    /// receives through the ring).
    pub fn new(connections: usize, recv_buffers: usize) -> io::Result<Uring> {
        let ring = new_ring(connections)?;
        let bufs = if recv_buffers == 0 {
            None
        } else {
            let count = recv_buffers.next_power_of_two().min(1 << 15) as u16;
            // A kernel without provided buffer rings (before 5.19) reads on readiness.
            BufRing::new(&ring, count, RECV_BUFFER, GROUP).ok()
        };
        Ok(Uring {
            ring,
            by_fd: Vec::new(),
            writable: Vec::new(),
            once_by_fd: Vec::new(),
            recv_by_fd: Vec::new(),
            recv_fds: HashMap::new(),
            queued_at: Vec::new(),
            submits: 0,
            sends: true,
            bufs,
            lent: Vec::new(),
            rearm: Vec::new(),
            no_buffers: 0,
            cqes: Vec::new(),
        })
    }

    /// How many receive buffers a worker with `connections` sockets gets.
    pub fn recv_buffers_for(connections: usize) -> usize {
        connections
            .next_power_of_two()
            .clamp(MIN_BUFFERS, MAX_BUFFERS)
    }

    pub fn receives(&self) -> bool {
        self.bufs.is_some()
    }

    fn grow(&mut self, fd: RawFd) {
        let slot = fd as usize;
        if self.by_fd.len() <= slot {
            let n = slot + 1;
            self.by_fd.resize(n, NO_TOKEN);
            self.writable.resize(n, false);
            self.once_by_fd.resize(n, NO_TOKEN);
            self.recv_by_fd.resize(n, NO_TOKEN);
            self.queued_at.resize(n, u64::MAX);
        }
    }

    /// A multishot poll on `fd` for readable (with hang-ups and errors), writable if asked.
    pub fn arm(&mut self, fd: RawFd, token: u64, writable: bool) -> io::Result<()> {
        self.grow(fd);
        self.by_fd[fd as usize] = token;
        self.writable[fd as usize] = writable;
        let mut mask = libc::POLLIN | libc::POLLRDHUP;
        if writable {
            mask |= libc::POLLOUT;
        }
        let sqe = opcode::PollAdd::new(types::Fd(fd), mask as u16 as u32)
            .multi(true)
            .build()
            .user_data(token);
        self.push_for(fd, &sqe)
    }

    /// A one-shot poll on `fd` for writable (and errors): a connect's end, or room to write.
    pub fn arm_writable_once(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.grow(fd);
        self.once_by_fd[fd as usize] = token;
        let sqe = opcode::PollAdd::new(types::Fd(fd), libc::POLLOUT as u16 as u32)
            .build()
            .user_data(ONCE | token);
        self.push_for(fd, &sqe)
    }

    /// A multishot receive on `fd` into the buffer ring (`receives` must be true).
    pub fn arm_recv(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        self.grow(fd);
        self.recv_by_fd[fd as usize] = token;
        self.recv_fds.insert(token, fd);
        let sqe = opcode::RecvMulti::new(types::Fd(fd), GROUP)
            .build()
            .user_data(RECV | token);
        self.push_for(fd, &sqe)
    }

    /// A send of `len` bytes at `ptr` on `fd`.
    ///
    /// # Safety
    /// The bytes must stay, unchanged, until its completion or the end of the ring.
    pub unsafe fn queue_send(
        &mut self,
        fd: RawFd,
        token: u64,
        ptr: *const u8,
        len: u32,
    ) -> io::Result<()> {
        self.grow(fd);
        let sqe = opcode::Send::new(types::Fd(fd), ptr, len)
            .build()
            .user_data(SEND | token);
        self.push_for(fd, &sqe)
    }

    /// `fd` is about to be closed: cancel its receive and its polls, and submit now if a
    /// request for it still waits in the queue.
    pub fn remove(&mut self, fd: RawFd) {
        let slot = fd as usize;
        if slot >= self.by_fd.len() {
            return;
        }
        let mut cancels: [Option<io_uring::squeue::Entry>; 3] = [None, None, None];
        let poll = std::mem::replace(&mut self.by_fd[slot], NO_TOKEN);
        if poll != NO_TOKEN {
            cancels[0] = Some(cancel(poll));
        }
        let once = std::mem::replace(&mut self.once_by_fd[slot], NO_TOKEN);
        if once != NO_TOKEN {
            cancels[1] = Some(cancel(ONCE | once));
        }
        let recv = std::mem::replace(&mut self.recv_by_fd[slot], NO_TOKEN);
        if recv != NO_TOKEN {
            self.recv_fds.remove(&recv);
            cancels[2] = Some(cancel(RECV | recv));
        }
        // A cancellation that cannot be queued (the ring failed) leaves the file to the
        // ring's end.
        for sqe in cancels.iter().flatten() {
            let _ = self.push(sqe);
        }
        if self.queued_at[slot] == self.submits {
            let _ = self.submit();
        }
    }

    fn push_for(&mut self, fd: RawFd, sqe: &io_uring::squeue::Entry) -> io::Result<()> {
        self.push(sqe)?;
        self.queued_at[fd as usize] = self.submits;
        Ok(())
    }

    /// Queue `sqe`, submitting what is queued first when the queue is full.
    fn push(&mut self, sqe: &io_uring::squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: the entries point at memory the callers vouch for (`queue_send`) or at
            // none of ours (polls, cancellations), or at the registered buffer ring.
            if unsafe { self.ring.submission().push(sqe) }.is_ok() {
                return Ok(());
            }
            self.submit()?;
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        self.submits += 1;
        self.ring.submit().map(drop)
    }

    /// The bytes of a `Received::Bytes` handed out by the last wait.
    pub fn bytes(&self, bid: u16, len: u32) -> &[u8] {
        match &self.bufs {
            Some(b) => b.bytes(bid, len as usize),
            None => &[],
        }
    }

    pub fn wait(&mut self, out: &mut Completions, timeout: Duration) -> io::Result<()> {
        out.clear();
        if let Some(bufs) = self.bufs.as_mut() {
            if !self.lent.is_empty() {
                for bid in self.lent.drain(..) {
                    bufs.give_back(bid);
                }
                bufs.publish();
            }
        }
        for token in std::mem::take(&mut self.rearm) {
            if let Some(&fd) = self.recv_fds.get(&token) {
                self.arm_recv(fd, token)?;
            }
        }
        let ts = types::Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos());
        let args = types::SubmitArgs::new().timespec(&ts);
        self.submits += 1;
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => {}
            // The timeout passed, or the completion queue is full (drained below).
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        let mut ended = false;
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.clear();
        cqes.extend(
            self.ring
                .completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        for &(data, res, flags) in &cqes {
            if data == REMOVAL {
                continue;
            }
            if data == TIMER_DATA {
                ended |= !cqueue::more(flags) && res != -libc::ECANCELED;
                out.ready
                    .push((Token(data as usize), Readiness::from_poll_result(res)));
                continue;
            }
            let token = data & !KIND;
            if data & SEND != 0 {
                out.sent.push((Token(token as usize), res));
            } else if data & RECV != 0 {
                received(self, &mut *out, token, res, flags);
            } else if data & ONCE != 0 {
                if res != -libc::ECANCELED {
                    out.ready
                        .push((Token(token as usize), Readiness::from_poll_result(res)));
                }
            } else {
                // The kernel ended this poll (a full completion queue, or an error), not
                // a cancellation of ours.
                ended |= !cqueue::more(flags) && res != -libc::ECANCELED;
                if res != -libc::ECANCELED {
                    out.ready
                        .push((Token(token as usize), Readiness::from_poll_result(res)));
                }
            }
        }
        self.cqes = cqes;
        if ended {
            self.arm_ended()?;
        }
        return Ok(());

        /// A receive's completion for socket `token`.
        fn received(u: &mut Uring, out: &mut Completions, token: u64, res: i32, flags: u32) {
            let more = cqueue::more(flags);
            if res > 0 {
                if let Some(bid) = cqueue::buffer_select(flags) {
                    u.lent.push(bid);
                    let len = res as u32;
                    out.received
                        .push((Token(token as usize), Received::Bytes { bid, len }));
                }
                if !more && u.recv_fds.contains_key(&token) {
                    u.rearm.push(token);
                }
                return;
            }
            if res == -libc::ENOBUFS {
                u.no_buffers += 1;
                if !more && u.recv_fds.contains_key(&token) {
                    u.rearm.push(token);
                }
                return;
            }
            if res == -libc::ECANCELED {
                return;
            }
            // End of file or an error: the receive is over (the worker closes the socket).
            if let Some(fd) = u.recv_fds.remove(&token) {
                if u.recv_by_fd.get(fd as usize) == Some(&token) {
                    u.recv_by_fd[fd as usize] = NO_TOKEN;
                }
            }
            out.received
                .push((Token(token as usize), Received::End(res)));
        }
    }

    /// Arm again the multishot polls the kernel ended whose sockets are still open (rare: it
    /// takes a completion queue that overflowed). Arming reports the present state at once.
    fn arm_ended(&mut self) -> io::Result<()> {
        // Which polls are still armed cannot be asked of the kernel cheaply; cancel them all
        // and arm every open socket again (a cancellation of a poll that ended finds nothing).
        let armed: Vec<(RawFd, u64, bool)> = self
            .by_fd
            .iter()
            .enumerate()
            .filter(|(_, &t)| t != NO_TOKEN)
            .map(|(fd, &t)| (fd as RawFd, t, self.writable[fd]))
            .collect();
        for &(fd, token, writable) in &armed {
            self.push(&cancel(token))?;
            self.arm(fd, token, writable)?;
        }
        Ok(())
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // The kernel must be done with the buffers before they are freed (`bufs` drops
        // after this): unregistered, no receive can pick one again.
        if let Some(b) = self.bufs.as_ref() {
            let _ = self.ring.submitter().unregister_buf_ring(b.group);
        }
    }
}

/// The cancellation of the request with user data `data` (a poll or a receive); its own
/// completion comes under `REMOVAL` and is dropped. A poll its wake-up owns is marked
/// cancelled and ended by that wake-up (see the module's header).
fn cancel(data: u64) -> io_uring::squeue::Entry {
    opcode::AsyncCancel::new(data).build().user_data(REMOVAL)
}

/// A ring for about `connections` sockets: room in the completion queue for a wake-up of
/// each, the kernel's completion work run only when the worker waits (single issuer,
/// deferred task work) where the kernel has it.
pub(crate) fn new_ring(connections: usize) -> io::Result<IoUring> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    fn pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        (0..n)
            .map(|_| {
                let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
                let (server, _) = listener.accept().unwrap();
                client.set_nonblocking(true).unwrap();
                (client, server)
            })
            .collect()
    }

    /// Wait until `done` says so (at most 200 turns); what came per token, in order.
    fn collect(
        u: &mut Uring,
        got: &mut HashMap<u64, (Vec<u8>, Option<i32>)>,
        done: impl Fn(&HashMap<u64, (Vec<u8>, Option<i32>)>) -> bool,
    ) {
        let mut out = Completions::default();
        for _ in 0..200 {
            if done(got) {
                return;
            }
            u.wait(&mut out, Duration::from_millis(20)).unwrap();
            for &(t, r) in &out.received {
                let e = got.entry(t.0 as u64).or_default();
                match r {
                    Received::Bytes { bid, len } => e.0.extend_from_slice(u.bytes(bid, len)),
                    Received::End(res) => e.1 = Some(res),
                }
            }
        }
        panic!("not done after 200 turns: {got:?}");
    }

    /// Two buffers for eight sockets with bytes waiting: the ring runs dry in the first turn
    /// (ENOBUFS), the receives are armed again, and every byte still arrives, in order.
    #[test]
    fn a_ring_that_runs_dry_is_counted_and_every_byte_still_arrives() {
        let mut u = Uring::new(8, 2).expect("io_uring (kernel.io_uring_disabled=0)");
        assert!(u.receives(), "this kernel has provided buffer rings (5.19)");
        let mut socks = pairs(8);
        let want: Vec<Vec<u8>> = (0..8u8)
            .map(|k| (0..40_000u32).map(|b| (b as u8) ^ k).collect())
            .collect();
        for (k, (client, server)) in socks.iter_mut().enumerate() {
            server.write_all(&want[k]).unwrap();
            u.arm_recv(client.as_raw_fd(), k as u64).unwrap();
        }
        let mut got = HashMap::new();
        collect(&mut u, &mut got, |g| {
            (0..8u64).all(|k| g.get(&k).is_some_and(|e| e.0.len() >= 40_000))
        });
        for k in 0..8 {
            let g = &got[&(k as u64)].0;
            let first_bad = g.iter().zip(&want[k]).position(|(a, b)| a != b);
            assert!(
                *g == want[k],
                "socket {k}'s bytes, in order: {} of {}, first wrong at {first_bad:?}",
                g.len(),
                want[k].len()
            );
        }
        assert!(u.no_buffers > 0, "the ring of two buffers ran dry");
    }

    /// A peer that closes ends the receive with end of file, after its last bytes.
    #[test]
    fn end_of_file_ends_the_receive_after_the_last_bytes() {
        let mut u = Uring::new(1, 4).unwrap();
        let mut socks = pairs(1);
        let (client, mut server) = socks.pop().unwrap();
        u.arm_recv(client.as_raw_fd(), 3).unwrap();
        server.write_all(b"HTTP/1.1 200 OK\r\n").unwrap();
        drop(server);
        let mut got = HashMap::new();
        collect(&mut u, &mut got, |g| {
            g.get(&3).is_some_and(|e| e.1.is_some())
        });
        assert_eq!(got[&3].0, b"HTTP/1.1 200 OK\r\n");
        assert_eq!(got[&3].1, Some(0));
    }

    /// A poll whose wake-up is still pending when the socket closes (an answer arrived and
    /// the ring has not been entered since: with deferred task work the wake-up owns the
    /// request until then) is ended all the same, so the peer sees the connection end.
    /// `IORING_OP_POLL_REMOVE` answered such a poll with EALREADY and left it armed, holding
    /// the closed socket open: a single-threaded server (`openssl s_server`) then waited on
    /// it, and the next connection's TLS handshake timed out.
    #[test]
    fn a_socket_closed_while_its_wake_up_is_pending_reaches_its_peer_as_end_of_file() {
        for round in 0..20 {
            let mut u = Uring::new(1, 0).unwrap();
            let mut socks = pairs(1);
            let (client, mut server) = socks.pop().unwrap();
            u.arm(client.as_raw_fd(), 9, true).unwrap();
            let mut out = Completions::default();
            u.wait(&mut out, Duration::from_millis(100)).unwrap();
            assert!(!out.ready.is_empty(), "the connected socket polls writable");
            // The answer wakes the poll (on loopback within the write itself); the ring is
            // not entered before the close.
            server.write_all(b"HTTP/1.0 200 OK\r\n\r\n").unwrap();
            u.remove(client.as_raw_fd());
            drop(client);
            u.wait(&mut out, Duration::from_millis(10)).unwrap();
            server
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            // The client closed with the answer unread, so its kernel resets the
            // connection; either end is the socket closed, a timeout is the socket held.
            let mut buf = [0u8; 8];
            let n = server.read(&mut buf);
            assert!(
                matches!(&n, Ok(0))
                    || n.as_ref()
                        .is_err_and(|e| e.kind() == io::ErrorKind::ConnectionReset),
                "round {round}: the connection ended, not {n:?} (the poll still holds the socket)"
            );
        }
    }

    /// A receive holds its file: closing cancels it, so the peer sees the connection end.
    #[test]
    fn a_socket_read_through_the_ring_reaches_its_peer_as_end_of_file_when_closed() {
        let mut u = Uring::new(1, 4).unwrap();
        let mut socks = pairs(1);
        let (client, mut server) = socks.pop().unwrap();
        u.arm_recv(client.as_raw_fd(), 5).unwrap();
        u.wait(&mut Completions::default(), Duration::ZERO).unwrap();
        u.remove(client.as_raw_fd());
        drop(client);
        u.wait(&mut Completions::default(), Duration::ZERO).unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(
            server.read(&mut buf).expect("end of file, not a timeout"),
            0
        );
    }
}
