//! `webtune postmark [FILE]`: postmark's command language read from FILE, then from
//! standard input with postmark's `pm>` prompt, as postmark reads it (`.pmrc` in the
//! working directory when no FILE is given). The session is `webtune_fs::postmark_session`'s;
//! this module is its console: `run` measures with the fs engine and prints postmark's
//! progress lines and report layout (`webtune_report::postmark`), then a percentile table
//! postmark lacks.

use crate::output::Outputs;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use webtune_cli::postmark::PostmarkArgs;
use webtune_fs::postmark::{BANNER, PROMPT};
use webtune_fs::postmark_session::{Console, Outcome, Session};
use webtune_model::fs::{FsResult, FsSpec};
use webtune_report::postmark;

/// The largest command file read (a postmark configuration is a few lines).
const MAX_COMMAND_FILE: u64 = 1 << 20;

/// The session's console: stdout through `Outputs`, warnings on stderr, postmark's layouts
/// from `webtune_report::postmark`, runs under the process's stop token.
struct Terminal {
    outputs: Outputs,
}

impl Console for Terminal {
    fn say(&mut self, text: &str) {
        self.outputs.stdout(text);
    }

    fn warn(&mut self, message: &str) {
        crate::output::warn(message);
    }

    fn append(&mut self, path: &str, text: &str) -> std::io::Result<()> {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)?
            .write_all(text.as_bytes())
    }

    fn read(&mut self, path: &Path) -> Result<String, String> {
        crate::inputs::read_capped(path, MAX_COMMAND_FILE, "a postmark command file")
            .map_err(|e| format!("{e:#}"))
    }

    fn run(&mut self, spec: &FsSpec) -> Result<FsResult, String> {
        crate::fs_runs::run_spec(spec).map_err(|e| format!("{e:#}"))
    }

    fn progress(&self, result: &FsResult, transactions: u64, subdirectories: bool) -> String {
        postmark::progress(result, transactions, subdirectories)
    }

    fn report(&self, result: &FsResult, terse: bool) -> String {
        let mut report = if terse {
            postmark::terse(result)
        } else {
            postmark::verbose(result)
        };
        report += &postmark::percentiles(result);
        report
    }

    fn cwd(&self) -> String {
        std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default()
    }
}

pub fn run(args: PostmarkArgs) -> anyhow::Result<i32> {
    let mut s = Session::new(Terminal {
        outputs: Outputs::new(),
    });
    s.console.say(&format!(
        "{BANNER} (webtune postmark {})\n",
        env!("CARGO_PKG_VERSION")
    ));
    let go_on = match &args.file {
        Some(f) => s.file(f, true),
        None => {
            let rc = PathBuf::from(".pmrc");
            !rc.exists() || s.file(&rc, true)
        }
    };
    if go_on && !s.over() {
        let stdin = std::io::stdin();
        let mut lines = stdin.lock();
        loop {
            s.console.say(PROMPT);
            let mut line = String::new();
            match lines.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = line.strip_suffix('\n').unwrap_or(&line);
            if !s.line(line) {
                break;
            }
        }
    }
    let own = match s.outcome() {
        _ if crate::signals::stop_requested() => crate::exit::INTERRUPTED,
        Outcome::Interrupted => crate::exit::INTERRUPTED,
        Outcome::Failed => crate::exit::ERROR,
        Outcome::Broken => crate::exit::NO_SUCCESS,
        Outcome::Done => crate::exit::SUCCESS,
    };
    Ok(s.console.outputs.exit_code(own))
}
