//! The generator's own resource use: what a run cost the client. CPU is counted per thread
//! (getrusage RUSAGE_THREAD in each worker), so a target served from the same process
//! (`bench` without a URL) is not charged to the generator; peak memory is the process's.

use std::time::Duration;

/// CPU time and peak RSS (of this process or of one thread) so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub user: Duration,
    pub system: Duration,
    pub max_rss_kib: u64,
}

fn tv(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

impl Usage {
    /// CPU used since `earlier` (of the same process or thread); the later peak RSS.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
            max_rss_kib: self.max_rss_kib,
        }
    }

    /// Add another thread's CPU; keep the larger peak RSS.
    pub fn add(&mut self, other: &Usage) {
        self.user += other.user;
        self.system += other.system;
        self.max_rss_kib = self.max_rss_kib.max(other.max_rss_kib);
    }

    pub fn cpu_s(&self) -> f64 {
        (self.user + self.system).as_secs_f64()
    }
}

/// Read this process's resource usage; zeros if the kernel refuses.
pub fn process_usage() -> Usage {
    rusage(libc::RUSAGE_SELF)
}

/// Read the calling thread's CPU time (Linux: RUSAGE_THREAD; its max RSS is the process's).
pub fn thread_usage() -> Usage {
    rusage(libc::RUSAGE_THREAD)
}

/// Run `f` and return its value with the CPU this thread spent in it.
pub fn measured<T>(f: impl FnOnce() -> T) -> (T, Usage) {
    let before = thread_usage();
    let value = f();
    (value, thread_usage().since(&before))
}

fn rusage(who: libc::c_int) -> Usage {
    // SAFETY: an all-zero rusage is a valid value; getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` with a valid pointer to a rusage struct.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return Usage::default();
    }
    Usage {
        user: tv(ru.ru_utime),
        system: tv(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss.max(0) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_is_charged_its_own_cpu_only() {
        // Burns 20 ms of its own thread's CPU, however long that takes.
        let spin = || {
            let start = thread_usage().cpu_s();
            let mut x = 0u64;
            while thread_usage().cpu_s() - start < 0.02 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        };
        // The spawning thread waits while another burns: that CPU is not the waiter's.
        let ((), waiter) = measured(|| std::thread::spawn(spin).join().unwrap());
        let ((), spinner) = std::thread::spawn(move || measured(spin)).join().unwrap();
        assert!(spinner.cpu_s() >= 0.02, "{spinner:?}");
        assert!(waiter.cpu_s() < 0.02, "{waiter:?}");
    }
}
