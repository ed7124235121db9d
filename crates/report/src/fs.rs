//! Small-file results (`webtune.fs/1`) for people and programs: the text summary, CSV, a
//! self-contained HTML page (the shared shell, percentile curves per operation, throughput
//! and latency over time with stalls shaded) and the before → after comparison, reusing the
//! HTTP reports' alignment, units, charts and change arithmetic.

use crate::compare_figures::change_pct;
use crate::html::{figure, page, percentile_chart, plotted_intervals};
use crate::svg::{escape, Band, Chart, Series};
use crate::units::{bytes, ms, ms_f};
use std::fmt::Write as _;
use webtune_model::fs::{FsResult, FsyncMode, IoMode, FS_OPS};

fn aligned(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    crate::text_parts::write_aligned(&mut out, rows);
    out
}

fn io_name(io: IoMode) -> &'static str {
    match io {
        IoMode::Buffered => "buffered",
        IoMode::Unbuffered => "unbuffered",
        IoMode::Direct => "direct",
    }
}

fn fsync_name(r: &FsResult) -> String {
    let call = if r.spec.fdatasync {
        "fdatasync"
    } else {
        "fsync"
    };
    match r.spec.fsync {
        FsyncMode::None => "no fsync".into(),
        FsyncMode::Write => format!("{call} per write"),
        FsyncMode::Transaction => format!("{call} per transaction"),
    }
}

/// One line: transactions, rate, workers (and the failed transactions, when some failed).
pub fn headline(r: &FsResult) -> String {
    let failed = r.op("transaction").errors;
    format!(
        "{} transactions{}, {:.2} transactions/s, {} worker{}",
        r.transactions,
        if failed > 0 {
            format!(" ({failed} failed)")
        } else {
            String::new()
        },
        r.transactions_per_s,
        r.spec.workers,
        if r.spec.workers == 1 { "" } else { "s" }
    )
}

/// The latency table: one row per operation that ran.
pub fn latency_table(r: &FsResult) -> String {
    let mut rows = vec![[
        "latency (ms)",
        "count",
        "errors",
        "mean",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
    ]
    .map(String::from)
    .to_vec()];
    for name in FS_OPS {
        let Some(op) = r.ops.get(name) else { continue };
        let p = &op.latency;
        rows.push(vec![
            name.to_string(),
            op.count.to_string(),
            op.errors.to_string(),
            ms_f(p.mean_us),
            ms(p.p50_us),
            ms(p.p90_us),
            ms(p.p99_us),
            ms(p.p999_us),
            ms(p.max_us),
        ]);
    }
    aligned(&rows)
}

/// The human summary of one run. A run whose file system failed (out of space,
/// read-only, I/O errors) says so first, before any figure.
pub fn render_fs_text(r: &FsResult) -> String {
    let s = &r.spec;
    let mut out = String::new();
    if let Some(failure) = r.storage_failure() {
        let _ = writeln!(out, "FAILED: {failure}");
    }
    let _ = writeln!(
        out,
        "webtune fs: {}{}",
        headline(r),
        if r.interrupted { " (INTERRUPTED)" } else { "" }
    );
    let _ = writeln!(
        out,
        "  pool: {} files of {}..{} bytes in {} ({} subdirector{}), seed {}",
        s.files,
        s.size_min,
        s.size_max,
        r.pool_dir,
        s.subdirs,
        if s.subdirs == 1 { "y" } else { "ies" },
        s.seed
    );
    let _ = writeln!(
        out,
        "  I/O: {} (read {} B, write {} B blocks), {}, biases read {} create {}",
        io_name(r.io_used),
        s.read_block,
        s.write_block,
        fsync_name(r),
        s.bias_read,
        s.bias_create
    );
    out.push('\n');
    let f = &r.files;
    let rows = vec![
        vec![
            "phases".to_string(),
            format!(
                "creation {:.3} s, transactions {:.3} s, deletion {:.3} s (total {:.3} s)",
                r.phases.create_s, r.phases.transactions_s, r.phases.delete_s, r.duration_s
            ),
        ],
        vec![
            "files".into(),
            format!(
                "{} created ({} alone), {} read, {} appended, {} deleted ({} alone)",
                f.created, f.created_alone, f.read, f.appended, f.deleted, f.deleted_alone
            ),
        ],
        vec![
            "data".into(),
            format!(
                "{} read ({}/s), {} written ({}/s)",
                bytes(r.bytes_read as f64),
                bytes(r.read_bytes_per_s),
                bytes(r.bytes_written as f64),
                bytes(r.written_bytes_per_s)
            ),
        ],
        vec![
            "generator".into(),
            format!(
                "{:.3} s user + {:.3} s system CPU, {:.1} µs per transaction, max RSS {} KiB",
                r.generator.user_cpu_s,
                r.generator.system_cpu_s,
                r.cpu_per_transaction_us,
                r.generator.max_rss_kib
            ),
        ],
    ];
    out.push_str(&aligned(&rows));
    out.push('\n');
    out.push_str(&latency_table(r));
    if r.stalls.is_empty() {
        out.push_str("\nstalls: none (no stretch of 100 ms without a finished operation)\n");
    } else {
        let _ = writeln!(out, "\nstalls ({}):", r.stalls.len());
        for st in &r.stalls {
            let _ = writeln!(
                out,
                "  {:.2} s → {:.2} s ({:.0} ms) with no operation finished",
                st.start_s,
                st.start_s + st.length_s,
                st.length_s * 1000.0
            );
        }
    }
    if r.out_of_files {
        out.push_str("out of files: every file was deleted before the transactions ended\n");
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// CSV header (no newline).
pub fn fs_csv_header() -> String {
    let mut cols: Vec<String> = [
        "location",
        "files",
        "size_min",
        "size_max",
        "subdirs",
        "io",
        "fsync",
        "workers",
        "seed",
        "interrupted",
        "duration_s",
        "transactions",
        "transactions_per_s",
        "created",
        "read",
        "appended",
        "deleted",
        "bytes_read",
        "bytes_written",
        "errors",
        "cpu_per_transaction_us",
    ]
    .map(String::from)
    .to_vec();
    for op in FS_OPS {
        for f in [
            "count", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms",
        ] {
            cols.push(format!("{op}_{f}"));
        }
    }
    cols.join(",")
}

/// One CSV line (no newline).
pub fn fs_csv_row(r: &FsResult) -> String {
    let s = &r.spec;
    let quote = |t: &str| {
        if t.contains([',', '"', '\n']) {
            format!("\"{}\"", t.replace('"', "\"\""))
        } else {
            t.to_string()
        }
    };
    let mut v = vec![
        quote(&s.location),
        s.files.to_string(),
        s.size_min.to_string(),
        s.size_max.to_string(),
        s.subdirs.to_string(),
        io_name(r.io_used).into(),
        format!("{:?}", s.fsync).to_lowercase(),
        s.workers.to_string(),
        s.seed.to_string(),
        r.interrupted.to_string(),
        format!("{:.6}", r.duration_s),
        r.transactions.to_string(),
        format!("{:.3}", r.transactions_per_s),
        r.files.created.to_string(),
        r.files.read.to_string(),
        r.files.appended.to_string(),
        r.files.deleted.to_string(),
        r.bytes_read.to_string(),
        r.bytes_written.to_string(),
        r.errors().to_string(),
        format!("{:.3}", r.cpu_per_transaction_us),
    ];
    let msf = |us: f64| format!("{:.3}", us / 1000.0);
    for op in FS_OPS {
        let p = r.op(op).latency;
        v.push(p.count.to_string());
        v.push(msf(p.mean_us));
        for x in [p.p50_us, p.p90_us, p.p99_us, p.p999_us, p.max_us] {
            v.push(msf(x as f64));
        }
    }
    v.join(",")
}

/// Header and one line.
pub fn render_fs_csv(r: &FsResult) -> String {
    format!("{}\n{}\n", fs_csv_header(), fs_csv_row(r))
}

fn bands(r: &FsResult) -> Vec<Band> {
    r.stalls
        .iter()
        .map(|s| Band {
            from_x: s.start_s,
            to_x: s.start_s + s.length_s,
            class: "stall".into(),
            label: format!(
                "stall: no operation finished from {:.1} s to {:.1} s",
                s.start_s,
                s.start_s + s.length_s
            ),
        })
        .collect()
}

/// The HTML page of one run.
pub fn render_fs_html(r: &FsResult) -> String {
    let mut body = format!(
        "<h1>webtune fs: {}</h1>\n<pre>{}</pre>\n",
        escape(&headline(r)),
        escape(&render_fs_text(r))
    );
    let histograms: Vec<(String, &webtune_model::LatencyHistogram)> = FS_OPS
        .iter()
        .filter_map(|n| r.ops.get(*n).map(|o| (n.to_string(), &o.histogram)))
        .filter(|(_, h)| !h.is_empty())
        .collect();
    body.push_str(&figure(
        "percentiles",
        &percentile_chart("Latency by percentile, per operation", &histograms),
        "Each operation's latency at every percentile (HdrHistogram, 3 significant digits).",
    ));
    let intervals = plotted_intervals(&r.timeline);
    let mut rate = Chart::new("Transactions over time", "time (s)", "transactions/s");
    rate.series.push(Series::new(
        "transactions/s",
        intervals
            .iter()
            .map(|s| {
                let v = if s.length_s > 0.0 {
                    s.responses as f64 / s.length_s
                } else {
                    0.0
                };
                (s.start_s + s.length_s / 2.0, v)
            })
            .collect(),
        0,
    ));
    rate.bands = bands(r);
    body.push_str(&figure(
        "throughput",
        &rate,
        "Transactions finished per interval (creation and deletion phases have none); \
         stalls shaded.",
    ));
    let mut lat = Chart::new("Transaction latency over time", "time (s)", "latency (ms)");
    let live: Vec<_> = intervals.iter().filter(|s| s.responses > 0).collect();
    for (i, (name, f)) in [
        (
            "p50",
            (|s: &webtune_model::IntervalSample| s.p50_us) as fn(&_) -> u64,
        ),
        ("p90", |s| s.p90_us),
        ("p99", |s| s.p99_us),
    ]
    .into_iter()
    .enumerate()
    {
        lat.series.push(Series::new(
            name,
            live.iter()
                .map(|s| (s.start_s + s.length_s / 2.0, f(s) as f64 / 1000.0))
                .collect(),
            i,
        ));
    }
    lat.bands = bands(r);
    body.push_str(&figure(
        "latency",
        &lat,
        "Whole-transaction latency per interval.",
    ));
    page(&format!("webtune fs: {}", headline(r)), &body)
}

type Figure = (&'static str, bool, fn(&FsResult) -> f64);

/// One row per worker count: rate, transaction and fsync latency, CPU, stalls, errors.
pub fn render_fs_sweep_text(levels: &[FsResult]) -> String {
    let mut rows = vec![[
        "workers",
        "trans/s",
        "trans p50 ms",
        "trans p99 ms",
        "fsync p99 ms",
        "CPU µs/trans",
        "stalls",
        "errors",
    ]
    .map(String::from)
    .to_vec()];
    for r in levels {
        let t = r.op("transaction").latency;
        rows.push(vec![
            format!(
                "{}{}",
                r.spec.workers,
                if r.interrupted { " (interrupted)" } else { "" }
            ),
            format!("{:.0}", r.transactions_per_s),
            ms(t.p50_us),
            ms(t.p99_us),
            ms(r.op("fsync").latency.p99_us),
            format!("{:.1}", r.cpu_per_transaction_us),
            r.stalls.len().to_string(),
            r.errors().to_string(),
        ]);
    }
    let mut out = match levels.first() {
        Some(r) => format!(
            "webtune fs sweep: {} files of {}..{} bytes in {}, {}, {}\n",
            r.spec.files,
            r.spec.size_min,
            r.spec.size_max,
            r.spec.location,
            io_name(r.io_used),
            fsync_name(r)
        ),
        None => "webtune fs sweep: no level ran\n".into(),
    };
    let failed: Vec<String> = levels
        .iter()
        .filter_map(|r| {
            r.storage_failure()
                .map(|f| format!("FAILED at -c {}: {f}\n", r.spec.workers))
        })
        .collect();
    if !failed.is_empty() {
        out = failed.concat() + &out;
    }
    out.push_str(&aligned(&rows));
    out
}

/// The sweep as CSV: the header and one line per level.
pub fn render_fs_sweep_csv(levels: &[FsResult]) -> String {
    let mut out = fs_csv_header() + "\n";
    for r in levels {
        out += &(fs_csv_row(r) + "\n");
    }
    out
}

/// The sweep as HTML: the table and every level's transaction percentiles.
pub fn render_fs_sweep_html(levels: &[FsResult]) -> String {
    let histograms: Vec<(String, &webtune_model::LatencyHistogram)> = levels
        .iter()
        .filter_map(|r| {
            r.ops
                .get("transaction")
                .map(|o| (format!("-c {}", r.spec.workers), &o.histogram))
        })
        .collect();
    let body = format!(
        "<h1>webtune fs sweep</h1>\n<pre>{}</pre>\n{}",
        escape(&render_fs_sweep_text(levels)),
        figure(
            "percentiles",
            &percentile_chart(
                "Transaction latency by percentile, per worker count",
                &histograms
            ),
            "Whole-transaction latency at each worker count.",
        )
    );
    page("webtune fs sweep", &body)
}

/// The figures compared: name, higher is better, value.
fn figures() -> Vec<Figure> {
    let mut v: Vec<Figure> = vec![
        ("transactions/s", true, |r| r.transactions_per_s),
        ("read B/s", true, |r| r.read_bytes_per_s),
        ("written B/s", true, |r| r.written_bytes_per_s),
        ("CPU µs/transaction", false, |r| r.cpu_per_transaction_us),
        ("errors", false, |r| r.errors() as f64),
        ("stalls", false, |r| r.stalls.len() as f64),
    ];
    macro_rules! lat {
        ($name:expr, $op:expr, $f:ident) => {
            v.push(($name, false, |r| r.op($op).latency.$f as f64 / 1000.0));
        };
    }
    lat!("transaction p50 (ms)", "transaction", p50_us);
    lat!("transaction p99 (ms)", "transaction", p99_us);
    lat!("create p99 (ms)", "create", p99_us);
    lat!("delete p99 (ms)", "delete", p99_us);
    lat!("read p99 (ms)", "read", p99_us);
    lat!("append p99 (ms)", "append", p99_us);
    lat!("fsync p50 (ms)", "fsync", p50_us);
    lat!("fsync p99 (ms)", "fsync", p99_us);
    v
}

/// Several fs results side by side, the first the baseline, with each change in percent.
pub fn render_fs_compare_text(inputs: &[(String, &FsResult)]) -> String {
    let Some((base_name, base)) = inputs.first() else {
        return "nothing to compare\n".into();
    };
    let mut out = format!("Compared to {base_name} (first column)\n");
    for (name, r) in inputs {
        let _ = writeln!(
            out,
            "  {name}: {}, {} files, {}, {}, {:.1} s{}",
            headline(r),
            r.spec.files,
            io_name(r.io_used),
            fsync_name(r),
            r.duration_s,
            if r.interrupted { ", INTERRUPTED" } else { "" }
        );
    }
    out.push('\n');
    let mut header = vec![String::new()];
    for (i, (name, _)) in inputs.iter().enumerate() {
        header.push(name.clone());
        if i > 0 {
            header.push("change".into());
        }
    }
    let mut rows = vec![header];
    for (name, _, value) in figures() {
        let b = value(base);
        let mut row = vec![name.to_string()];
        for (i, (_, r)) in inputs.iter().enumerate() {
            let v = value(r);
            row.push(if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{v:.0}")
            } else {
                format!("{v:.3}")
            });
            if i > 0 {
                row.push(change_pct(b, v));
            }
        }
        rows.push(row);
    }
    out.push_str(&aligned(&rows));
    out.push_str(
        "\nSingle runs: no confidence interval (fs results carry no repeats); file-system \
         runs on a shared machine differ by 5–50% from noise alone.\n",
    );
    out
}

/// The comparison as an HTML page: the table and the overlaid transaction percentiles.
pub fn render_fs_compare_html(inputs: &[(String, &FsResult)]) -> String {
    let text = render_fs_compare_text(inputs);
    let histograms: Vec<(String, &webtune_model::LatencyHistogram)> = inputs
        .iter()
        .filter_map(|(n, r)| r.ops.get("transaction").map(|o| (n.clone(), &o.histogram)))
        .collect();
    let body = format!(
        "<h1>webtune compare (fs)</h1>\n<pre>{}</pre>\n{}",
        escape(&text),
        figure(
            "percentiles",
            &percentile_chart("Transaction latency by percentile", &histograms),
            "Whole-transaction latency of each result.",
        )
    );
    page("webtune compare (fs)", &body)
}
