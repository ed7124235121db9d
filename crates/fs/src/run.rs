//! The coordinator: check the spec, claim and create the pool, probe `O_DIRECT`, build
//! postmark's source text once, start the workers, gather their interval reports into the
//! time series, and, whatever happened, delete the pool before the result is returned.

use crate::io::{AlignedBuf, ALIGN};
use crate::mt::PostmarkRng;
use crate::pool::{Pool, PoolKeeper};
use crate::worker::{self, IntervalMsg, Outcome, Shared};
use crate::FsError;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use webtune_engine::usage;
use webtune_model::fs::{
    FsOpResult, FsPhases, FsResult, FsSpec, IoMode, WholeSecondMarks, FS_OPS, FS_SCHEMA,
};
use webtune_model::result::GeneratorUsage;
use webtune_model::{stall, IntervalSample, LatencyHistogram, Stall, StopToken};

/// Run the workload of `spec`; `stop` ends the transactions early (the pool is still
/// deleted); `keeper` hears of the pool before it is created and after it is gone.
pub fn run(
    spec: &FsSpec,
    stop: &StopToken,
    keeper: &mut dyn PoolKeeper,
) -> Result<FsResult, FsError> {
    crate::check::check(spec)?;
    let location = resolve(Path::new(&spec.location))
        .map_err(|e| FsError::Invalid(format!("location {}: {e}", spec.location)))?;
    let cpu_before = usage::thread_usage();
    let started_at = SystemTime::now();
    let pool = Pool::create_fresh(&location, spec.subdirs, keeper)?;
    let root = pool.root().to_path_buf();
    let outcome = run_in(spec, stop, pool, cpu_before, started_at);
    keeper.release(&root);
    outcome
}

/// The location as an absolute path. A path through `/proc/PID/root` (the lab's file
/// system in a holder's private mount namespace) is kept as given: resolving its symlinks
/// would turn `/proc/PID/root/x` into the host's `/x`, outside that namespace.
fn resolve(location: &Path) -> std::io::Result<std::path::PathBuf> {
    if location.starts_with("/proc") {
        std::fs::metadata(location)?;
        return Ok(location.to_path_buf());
    }
    std::fs::canonicalize(location)
}

/// Does the file system under `dir` take O_DIRECT? (tmpfs before Linux 6.6 refuses it.)
fn direct_works(dir: &Path) -> bool {
    let probe = dir.join(".direct-probe");
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

use std::os::unix::fs::OpenOptionsExt;

fn run_in(
    spec: &FsSpec,
    stop: &StopToken,
    pool: Pool,
    cpu_before: usage::Usage,
    started_at: SystemTime,
) -> Result<FsResult, FsError> {
    let root = &pool.root().to_path_buf();
    let pool = Arc::new(pool);
    let mut notes = Vec::new();
    let io = if spec.io == IoMode::Direct && !direct_works(root) {
        notes.push(format!(
            "O_DIRECT is refused by the file system of {} (as tmpfs before Linux 6.6 \
             refuses it): unbuffered I/O was used instead",
            spec.location
        ));
        IoMode::Unbuffered
    } else {
        spec.io
    };
    // postmark's source text: printable bytes drawn from the generator (worker 0's seed).
    let mut source = AlignedBuf::new((spec.size_max * 2) as usize);
    let mut rng = PostmarkRng::new(spec.seed);
    for b in source.as_mut_slice() {
        *b = 32 + rng.rnd(95) as u8;
    }
    let t0 = Instant::now();
    let shared = Shared {
        spec: spec.clone(),
        pool: Arc::clone(&pool),
        source: Arc::new(source),
        stop: stop.clone(),
        barrier: Barrier::new(spec.workers as usize),
        t0,
        marks: Mutex::new([None; 3]),
        io,
    };
    let (tx, rx) = mpsc::channel::<IntervalMsg>();
    let mut intervals: BTreeMap<u64, IntervalMsg> = BTreeMap::new();
    let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..spec.workers)
            .map(|i| {
                let tx = tx.clone();
                let shared = &shared;
                std::thread::Builder::new()
                    .name(format!("fs-worker-{i}"))
                    .spawn_scoped(scope, move || worker::run(shared, i, tx))
            })
            .collect();
        drop(tx);
        for msg in rx.iter() {
            let slot = intervals.entry(msg.index).or_insert_with(|| IntervalMsg {
                index: msg.index,
                transactions: 0,
                bytes: 0,
                histogram: LatencyHistogram::new(),
            });
            slot.transactions += msg.transactions;
            slot.bytes += msg.bytes;
            slot.histogram.merge(&msg.histogram);
        }
        handles
            .into_iter()
            .filter_map(|h| h.ok())
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let end = Instant::now();
    let marks = *shared.marks.lock().unwrap_or_else(|e| e.into_inner());
    drop(shared);
    // Every worker has ended, so this is the last handle; were it not, the last one to go
    // removes the pool on drop.
    if let Ok(mut pool) = Arc::try_unwrap(pool) {
        if let Err(e) = pool.remove() {
            notes.push(format!("removing the pool {}: {e}", root.display()));
        }
    }
    if outcomes.len() != spec.workers as usize {
        return Err(FsError::io(
            "starting the workers",
            std::io::Error::other("a worker thread could not start"),
        ));
    }
    let cpu = usage::thread_usage().since(&cpu_before);
    Ok(assemble(
        spec,
        stop,
        root,
        io,
        notes,
        outcomes,
        intervals,
        Times {
            started_at,
            t0,
            marks,
            end,
            main_cpu: cpu,
        },
    ))
}

struct Times {
    started_at: SystemTime,
    t0: Instant,
    marks: [Option<Instant>; 3],
    end: Instant,
    main_cpu: usage::Usage,
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    spec: &FsSpec,
    stop: &StopToken,
    root: &Path,
    io: IoMode,
    mut notes: Vec<String>,
    outcomes: Vec<Outcome>,
    intervals: BTreeMap<u64, IntervalMsg>,
    times: Times,
) -> FsResult {
    let secs = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64();
    let t_start = times.marks[0].unwrap_or(times.t0);
    let t_end = times.marks[1].unwrap_or(t_start);
    let del_end = times.marks[2].unwrap_or(times.end);
    let unix0 = times
        .started_at
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let whole = |at: Instant| (unix0 + at.saturating_duration_since(times.t0)).as_secs();
    let mut ops: BTreeMap<String, FsOpResult> = BTreeMap::new();
    let mut r = FsResult {
        schema: FS_SCHEMA.into(),
        tool: format!("webtune {}", env!("CARGO_PKG_VERSION")),
        started_at_unix_ms: unix0.as_millis() as u64,
        spec: spec.clone(),
        pool_dir: root.display().to_string(),
        io_used: io,
        interrupted: stop.stop_requested(),
        out_of_files: false,
        duration_s: secs(times.t0, del_end),
        phases: FsPhases {
            create_s: secs(times.t0, t_start),
            transactions_s: secs(t_start, t_end),
            delete_s: secs(t_end, del_end),
        },
        marks: WholeSecondMarks {
            start: whole(times.t0),
            transactions_start: whole(t_start),
            transactions_end: whole(t_end),
            end: whole(del_end),
        },
        transactions: 0,
        files: Default::default(),
        bytes_read: 0,
        bytes_written: 0,
        transactions_per_s: 0.0,
        read_bytes_per_s: 0.0,
        written_bytes_per_s: 0.0,
        ops: BTreeMap::new(),
        timeline: Vec::new(),
        stalls: Vec::new(),
        generator: GeneratorUsage::default(),
        cpu_per_transaction_us: 0.0,
        notes: Vec::new(),
        storage_failures: Default::default(),
        server: None,
    };
    let mut cpu = times.main_cpu;
    let mut fallbacks = 0;
    for o in &outcomes {
        for (i, name) in FS_OPS.iter().enumerate() {
            let op = ops.entry(name.to_string()).or_default();
            op.count += o.counts[i];
            op.errors += o.errors[i];
            op.histogram.merge(&o.histograms[i]);
        }
        r.transactions += o.transactions;
        r.files.created += o.files.created;
        r.files.created_alone += o.files.created_alone;
        r.files.read += o.files.read;
        r.files.appended += o.files.appended;
        r.files.deleted += o.files.deleted;
        r.files.deleted_alone += o.files.deleted_alone;
        r.bytes_read += o.bytes_read;
        r.bytes_written += o.bytes_written;
        r.out_of_files |= o.out_of_files;
        r.storage_failures.add(&o.storage);
        cpu.add(&o.cpu);
        fallbacks += o.direct_fallbacks;
        for n in &o.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
    }
    if fallbacks > 0 {
        notes.push(format!(
            "{fallbacks} transfer(s) were not {ALIGN}-byte aligned and went through the page \
             cache (O_DIRECT cleared on their descriptor)"
        ));
    }
    ops.retain(|_, o| o.count > 0 || o.errors > 0);
    r.ops = ops;
    r.generator = GeneratorUsage {
        user_cpu_s: cpu.user.as_secs_f64(),
        system_cpu_s: cpu.system.as_secs_f64(),
        max_rss_kib: usage::process_usage().max_rss_kib,
        threads: spec.workers,
    };
    r.timeline = timeline(spec, r.duration_s, intervals);
    r.stalls = stalls(&outcomes);
    r.notes = notes;
    r.finish_summaries();
    r
}

fn timeline(
    spec: &FsSpec,
    duration_s: f64,
    intervals: BTreeMap<u64, IntervalMsg>,
) -> Vec<IntervalSample> {
    let step = spec.interval_s;
    let count = (duration_s / step).ceil().max(1.0) as u64;
    let count = count.max(intervals.keys().next_back().map_or(0, |k| k + 1));
    (0..count)
        .map(|i| {
            let start_s = i as f64 * step;
            let mut s = IntervalSample {
                start_s,
                length_s: step.min((duration_s - start_s).max(0.0)),
                open_connections: u64::from(spec.workers),
                ..IntervalSample::default()
            };
            if let Some(m) = intervals.get(&i) {
                s.responses = m.transactions;
                s.bytes = m.bytes;
                s.p50_us = m.histogram.percentile(50.0);
                s.p90_us = m.histogram.percentile(90.0);
                s.p99_us = m.histogram.percentile(99.0);
                s.max_us = m.histogram.max();
            }
            s
        })
        .collect()
}

/// Stretches in which no worker finished anything: where every worker's gaps meet
/// (`model::stall::across`, the one rule).
fn stalls(outcomes: &[Outcome]) -> Vec<Stall> {
    let gaps: Vec<Vec<(f64, f64)>> = outcomes.iter().map(|o| o.gaps.clone()).collect();
    stall::across(&gaps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hears every claim and release.
    #[derive(Default)]
    struct Ledger {
        claimed: Vec<std::path::PathBuf>,
        released: Vec<std::path::PathBuf>,
    }

    impl PoolKeeper for Ledger {
        fn claim(&mut self, pool: &Path) -> Result<(), String> {
            self.claimed.push(pool.to_path_buf());
            Ok(())
        }
        fn release(&mut self, pool: &Path) {
            self.released.push(pool.to_path_buf());
        }
    }

    #[test]
    fn leftovers_with_the_next_pools_names_are_passed_over_and_left_alone() {
        // No other test of this binary takes pool names, so the next ones are known: a
        // killed run (or a reused pid) left directories with them.
        let dir = tempfile::tempdir().unwrap();
        let probe = Pool::next_path(dir.path());
        let name = probe.file_name().unwrap().to_string_lossy().into_owned();
        let (stem, n) = name.rsplit_once('-').unwrap();
        let n: u32 = n.parse().unwrap();
        let leftovers: Vec<std::path::PathBuf> = (n + 1..=n + 3)
            .map(|i| dir.path().join(format!("{stem}-{i}")))
            .collect();
        for left in &leftovers {
            std::fs::create_dir(left).unwrap();
            std::fs::write(left.join("theirs"), "kept").unwrap();
        }
        let spec = FsSpec {
            location: dir.path().display().to_string(),
            files: 20,
            transactions: Some(40),
            ..FsSpec::default()
        };
        let mut ledger = Ledger::default();
        let result = run(&spec, &StopToken::new(), &mut ledger).expect("the run takes a free name");
        assert_eq!(result.transactions, 40);
        let used = Path::new(&result.pool_dir);
        assert!(!leftovers.iter().any(|l| l == used), "{used:?}");
        for left in &leftovers {
            assert_eq!(
                std::fs::read_to_string(left.join("theirs")).unwrap(),
                "kept"
            );
        }
        assert!(!used.exists(), "the run's own pool is deleted");
        // Every name claimed was released: the taken ones at once, the used one at the end.
        assert_eq!(
            ledger.claimed.len(),
            leftovers.len() + 1,
            "{:?}",
            ledger.claimed
        );
        assert_eq!(ledger.claimed, ledger.released);
    }

    fn with_gaps(gaps: &[(f64, f64)]) -> Outcome {
        Outcome {
            gaps: gaps.to_vec(),
            ..Outcome::default()
        }
    }

    #[test]
    fn a_stall_is_where_every_worker_finished_nothing() {
        // Worker 0 is stuck 1.0..3.0 s; worker 1 waits (or is stuck) 1.5..2.2 s and 2.95..3.5 s
        // (an overlap of 50 ms: too short to count).
        let a = with_gaps(&[(1.0, 2.0)]);
        let b = with_gaps(&[(1.5, 0.7), (2.95, 0.6)]);
        let found = stalls(&[a, b]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!((found[0].start_s - 1.5).abs() < 1e-9);
        assert!((found[0].length_s - 0.7).abs() < 1e-9);
        // One worker: its own gaps.
        assert_eq!(stalls(&[with_gaps(&[(0.5, 0.25)])]).len(), 1);
        assert!(stalls(&[with_gaps(&[(0.5, 0.25)]), with_gaps(&[])]).is_empty());
    }
}
