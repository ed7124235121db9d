//! A postmark session: its command lines (`postmark::Config::apply`) carried out one after
//! another, as postmark reads them from a command file and then from its prompt. It owns
//! what a line does (`set` quietly, `run` measures, `load` reads a file whose own `quit`
//! ends only that file, `show`/`run FILE` append to a file, an unknown line is "Eh?"), the
//! refusal of a command file that loads one being read or nests too deep, and how the
//! session ended (`Outcome`). What it prints, runs and reads goes through a `Console`, so
//! the session needs no terminal, no renderer and no process signals: the binary's console
//! writes stdout, renders with `webtune_report::postmark` and runs with the stop token.

use crate::postmark::{help, Action, Config};
use std::path::{Path, PathBuf};
use webtune_model::fs::{FsResult, FsSpec};

/// The most command files one `load` inside another may nest (postmark itself nests until
/// it runs out of file descriptors, then reports each level's failure).
pub const MAX_LOAD_DEPTH: usize = 16;

/// What a session prints, runs and reads.
pub trait Console {
    /// Text for standard output.
    fn say(&mut self, text: &str);
    /// One warning line (the console adds its prefix).
    fn warn(&mut self, message: &str);
    /// Append `text` to the file at `path` (`run FILE`, `show FILE`).
    fn append(&mut self, path: &str, text: &str) -> std::io::Result<()>;
    /// Read a command file whole; the error is one line naming it.
    fn read(&mut self, path: &Path) -> Result<String, String>;
    /// Run the workload; the error is one line.
    fn run(&mut self, spec: &FsSpec) -> Result<FsResult, String>;
    /// What a run prints while it goes ("Creating files...Done", the dots) for
    /// `transactions` configured.
    fn progress(&self, result: &FsResult, transactions: u64, subdirectories: bool) -> String;
    /// A complete run's report, terse or verbose.
    fn report(&self, result: &FsResult, terse: bool) -> String;
    /// The working directory, as `show` prints it.
    fn cwd(&self) -> String;
}

/// How a session ended, the worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A run was stopped (a signal).
    Interrupted,
    /// A command failed: a run that could not start, an unreadable or self-loading file.
    Failed,
    /// A run's file system failed under it (out of space, read-only, I/O errors).
    Broken,
    /// Every command did what it said.
    Done,
}

/// A session's state.
pub struct Session<C: Console> {
    pub console: C,
    config: Config,
    failed: bool,
    stopped: bool,
    /// The command files being read now, outermost first (a `load` inside one adds one).
    reading: Vec<PathBuf>,
    /// A `load` that could not be followed (a file that loads itself, nesting too deep):
    /// the session ends at once with that one error.
    ended: bool,
    broken: bool,
}

impl<C: Console> Session<C> {
    pub fn new(console: C) -> Session<C> {
        Session {
            console,
            config: Config::default(),
            failed: false,
            stopped: false,
            reading: Vec::new(),
            ended: false,
            broken: false,
        }
    }

    /// Has a `quit`-less stop ended the session (a stopped run, a refused load)?
    pub fn over(&self) -> bool {
        self.stopped || self.ended
    }

    /// How the session went so far.
    pub fn outcome(&self) -> Outcome {
        if self.stopped {
            Outcome::Interrupted
        } else if self.failed {
            Outcome::Failed
        } else if self.broken {
            Outcome::Broken
        } else {
            Outcome::Done
        }
    }

    /// Print to stdout, or append to `file` as postmark's `run FILE` / `show FILE` do.
    fn emit(&mut self, file: Option<&str>, text: &str) {
        match file {
            Some(path) => {
                if let Err(e) = self.console.append(path, text) {
                    self.console
                        .warn(&format!("cannot direct output to file '{path}': {e}"));
                    self.console.say(text);
                }
            }
            None => self.console.say(text),
        }
    }

    /// One line; false when it quits or the session is over.
    pub fn line(&mut self, line: &str) -> bool {
        match self.config.apply(line) {
            Action::Set => {}
            Action::Error(m) => self.console.warn(m.trim_start_matches("Error: ")),
            Action::Unknown => self.console.say("Eh?\n"),
            Action::Shell(_) => self.console.warn("shell escapes (!command) are not run"),
            Action::Quit => return false,
            Action::Help(topic) => self.console.say(&help(topic.as_deref())),
            Action::Show(file) => {
                let text = self.config.show(&self.console.cwd());
                self.emit(file.as_deref(), &text);
            }
            Action::Load(file) => match file {
                Some(f) => {
                    self.file(&PathBuf::from(f), false);
                }
                None => self.console.warn("no configuration file specified"),
            },
            Action::Run(file) => self.run(file.as_deref()),
        }
        !self.over()
    }

    fn run(&mut self, file: Option<&str>) {
        let spec = match self.config.to_spec() {
            Ok(s) => s,
            Err(e) => {
                self.failed = true;
                return self.console.warn(&e);
            }
        };
        let result = match self.console.run(&spec) {
            Ok(r) => r,
            Err(e) => {
                self.failed = true;
                return self.console.warn(&e);
            }
        };
        let progress = self
            .console
            .progress(&result, self.config.transactions, spec.subdirs > 1);
        self.console.say(&progress);
        if !result.out_of_files && !result.interrupted {
            let report = self.console.report(&result, self.config.terse);
            self.emit(file, &report);
        }
        for n in &result.notes {
            self.console.warn(n);
        }
        if let Some(failure) = result.storage_failure() {
            self.console.warn(&failure);
            self.broken = true;
        }
        if result.interrupted {
            self.stopped = true;
        }
    }

    /// Read a command file; `quit` in it ends everything only for the first (`top`) file.
    /// A file that loads one being read (itself, or one that led to it), or loads nested
    /// past `MAX_LOAD_DEPTH`, ends the session with one error, before reading on. Returns
    /// whether to read on after it.
    pub fn file(&mut self, path: &Path, top: bool) -> bool {
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
            self.console.warn(&message);
            self.failed = true;
            self.ended = true;
            return false;
        }
        let text = match self.console.read(path) {
            Ok(t) => t,
            Err(e) => {
                self.failed = true;
                self.console.warn(&e);
                return !top;
            }
        };
        self.console.say(&format!(
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A console that keeps what was said and refuses to run (no pool is made here).
    #[derive(Default)]
    struct Recorder {
        said: String,
        warned: Vec<String>,
    }

    impl Console for Recorder {
        fn say(&mut self, text: &str) {
            self.said.push_str(text);
        }
        fn warn(&mut self, message: &str) {
            self.warned.push(message.to_string());
        }
        fn append(&mut self, _: &str, _: &str) -> std::io::Result<()> {
            Err(std::io::Error::other("read-only"))
        }
        fn read(&mut self, path: &Path) -> Result<String, String> {
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))
        }
        fn run(&mut self, _: &FsSpec) -> Result<FsResult, String> {
            Err("no runs here".into())
        }
        fn progress(&self, _: &FsResult, _: u64, _: bool) -> String {
            String::new()
        }
        fn report(&self, _: &FsResult, _: bool) -> String {
            String::new()
        }
        fn cwd(&self) -> String {
            "/here".into()
        }
    }

    #[test]
    fn lines_do_what_postmark_does_and_a_failed_run_fails_the_session() {
        let mut s = Session::new(Recorder::default());
        assert!(s.line("set number 10"));
        assert!(s.line("frobnicate"));
        assert!(s.console.said.ends_with("Eh?\n"));
        // show FILE that cannot be written: said on stdout instead, with a warning.
        assert!(s.line("show out.txt"));
        assert!(s.console.warned[0].starts_with("cannot direct output to file 'out.txt'"));
        assert_eq!(s.outcome(), Outcome::Done);
        assert!(s.line("run"));
        assert_eq!(s.console.warned.last().unwrap(), "no runs here");
        assert_eq!(s.outcome(), Outcome::Failed);
        assert!(!s.line("quit"));
    }

    #[test]
    fn a_command_file_that_loads_itself_ends_the_session_in_one_error() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.pm");
        let b = dir.path().join("b.pm");
        std::fs::write(
            &a,
            format!("set number 5\nload {}\nset number 6\n", b.display()),
        )
        .unwrap();
        std::fs::write(&b, format!("load {}\n", a.display())).unwrap();
        let mut s = Session::new(Recorder::default());
        assert!(!s.file(&a, true));
        assert!(s.over());
        assert_eq!(s.outcome(), Outcome::Failed);
        assert_eq!(s.console.warned.len(), 1, "{:?}", s.console.warned);
        assert!(
            s.console.warned[0].contains("loads itself"),
            "{:?}",
            s.console.warned
        );
        // quit in a loaded file ends only that file.
        let c = dir.path().join("c.pm");
        let d = dir.path().join("d.pm");
        std::fs::write(&c, format!("load {}\nset number 7\n", d.display())).unwrap();
        std::fs::write(&d, "quit\n").unwrap();
        let mut s = Session::new(Recorder::default());
        assert!(s.file(&c, true));
        assert_eq!(s.outcome(), Outcome::Done);
    }
}
