//! `webtune ab` (not written yet).

#[derive(clap::Args)]
pub struct AbArgs {}

pub fn run(_args: AbArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
