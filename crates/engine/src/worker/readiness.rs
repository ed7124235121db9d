//! What the two backends of `poller` hand a worker after a wait, in one vocabulary:
//! `Readiness` (the bits of a socket's wake-up, read from epoll's events or from a ring's
//! poll masks), `Received` (what a ring's receive brought) and `Completions` (one wait's
//! haul). A leaf: `poller` and `uring` both speak it and neither imports the other for it.

use mio::Token;

/// What a wake-up says about a socket (the bits the workers look at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Readiness(u8);

const READABLE: u8 = 1;
const WRITABLE: u8 = 2;
const READ_CLOSED: u8 = 4;
const ERROR: u8 = 8;

impl Readiness {
    pub(super) fn from_mio(e: &mio::event::Event) -> Readiness {
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

    /// From a poll request's result: its mask, or an error.
    pub(crate) fn from_poll_result(res: i32) -> Readiness {
        if res >= 0 {
            Readiness::from_poll(res as u32)
        } else {
            Readiness(ERROR)
        }
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

/// What a receive brought for a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Received {
    /// `len` bytes in buffer `bid` (`Poller::received_bytes`), until the next wait.
    Bytes { bid: u16, len: u32 },
    /// The receive ended for good: 0 at end of file, else -errno.
    End(i32),
}

/// What one wait brought.
#[derive(Default)]
pub(crate) struct Completions {
    pub ready: Vec<(Token, Readiness)>,
    /// io_uring: sends that completed (bytes sent, or -errno).
    pub sent: Vec<(Token, i32)>,
    /// io_uring: what receives brought.
    pub received: Vec<(Token, Received)>,
}

impl Completions {
    pub fn clear(&mut self) {
        self.ready.clear();
        self.sent.clear();
        self.received.clear();
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
}
