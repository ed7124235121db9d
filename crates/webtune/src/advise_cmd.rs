//! `webtune advise`: flags → `webtune_advise::advise` → text on stdout, JSON and suggested
//! config files where asked. Read-only: it changes no config file and no sysctl.

use crate::output::{self, Outputs};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune advise\n  \
    webtune advise --apache-config /etc/apache2/apache2.conf --nginx-config /etc/nginx/nginx.conf \\\n    \
    --php-fpm-config /etc/php/8.2/fpm/pool.d/www.conf --mysql-config /etc/mysql/my.cnf\n  \
    webtune advise --result lab.json --json advice.json --write-patch suggested/\n\
    Configs not given are found from the running servers' command lines, else at the stock paths\n\
    under /etc. Exit status: 0 advice printed (with findings or without), 2 bad input.")]
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
    /// Write suggested copies of the config files a finding changes under DIR.
    #[arg(long = "write-patch", value_name = "DIR")]
    pub write_patch: Option<PathBuf>,
    /// Read only the configs given: no discovery of the others.
    #[arg(long = "no-discover")]
    pub no_discover: bool,
}

pub fn run(args: AdviseArgs) -> anyhow::Result<i32> {
    let inputs = webtune_advise::Inputs {
        apache: args.apache,
        nginx: args.nginx,
        php_fpm: args.php_fpm,
        mysql: args.mysql,
        result: args.result,
        discover: !args.no_discover,
    };
    if let Some(dest) = &args.json {
        output::check("--json", dest)?;
    }
    let advice = webtune_advise::advise(&inputs)?;
    let json_to_stdout = args.json.as_deref() == Some("-");
    let mut outputs = Outputs::new();
    if let Some(dest) = &args.json {
        let mut text = serde_json::to_string_pretty(&advice)?;
        text.push('\n');
        outputs.file("--json", dest, &text);
    }
    if !json_to_stdout {
        outputs.stdout(&webtune_advise::output::text(&advice));
    }
    if let Some(dir) = &args.write_patch {
        let written = webtune_advise::output::write_patch(&advice, dir)?;
        if !json_to_stdout {
            if written.is_empty() {
                outputs.stdout(&format!(
                    "\nNothing written to {}: no finding changes a directive.\n",
                    dir.display()
                ));
            }
            for w in written {
                outputs.stdout(&format!("wrote {}\n", w.display()));
            }
        }
    }
    Ok(outputs.exit_code(0))
}
