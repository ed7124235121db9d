//! The provided buffer ring a worker's io_uring receives into (`IORING_REGISTER_PBUF_RING`,
//! Linux 5.19): `count` buffers of `size` bytes, lent to the kernel through a ring of
//! descriptors it takes from the head of while we put buffers back at the tail. A multishot
//! receive picks a buffer per completion and names it in the completion's flags; the worker
//! reads the bytes there and the poller gives the buffer back at its next wait, so every
//! buffer is the kernel's again before the next `io_uring_enter`.
//!
//! The idea (one buffer group shared by all of a ring's sockets, buffers recycled in bulk
//! with one tail update) follows liburing's `io_uring_buf_ring` helpers and its
//! `examples/proxy.c`; the layout (the tail in the first descriptor's reserved field) is the
//! kernel's, read through the io-uring crate's `BufRingEntry`.
//!
//! Memory: descriptors and buffers are anonymous mappings (page aligned, zero pages until
//! written), so a page costs resident memory only once the kernel has written into it; a
//! small answer touches one page of its buffer.

use io_uring::types::BufRingEntry;
use io_uring::IoUring;
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

pub(crate) struct BufRing {
    /// `count` descriptors, page aligned, registered with the kernel.
    descs: *mut BufRingEntry,
    descs_len: usize,
    /// `count * size` bytes of buffers.
    bytes: *mut u8,
    bytes_len: usize,
    count: u16,
    size: u32,
    /// Our tail (published to the kernel by `publish`).
    tail: u16,
    pub group: u16,
}

impl BufRing {
    /// Allocate `count` (a power of two, at most 32768) buffers of `size` bytes and register
    /// them with `ring` as buffer group `group`, every buffer lent to the kernel.
    pub fn new(ring: &IoUring, count: u16, size: u32, group: u16) -> io::Result<BufRing> {
        assert!(count.is_power_of_two() && size > 0);
        let descs_len = count as usize * std::mem::size_of::<BufRingEntry>();
        let bytes_len = count as usize * size as usize;
        let descs = map(descs_len)? as *mut BufRingEntry;
        let bytes = match map(bytes_len) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: mapped just above with this length.
                unsafe { libc::munmap(descs as *mut libc::c_void, descs_len) };
                return Err(e);
            }
        };
        let mut r = BufRing {
            descs,
            descs_len,
            bytes,
            bytes_len,
            count,
            size,
            tail: 0,
            group,
        };
        for bid in 0..count {
            r.give_back(bid);
        }
        r.publish();
        // SAFETY: `descs` holds `count` descriptors, page aligned, and lives until `Drop`,
        // which comes after the owner unregistered it (`Uring`'s drop).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(descs as u64, count, group, 0)?;
        }
        Ok(r)
    }

    /// The `len` bytes the kernel wrote into buffer `bid` (the completion said so).
    pub fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        let bid = (bid & (self.count - 1)) as usize;
        let len = len.min(self.size as usize);
        // SAFETY: in bounds by the masks above; the buffer is ours (the kernel handed it
        // back in a completion and gets it again only after `give_back` and `publish`).
        unsafe { std::slice::from_raw_parts(self.bytes.add(bid * self.size as usize), len) }
    }

    /// Put buffer `bid` back at the tail (seen by the kernel after `publish`).
    pub fn give_back(&mut self, bid: u16) {
        let bid = bid & (self.count - 1);
        let slot = (self.tail & (self.count - 1)) as usize;
        // SAFETY: `slot` < count; this descriptor is not the kernel's (it is past the tail).
        let d = unsafe { &mut *self.descs.add(slot) };
        // SAFETY: in bounds (bid < count).
        d.set_addr(unsafe { self.bytes.add(bid as usize * self.size as usize) } as u64);
        d.set_len(self.size);
        d.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Show the kernel every buffer given back so far (one release store of the tail).
    pub fn publish(&mut self) {
        // SAFETY: the tail field sits in the first descriptor, which lives as long as self,
        // and the kernel only reads it; it is 2-aligned.
        unsafe {
            let tail = BufRingEntry::tail(self.descs) as *mut u16;
            AtomicU16::from_ptr(tail).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with these lengths; the kernel no longer uses them
        // (unregistered, or the ring is gone).
        unsafe {
            libc::munmap(self.descs as *mut libc::c_void, self.descs_len);
            libc::munmap(self.bytes as *mut libc::c_void, self.bytes_len);
        }
    }
}

/// `len` bytes of fresh anonymous memory, page aligned, zero until written (no page is
/// resident before it is touched).
fn map(len: usize) -> io::Result<*mut u8> {
    // SAFETY: a private anonymous mapping at an address the kernel picks.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p as *mut u8)
}
