//! A private network namespace for one lab run: created by a short-lived thread
//! (unshare(CLONE_NEWNET) changes only that thread), its `lo` brought up, the run's
//! sysctls written and read back there, and held by a file descriptor of ours. Threads
//! enter it with setns for as long as they start servers or open the generator's
//! sockets, then return to where they were. Nothing is mounted: once webtune and the
//! processes started inside are gone, so is the namespace — also after a SIGKILL, when
//! `lab clean` ends the processes (the registry records the namespace's inode).

use crate::host::Sysctl;
use crate::LabError;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A network namespace of our own, alive while this value (or any process in it) is.
#[derive(Debug)]
pub struct NetNamespace {
    fd: OwnedFd,
    inode: u64,
    sysctls: BTreeMap<String, String>,
}

/// The inode of a `/proc/…/ns/net` link ("net:[4026531840]"), which names a namespace.
pub fn namespace_inode(link: &str) -> Option<u64> {
    let target = std::fs::read_link(link).ok()?;
    let text = target.to_string_lossy();
    text.strip_prefix("net:[")?.strip_suffix(']')?.parse().ok()
}

/// The network namespace of a process, by its inode.
pub fn namespace_of(pid: i32) -> Option<u64> {
    namespace_inode(&format!("/proc/{pid}/ns/net"))
}

impl NetNamespace {
    /// Create a namespace with `lo` up and these sysctls set in it. The host's values are
    /// never touched: the sysctls are written only by a thread that has verified it is in
    /// the new namespace.
    pub fn create(sysctls: &[(Sysctl, i64)]) -> Result<NetNamespace, LabError> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| create_on_this_thread(sysctls))
                .join()
                .unwrap_or_else(|_| {
                    Err(LabError::Host(
                        "internal: the namespace thread panicked".into(),
                    ))
                })
        })
    }

    /// "net:[INODE]".
    pub fn name(&self) -> String {
        format!("net:[{}]", self.inode)
    }

    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// The sysctls as read back inside after writing, by dotted name.
    pub fn sysctls(&self) -> &BTreeMap<String, String> {
        &self.sysctls
    }

    /// Move the calling thread into the namespace until the guard is dropped (or `leave`
    /// is called). Threads and processes it starts meanwhile are inside too.
    pub fn enter(&self) -> Result<Inside, LabError> {
        let original = open_own_namespace()?;
        // SAFETY: setns with a namespace fd we own; affects the calling thread only.
        if unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(LabError::Host(format!(
                "cannot enter the run's network namespace: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(Inside {
            original: Some(original),
            _not_send: std::marker::PhantomData,
        })
    }
}

/// The calling thread is inside a run's namespace while this lives.
pub struct Inside {
    original: Option<OwnedFd>,
    /// A thread's namespace: the guard must stay on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Inside {
    /// Return to the namespace the thread came from.
    pub fn leave(mut self) -> Result<(), LabError> {
        self.restore()
    }

    fn restore(&mut self) -> Result<(), LabError> {
        let Some(fd) = self.original.take() else {
            return Ok(());
        };
        // SAFETY: setns with the fd of the namespace this thread was in.
        if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(LabError::Host(format!(
                "cannot leave the run's network namespace: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("webtune lab: {e}");
        }
    }
}

fn open_own_namespace() -> Result<OwnedFd, LabError> {
    let path = c"/proc/thread-self/ns/net";
    // SAFETY: open with a valid C string; the fd returned is ours to own.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(LabError::io(
            "opening /proc/thread-self/ns/net",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn create_on_this_thread(sysctls: &[(Sysctl, i64)]) -> Result<NetNamespace, LabError> {
    let own = "/proc/thread-self/ns/net";
    let before = namespace_inode(own);
    // SAFETY: unshare(CLONE_NEWNET) moves only the calling thread (this one, which ends
    // after this function) into a new namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(LabError::Host(format!(
            "cannot create a network namespace: {} (needs root)",
            std::io::Error::last_os_error()
        )));
    }
    let after = namespace_inode(own);
    if after.is_none() || after == before {
        return Err(LabError::Host(
            "internal: the new network namespace is not in effect; no sysctl was written".into(),
        ));
    }
    bring_loopback_up()?;
    let mut applied = BTreeMap::new();
    for (sysctl, value) in sysctls {
        let path = sysctl.path();
        let current = std::fs::read_to_string(&path)
            .map_err(|e| LabError::io(format!("reading {} in the namespace", sysctl.name), e))?;
        let text = sysctl.text_for(*value, &current)?;
        std::fs::write(&path, format!("{text}\n")).map_err(|e| {
            LabError::Host(format!(
                "cannot set {} = {text} in the run's namespace: {e}",
                sysctl.name
            ))
        })?;
        let back = std::fs::read_to_string(&path)
            .map_err(|e| LabError::io(format!("reading {} back", sysctl.name), e))?;
        let back = back.split_whitespace().collect::<Vec<_>>().join(" ");
        if back != text {
            return Err(LabError::Host(format!(
                "{} reads {back} after writing {text}: the kernel did not take it",
                sysctl.name
            )));
        }
        applied.insert(sysctl.name.to_string(), back);
    }
    let fd = open_own_namespace()?;
    Ok(NetNamespace {
        fd,
        inode: after.unwrap_or(0),
        sysctls: applied,
    })
}

/// `ip link set lo up`, by ioctl: a new namespace's loopback starts down.
fn bring_loopback_up() -> Result<(), LabError> {
    let fail = |what: &str| {
        LabError::Host(format!(
            "cannot bring up lo in the run's namespace ({what}): {}",
            std::io::Error::last_os_error()
        ))
    };
    // SAFETY: a datagram socket used only for interface ioctls, closed by OwnedFd.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(fail("socket"));
    }
    // SAFETY: raw is a fresh descriptor nobody else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: an all-zero ifreq is valid; the name is a NUL-terminated "lo".
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS / SIOCSIFFLAGS read and write the ifreq we pass. The request's
    // type is the C library's (`unsigned long` in glibc, `int` in musl): `libc::Ioctl`.
    unsafe {
        if libc::ioctl(
            sock.as_raw_fd(),
            libc::SIOCGIFFLAGS as libc::Ioctl,
            &mut req,
        ) != 0
        {
            return Err(fail("SIOCGIFFLAGS"));
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS as libc::Ioctl, &req) != 0 {
            return Err(fail("SIOCSIFFLAGS"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::SYSCTLS;

    fn root() -> bool {
        crate::host::effective_capabilities().is_some_and(|c| c & (1 << 21) != 0)
    }

    #[test]
    fn sysctls_apply_inside_and_the_host_keeps_its_value() {
        if !root() {
            crate::opt_out::opt_out("root", "a network namespace needs CAP_SYS_ADMIN");
            return;
        }
        let somaxconn = SYSCTLS[0];
        let host_before = std::fs::read_to_string(somaxconn.path()).unwrap();
        let wanted = if host_before.trim() == "77" { 78 } else { 77 };
        let ns = NetNamespace::create(&[(somaxconn, wanted)]).unwrap();
        assert_eq!(ns.sysctls()["net.core.somaxconn"], wanted.to_string());
        assert_eq!(
            std::fs::read_to_string(somaxconn.path()).unwrap(),
            host_before
        );
        // A thread inside reads the namespace's value and reaches its own lo.
        let seen = std::thread::scope(|s| {
            s.spawn(|| {
                let inside = ns.enter().unwrap();
                assert_eq!(
                    namespace_inode("/proc/thread-self/ns/net"),
                    Some(ns.inode())
                );
                let value = std::fs::read_to_string(somaxconn.path()).unwrap();
                let listener = std::net::TcpListener::bind("127.0.0.3:0").unwrap();
                let connected = std::net::TcpStream::connect(listener.local_addr().unwrap());
                inside.leave().unwrap();
                (value, connected.is_ok())
            })
            .join()
            .unwrap()
        });
        assert_eq!(seen.0.trim(), wanted.to_string());
        assert!(seen.1, "lo is up inside and every 127.x address is local");
        assert_eq!(
            std::fs::read_to_string(somaxconn.path()).unwrap(),
            host_before
        );
        assert_ne!(namespace_of(std::process::id() as i32), Some(ns.inode()));
    }
}
