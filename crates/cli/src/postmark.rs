//! `webtune postmark`'s flags.

use std::path::PathBuf;

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
