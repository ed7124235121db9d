//! `webtune report` (not written yet).

#[derive(clap::Args)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
