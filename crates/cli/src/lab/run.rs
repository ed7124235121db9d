//! `lab run`'s arguments as clap reads them: the run (`RunArgs`) and the output flags, which
//! may come before `--` as well as after it (issue 39), joined into the words after it.

use super::RunArgs;
use crate::output_flags::{OutputFlags, OutputHelp};

/// `lab run`: the stack and its load, and the output flags, which may come before `--` as
/// well as after it.
#[derive(clap::Args)]
pub struct RunCmd {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub output: OutputFlags<LabRunOutput>,
}

/// The help of `lab run`'s output flags before `--` (they mean what bench's mean after it).
#[derive(Debug, Clone)]
pub struct LabRunOutput;

impl OutputHelp for LabRunOutput {
    const JSON: &'static str =
        "Write the result as JSON to FILE (\"-\": stdout), as bench's --json; before or after --";
    const HTML: &'static str = "Write the HTML report to FILE; before or after --";
    const CSV: Option<&'static str> = Some("Write the summary as CSV to FILE; before or after --");
    const REPEAT: Option<&'static str> =
        Some("Run the load N times (as bench's --repeat); before or after --");
    const QUIET: &'static str =
        "No progress line and no text summary (files are still written); before or after --";
}

impl RunCmd {
    /// The run with the output flags given before `--` joined to the words after it, where
    /// bench's (fs's, smtp's) parser reads them: one place for them whichever side they
    /// were given (issue 39).
    pub fn into_run(self) -> anyhow::Result<RunArgs> {
        let mut run = self.run;
        run.bench = crate::output_flags::join_words(self.output.to_words(), &run.bench)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(run)
    }
}
