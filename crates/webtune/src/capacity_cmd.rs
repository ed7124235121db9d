//! `webtune capacity URL`: flags into a capacity trial, searched by `capacity_search` (the
//! step shared with `webtune lab capacity STACK`). The search and the judging live in
//! `webtune_search::capacity`; this file only wires them.

use crate::capacity_search::search;
use crate::flags::bench::RequestArgsExt;
use webtune_cli::capacity::CapacityArgs;
use webtune_lab::trial::{Target, Trial};
use webtune_model::RunSpec;

pub fn run(args: CapacityArgs) -> anyhow::Result<i32> {
    let mut load = RunSpec {
        url: args.url.clone(),
        ..RunSpec::default()
    };
    // Nothing is measured yet: a signal while the inputs are read (a FIFO) exits at once.
    let at_once = crate::signals::exit_at_once();
    args.request.apply(&mut load)?;
    // smtp://: messages with `webtune smtp`'s defaults to its generated mailboxes.
    let smtp = args.url.starts_with("smtp://");
    if smtp {
        load.smtp = Some(webtune_model::SmtpSpec::default());
        load.expect_status = vec![(200, 299)];
    }
    let mut trial = Trial::new(Target::external(&args.url), load);
    trial.workload = match smtp {
        true => crate::flags::smtp::mailboxes(None, "")?,
        false => args.request.workload()?,
    };
    drop(at_once);
    search(trial, args.connections, &args.arrival, &args.search)
}
