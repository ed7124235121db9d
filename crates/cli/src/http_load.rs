//! `webtune http_load`'s flags: http_load's command line.

#[derive(clap::Args, Debug)]
#[command(after_help = "Usage (http_load's own):\n  \
    webtune http_load [-parallel N | -rate N [-jitter]] [-fetches N | -seconds N] [-timeout SECS] URL_FILE\n\
    Options may be shortened as in http_load, the first match in its order winning\n\
    (-p 10 -s 1 is -parallel 10 -seconds 1).\n\
    URL_FILE holds one URL a line; each fetch picks one at random, as http_load does (all URLs\n\
    on one server). -rate is open loop (latency from each fetch's due time); -jitter makes the\n\
    arrivals Poisson. webtune extras: -json FILE, -html FILE.\n\
    Refused: -checksum -throttle -proxy -cipher -sip.\n\
    Example:\n  echo http://127.0.0.1:8080/empty.gif > urls.txt\n  \
    webtune http_load -parallel 100 -seconds 10 urls.txt")]
pub struct HttpLoadArgs {
    /// http_load's options and the URL file, as http_load takes them.
    #[arg(
        value_name = "OPTIONS… URL_FILE",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..
    )]
    pub raw: Vec<String>,
}
