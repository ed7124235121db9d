//! Every exit status webtune returns: one constant per row of docs/exit-codes.md, whose
//! wording each comment quotes (scripts rely on that table; a test below keeps the two in
//! step). Which status wins when several apply is decided where they meet:
//! `output::Outputs::exit_code` (4, then 141, over the command's own) and `gate::status`
//! (130, then 99). The table's last row, 101, is Rust's status for a panic: webtune never
//! returns it on purpose.

/// 0: done; every output was written. `serve`: stopped by Ctrl-C, SIGTERM or SIGHUP.
pub const SUCCESS: i32 = 0;

/// 1: `ab`, `bench`, `smtp`: no request (message) got a response (every one failed to connect, timed out, …);
/// the report of what was measured is still printed and written, as ab fails. `sweep`,
/// `lab sweep`: a level got no *successful* response (every request failed, or every
/// response had an unexpected status); the table and files are still written. `lab clean`:
/// a leftover process survived SIGKILL. `fs`: no transaction ran and operations failed.
/// `fs`, `lab run fs`, `lab sweep fs`, `postmark`: the file system failed under the
/// workload (out of space, read-only, I/O errors).
pub const NO_SUCCESS: i32 = 1;

/// 1 (tune): no configuration met every SLO, or no trial succeeded; the report and journal
/// are still written.
pub const NOTHING_FEASIBLE: i32 = 1;

/// 1 (`compare --live`, `lab compare`): undecided — the budget ended before the interval
/// decided; the report (with the smallest difference the budget could detect) is still
/// printed and written.
pub const UNDECIDED: i32 = 1;

/// 2: bad input or an error before or during the work: a one-line `webtune: …` message on
/// stderr. Includes flag errors (clap's usage message), an unreadable input file, a target
/// that cannot be resolved, and an output path that cannot be written (checked before any
/// load starts).
pub const ERROR: i32 = 2;

/// 3: `lab run`, `lab sweep`, `lab capacity`: a server's main process died during the load;
/// the results were printed and written but describe a broken stack. `capacity URL`: the
/// target went down — every connect of a step was refused and nothing answered.
pub const TARGET_DOWN: i32 = 3;

/// 4: the results were measured but an output could not be written: a file (failed after the
/// pre-run check, e.g. a full disk), or standard output (e.g. `>/dev/full`).
pub const OUTPUT_FAILED: i32 = 4;

/// 5: `capacity`, `lab capacity`: no capacity — an `--slo` broke even at the lowest rate
/// tried (`--min-rate`), the generator was the limit at every rate, or `--max-steps` ran out
/// before a rate held twice.
pub const NO_CAPACITY: i32 = 5;

/// 99: a `--threshold` failed (k6's convention): the run went fine and every output was
/// written, but a figure broke its limit.
pub const THRESHOLD_FAILED: i32 = 99;

/// 130: interrupted by Ctrl-C (SIGINT), SIGTERM or SIGHUP: the run stopped early, lab stacks
/// were stopped, and what was measured was printed and written (marked `interrupted`).
/// 128 + SIGINT, as shells expect for Ctrl-C, whichever signal it was.
pub const INTERRUPTED: i32 = 130;

/// 141: standard output is a pipe whose reader has gone (`webtune … | head -1`): nothing more
/// is printed, no message, the output files are still written. 128 + SIGPIPE, the status a
/// shell shows for a program that SIGPIPE ended.
pub const BROKEN_PIPE: i32 = 141;

#[cfg(test)]
mod tests {
    use super::*;

    /// The first cell of every row of the table in docs/exit-codes.md, in order.
    fn documented_rows() -> Vec<String> {
        include_str!("../../../docs/exit-codes.md")
            .lines()
            .skip_while(|l| !l.starts_with("| Code"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| l.split('|').nth(1).unwrap_or_default().trim().to_string())
            .collect()
    }

    #[test]
    fn there_is_one_constant_per_row_of_the_documented_table() {
        let constants = [
            ("0", SUCCESS),
            ("1", NO_SUCCESS),
            ("1 (tune)", NOTHING_FEASIBLE),
            ("1 (compare --live, lab compare)", UNDECIDED),
            ("2", ERROR),
            ("3", TARGET_DOWN),
            ("4", OUTPUT_FAILED),
            ("5", NO_CAPACITY),
            ("99", THRESHOLD_FAILED),
            ("130", INTERRUPTED),
            ("141", BROKEN_PIPE),
            // A panic: Rust's own status, never returned on purpose (no constant).
            ("101", 101),
        ];
        let rows = documented_rows();
        let named: Vec<&str> = constants.iter().map(|(row, _)| *row).collect();
        assert_eq!(
            rows, named,
            "docs/exit-codes.md's rows and exit.rs disagree"
        );
        for (row, code) in constants {
            let number: i32 = row.split(' ').next().unwrap().parse().unwrap();
            assert_eq!(number, code, "row {row}");
        }
    }
}
