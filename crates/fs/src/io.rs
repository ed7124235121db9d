//! The file operations, as system calls on bare names relative to a directory descriptor:
//! create (open + write + close), read whole file, append, delete, fsync. Buffered I/O
//! moves a file's blocks with as few calls as a 64 KiB buffer allows (stdio with a larger
//! buffer); unbuffered makes one call per block (postmark's `set buffering false`); direct
//! opens with `O_DIRECT` and, where the file system refuses it at open (tmpfs before Linux
//! 6.6), the caller falls back to unbuffered and says so; a block the kernel refuses under
//! `O_DIRECT` (unaligned tails and appends) is moved with `O_DIRECT` cleared on that
//! descriptor.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use webtune_model::fs::IoMode;

/// Buffered I/O's buffer: the most one call moves.
pub const BUFFER: usize = 64 * 1024;
/// Alignment of direct I/O's buffers and blocks.
pub const ALIGN: usize = 4096;

fn cvt(r: isize) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// A buffer whose data starts on an `ALIGN` boundary.
pub struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    pub fn new(len: usize) -> AlignedBuf {
        let raw = vec![0u8; len + ALIGN];
        let start = raw.as_ptr().align_offset(ALIGN);
        AlignedBuf { raw, start, len }
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

/// How a worker moves data: the mode in use and the block sizes.
pub struct Mover {
    pub mode: IoMode,
    read_chunk: usize,
    write_chunk: usize,
    /// Calls refused under O_DIRECT and redone without it.
    pub direct_fallbacks: u64,
}

impl Mover {
    pub fn new(mode: IoMode, read_block: u64, write_block: u64) -> Mover {
        let chunk = |block: u64| match mode {
            IoMode::Buffered => (block as usize).max(BUFFER),
            IoMode::Unbuffered => block as usize,
            IoMode::Direct => (block as usize).div_ceil(ALIGN) * ALIGN,
        };
        Mover {
            mode,
            read_chunk: chunk(read_block),
            write_chunk: chunk(write_block),
            direct_fallbacks: 0,
        }
    }

    fn flags(&self) -> libc::c_int {
        libc::O_CLOEXEC
            | if self.mode == IoMode::Direct {
                libc::O_DIRECT
            } else {
                0
            }
    }

    fn open(&self, dir: RawFd, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
        // SAFETY: openat with a directory descriptor we hold and a NUL-terminated name;
        // the descriptor is owned at once.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | self.flags(), 0o644) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just opened and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// A new (or truncated) file to write.
    pub fn open_new(&self, dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
        self.open(dir, name, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)
    }

    pub fn open_append(&self, dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
        self.open(dir, name, libc::O_WRONLY | libc::O_APPEND)
    }

    pub fn open_read(&self, dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
        self.open(dir, name, libc::O_RDONLY)
    }

    /// Clear O_DIRECT on a descriptor whose call the kernel refused under it.
    fn drop_direct(&mut self, fd: RawFd) -> io::Result<()> {
        self.direct_fallbacks += 1;
        // SAFETY: fcntl on a descriptor we own.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Write all of `data`, a chunk per call.
    pub fn write_all(&mut self, fd: &OwnedFd, data: &[u8]) -> io::Result<()> {
        let raw = fd.as_raw_fd();
        let mut done = 0;
        while done < data.len() {
            let n = (data.len() - done).min(self.write_chunk);
            let part = &data[done..done + n];
            // SAFETY: write from a live slice of n bytes to a descriptor we own.
            match cvt(unsafe { libc::write(raw, part.as_ptr().cast(), n) }) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(w) => done += w,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) && self.mode == IoMode::Direct => {
                    self.drop_direct(raw)?
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Read `size` bytes (the whole file) into `buf`, a chunk per call; returns the bytes
    /// read (fewer when the file was shorter).
    pub fn read_all(&mut self, fd: &OwnedFd, size: usize, buf: &mut [u8]) -> io::Result<usize> {
        let raw = fd.as_raw_fd();
        let mut done = 0;
        while done < size {
            let want = (size - done).min(self.read_chunk);
            let n = if self.mode == IoMode::Direct {
                want.div_ceil(ALIGN) * ALIGN
            } else {
                want
            }
            .min(buf.len());
            // SAFETY: read into a live buffer of at least n bytes from a descriptor we own.
            match cvt(unsafe { libc::read(raw, buf.as_mut_ptr().cast(), n) }) {
                Ok(0) => break,
                Ok(r) => done += r,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) && self.mode == IoMode::Direct => {
                    self.drop_direct(raw)?
                }
                Err(e) => return Err(e),
            }
        }
        Ok(done.min(size))
    }
}

/// fsync (or fdatasync) a file or directory.
pub fn sync(fd: RawFd, data_only: bool) -> io::Result<()> {
    // SAFETY: fsync/fdatasync on a descriptor we hold.
    let r = unsafe {
        if data_only {
            libc::fdatasync(fd)
        } else {
            libc::fsync(fd)
        }
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Remove a file by name from a directory.
pub fn unlink(dir: RawFd, name: &CStr) -> io::Result<()> {
    // SAFETY: unlinkat with a directory descriptor we hold and a NUL-terminated name.
    if unsafe { libc::unlinkat(dir, name.as_ptr(), 0) } < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A file's name, `N` (one worker, as postmark names them) or `wW-N`, NUL-terminated in a
/// fixed buffer (no allocation per operation).
pub struct Name {
    buf: [u8; 40],
}

impl Name {
    pub fn new() -> Name {
        Name { buf: [0; 40] }
    }

    pub fn set(&mut self, worker: Option<u32>, number: u64) -> &CStr {
        let mut at = 0;
        if let Some(w) = worker {
            self.buf[0] = b'w';
            at = 1 + put_decimal(&mut self.buf[1..], u64::from(w));
            self.buf[at] = b'-';
            at += 1;
        }
        at += put_decimal(&mut self.buf[at..], number);
        self.buf[at] = 0;
        CStr::from_bytes_until_nul(&self.buf[..=at]).expect("a NUL ends the name")
    }
}

impl Default for Name {
    fn default() -> Self {
        Name::new()
    }
}

fn put_decimal(out: &mut [u8], mut v: u64) -> usize {
    let mut tmp = [0u8; 20];
    let mut n = 0;
    loop {
        tmp[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in 0..n {
        out[i] = tmp[n - 1 - i];
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_postmarks_for_one_worker() {
        let mut n = Name::new();
        assert_eq!(n.set(None, 1234).to_str().unwrap(), "1234");
        assert_eq!(n.set(Some(3), 7).to_str().unwrap(), "w3-7");
        assert_eq!(n.set(None, 0).to_str().unwrap(), "0");
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        let b = AlignedBuf::new(10_000);
        assert_eq!(b.as_slice().as_ptr() as usize % ALIGN, 0);
        assert_eq!(b.as_slice().len(), 10_000);
    }
}
