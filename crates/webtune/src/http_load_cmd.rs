//! `webtune http_load` (not written yet).

#[derive(clap::Args)]
pub struct HttpLoadArgs {}

pub fn run(_args: HttpLoadArgs) -> anyhow::Result<i32> {
    anyhow::bail!("not implemented yet")
}
