//! The embedded target without the rest of webtune, for measuring it with outside tools:
//! `cargo run --release -p webtune-serve --example standalone -- [WORKERS] [ADDR]`
//! (defaults: all cores, 127.0.0.1:8080). Runs until killed.

use std::net::SocketAddr;

use webtune_serve::{EmbeddedServer, ServeOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut opts = ServeOptions {
        addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
        ..ServeOptions::default()
    };
    if let Some(workers) = args.next() {
        match workers.parse() {
            Ok(n) => opts.workers = n,
            Err(_) => return eprintln!("usage: standalone [WORKERS] [ADDR]"),
        }
    }
    if let Some(addr) = args.next() {
        match addr.parse() {
            Ok(addr) => opts.addr = addr,
            Err(_) => return eprintln!("usage: standalone [WORKERS] [ADDR]"),
        }
    }
    match EmbeddedServer::start(opts) {
        Ok(server) => {
            eprintln!("listening on http://{}/", server.local_addr());
            loop {
                std::thread::park();
            }
        }
        Err(e) => eprintln!("standalone: {e}"),
    }
}
