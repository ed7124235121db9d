//! The generator's own resource use: what a run cost the client. CPU is counted per thread
//! (getrusage RUSAGE_THREAD in each worker), so a target served from the same process
//! (`bench` without a URL) is not charged to the generator; peak memory is the process's.
//! A thread's wait for a core (ready to run, not running: the kernel's run-queue delay,
//! the second field of `/proc/thread-self/schedstat`, in ns) is read beside its CPU: the
//! validity verdict tells a generator starved of CPU by its neighbours from an idle one.

use std::time::Duration;

/// CPU time and peak RSS (of this process or of one thread) so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub user: Duration,
    pub system: Duration,
    pub max_rss_kib: u64,
    /// Time spent ready to run but waiting for a core (threads only; None where the kernel
    /// does not say).
    pub run_delay: Option<Duration>,
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
            run_delay: match (self.run_delay, earlier.run_delay) {
                (Some(now), Some(then)) => Some(now.saturating_sub(then)),
                _ => None,
            },
        }
    }

    /// Add another thread's CPU and wait; keep the larger peak RSS. The wait is known only
    /// while every thread's is (an empty sum starts known).
    pub fn add(&mut self, other: &Usage) {
        let empty = self.user.is_zero() && self.system.is_zero() && self.run_delay.is_none();
        self.user += other.user;
        self.system += other.system;
        self.max_rss_kib = self.max_rss_kib.max(other.max_rss_kib);
        self.run_delay = match (self.run_delay, other.run_delay) {
            (Some(a), Some(b)) => Some(a + b),
            (None, Some(b)) if empty => Some(b),
            _ => None,
        };
    }

    pub fn cpu_s(&self) -> f64 {
        (self.user + self.system).as_secs_f64()
    }
}

/// Read this process's resource usage; zeros if the kernel refuses.
pub fn process_usage() -> Usage {
    rusage(libc::RUSAGE_SELF)
}

/// Read the calling thread's CPU time (Linux: RUSAGE_THREAD; its max RSS is the process's)
/// and its wait for a core so far.
pub fn thread_usage() -> Usage {
    Usage {
        run_delay: thread_run_delay(),
        ..rusage(libc::RUSAGE_THREAD)
    }
}

/// The calling thread's time spent waiting on a run queue (schedstat's second field, ns).
fn thread_run_delay() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_run_delay(&text)
}

fn parse_run_delay(schedstat: &str) -> Option<Duration> {
    let ns: u64 = schedstat.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
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
        run_delay: None,
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

    #[test]
    fn a_threads_wait_for_a_core_is_read_and_summed() {
        // cpu time, run-queue wait, timeslices (ns, ns, count).
        assert_eq!(
            parse_run_delay("284163055 200129491 56\n"),
            Some(Duration::from_nanos(200_129_491))
        );
        assert_eq!(parse_run_delay(""), None);
        let ms = Duration::from_millis;
        let with = |wait| Usage {
            run_delay: wait,
            user: ms(1),
            ..Usage::default()
        };
        let mut all = Usage::default();
        all.add(&with(Some(ms(3))));
        all.add(&with(Some(ms(4))));
        assert_eq!(all.run_delay, Some(ms(7)));
        // One thread whose wait is unknown makes the sum unknown.
        all.add(&with(None));
        assert_eq!(all.run_delay, None);
        assert_eq!(
            with(Some(ms(9))).since(&with(Some(ms(2)))).run_delay,
            Some(ms(7))
        );
    }
}
