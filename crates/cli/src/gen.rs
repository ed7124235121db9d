//! The flags of `webtune completions` and the hidden `webtune man`.

use clap::Args;
use clap_complete::Shell;
use std::path::PathBuf;

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. For example
    /// `webtune completions bash > ~/.local/share/bash-completion/completions/webtune`.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Args)]
pub struct ManArgs {
    /// The folder to write the pages into (made if missing).
    pub dir: PathBuf,
}
