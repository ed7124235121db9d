//! `webtune serve`: runs the embedded HTTP/1.1 target (crate webtune-serve) in the
//! foreground until SIGINT, SIGTERM or SIGHUP, then stops it cleanly. Flags map one to one onto
//! `webtune_serve::ServeOptions`.

use std::time::Duration;

use webtune_cli::serve::ServeArgs;
use webtune_serve::{EmbeddedServer, ServeOptions};

pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    // main installed the signal handlers before this: an early Ctrl-C still stops cleanly.
    let stop = crate::signals::stop_token();
    let opts = ServeOptions {
        addr: args.addr,
        workers: args
            .workers
            .map_or_else(webtune_serve::available_cores, |n| n as usize),
        backlog: args.backlog,
        keepalive_timeout: args.keepalive_timeout,
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
    };
    let server = EmbeddedServer::start(opts)?;
    eprintln!(
        "webtune serve: listening on http://{}/ (routes: /empty.gif /bytes/N /chunked/N /cpu/US \
         /sleep/MS /status/CODE /login /account /reply /api/me; Ctrl-C stops)",
        server.local_addr()
    );
    while !stop.stop_requested() {
        std::thread::sleep(Duration::from_millis(50));
    }
    server.shutdown();
    let name = crate::signals::first_signal_name().unwrap_or("stop");
    eprintln!("webtune serve: stopped ({name})");
    Ok(crate::exit::SUCCESS)
}
