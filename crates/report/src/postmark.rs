//! postmark's report layouts for an fs result: the verbose report (Time / Files / Data) and
//! the terse line, line for line as PostMark v1.51 prints them, with its figures computed
//! its way: whole seconds from `time()` (a difference of 0 counts as 1), integer division
//! for the rates, single-precision bytes. Then what postmark lacks: a percentile table.
//! Before them, what postmark prints while a run goes (`progress`).

use crate::fs::latency_table;
use webtune_model::fs::FsResult;

fn diff(later: u64, earlier: u64) -> u64 {
    match later.saturating_sub(earlier) {
        0 => 1,
        d => d,
    }
}

/// postmark's `scalef`: megabytes above one, else kilobytes, else bytes.
fn scalef(v: f32) -> String {
    const KB: f32 = 1024.0;
    const MB: f32 = 1024.0 * 1024.0;
    if v / MB > 1.0 {
        format!("{:.2} megabytes", f64::from(v / MB))
    } else if v / KB != 0.0 {
        format!("{:.2} kilobytes", f64::from(v / KB))
    } else {
        format!("{:.6} bytes", f64::from(v))
    }
}

/// postmark's lines while a run goes: the pool made, one dot per tenth of the `configured`
/// transactions done ("out of files!" where the pool ran dry), the pool deleted.
pub fn progress(r: &FsResult, configured: u64, subdirectories: bool) -> String {
    let mut text = String::new();
    if subdirectories {
        text += "Creating subdirectories...Done\n";
    }
    text += "Creating files...Done\nPerforming transactions";
    let percent = configured / 10;
    let dots = if percent == 0 {
        r.transactions
    } else {
        r.transactions.div_ceil(percent)
    };
    text += &".".repeat(dots as usize);
    if r.out_of_files {
        text += "out of files!\nFor this workload, either increase the number of files or\n\
                 decrease the number of transactions.\n";
    } else if !r.interrupted {
        text += "Done\n";
    } else {
        text += "\n";
    }
    text += "Deleting files...Done\n";
    if subdirectories {
        text += "Deleting subdirectories...Done\n";
    }
    text
}

/// The verbose report. postmark prints the total of files *created* on its "deleted" line;
/// so does this (the two agree whenever the pool was deleted whole).
pub fn verbose(r: &FsResult) -> String {
    let m = &r.marks;
    let elapsed = diff(m.end, m.start);
    let t_elapsed = diff(m.transactions_end, m.transactions_start);
    let create_interval = diff(m.transactions_start, m.start);
    let delete_interval = diff(m.end, m.transactions_end);
    let configured = r.spec.transactions.unwrap_or(r.transactions);
    let number = r.spec.files;
    let f = &r.files;
    let mixed_created = f.created.saturating_sub(number);
    let mixed_deleted = f.deleted - f.deleted_alone;
    let bytes_read = r.bytes_read as f32;
    let bytes_written = r.bytes_written as f32;
    let mut out = String::new();
    out += "Time:\n";
    out += &format!("\t{elapsed} seconds total\n");
    out += &format!(
        "\t{t_elapsed} seconds of transactions ({} per second)\n",
        configured / t_elapsed
    );
    out += "\nFiles:\n";
    out += &format!(
        "\t{} created ({} per second)\n",
        f.created,
        f.created / elapsed
    );
    out += &format!(
        "\t\tCreation alone: {number} files ({} per second)\n",
        number / create_interval
    );
    out += &format!(
        "\t\tMixed with transactions: {mixed_created} files ({} per second)\n",
        mixed_created / t_elapsed
    );
    out += &format!("\t{} read ({} per second)\n", f.read, f.read / t_elapsed);
    out += &format!(
        "\t{} appended ({} per second)\n",
        f.appended,
        f.appended / t_elapsed
    );
    out += &format!(
        "\t{} deleted ({} per second)\n",
        f.created,
        f.created / elapsed
    );
    out += &format!(
        "\t\tDeletion alone: {} files ({} per second)\n",
        f.deleted_alone,
        f.deleted_alone / delete_interval
    );
    out += &format!(
        "\t\tMixed with transactions: {mixed_deleted} files ({} per second)\n",
        mixed_deleted / t_elapsed
    );
    out += "\nData:\n";
    out += &format!(
        "\t{} read ({} per second)\n",
        scalef(bytes_read),
        scalef(bytes_read / elapsed as f32)
    );
    out += &format!(
        "\t{} written ({} per second)\n",
        scalef(bytes_written),
        scalef(bytes_written / elapsed as f32)
    );
    out
}

/// The terse report: one line of figures.
pub fn terse(r: &FsResult) -> String {
    let m = &r.marks;
    let elapsed = diff(m.end, m.start) as f32;
    let t_elapsed = diff(m.transactions_end, m.transactions_start) as f32;
    let interval = diff(m.transactions_start, m.start) as f32;
    let configured = r.spec.transactions.unwrap_or(r.transactions) as f32;
    let f = &r.files;
    let number = r.spec.files as f32;
    let v = [
        configured / t_elapsed,
        f.created as f32 / elapsed,
        number / interval,
        (f.created as f32 - number) / t_elapsed,
        f.read as f32 / t_elapsed,
        f.appended as f32 / t_elapsed,
        f.created as f32 / elapsed,
        f.deleted_alone as f32 / interval,
        (f.deleted - f.deleted_alone) as f32 / t_elapsed,
        r.bytes_read as f32 / elapsed,
        r.bytes_written as f32 / elapsed,
    ];
    let figures: Vec<String> = v.iter().map(|x| format!("{:.2}", f64::from(*x))).collect();
    format!(
        "{} {} {}\n",
        elapsed as u64,
        t_elapsed as u64,
        figures.join(" ")
    )
}

/// What webtune adds below postmark's report: the exact times and every operation's
/// latency percentiles.
pub fn percentiles(r: &FsResult) -> String {
    format!(
        "\nwebtune: {:.3} s total, {:.3} s of transactions ({:.2} per second), \
         {:.1} µs generator CPU per transaction\n{}",
        r.duration_s,
        r.phases.transactions_s,
        r.transactions_per_s,
        r.cpu_per_transaction_us,
        latency_table(r)
    )
}
