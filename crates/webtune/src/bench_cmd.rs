//! `webtune bench` (not written yet).

#[derive(clap::Args)]
pub struct BenchArgs {}

pub fn run(_args: BenchArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
