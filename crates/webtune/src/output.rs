//! The binary's face of `webtune_report::output` (where results go: the checks before a
//! run, atomic writes, FIFOs, stdout's closed pipe): what happened to the outputs becomes
//! an exit status here, `exit::OUTPUT_FAILED` over `exit::BROKEN_PIPE` over the command's
//! own (docs/exit-codes.md).

use crate::exit;
use std::ops::{Deref, DerefMut};
pub use webtune_report::output::warn;
use webtune_report::output::Status;

/// A command's outputs (`webtune_report::output::Outputs`) with their exit status.
#[derive(Debug, Default)]
pub struct Outputs(webtune_report::output::Outputs);

impl Outputs {
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// The exit status: `exit::OUTPUT_FAILED` when an output failed, `exit::BROKEN_PIPE` when
    /// only stdout's reader went away, else `otherwise` (the command's own status).
    pub fn exit_code(&self, otherwise: i32) -> i32 {
        match self.0.status() {
            Status::Failed => exit::OUTPUT_FAILED,
            Status::BrokenPipe => exit::BROKEN_PIPE,
            Status::Written => otherwise,
        }
    }
}

impl Deref for Outputs {
    type Target = webtune_report::output::Outputs;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Outputs {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// Check, before any load starts, that `dest` (the value of `flag`) can be written.
pub fn check(flag: &str, dest: &str) -> anyhow::Result<()> {
    Ok(webtune_report::output::check(flag, dest)?)
}

/// Check every `(flag, destination)` given (see `check`).
pub fn check_all<'a>(
    outputs: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> anyhow::Result<()> {
    Ok(webtune_report::output::check_all(outputs)?)
}

/// Print `text` on stdout and return the exit status for a command whose only output it is.
pub fn print_only(text: &str) -> i32 {
    let mut outputs = Outputs::new();
    outputs.stdout(text);
    outputs.exit_code(exit::SUCCESS)
}
