//! `webtune compare` (not written yet).

#[derive(clap::Args)]
pub struct CompareArgs {}

pub fn run(_args: CompareArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
