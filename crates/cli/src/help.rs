//! `--help` whose examples paste: clap wraps every help section to the terminal's width,
//! the text after the options (`after_help`: our examples) included, so a long example came
//! out cut in the middle of a command (`--slo⏎ 'p99<=500ms'`), and pasting it ran a
//! truncated one. Here each command's `after_help` is swapped for a one-word placeholder
//! (a word is never split) before parsing; the help clap renders gets the text back verbatim.
//! Man pages and completions read the definitions untouched (`Cli::command()`).

use clap::{Command, FromArgMatches};
use std::io::{IsTerminal, Write};

/// Parse the command line with `cmd` (`P::command()` with the vocabulary filled in) as
/// `P::parse()` does, printing `--help` with its examples verbatim.
pub fn parse<P: FromArgMatches>(cmd: Command) -> P {
    let mut texts = Vec::new();
    let mut cmd = with_placeholders(cmd, &mut texts);
    let matches = match cmd.try_get_matches_from_mut(std::env::args_os()) {
        Ok(m) => m,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {
            let styled = e.render();
            let text = if std::io::stdout().is_terminal() {
                styled.ansi().to_string()
            } else {
                styled.to_string()
            };
            let _ = std::io::stdout().write_all(restore(&text, &texts).as_bytes());
            std::process::exit(0);
        }
        Err(e) => e.exit(),
    };
    P::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// The placeholder of the i-th text: one word, so the wrapper moves it whole.
fn placeholder(i: usize) -> String {
    format!("WEBTUNE-VERBATIM-{i}-END")
}

/// `cmd` and all its subcommands with each `after_help` replaced by a placeholder; the
/// texts go to `texts`, in placeholder order.
fn with_placeholders(mut cmd: Command, texts: &mut Vec<String>) -> Command {
    if let Some(text) = cmd.get_after_help() {
        texts.push(text.to_string());
        cmd = cmd.after_help(placeholder(texts.len() - 1));
    }
    for sub in cmd.get_subcommands_mut() {
        let taken = std::mem::replace(sub, Command::new("-"));
        *sub = with_placeholders(taken, texts);
    }
    cmd
}

/// Rendered help with the placeholders replaced by their texts.
fn restore(rendered: &str, texts: &[String]) -> String {
    let mut out = rendered.to_string();
    for (i, text) in texts.iter().enumerate() {
        out = out.replace(&placeholder(i), text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cli;
    use clap::{CommandFactory, Parser};

    /// Per command: its path, its own examples text, and its help at `width` columns as
    /// webtune prints it and as plain clap printed it.
    struct Rendered {
        path: String,
        source: String,
        ours: String,
        clap: String,
    }

    fn all_help(width: usize) -> Vec<Rendered> {
        let mut texts = Vec::new();
        let ours = with_placeholders(Cli::command(), &mut texts).term_width(width);
        let plain = Cli::command().term_width(width);
        let mut out = Vec::new();
        fn walk(
            ours: &Command,
            plain: &Command,
            path: &str,
            texts: &[String],
            out: &mut Vec<Rendered>,
        ) {
            out.push(Rendered {
                path: path.to_string(),
                source: plain
                    .get_after_help()
                    .map(|t| t.to_string())
                    .unwrap_or_default(),
                ours: restore(&ours.clone().render_long_help().to_string(), texts),
                clap: plain.clone().render_long_help().to_string(),
            });
            for (a, b) in ours.get_subcommands().zip(plain.get_subcommands()) {
                walk(a, b, &format!("{path} {}", a.get_name()), texts, out);
            }
        }
        walk(&ours, &plain, "webtune", &texts, &mut out);
        out
    }

    /// The command lines of a help text or a README: lines whose first word is `webtune`
    /// (after a `$ ` prompt; in a block with prompts only those lines), with `\` continuations
    /// joined.
    fn command_lines(text: &str, prompts_only: bool) -> Vec<String> {
        let mut out = Vec::new();
        let mut pending: Option<String> = None;
        for line in text.lines() {
            let trimmed = line.trim_start();
            let line_text = match pending.take() {
                Some(head) => format!("{head} {trimmed}"),
                None => {
                    let body = match trimmed.strip_prefix("$ ") {
                        Some(b) => b,
                        None if prompts_only => continue,
                        None => trimmed,
                    };
                    if !body.starts_with("webtune ") {
                        continue;
                    }
                    body.to_string()
                }
            };
            match line_text.strip_suffix('\\') {
                Some(head) => pending = Some(head.trim_end().to_string()),
                None => out.push(line_text),
            }
        }
        out
    }

    /// Split as a shell would, and keep the words up to a pipe, redirection or comment.
    fn argv(line: &str) -> Vec<String> {
        shell_words::split(line)
            .unwrap_or_default()
            .into_iter()
            .take_while(|w| {
                !matches!(w.as_str(), "|" | "||" | "&&" | ";" | "&")
                    && !w.starts_with('>')
                    && !w.starts_with("2>")
                    && !w.starts_with('<')
                    && !w.starts_with('#')
            })
            .collect()
    }

    /// Why `line` is not a webtune command clap accepts, if it is not.
    fn parse_error(line: &str) -> Option<String> {
        if let Err(e) = shell_words::split(line) {
            return Some(format!("the shell cannot parse it: {e}"));
        }
        let words = argv(line);
        if words.first().map(String::as_str) != Some("webtune") {
            return Some("it does not start with webtune".into());
        }
        if words.len() > 1 && words[1].starts_with('-') {
            return None; // `webtune --version`
        }
        match Cli::try_parse_from(&words) {
            Ok(_) => None,
            // --help/--version in an example are fine.
            Err(e)
                if matches!(
                    e.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                ) =>
            {
                None
            }
            Err(e) => Some(e.to_string().lines().next().unwrap_or_default().to_string()),
        }
    }

    #[test]
    fn every_example_in_help_is_verbatim_and_parses_at_any_width() {
        let mut seen = 0;
        let mut broken = Vec::new();
        for width in [40, 60, 100] {
            for r in all_help(width) {
                let printed = command_lines(&r.ours, false);
                for line in command_lines(&r.source, false) {
                    let at = format!("{} --help at {width} columns", r.path);
                    if !printed.contains(&line) {
                        broken.push(format!("{at}: {line:?} is not printed whole"));
                    }
                    if let Some(e) = parse_error(&line) {
                        broken.push(format!("{at}: {line:?}: {e}"));
                    }
                    seen += 1;
                }
            }
        }
        assert!(broken.is_empty(), "{}", broken.join("\n"));
        assert!(seen > 30, "only {seen} examples found");
    }

    #[test]
    fn plain_clap_cuts_examples_the_check_would_catch() {
        // What --help printed before: at 60 columns some example is cut mid-command.
        let cut = all_help(60).iter().any(|r| {
            let printed = command_lines(&r.clap, false);
            command_lines(&r.source, false)
                .iter()
                .any(|l| !printed.contains(l))
        });
        assert!(cut);
    }

    #[test]
    fn every_command_in_the_readme_parses() {
        let readme = include_str!("../../../README.md");
        let mut seen = 0;
        let mut broken = Vec::new();
        for block in readme.split("```").skip(1).step_by(2) {
            let prompts = block.lines().any(|l| l.trim_start().starts_with("$ "));
            for line in command_lines(block, prompts) {
                if let Some(e) = parse_error(&line) {
                    broken.push(format!("README.md: {line:?}: {e}"));
                }
                seen += 1;
            }
        }
        assert!(broken.is_empty(), "{}", broken.join("\n"));
        assert!(seen > 10, "only {seen} commands found in the README");
    }
}
