//! The output flags of the commands that measure or merge (`--json`, `--html`, `--csv`,
//! `--repeat`, `-q`), declared once and flattened into each command's arguments
//! (`#[command(flatten)] output: OutputFlags<…>`). Names, short flags, value names, value
//! checks and defaults are the same for every command; what the files hold differs, so each
//! command says it in its own help text (an `OutputHelp`), where `None` leaves out a flag the
//! command does not have. Where the results then go is `output.rs`'s.
//!
//! Written against clap's `Args` by hand rather than derived: a derived struct has every
//! field's flag, and help text fixed in doc comments, while these differ per command.

use clap::{value_parser, Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use std::marker::PhantomData;

/// One command's help text for its output flags (as clap shows a doc comment: no final
/// period); `None`: the command has no such flag.
pub trait OutputHelp {
    const JSON: &'static str;
    const HTML: &'static str;
    const CSV: Option<&'static str> = None;
    const REPEAT: Option<&'static str> = None;
    const QUIET: &'static str;
}

/// The output flags as given: `csv` is None and `repeat` 1 where the command has no such
/// flag.
#[derive(Debug, Clone)]
pub struct OutputFlags<H> {
    /// `--json FILE` ("-": stdout).
    pub json: Option<String>,
    /// `--html FILE`.
    pub html: Option<String>,
    /// `--csv FILE` ("-": stdout).
    pub csv: Option<String>,
    /// `--repeat N`, at least 1.
    pub repeat: u32,
    /// `-q`, `--quiet`.
    pub quiet: bool,
    help: PhantomData<H>,
}

impl<H: OutputHelp> OutputFlags<H> {
    /// Take the output flags given on the other side of `--` (issue 39: `lab run` took
    /// `--json` only after it, `tune` only before): a flag given on both sides, or one this
    /// command does not have, is refused in one line.
    pub fn fold_in<B>(&mut self, other: &OutputFlags<B>, command: &str) -> Result<(), String> {
        fn one(
            mine: &mut Option<String>,
            theirs: &Option<String>,
            flag: &str,
            has: bool,
            command: &str,
        ) -> Result<(), String> {
            match (mine.as_ref(), theirs) {
                (_, None) => Ok(()),
                (_, Some(_)) if !has => Err(format!("{command} has no {flag}")),
                (Some(_), Some(_)) => Err(format!(
                    "{flag} is given both before and after --: give it once"
                )),
                (None, Some(value)) => {
                    *mine = Some(value.clone());
                    Ok(())
                }
            }
        }
        one(&mut self.json, &other.json, "--json", true, command)?;
        one(&mut self.html, &other.html, "--html", true, command)?;
        one(
            &mut self.csv,
            &other.csv,
            "--csv",
            H::CSV.is_some(),
            command,
        )?;
        if other.repeat != 1 {
            if H::REPEAT.is_none() {
                return Err(format!("{command} has no --repeat"));
            }
            if self.repeat != 1 {
                return Err("--repeat is given both before and after --: give it once".into());
            }
            self.repeat = other.repeat;
        }
        self.quiet |= other.quiet;
        Ok(())
    }

    /// The flags as words (for a command whose flags after `--` are parsed from words).
    pub fn to_words(&self) -> Vec<String> {
        let mut words = Vec::new();
        for (flag, value) in [
            ("--json", &self.json),
            ("--html", &self.html),
            ("--csv", &self.csv),
        ] {
            if let Some(value) = value {
                words.push(flag.to_string());
                words.push(value.clone());
            }
        }
        if self.repeat != 1 {
            words.push("--repeat".to_string());
            words.push(self.repeat.to_string());
        }
        if self.quiet {
            words.push("--quiet".to_string());
        }
        words
    }
}

/// The output flags given before `--` (as `to_words`) put ahead of the words after it, for a
/// parser that reads both from those words: a file flag given on both sides is refused (two
/// answers to one question); `-q` on both sides is harmless.
pub fn join_words(before: Vec<String>, after: &[String]) -> Result<Vec<String>, String> {
    let flags = before
        .iter()
        .filter(|w| w.starts_with("--") && *w != "--quiet");
    for flag in flags {
        let prefix = format!("{flag}=");
        if after.iter().any(|w| w == flag || w.starts_with(&prefix)) {
            return Err(format!(
                "{flag} is given both before and after --: give it once"
            ));
        }
    }
    let mut words = before;
    words.extend(after.iter().cloned());
    Ok(words)
}

/// A flag taking a file name (the id is the long flag, as a derived field's would be).
fn file_flag(id: &'static str, help: &'static str) -> Arg {
    Arg::new(id)
        .long(id)
        .value_name("FILE")
        .help(help)
        .action(ArgAction::Set)
        .value_parser(value_parser!(String))
}

impl<H: OutputHelp> Args for OutputFlags<H> {
    fn augment_args(cmd: Command) -> Command {
        let mut cmd = cmd
            .arg(file_flag("json", H::JSON))
            .arg(file_flag("html", H::HTML));
        if let Some(help) = H::CSV {
            cmd = cmd.arg(file_flag("csv", help));
        }
        if let Some(help) = H::REPEAT {
            cmd = cmd.arg(
                Arg::new("repeat")
                    .long("repeat")
                    .value_name("N")
                    .help(help)
                    .action(ArgAction::Set)
                    .default_value("1")
                    .value_parser(value_parser!(u32).range(1..)),
            );
        }
        cmd.arg(
            Arg::new("quiet")
                .short('q')
                .long("quiet")
                .help(H::QUIET)
                .action(ArgAction::SetTrue),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<H: OutputHelp> FromArgMatches for OutputFlags<H> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut matches.clone())
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = OutputFlags {
            json: None,
            html: None,
            csv: None,
            repeat: 1,
            quiet: false,
            help: PhantomData,
        };
        flags.update_from_arg_matches_mut(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.update_from_arg_matches_mut(&mut matches.clone())
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        if matches.contains_id("json") {
            self.json = matches.remove_one("json");
        }
        if matches.contains_id("html") {
            self.html = matches.remove_one("html");
        }
        if H::CSV.is_some() && matches.contains_id("csv") {
            self.csv = matches.remove_one("csv");
        }
        if H::REPEAT.is_some() && matches.contains_id("repeat") {
            self.repeat = matches.remove_one("repeat").unwrap_or(1);
        }
        if matches.contains_id("quiet") {
            self.quiet = matches.get_flag("quiet");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Clone)]
    struct Every;
    impl OutputHelp for Every {
        const JSON: &'static str = "j";
        const HTML: &'static str = "h";
        const CSV: Option<&'static str> = Some("c");
        const REPEAT: Option<&'static str> = Some("r");
        const QUIET: &'static str = "q";
    }

    #[derive(Debug, Clone)]
    struct Fewer;
    impl OutputHelp for Fewer {
        const JSON: &'static str = "j";
        const HTML: &'static str = "h";
        const QUIET: &'static str = "q";
    }

    #[derive(Parser)]
    struct WithEvery {
        #[command(flatten)]
        output: OutputFlags<Every>,
    }

    #[derive(Parser)]
    struct WithFewer {
        #[command(flatten)]
        output: OutputFlags<Fewer>,
    }

    #[test]
    fn the_flags_parse_with_their_defaults() {
        let o = WithEvery::try_parse_from(["x"]).unwrap().output;
        assert_eq!(
            (o.json, o.html, o.csv, o.repeat, o.quiet),
            (None, None, None, 1, false)
        );
        let o = WithEvery::try_parse_from([
            "x", "--json", "-", "--html", "r.html", "--csv", "r.csv", "--repeat", "3", "-q",
        ])
        .unwrap()
        .output;
        assert_eq!(o.json.as_deref(), Some("-"));
        assert_eq!(o.html.as_deref(), Some("r.html"));
        assert_eq!(o.csv.as_deref(), Some("r.csv"));
        assert_eq!((o.repeat, o.quiet), (3, true));
        assert!(WithEvery::try_parse_from(["x", "--repeat", "0"]).is_err());
    }

    #[test]
    fn flags_from_the_other_side_of_the_separator_fold_in_once() {
        let mut tune = WithFewer::try_parse_from(["x", "--html", "t.html"])
            .unwrap()
            .output;
        let bench = WithEvery::try_parse_from(["x", "--json", "b.json", "-q"])
            .unwrap()
            .output;
        tune.fold_in(&bench, "tune").unwrap();
        assert_eq!(tune.json.as_deref(), Some("b.json"));
        assert_eq!(tune.html.as_deref(), Some("t.html"));
        assert!(tune.quiet);
        let twice = WithEvery::try_parse_from(["x", "--html", "b.html"])
            .unwrap()
            .output;
        let err = tune.fold_in(&twice, "tune").unwrap_err();
        assert!(err.contains("--html is given both"), "{err}");
        let csv = WithEvery::try_parse_from(["x", "--csv", "b.csv"])
            .unwrap()
            .output;
        assert_eq!(tune.fold_in(&csv, "tune").unwrap_err(), "tune has no --csv");
        let words = WithEvery::try_parse_from(["x", "--json", "-", "--repeat", "2", "-q"])
            .unwrap()
            .output
            .to_words();
        assert_eq!(words, ["--json", "-", "--repeat", "2", "--quiet"]);
        let after = ["-c".to_string(), "2".to_string(), "/".to_string()];
        let joined = join_words(vec!["--json".into(), "a.json".into()], &after).unwrap();
        assert_eq!(joined, ["--json", "a.json", "-c", "2", "/"]);
        let after = ["--json=b.json".to_string()];
        assert!(join_words(vec!["--json".into(), "a.json".into()], &after).is_err());
    }

    #[test]
    fn a_command_without_csv_or_repeat_refuses_them() {
        let o = WithFewer::try_parse_from(["x", "--quiet", "--json", "a.json"])
            .unwrap()
            .output;
        assert_eq!(
            (o.json.as_deref(), o.csv, o.repeat, o.quiet),
            (Some("a.json"), None, 1, true)
        );
        assert!(WithFewer::try_parse_from(["x", "--csv", "a.csv"]).is_err());
        assert!(WithFewer::try_parse_from(["x", "--repeat", "2"]).is_err());
    }
}
