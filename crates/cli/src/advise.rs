//! `webtune advise`'s flags, and the value parsers of its timeouts and `--ram`.

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune advise\n  \
    webtune advise --apache-config /etc/apache2/apache2.conf --nginx-config /etc/nginx/nginx.conf \\\n    \
    --php-fpm-config /etc/php/8.2/fpm/pool.d/www.conf --mysql-config /etc/mysql/my.cnf\n  \
    webtune advise --result lab.json --json advice.json --write-patch suggested/\n  \
    webtune advise --nginx-config /etc/nginx/nginx.conf --verify --pairs 3 -- -c 50 -d 10s /\n  \
    webtune advise --root copy/ --no-discover --nginx-config /etc/nginx/nginx.conf --cores 8 --ram 16G\n\
    Configs not given are found from the running servers' command lines, else at the stock paths\n\
    under /etc. Exit status: 0 advice printed (with findings or without), 2 bad input,\n\
    130 interrupted (Ctrl-C, SIGTERM).")]
pub struct AdviseArgs {
    /// Apache's main config file (Include, IfModule, Define and Debian's envvars followed).
    #[arg(long = "apache-config", value_name = "FILE")]
    pub apache: Option<PathBuf>,
    /// nginx's main config file (includes followed).
    #[arg(long = "nginx-config", value_name = "FILE")]
    pub nginx: Option<PathBuf>,
    /// php-fpm's main config file or one pool file.
    #[arg(long = "php-fpm-config", value_name = "FILE")]
    pub php_fpm: Option<PathBuf>,
    /// MariaDB's or MySQL's my.cnf (!include and !includedir followed).
    #[arg(long = "mysql-config", value_name = "FILE")]
    pub mysql: Option<PathBuf>,
    /// A result saved by `webtune bench/lab run --json`: its measurements become evidence.
    #[arg(long = "result", value_name = "FILE")]
    pub result: Option<PathBuf>,
    /// Write the advice as JSON (`host`, `configs`, `findings`) to FILE ("-" for stdout).
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// Write suggested copies of the config files a finding changes under DIR. Each
    /// server first checks its patched copy in a private directory (nginx -t, apache2 -t,
    /// php-fpm -t, mariadbd --help --verbose); a change it refuses, or that cannot be
    /// checked here, is not written, and the finding says why.
    #[arg(long = "write-patch", value_name = "DIR")]
    pub write_patch: Option<PathBuf>,
    /// Also read the running servers' counters, read-only: MariaDB's SHOW GLOBAL STATUS
    /// and VARIABLES over its socket (as this OS user), Apache's server-status?auto,
    /// nginx's stub_status. A source that does not answer is a note.
    #[arg(long = "live")]
    pub live: bool,
    /// With --live: MariaDB's socket.
    #[arg(
        long = "mysql-socket",
        value_name = "PATH",
        default_value = "/run/mysqld/mysqld.sock",
        requires = "live"
    )]
    pub mysql_socket: PathBuf,
    /// With --live: Apache's status URL.
    #[arg(
        long = "apache-status",
        value_name = "URL",
        default_value = "http://127.0.0.1/server-status?auto",
        requires = "live"
    )]
    pub apache_status: String,
    /// With --live: nginx's stub_status URL.
    #[arg(
        long = "nginx-status",
        value_name = "URL",
        default_value = "http://127.0.0.1/nginx_status",
        requires = "live"
    )]
    pub nginx_status: String,
    /// With --live: the most each source may take, for its whole exchange (connect,
    /// login, every byte of the answer); a source still answering is stopped there (the
    /// mariadb client killed) and said so in a note: "timed out after 10 s".
    #[arg(
        long = "live-timeout",
        value_name = "DURATION",
        default_value = "10s",
        requires = "live",
        value_parser = parse_live_timeout
    )]
    pub live_timeout: std::time::Duration,
    /// The database server's release, for a tree whose server cannot be asked (a copied
    /// tree: --root): 10.11, mariadb-10.11, mysql-8.0.34. It decides which option groups
    /// are read ([mariadb-10.11] only by 10.11), which options are removed, and the redo
    /// log's terms. Without it: --live's SELECT VERSION(), else this host's mariadbd or
    /// mysqld --version (not under --root), else unknown (and said so).
    #[arg(long = "mysql-version", value_name = "VERSION")]
    pub mysql_version: Option<String>,
    /// Read only the configs given: no discovery of the others.
    #[arg(long = "no-discover")]
    pub no_discover: bool,
    /// A copied tree's root: the configs' absolute paths (includes, ServerRoot, nginx's
    /// prefix, the config paths given or discovered) are read under DIR, never this host's;
    /// running servers are not taken as the tree's.
    #[arg(long = "root", value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Judge for a machine with N cores instead of this one (this host's running servers
    /// and sysctls are left out).
    #[arg(long = "cores", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub cores: Option<u32>,
    /// Judge for a machine with this much RAM (512M, 16G, 1.5T; 1024-based).
    #[arg(long = "ram", value_name = "SIZE", value_parser = parse_ram)]
    pub ram_kib: Option<u64>,
    /// Judge for the machine described by FILE: the `host` of a saved `advise --json` run
    /// there (cores, RAM, sysctls), or a saved run's `server.cpu_count` and sysctls.
    /// --cores and --ram override it.
    #[arg(long = "host-from", value_name = "FILE")]
    pub host_from: Option<PathBuf>,
    /// Measure the advice: run the current and the advised nginx/Apache/php-fpm config (and
    /// my.cnf, under the lab's forum) on private copies (never the production server),
    /// interleaved A B B A …, and report the difference beside each finding it changed.
    /// Bench flags after --.
    #[arg(long = "verify")]
    pub verify: bool,
    /// --verify --protocol sequential: pairs of whole runs (A B); giving --pairs without
    /// --protocol asks for the sequential protocol [default: 3].
    #[arg(long = "pairs", requires = "verify",
          value_parser = clap::value_parser!(u32).range(1..=50))]
    pub pairs: Option<u32>,
    /// How --verify measures: interleaved (both copies at once, the load alternating in 1 s
    /// blocks until an always-valid interval decides or --verify-budget ends; the default)
    /// or sequential (--pairs pairs of whole runs, A B B A …).
    #[arg(long = "protocol", requires = "verify", value_name = "PROTOCOL",
          value_parser = ["interleaved", "sequential"])]
    pub protocol: Option<String>,
    /// --verify --protocol interleaved: its time budget.
    #[arg(long = "verify-budget", default_value = webtune_model::defaults::DEFAULT_VERIFY_BUDGET, value_parser = webtune_model::parse_duration,
          value_name = "DURATION")]
    pub verify_budget: std::time::Duration,
    /// With --verify and a my.cnf: the forum the database copies are measured under.
    #[command(flatten)]
    pub data: crate::flags::forum::DataChoice,
    /// With --verify: the bench flags and the path to load, e.g. -- -c 50 -d 10s /.
    #[arg(last = true, value_name = "BENCH FLAGS")]
    pub bench: Vec<String>,
}

/// `--live-timeout`: a duration above zero.
pub fn parse_live_timeout(text: &str) -> Result<std::time::Duration, String> {
    let d = webtune_model::parse_duration(text).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err("a source needs some time to answer: more than 0".into());
    }
    Ok(d)
}

/// `--ram`: a size of RAM with its unit (`16G`), in KiB.
pub fn parse_ram(text: &str) -> Result<u64, String> {
    webtune_model::units::parse_ram(text)
        .ok_or_else(|| format!("{text:?} is not a size of RAM: a number with K, M, G or T (16G)"))
}
