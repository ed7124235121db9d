//! When an answer arrived, as the kernel saw it: receive timestamps for plain-TCP sockets
//! (`SO_TIMESTAMPNS`, read back with `recvmsg`), so an open loop under epoll can sleep until
//! its next due time and collect the answers that came meanwhile in one wake-up without
//! counting the sleep in their latency (`event_loop`: answers batched per wake-up).
//!
//! The kernel stamps each segment when it reaches the host's network stack (for loopback,
//! when the server's `write` hands it over); a TCP read reports the stamp of the latest
//! segment it consumed, which for an answer read to its end is when its last byte arrived
//! (Linux `tcp_recv_timestamp`, socket(7) `SO_TIMESTAMPNS`). The stamp is on the real-time
//! clock; `arrival` carries it over to the monotonic clock the engine measures with, by the
//! two clocks' offset read at the moment of the read (nanoseconds apart: a clock step in
//! between could shift it, and it is then clamped between the request's send and now).
//!
//! Written on `libc` rather than with `nix`'s `recvmsg`: one call and one control message,
//! not worth a new dependency on the hot path.

use std::io;
use std::mem::{size_of, size_of_val};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Ask the kernel to stamp what `fd` receives.
pub(crate) fn enable(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a plain setsockopt with a valid pointer to an int of the given size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Read from `fd` into `buf` as `read` would: the byte count, and the real-time stamp of the
/// latest segment read (since the Unix epoch), if the kernel stamped it.
pub(crate) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one control message holding a timespec, aligned for `cmsghdr`.
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is a valid empty one; the fields set below point into
    // `iov` and `control`, which outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    // SAFETY: `msg` describes writable memory of the stated sizes.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the kernel filled `msg_controllen` bytes of `control` with control messages;
    // the CMSG_* macros walk them within that length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::timespec);
                stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, stamp))
}

/// The real-time clock now, since the Unix epoch.
fn real_now() -> Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

/// The monotonic instant of a real-time `stamp`, read now; never before `sent` (when the
/// request went out) and never after now.
pub(crate) fn arrival(stamp: Duration, sent: Instant) -> Instant {
    let now = Instant::now();
    arrival_at(stamp, real_now(), now, sent)
}

/// `arrival` with both clocks read by the caller: `real_now` and `now` the same moment.
fn arrival_at(stamp: Duration, real_now: Duration, now: Instant, sent: Instant) -> Instant {
    let age = real_now.saturating_sub(stamp);
    now.checked_sub(age)
        .unwrap_or(sent)
        .clamp(sent.min(now), now)
}

/// Whether a worker's answers carry the kernel's stamps: unknown until the first stamped
/// read (the kernel turns stamping on a moment after the first socket asks), then stamped
/// for good — unless a read comes back without one, when stamps are missing for the rest
/// of the run and answers are no longer batched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Stamps {
    /// Not asked for (not an open loop under epoll over plain TCP).
    #[default]
    Off,
    Unknown,
    Seen,
    Missing,
}

impl Stamps {
    /// A read came back with (or without) a stamp.
    pub fn read(&mut self, stamped: bool) {
        *self = match (*self, stamped) {
            (Stamps::Off, _) => Stamps::Off,
            (Stamps::Missing, _) => Stamps::Missing,
            (_, true) => Stamps::Seen,
            (Stamps::Seen, false) => Stamps::Missing,
            (Stamps::Unknown, false) => Stamps::Unknown,
        };
    }

    /// Are reads made with `recv` here (stamps asked for)?
    pub fn asked(self) -> bool {
        !matches!(self, Stamps::Off)
    }

    /// May answers wait for the next wake-up (every read so far since the first was stamped)?
    pub fn trusted(self) -> bool {
        self == Stamps::Seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn an_answer_is_stamped_when_it_arrived_not_when_it_was_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        enable(client.as_raw_fd()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        // The kernel turns stamping on a moment after it is asked (a deferred static key):
        // write until a read comes back stamped, a bounded number of times.
        let mut buf = [0u8; 64];
        let mut stamped = None;
        for _ in 0..200 {
            server
                .write_all(b"HTTP/1.1 204 No Content\r\n\r\n")
                .unwrap();
            let written = Instant::now();
            std::thread::sleep(Duration::from_millis(5));
            let before_read = Instant::now();
            let (n, stamp) = recv(client.as_raw_fd(), &mut buf).unwrap();
            assert_eq!(&buf[..n], b"HTTP/1.1 204 No Content\r\n\r\n");
            if let Some(stamp) = stamp {
                let floor = written - Duration::from_secs(60);
                stamped = Some((written, before_read, arrival(stamp, floor)));
                break;
            }
        }
        let (written, before_read, at) =
            stamped.expect("loopback TCP reads carry SO_TIMESTAMPNS stamps");
        // The answer arrived before the write returned, and the read came at least 5 ms
        // later: its time is the arrival, not the read.
        assert!(at <= written, "stamped at its arrival");
        assert!(
            at + Duration::from_millis(5) <= before_read,
            "not at the read"
        );
    }

    #[test]
    fn a_stamp_maps_to_the_monotonic_clock_within_send_and_now() {
        let now = Instant::now();
        let sent = now - Duration::from_millis(10);
        let real = Duration::from_secs(1_000_000);
        let ms = Duration::from_millis;
        assert_eq!(arrival_at(real - ms(3), real, now, sent), now - ms(3));
        // A stamp from the future (a clock step): now. Older than the send: the send.
        assert_eq!(arrival_at(real + ms(3), real, now, sent), now);
        assert_eq!(arrival_at(real - ms(30), real, now, sent), sent);
    }

    #[test]
    fn answers_are_trusted_to_wait_only_while_every_read_is_stamped() {
        let mut s = Stamps::Unknown;
        assert!(s.asked() && !s.trusted());
        s.read(false);
        assert_eq!(s, Stamps::Unknown, "stamping may not be on yet");
        s.read(true);
        assert!(s.trusted());
        s.read(false);
        assert_eq!(s, Stamps::Missing);
        s.read(true);
        assert!(!s.trusted(), "missing for the rest of the run");
        let mut off = Stamps::Off;
        off.read(true);
        assert!(!off.asked() && !off.trusted());
    }
}
