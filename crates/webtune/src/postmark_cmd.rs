//! `webtune postmark [FILE]`: postmark's command language (`webtune_fs::postmark`) read
//! from FILE, then from standard input with postmark's `pm>` prompt, as postmark reads it
//! (`.pmrc` in the working directory when no FILE is given). `run` measures with the fs
//! engine and prints postmark's progress lines and report layout with postmark's figures,
//! then a percentile table postmark lacks.

use crate::output::Outputs;
use std::io::BufRead;
use std::path::PathBuf;
use webtune_fs::postmark::{help, Action, Config, BANNER, PROMPT};

#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  \
    printf 'set location /mnt/test\\nset number 1000\\nset transactions 50000\\nrun\\nquit\\n' \
    | webtune postmark\n\
    Commands: set size LOW [HIGH], set number, set transactions, set location DIR, set\n\
    subdirectories, set read, set write, set buffering true|false, set bias read|create\n\
    -1..10, set seed, set report verbose|terse, run [FILE], show [FILE], load FILE, help,\n\
    quit. With the same seed it makes exactly postmark's choices (its random-number\n\
    generator is reproduced), so the counts equal postmark's; the times are webtune's.\n\
    The pool is a webtune-fs-PID-N folder in the location, deleted at the end.")]
pub struct PostmarkArgs {
    /// A file of postmark commands, read before standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

struct Session {
    config: Config,
    outputs: Outputs,
    failed: bool,
    stopped: bool,
    /// The command files being read now, outermost first (a `load` inside one adds one).
    reading: Vec<PathBuf>,
    /// A `load` that could not be followed (a file that loads itself, nesting too deep):
    /// the session ends at once with that one error.
    ended: bool,
    /// A run's file system failed under it (out of space, read-only, I/O errors).
    broken: bool,
}

/// The most command files one `load` inside another may nest (postmark itself nests until
/// it runs out of file descriptors, then reports each level's failure).
const MAX_LOAD_DEPTH: usize = 16;

/// The largest command file read (a postmark configuration is a few lines).
const MAX_COMMAND_FILE: u64 = 1 << 20;

fn append_to(path: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?
        .write_all(text.as_bytes())
}

impl Session {
    /// Print to stdout, or append to `file` as postmark's `run FILE` / `show FILE` do.
    fn emit(&mut self, file: Option<&str>, text: &str) {
        match file {
            Some(path) => {
                if let Err(e) = append_to(path, text) {
                    crate::output::warn(&format!("cannot direct output to file '{path}': {e}"));
                    self.outputs.stdout(text);
                }
            }
            None => self.outputs.stdout(text),
        }
    }

    /// One line; false when it quits.
    fn line(&mut self, line: &str) -> bool {
        match self.config.apply(line) {
            Action::Set => {}
            Action::Error(m) => crate::output::warn(m.trim_start_matches("Error: ")),
            Action::Unknown => self.outputs.stdout("Eh?\n"),
            Action::Shell(_) => crate::output::warn("shell escapes (!command) are not run"),
            Action::Quit => return false,
            Action::Help(topic) => self.outputs.stdout(&help(topic.as_deref())),
            Action::Show(file) => {
                let cwd = std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                let text = self.config.show(&cwd);
                self.emit(file.as_deref(), &text);
            }
            Action::Load(file) => match file {
                Some(f) => {
                    self.file(&PathBuf::from(f), false);
                }
                None => crate::output::warn("no configuration file specified"),
            },
            Action::Run(file) => self.run(file.as_deref()),
        }
        !self.stopped && !self.ended
    }

    fn run(&mut self, file: Option<&str>) {
        let spec = match self.config.to_spec() {
            Ok(s) => s,
            Err(e) => {
                self.failed = true;
                return crate::output::warn(&e);
            }
        };
        let result = match crate::fs_runs::run_spec(&spec) {
            Ok(r) => r,
            Err(e) => {
                self.failed = true;
                return crate::output::warn(&format!("{e:#}"));
            }
        };
        let subdirs = spec.subdirs > 1;
        let mut text = String::new();
        if subdirs {
            text += "Creating subdirectories...Done\n";
        }
        text += "Creating files...Done\nPerforming transactions";
        let configured = self.config.transactions;
        let percent = configured / 10;
        let dots = if percent == 0 {
            result.transactions
        } else {
            result.transactions.div_ceil(percent)
        };
        text += &".".repeat(dots as usize);
        let complete = !result.out_of_files && !result.interrupted;
        if result.out_of_files {
            text += "out of files!\nFor this workload, either increase the number of files or\n\
                     decrease the number of transactions.\n";
        } else if complete {
            text += "Done\n";
        } else {
            text += "\n";
        }
        text += "Deleting files...Done\n";
        if subdirs {
            text += "Deleting subdirectories...Done\n";
        }
        self.outputs.stdout(&text);
        if complete {
            let mut report = if self.config.terse {
                webtune_report::postmark::terse(&result)
            } else {
                webtune_report::postmark::verbose(&result)
            };
            report += &webtune_report::postmark::percentiles(&result);
            self.emit(file, &report);
        }
        for n in &result.notes {
            crate::output::warn(n);
        }
        if let Some(failure) = result.storage_failure() {
            crate::output::warn(&failure);
            self.broken = true;
        }
        if result.interrupted {
            self.stopped = true;
        }
    }

    /// Read a command file; `quit` in it ends everything only for the first file. A file
    /// that loads one being read (itself, or one that led to it), or loads nested past
    /// `MAX_LOAD_DEPTH`, ends the session with one error (exit 2), before reading on.
    fn file(&mut self, path: &std::path::Path, top: bool) -> bool {
        // The same file by another name (./pm.cfg, a link to it) is the same file.
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let refusal = if self.reading.contains(&key) {
            let mut chain: Vec<String> = self
                .reading
                .iter()
                .skip_while(|p| **p != key)
                .map(|p| p.display().to_string())
                .collect();
            chain.push(key.display().to_string());
            Some(format!(
                "postmark: {} loads itself ({}): a command file cannot load one that is \
                 being read",
                path.display(),
                chain.join(" → ")
            ))
        } else if self.reading.len() >= MAX_LOAD_DEPTH {
            Some(format!(
                "postmark: load {}: command files nest more than {MAX_LOAD_DEPTH} deep",
                path.display()
            ))
        } else {
            None
        };
        if let Some(message) = refusal {
            crate::output::warn(&message);
            self.failed = true;
            self.ended = true;
            return false;
        }
        let text =
            match crate::inputs::read_capped(path, MAX_COMMAND_FILE, "a postmark command file") {
                Ok(t) => t,
                Err(e) => {
                    self.failed = true;
                    crate::output::warn(&format!("{e:#}"));
                    return !top;
                }
            };
        self.outputs.stdout(&format!(
            "Reading configuration from file '{}'\n",
            path.display()
        ));
        self.reading.push(key);
        let mut go_on = true;
        for line in text.lines() {
            if !self.line(line) {
                go_on = !top && !self.ended;
                break;
            }
        }
        self.reading.pop();
        go_on
    }
}

pub fn run(args: PostmarkArgs) -> anyhow::Result<i32> {
    let mut s = Session {
        config: Config::default(),
        outputs: Outputs::new(),
        failed: false,
        stopped: false,
        reading: Vec::new(),
        ended: false,
        broken: false,
    };
    s.outputs.stdout(&format!(
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
    if go_on && !s.stopped && !s.ended {
        let stdin = std::io::stdin();
        let mut lines = stdin.lock();
        loop {
            s.outputs.stdout(PROMPT);
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
    let own = if s.stopped || crate::signals::stop_requested() {
        crate::exit::INTERRUPTED
    } else if s.failed {
        crate::exit::ERROR
    } else if s.broken {
        crate::exit::NO_SUCCESS
    } else {
        crate::exit::SUCCESS
    };
    Ok(s.outputs.exit_code(own))
}
