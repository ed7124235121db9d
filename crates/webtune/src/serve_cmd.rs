//! `webtune serve` (not written yet).

#[derive(clap::Args)]
pub struct ServeArgs {}

pub fn run(_args: ServeArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
