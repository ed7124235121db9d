//! The holder: the one process that owns a lab file system. It is started in a mount
//! namespace of its own (`unshare(CLONE_NEWNS)` and every mount made private between fork
//! and exec, so nothing it mounts reaches the host's mount table), in a session of its own,
//! and dies with the thread that started it (`PR_SET_PDEATHSIG`). It makes the sparse image
//! in the run's private directory, runs mkfs on it, mounts it through a loop device that
//! `mount -o loop` attaches with autoclear, deletes the image file (the loop device keeps it
//! open), prints `ready /dev/loopN` and waits. Whatever ends it — a stop, SIGKILL, webtune's
//! death — ends its namespace, so the mount goes, so the loop device detaches, and the
//! image's blocks are freed: nothing is left. The workload reaches the mount through
//! `/proc/PID/root/…` (no `setns` in a threaded process).

use crate::LabError;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What the holder makes: the commands' words, all typed values (no text from a user).
#[derive(Debug, Clone, PartialEq)]
pub struct Recipe {
    /// "tmpfs", "ext4" or "xfs".
    pub kind: &'static str,
    pub size_mb: i64,
    /// mkfs's options (empty for tmpfs).
    pub mkfs: Vec<String>,
    /// `mount -o` options (`loop` is added for images).
    pub mount: Vec<String>,
    pub direct_io: bool,
}

impl Recipe {
    /// The shell script the holder runs; `$1` is the image, `$2` the mount point.
    pub fn script(&self) -> String {
        let opts = self.mount.join(",");
        let mut s = String::from("set -e\n");
        if self.kind == "tmpfs" {
            s.push_str(&format!(
                "mount -t tmpfs -o size={}m,mode=0700,{opts} webtune-fs \"$2\"\n",
                self.size_mb
            ));
            s.push_str("echo ready -\n");
        } else {
            s.push_str(&format!("truncate -s {}M \"$1\"\n", self.size_mb));
            s.push_str(&format!(
                "mkfs.{} {} \"$1\" >&2\n",
                self.kind,
                self.mkfs.join(" ")
            ));
            s.push_str(&format!(
                "mount -t {} -o loop,{opts} \"$1\" \"$2\"\n",
                self.kind
            ));
            s.push_str("dev=$(findmnt -n -o SOURCE --mountpoint \"$2\")\n");
            if self.direct_io {
                s.push_str("losetup --direct-io=on \"$dev\"\n");
            }
            s.push_str("rm -f \"$1\"\n");
            s.push_str("echo \"ready $dev\"\n");
        }
        s.push_str("exec sleep 2147483647\n");
        s
    }
}

/// A started holder.
pub struct Holder {
    child: Child,
    /// The mount point, as a path inside the holder's namespace.
    pub mount_point: PathBuf,
    /// "loop3"; empty for tmpfs.
    pub device: String,
}

impl Holder {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The mount as this process reaches it: `/proc/PID/root/MOUNT_POINT`.
    pub fn path(&self) -> PathBuf {
        let rel = self
            .mount_point
            .strip_prefix("/")
            .unwrap_or(&self.mount_point);
        Path::new(&format!("/proc/{}/root", self.pid())).join(rel)
    }

    /// The mount's line of the holder's `/proc/PID/mountinfo` (its options and the file
    /// system's own, as the kernel shows them).
    pub fn mountinfo_line(&self) -> Option<String> {
        let text = std::fs::read_to_string(format!("/proc/{}/mountinfo", self.pid())).ok()?;
        let want = self.mount_point.to_string_lossy().into_owned();
        text.lines()
            .find(|l| l.split(' ').nth(4) == Some(want.as_str()))
            .map(str::to_string)
    }

    /// Start the holder for `recipe` with the image at `image` and the mount point
    /// `mount_point` (an empty directory that exists); `err_log` takes its stderr. Waits up
    /// to `limit` for it to be ready; on any failure it is killed, and its log's last lines
    /// are the error.
    pub fn start(
        recipe: &Recipe,
        image: &Path,
        mount_point: &Path,
        err_log: &Path,
        limit: Duration,
    ) -> Result<Holder, LabError> {
        let err = std::fs::File::create(err_log)
            .map_err(|e| LabError::io(format!("creating {}", err_log.display()), e))?;
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(recipe.script())
            .arg("webtune-fs-holder")
            .arg(image)
            .arg(mount_point)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
        let parent = std::process::id() as i32;
        // SAFETY: between fork and exec only async-signal-safe system calls are made.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                if libc::unshare(libc::CLONE_NEWNS) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let root = c"/";
                let rc = libc::mount(
                    std::ptr::null(),
                    root.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                );
                if rc != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::EPERM) {
                ": a private mount namespace needs root (CAP_SYS_ADMIN)"
            } else {
                ""
            };
            LabError::StartFailed {
                server: format!("{} file system", recipe.kind),
                message: format!("{e}{hint}"),
            }
        })?;
        let stdout = child.stdout.take();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        if let Some(out) = stdout {
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = BufReader::new(out).read_line(&mut line);
                let _ = tx.send(line);
            });
        }
        let failed = |child: &mut Child, why: String| {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(err_log).unwrap_or_default();
            // What comes before a usage text (mkfs prints one after its complaint).
            let last: Vec<&str> = log
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:"))
                .filter(|l| !l.is_empty())
                .collect();
            let tail = last[last.len().saturating_sub(2)..].join(" / ");
            LabError::StartFailed {
                server: format!("{} file system", recipe.kind),
                message: if tail.is_empty() {
                    why
                } else {
                    format!("{why}: {tail}")
                },
            }
        };
        let deadline = Instant::now() + limit;
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_default();
        let Some(dev) = line.trim().strip_prefix("ready ") else {
            let why = match child.try_wait() {
                Ok(Some(status)) => format!("its setup ended ({status})"),
                _ if line.is_empty() && Instant::now() >= deadline => {
                    format!("not ready within {} s", limit.as_secs())
                }
                _ => "its setup ended".to_string(),
            };
            return Err(failed(&mut child, why));
        };
        let device = match dev {
            "-" => String::new(),
            d => match d.strip_prefix("/dev/") {
                Some(name) if name.starts_with("loop") => name.to_string(),
                _ => return Err(failed(&mut child, format!("unexpected device {d:?}"))),
            },
        };
        Ok(Holder {
            child,
            mount_point: mount_point.to_path_buf(),
            device,
        })
    }

    /// End the holder (its namespace, mount and loop device go with it) and wait until the
    /// loop device is detached. An error names what is left.
    pub fn stop(mut self) -> Result<(), LabError> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        wait_detached(&self.device, Duration::from_secs(10))
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Wait until the loop device `device` has no backing file (detached); empty: nothing.
pub fn wait_detached(device: &str, limit: Duration) -> Result<(), LabError> {
    if device.is_empty() {
        return Ok(());
    }
    let backing = format!("/sys/block/{device}/loop/backing_file");
    let deadline = Instant::now() + limit;
    while Path::new(&backing).exists() {
        if Instant::now() >= deadline {
            return Err(LabError::Host(format!(
                "loop device /dev/{device} is still attached after its file system's holder ended"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_mounts_a_loop_image_then_deletes_the_image_and_waits() {
        let r = Recipe {
            kind: "ext4",
            size_mb: 256,
            mkfs: vec!["-q".into(), "-F".into()],
            mount: vec!["noatime".into()],
            direct_io: true,
        };
        let s = r.script();
        assert!(s.contains("truncate -s 256M \"$1\""));
        assert!(s.contains("mount -t ext4 -o loop,noatime \"$1\" \"$2\""));
        let rm = s.find("rm -f").unwrap();
        assert!(s.find("losetup --direct-io=on").unwrap() < rm);
        assert!(rm < s.find("echo \"ready").unwrap());
        assert!(s.ends_with("exec sleep 2147483647\n"));
    }
}
