//! `webtune sweep` (not written yet).

#[derive(clap::Args)]
pub struct SweepArgs {}

pub fn run(_args: SweepArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
