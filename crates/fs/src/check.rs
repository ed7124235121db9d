//! Bad input refused before anything is created, each reason in one line: a location that
//! is missing, not a directory or not writable, a pool larger than the free space (or than
//! the free inodes), sizes with min > max, counts of zero.

use crate::FsError;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use webtune_model::fs::FsSpec;

/// The most files one run holds (its table has two slots per file, as postmark's).
pub const MAX_FILES: u64 = 50_000_000;
/// The largest file size accepted (postmark's sizes are C ints).
pub const MAX_FILE_SIZE: u64 = 1 << 31;

fn invalid(message: String) -> FsError {
    FsError::Invalid(message)
}

/// Check a spec against itself and against its location's file system.
pub fn check(spec: &FsSpec) -> Result<(), FsError> {
    check_numbers(spec)?;
    check_location(spec)
}

/// The checks that need no file system.
pub fn check_numbers(spec: &FsSpec) -> Result<(), FsError> {
    if spec.size_min == 0 {
        return Err(invalid(
            "file sizes start at 1 byte (--size MIN..MAX)".into(),
        ));
    }
    if spec.size_min > spec.size_max {
        return Err(invalid(format!(
            "the size range {}..{} has min > max",
            spec.size_min, spec.size_max
        )));
    }
    if spec.size_max > MAX_FILE_SIZE {
        return Err(invalid(format!(
            "a file size of {} bytes is over the limit of {MAX_FILE_SIZE}",
            spec.size_max
        )));
    }
    if spec.files == 0 || spec.files > MAX_FILES {
        return Err(invalid(format!(
            "--files must be 1..={MAX_FILES}, not {}",
            spec.files
        )));
    }
    if spec.workers == 0 || u64::from(spec.workers) > spec.files {
        return Err(invalid(format!(
            "-c {} workers need 1..={} (every worker owns at least one file of the pool)",
            spec.workers,
            spec.files.min(1024)
        )));
    }
    if spec.workers > 1024 {
        return Err(invalid("-c is limited to 1024 workers".into()));
    }
    if spec.transactions.is_none() && spec.duration_s.is_none() {
        return Err(invalid("give --transactions or -d".into()));
    }
    if spec.transactions == Some(0) {
        return Err(invalid("--transactions must be at least 1".into()));
    }
    if let Some(d) = spec.duration_s {
        if !(d.is_finite() && d > 0.0) {
            return Err(invalid(format!("-d must be a positive duration, not {d}")));
        }
    }
    if spec.read_block == 0 || spec.write_block == 0 {
        return Err(invalid("block sizes start at 1 byte".into()));
    }
    if spec.read_block > 64 << 20 || spec.write_block > 64 << 20 {
        return Err(invalid("block sizes are limited to 64 MiB".into()));
    }
    for (name, bias) in [("read", spec.bias_read), ("create", spec.bias_create)] {
        if !(-1..=10).contains(&bias) {
            return Err(invalid(format!(
                "--bias-{name} is a chance in 10 (0..=10), or -1 to leave the pair out; not {bias}"
            )));
        }
    }
    if !(spec.interval_s.is_finite() && spec.interval_s >= 0.01) {
        return Err(invalid("the interval must be at least 10 ms".into()));
    }
    Ok(())
}

fn check_location(spec: &FsSpec) -> Result<(), FsError> {
    let dir = Path::new(&spec.location);
    let meta = std::fs::metadata(dir).map_err(|e| {
        invalid(match e.kind() {
            std::io::ErrorKind::NotFound => format!("location {} does not exist", dir.display()),
            _ => format!("location {}: {e}", dir.display()),
        })
    })?;
    if !meta.is_dir() {
        return Err(invalid(format!(
            "location {} is not a directory",
            dir.display()
        )));
    }
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| invalid("the location holds a NUL byte".into()))?;
    let st = statvfs(dir).map_err(|e| invalid(format!("location {}: {e}", dir.display())))?;
    // SAFETY: access with a valid path; it only checks.
    let writable = unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } == 0;
    if !writable || st.f_flag & libc::ST_RDONLY != 0 {
        return Err(invalid(format!(
            "location {} is not writable{}",
            dir.display(),
            if st.f_flag & libc::ST_RDONLY != 0 {
                " (a read-only file system)"
            } else {
                ""
            }
        )));
    }
    let free = st.f_bavail as u128 * st.f_frsize as u128;
    let pool = spec.files as u128 * spec.size_max as u128;
    if pool > free {
        return Err(invalid(format!(
            "the pool ({} files of up to {} bytes: {}) is larger than the free space of {} ({})",
            spec.files,
            spec.size_max,
            human(pool),
            dir.display(),
            human(free)
        )));
    }
    let inodes_needed = spec.files as u128 + u128::from(spec.subdirs) + 1;
    if st.f_files > 0 && (st.f_favail as u128) < inodes_needed {
        return Err(invalid(format!(
            "the pool needs {inodes_needed} inodes; {} has {} free",
            dir.display(),
            st.f_favail
        )));
    }
    Ok(())
}

fn statvfs(dir: &Path) -> std::io::Result<libc::statvfs> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: statvfs with a valid NUL-terminated path and a zeroed struct it fills in.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

/// The bytes of the file system under `dir` that an unprivileged writer may still use
/// (`df`'s "Avail").
pub fn free_bytes(dir: &Path) -> std::io::Result<u128> {
    let st = statvfs(dir)?;
    Ok(st.f_bavail as u128 * st.f_frsize as u128)
}

fn human(bytes: u128) -> String {
    let mut v = bytes as f64;
    for unit in ["B", "KiB", "MiB", "GiB", "TiB"] {
        if v < 1024.0 {
            return format!("{v:.1} {unit}");
        }
        v /= 1024.0;
    }
    format!("{v:.1} PiB")
}

/// The specs of a sweep over worker counts (`fs --sweep-workers`, `lab sweep fs -c`): the
/// base spec at each count, every one checked before the first runs.
pub fn worker_levels(base: &FsSpec, workers: &[u32]) -> Result<Vec<FsSpec>, FsError> {
    let specs: Vec<FsSpec> = workers
        .iter()
        .map(|&workers| FsSpec {
            workers,
            ..base.clone()
        })
        .collect();
    for spec in &specs {
        check(spec)?;
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_in(dir: &Path) -> FsSpec {
        FsSpec {
            location: dir.display().to_string(),
            ..FsSpec::default()
        }
    }

    #[test]
    fn refuses_bad_input_in_one_line() {
        let tmp = tempfile::tempdir().unwrap();
        let ok = spec_in(tmp.path());
        assert!(check(&ok).is_ok());
        let cases = [
            (
                FsSpec {
                    size_min: 10,
                    size_max: 5,
                    ..ok.clone()
                },
                "min > max",
            ),
            (spec_in(&tmp.path().join("missing")), "does not exist"),
            (
                FsSpec {
                    files: 40_000_000,
                    size_max: 1 << 30,
                    ..ok.clone()
                },
                "larger than the free space",
            ),
            (
                FsSpec {
                    bias_read: 11,
                    ..ok.clone()
                },
                "chance in 10",
            ),
        ];
        for (spec, want) in cases {
            let e = check(&spec).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let ro = FsSpec {
            location: "/proc/self".into(),
            ..ok
        };
        let e = check(&ro).unwrap_err().to_string();
        assert!(e.contains("not writable"), "{e}");
    }

    #[test]
    fn a_sweeps_levels_are_the_base_at_each_count_all_checked_first() {
        let tmp = tempfile::tempdir().unwrap();
        let base = spec_in(tmp.path());
        let levels = worker_levels(&base, &[1, 2, 4]).unwrap();
        let counts: Vec<u32> = levels.iter().map(|s| s.workers).collect();
        assert_eq!(counts, [1, 2, 4]);
        assert!(levels.iter().all(|s| s.files == base.files));
        // A bad last level is refused before any level could run.
        let e = worker_levels(&base, &[1, 0]).unwrap_err().to_string();
        assert!(e.contains("-c 0 workers"), "{e}");
    }
}
