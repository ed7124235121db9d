//! The fs engine end to end in a temporary directory: postmark's counts for its seed, every
//! operation timed, nothing left behind (also when stopped), bad input refused before
//! anything is created.

use std::path::Path;
use webtune_fs::{run, NoKeeper, PoolKeeper};
use webtune_model::fs::{FsSpec, FsyncMode, IoMode};
use webtune_model::StopToken;

fn spec(dir: &Path) -> FsSpec {
    FsSpec {
        location: dir.display().to_string(),
        files: 100,
        transactions: Some(1000),
        subdirs: 3,
        ..FsSpec::default()
    }
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn one_worker_makes_postmarks_choices_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run(&spec(tmp.path()), &StopToken::new(), &mut NoKeeper).unwrap();
    // What postmark 1.53 printed for this configuration (number 100, transactions 1000,
    // subdirectories 3, seed 42, sizes 500..10000).
    assert_eq!(r.transactions, 1000);
    assert_eq!(r.files.created, 595);
    assert_eq!(r.files.read, 507);
    assert_eq!(r.files.appended, 489);
    assert_eq!(r.files.deleted, 595);
    assert_eq!(r.files.deleted_alone, 90);
    assert_eq!(r.op("read").count, 507);
    assert_eq!(r.op("create").count, 595);
    assert_eq!(r.op("transaction").count, 1000);
    assert_eq!(r.errors(), 0, "{:?}", r.notes);
    assert_eq!(entries(tmp.path()), 0, "the pool is gone");
    let per_interval: u64 = r.timeline.iter().map(|s| s.responses).sum();
    assert_eq!(per_interval, 1000);
}

#[test]
fn fsync_modes_and_workers_are_timed() {
    let tmp = tempfile::tempdir().unwrap();
    for (fsync, io) in [
        (FsyncMode::Write, IoMode::Unbuffered),
        (FsyncMode::Transaction, IoMode::Direct),
    ] {
        let s = FsSpec {
            fsync,
            io,
            workers: 3,
            transactions: Some(300),
            ..spec(tmp.path())
        };
        let r = run(&s, &StopToken::new(), &mut NoKeeper).unwrap();
        assert_eq!(r.transactions, 300);
        assert!(r.op("fsync").count > 0, "{fsync:?}");
        assert_eq!(r.errors(), 0, "{:?}", r.notes);
        assert_eq!(entries(tmp.path()), 0);
    }
}

#[test]
fn a_stop_ends_the_run_early_and_still_deletes_the_pool() {
    let tmp = tempfile::tempdir().unwrap();
    let stop = StopToken::new();
    let s = FsSpec {
        transactions: None,
        duration_s: Some(60.0),
        files: 3000,
        size_min: 100,
        size_max: 1000,
        ..spec(tmp.path())
    };
    let stopper = stop.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        stopper.request_stop();
    });
    let started = std::time::Instant::now();
    let r = run(&s, &stop, &mut NoKeeper).unwrap();
    t.join().unwrap();
    assert!(started.elapsed().as_secs() < 30);
    assert!(r.interrupted);
    assert_eq!(r.files.created, r.files.deleted);
    assert_eq!(entries(tmp.path()), 0);
}

struct Recording(Vec<String>);

impl PoolKeeper for Recording {
    fn claim(&mut self, pool: &Path) -> Result<(), String> {
        self.0.push(format!("claim {}", pool.display()));
        Ok(())
    }
    fn release(&mut self, pool: &Path) {
        self.0.push(format!("release {}", pool.display()));
    }
}

#[test]
fn the_keeper_hears_of_the_pool_and_bad_input_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut keeper = Recording(Vec::new());
    let r = run(&spec(tmp.path()), &StopToken::new(), &mut keeper).unwrap();
    assert_eq!(keeper.0.len(), 2);
    assert!(keeper.0[0].ends_with(&r.pool_dir), "{:?}", keeper.0);
    let mut keeper = Recording(Vec::new());
    let bad = FsSpec {
        size_min: 9,
        size_max: 3,
        ..spec(tmp.path())
    };
    let e = run(&bad, &StopToken::new(), &mut keeper).unwrap_err();
    assert!(e.to_string().contains("min > max"));
    assert!(keeper.0.is_empty());
    assert_eq!(entries(tmp.path()), 0);
}
