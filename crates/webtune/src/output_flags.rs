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
