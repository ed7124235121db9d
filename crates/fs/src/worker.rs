//! One worker: its part of the pool in a table of twice as many slots as files (postmark's
//! `file_table`), its own postmark generator, and the three phases. The choices are
//! postmark's, draw for draw: a file slot is found by probing random slots until a used one
//! turns up, a new file takes the next free slot, a subdirectory and a size are drawn as
//! postmark draws them, so one worker with postmark's seed makes postmark's run. Every
//! operation is timed into its own histogram; each interval's transactions go to the
//! coordinator as they end; gaps of 100 ms or more between completions are kept as stalls.
//! A transaction with a failed operation is a failed transaction: the `transaction` row's
//! error, not one of the run's transactions; failures the file system caused (out of space,
//! read-only, EIO) are counted apart (`StorageFailures`).

use crate::io::{self, AlignedBuf, Mover, Name};
use crate::mt::PostmarkRng;
use crate::pool::Pool;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};
use webtune_model::fs::{FileCounts, FsSpec, FsyncMode, IoMode, StorageFailures};
use webtune_model::{LatencyHistogram, StopToken};

pub const CREATE: usize = 0;
pub const DELETE: usize = 1;
pub const READ: usize = 2;
pub const APPEND: usize = 3;
pub const FSYNC: usize = 4;
pub const TRANSACTION: usize = 5;

/// A gap between completions that may be part of a stall (`webtune_model::stall`'s least).
pub const STALL: Duration = Duration::from_millis(webtune_model::stall::STALL_MS);

/// One interval's transactions from one worker.
pub struct IntervalMsg {
    pub index: u64,
    pub transactions: u64,
    pub bytes: u64,
    pub histogram: LatencyHistogram,
}

/// What the run shares with every worker.
pub struct Shared {
    pub spec: FsSpec,
    pub pool: Arc<Pool>,
    pub source: Arc<AlignedBuf>,
    pub stop: StopToken,
    pub barrier: Barrier,
    pub t0: Instant,
    /// Phase boundaries taken by the barrier's leader: transactions start, end, deletion end.
    pub marks: Mutex<[Option<Instant>; 3]>,
    /// The mode every worker uses (direct falls back to unbuffered for all when refused).
    pub io: IoMode,
}

/// What one worker measured.
#[derive(Default)]
pub struct Outcome {
    pub histograms: [LatencyHistogram; 6],
    pub counts: [u64; 6],
    pub errors: [u64; 6],
    pub files: FileCounts,
    pub transactions: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub out_of_files: bool,
    /// (start, length) in seconds since t0.
    pub gaps: Vec<(f64, f64)>,
    pub cpu: webtune_engine::usage::Usage,
    pub notes: Vec<String>,
    pub direct_fallbacks: u64,
    /// Failed operations whose cause was the file system's (out of space, read-only, EIO).
    pub storage: StorageFailures,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    size: u64,
    dir: u32,
    name: u64,
}

struct Worker<'a> {
    shared: &'a Shared,
    spec: &'a FsSpec,
    prefix: Option<u32>,
    rng: PostmarkRng,
    table: Vec<Slot>,
    allocated: usize,
    name: Name,
    mover: Mover,
    read_buf: AlignedBuf,
    out: Outcome,
    last_done: Instant,
    tx: Sender<IntervalMsg>,
    iv_index: u64,
    iv_end: Instant,
    iv: IntervalMsg,
    interval: Duration,
    /// Fsync per transaction: files written and the directory changed, to sync at its end.
    pending_files: Vec<OwnedFd>,
    pending_dir: Option<RawFd>,
    /// In the transaction phase (fsync per transaction then waits for its end).
    in_transactions: bool,
}

/// Split `total` over `parts`: part `i` gets its share, the first ones one more.
pub fn share(total: u64, parts: u32, i: u32) -> u64 {
    total / u64::from(parts) + u64::from(u64::from(i) < total % u64::from(parts))
}

/// Run worker `index` through the three phases.
pub fn run(shared: &Shared, index: u32, tx: Sender<IntervalMsg>) -> Outcome {
    let spec = &shared.spec;
    let files = share(spec.files, spec.workers, index);
    let mut rng = PostmarkRng::new(spec.seed.wrapping_add(index));
    // postmark fills its source of 2 × the largest size from the generator first.
    for _ in 0..spec.size_max * 2 {
        rng.rnd(95);
    }
    let mover = Mover::new(shared.io, spec.read_block, spec.write_block);
    let chunk = (spec.read_block as usize).max(io::BUFFER);
    let interval = Duration::from_secs_f64(spec.interval_s);
    let mut w = Worker {
        shared,
        spec,
        prefix: (spec.workers > 1).then_some(index),
        rng,
        table: vec![Slot::default(); (files * 2) as usize],
        allocated: 0,
        name: Name::new(),
        mover,
        read_buf: AlignedBuf::new(chunk.div_ceil(io::ALIGN) * io::ALIGN),
        out: Outcome::default(),
        last_done: Instant::now(),
        tx,
        iv_index: 0,
        iv_end: shared.t0 + interval,
        iv: IntervalMsg {
            index: 0,
            transactions: 0,
            bytes: 0,
            histogram: LatencyHistogram::new(),
        },
        interval,
        pending_files: Vec::new(),
        pending_dir: None,
        in_transactions: false,
    };
    let before = webtune_engine::usage::thread_usage();
    w.last_done = Instant::now();
    for _ in 0..files {
        if shared.stop.stop_requested() {
            break;
        }
        w.create();
    }
    w.out.files.created_alone = w.out.files.created;
    w.phase_boundary(0);
    let transactions = spec.transactions.map(|t| share(t, spec.workers, index));
    let deadline = spec
        .duration_s
        .map(|d| Instant::now() + Duration::from_secs_f64(d));
    let mut done = 0u64;
    w.in_transactions = true;
    loop {
        if transactions.is_some_and(|t| done >= t)
            || deadline.is_some_and(|d| w.last_done >= d)
            || shared.stop.stop_requested()
        {
            break;
        }
        if w.out.files.created == w.out.files.deleted {
            w.out.out_of_files = true;
            break;
        }
        w.transaction();
        done += 1;
    }
    // A transaction with a failed operation is a failed transaction (counted as the
    // `transaction` row's error), not one of the run's transactions.
    w.out.transactions = done - w.out.errors[TRANSACTION];
    w.in_transactions = false;
    w.phase_boundary(1);
    let deleted_before = w.out.files.deleted;
    for i in 0..w.table.len() {
        w.delete(i);
    }
    w.out.files.deleted_alone = w.out.files.deleted - deleted_before;
    w.flush_interval();
    w.phase_boundary(2);
    w.out.direct_fallbacks = w.mover.direct_fallbacks;
    w.out.cpu = webtune_engine::usage::thread_usage().since(&before);
    w.out
}

impl Worker<'_> {
    /// Wait for every worker at the end of a phase; the last one in takes the time.
    fn phase_boundary(&mut self, which: usize) {
        if self.shared.barrier.wait().is_leader() {
            if let Ok(mut marks) = self.shared.marks.lock() {
                marks[which] = Some(Instant::now());
            }
        }
        // A worker waiting here finishes nothing: the wait stays in its gap, so that a stall
        // of the others while it waits is one of the run's (stalls are where every worker's
        // gaps meet). After the last phase there is no next operation to close the gap.
        let now = Instant::now();
        let gap = now.saturating_duration_since(self.last_done);
        if which == 2 && gap >= STALL {
            let at = self.last_done.saturating_duration_since(self.shared.t0);
            self.out.gaps.push((at.as_secs_f64(), gap.as_secs_f64()));
        }
    }

    fn note(&mut self, op: usize, what: &str, e: &std::io::Error) {
        self.out.errors[op] += 1;
        self.out.storage.count(e.raw_os_error());
        if self.out.errors[op] == 1 {
            self.out.notes.push(format!("first {what} error: {e}"));
        }
    }

    /// Time one finished operation that moved `bytes`, into its histogram and its interval.
    fn done(&mut self, op: usize, start: Instant, bytes: u64) {
        let now = Instant::now();
        let us = now.saturating_duration_since(start).as_micros() as u64;
        self.out.histograms[op].record(us);
        self.out.counts[op] += 1;
        let gap = now.saturating_duration_since(self.last_done);
        if gap >= STALL {
            let at = self.last_done.saturating_duration_since(self.shared.t0);
            self.out.gaps.push((at.as_secs_f64(), gap.as_secs_f64()));
        }
        self.last_done = now;
        if now >= self.iv_end {
            self.flush_interval();
            let since = now.saturating_duration_since(self.shared.t0).as_nanos();
            self.iv_index = (since / self.interval.as_nanos().max(1)) as u64;
            self.iv_end = self.shared.t0 + self.interval * (self.iv_index as u32 + 1);
        }
        self.iv.bytes += bytes;
        if op == TRANSACTION {
            self.iv.transactions += 1;
            self.iv.histogram.record(us);
        }
    }

    fn flush_interval(&mut self) {
        if self.iv.transactions == 0 && self.iv.bytes == 0 {
            return;
        }
        let msg = IntervalMsg {
            index: self.iv_index,
            transactions: self.iv.transactions,
            bytes: self.iv.bytes,
            histogram: self.iv.histogram.clone(),
        };
        let _ = self.tx.send(msg);
        self.iv.transactions = 0;
        self.iv.bytes = 0;
        self.iv.histogram.reset();
    }

    fn sync(&mut self, fd: RawFd) {
        let start = Instant::now();
        match io::sync(fd, self.spec.fdatasync) {
            Ok(()) => self.done(FSYNC, start, 0),
            Err(e) => self.note(FSYNC, "fsync", &e),
        }
    }

    /// After writing a file: sync it now (per write, and per transaction in the creation
    /// phase, where each file is its own unit), keep it for the transaction's end, or close.
    fn written(&mut self, fd: OwnedFd) {
        match self.spec.fsync {
            FsyncMode::None => {}
            FsyncMode::Transaction if self.in_transactions => self.pending_files.push(fd),
            _ => self.sync(fd.as_raw_fd()),
        }
    }

    fn find_free(&mut self) -> Option<usize> {
        if self.allocated < self.table.len() && self.table[self.allocated].size == 0 {
            self.allocated += 1;
            return Some(self.allocated - 1);
        }
        let i = self.table.iter().position(|s| s.size == 0)?;
        self.allocated = i + 1;
        Some(i)
    }

    fn find_used(&mut self) -> usize {
        loop {
            let i = self.rng.rnd(self.table.len() as u64) as usize;
            if self.table[i].size != 0 {
                return i;
            }
        }
    }

    fn create(&mut self) {
        let Some(slot) = self.find_free() else {
            return;
        };
        let dirs = u64::from(self.shared.pool.dir_count());
        let dir = if self.spec.subdirs > 1 {
            self.rng.rnd(dirs) as u32
        } else {
            0
        };
        self.out.files.created += 1;
        let name = self.out.files.created;
        let size = self.spec.size_min + self.rng.rnd(self.spec.size_max - self.spec.size_min);
        self.table[slot] = Slot { size, dir, name };
        let dir_fd = self.shared.pool.dir_fd(dir);
        let start = Instant::now();
        let cname = self.name.set(self.prefix, name);
        let opened = self.mover.open_new(dir_fd, cname);
        let fd = match opened {
            Ok(fd) => fd,
            Err(e) => return self.note(CREATE, "create", &e),
        };
        let source = Arc::clone(&self.shared.source);
        if let Err(e) = self
            .mover
            .write_all(&fd, &source.as_slice()[..size as usize])
        {
            return self.note(CREATE, "write", &e);
        }
        self.out.bytes_written += size;
        if self.spec.fsync == FsyncMode::None {
            drop(fd);
            return self.done(CREATE, start, size);
        }
        self.done(CREATE, start, size);
        if self.spec.fsync == FsyncMode::Transaction && self.in_transactions {
            self.pending_dir = Some(dir_fd);
        }
        self.written(fd);
    }

    fn delete(&mut self, i: usize) {
        let slot = self.table[i];
        if slot.size == 0 {
            return;
        }
        let dir_fd = self.shared.pool.dir_fd(slot.dir);
        let start = Instant::now();
        let cname = self.name.set(self.prefix, slot.name);
        match io::unlink(dir_fd, cname) {
            Ok(()) => {
                self.table[i].size = 0;
                self.out.files.deleted += 1;
                self.done(DELETE, start, 0);
                if self.spec.fsync == FsyncMode::Transaction && self.in_transactions {
                    self.pending_dir = Some(dir_fd);
                }
            }
            Err(e) => self.note(DELETE, "delete", &e),
        }
    }

    fn read(&mut self, i: usize) {
        let slot = self.table[i];
        let dir_fd = self.shared.pool.dir_fd(slot.dir);
        let start = Instant::now();
        let cname = self.name.set(self.prefix, slot.name);
        let fd = match self.mover.open_read(dir_fd, cname) {
            Ok(fd) => fd,
            Err(e) => return self.note(READ, "open for read", &e),
        };
        let size = slot.size as usize;
        let mut buf = std::mem::replace(&mut self.read_buf, AlignedBuf::new(0));
        let got = self.mover.read_all(&fd, size, buf.as_mut_slice());
        self.read_buf = buf;
        drop(fd);
        match got {
            Ok(_) => {
                self.out.bytes_read += slot.size;
                self.out.files.read += 1;
                self.done(READ, start, slot.size);
            }
            Err(e) => self.note(READ, "read", &e),
        }
    }

    fn append(&mut self, i: usize) {
        let slot = self.table[i];
        if slot.size >= self.spec.size_max {
            return;
        }
        let dir_fd = self.shared.pool.dir_fd(slot.dir);
        let start = Instant::now();
        let cname = self.name.set(self.prefix, slot.name);
        let fd = match self.mover.open_append(dir_fd, cname) {
            Ok(fd) => fd,
            Err(e) => return self.note(APPEND, "open for append", &e),
        };
        let block = self.rng.rnd(self.spec.size_max - slot.size) + 1;
        let source = Arc::clone(&self.shared.source);
        if let Err(e) = self
            .mover
            .write_all(&fd, &source.as_slice()[..block as usize])
        {
            return self.note(APPEND, "append", &e);
        }
        self.table[i].size += block;
        self.out.bytes_written += block;
        self.out.files.appended += 1;
        if self.spec.fsync == FsyncMode::None {
            drop(fd);
            return self.done(APPEND, start, block);
        }
        self.done(APPEND, start, block);
        self.written(fd);
    }

    fn transaction(&mut self) {
        let start = Instant::now();
        let failed_before: u64 = self.out.errors[..TRANSACTION].iter().sum();
        if self.spec.bias_read != -1 {
            if (self.rng.rnd(10) as i32) < self.spec.bias_read {
                let i = self.find_used();
                self.read(i);
            } else {
                let i = self.find_used();
                self.append(i);
            }
        }
        if self.spec.bias_create != -1 {
            if (self.rng.rnd(10) as i32) < self.spec.bias_create {
                self.create();
            } else {
                let i = self.find_used();
                self.delete(i);
            }
        }
        if self.spec.fsync == FsyncMode::Transaction {
            for fd in std::mem::take(&mut self.pending_files) {
                self.sync(fd.as_raw_fd());
            }
            if let Some(dir) = self.pending_dir.take() {
                self.sync(dir);
            }
        }
        if self.out.errors[..TRANSACTION].iter().sum::<u64>() > failed_before {
            self.out.errors[TRANSACTION] += 1;
            return;
        }
        self.done(TRANSACTION, start, 0);
    }
}
