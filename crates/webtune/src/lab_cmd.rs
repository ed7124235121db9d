//! `webtune lab` (not written yet).

#[derive(clap::Args)]
pub struct LabArgs {}

pub fn run(_args: LabArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
