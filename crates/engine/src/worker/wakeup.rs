//! What wakes a worker besides its sockets' answers, and how it tells those sockets apart:
//! the timerfd that wakes an open loop at the next due time under epoll (io_uring's wait
//! takes a timeout in nanoseconds, so there the wait itself wakes at the due time), and the
//! event tokens (a connection's index and its socket's generation). A leaf below `base`
//! (which opens sockets and arms the timer) and `event_loop` (which reads the tokens), so
//! neither imports the other for them.

use super::poller::Poller;
use mio::Token;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub(crate) const TIMER: Token = Token(usize::MAX);
/// A token is (socket generation << INDEX_BITS) | connection index: an event still queued
/// for a closed socket carries an old generation and is dropped, so a reused index never
/// takes another socket's event for its own. Tokens stay below 2^61: the ring's user data
/// has three top bits of its own (`uring`).
const INDEX_BITS: u32 = 24;
pub(crate) const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;

/// The event token of connection `index`'s socket number `generation` (the generation is
/// cut short of the top three bits, so no token is ever `TIMER`).
pub(crate) fn token_of(index: usize, generation: usize) -> Token {
    let generation_mask = usize::MAX >> (INDEX_BITS + 3);
    Token(((generation & generation_mask) << INDEX_BITS) | index)
}

/// A non-blocking monotonic timerfd, registered for readability.
pub(crate) fn create_timer(poll: &mut Poller) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the returned fd is owned below.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    poll.register(owned.as_raw_fd(), TIMER, false)?;
    Ok(owned)
}

/// Arm the timer to fire once after `after` (at least 1 µs).
pub(crate) fn arm_timer(timer: &OwnedFd, after: Duration) {
    let after = after.max(Duration::from_micros(1));
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: after.as_secs() as _,
            tv_nsec: after.subsec_nanos() as libc::c_long,
        },
    };
    // SAFETY: valid fd and a fully initialised itimerspec.
    unsafe { libc::timerfd_settime(timer.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_tell_generations_apart_and_never_equal_the_timer() {
        assert_ne!(token_of(5, 1), token_of(5, 2));
        assert_eq!(token_of(5, 7).0 & INDEX_MASK, 5);
        assert_ne!(token_of(INDEX_MASK, usize::MAX), TIMER);
        assert_eq!(token_of(3, usize::MAX).0 & INDEX_MASK, 3);
        assert!(token_of(INDEX_MASK, usize::MAX).0 < 1 << 61);
    }
}
