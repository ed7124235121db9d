//! The generator's own resource use (getrusage of this process): what a run cost the client.

use std::time::Duration;

/// CPU time and peak RSS of this process so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub user: Duration,
    pub system: Duration,
    pub max_rss_kib: u64,
}

fn tv(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

/// Read this process's resource usage; zeros if the kernel refuses.
pub fn process_usage() -> Usage {
    // SAFETY: an all-zero rusage is a valid value; getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to a rusage struct.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Usage::default();
    }
    Usage {
        user: tv(ru.ru_utime),
        system: tv(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss.max(0) as u64,
    }
}
