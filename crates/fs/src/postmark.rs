//! postmark's command language (PostMark v1.51, as Debian's postmark 1.53 reads it): the
//! variables `set …` changes, with postmark's defaults and its checks (a value it refuses
//! leaves the variable as it was and says `Error: …`), `show`'s layout, `help`'s list, and
//! the mapping of a configuration onto an `FsSpec`. A line names a command by prefix, as
//! postmark matches it (`set sizes 1 2` is `set size`); `?` is `help`, `exit` is `quit`.
//! Learned from postmark's behaviour and its public source; no code is taken from it.

use webtune_model::fs::{FsSpec, IoMode};

/// postmark's banner (webtune prints it with its own name after it).
pub const BANNER: &str = "PostMark v1.51 : 8/14/01";
/// postmark's prompt when it reads from standard input.
pub const PROMPT: &str = "pm>";

/// The commands, in postmark's order (which decides prefix matches), with its help texts.
pub const COMMANDS: [(&str, &str); 17] = [
    ("set size", "Sets low and high bounds of files"),
    ("set number", "Sets number of simultaneous files"),
    ("set seed", "Sets seed for random number generator"),
    ("set transactions", "Sets number of transactions"),
    ("set location", "Sets location of working files"),
    ("set subdirectories", "Sets number of subdirectories"),
    ("set read", "Sets read block size"),
    ("set write", "Sets write block size"),
    ("set buffering", "Sets usage of buffered I/O"),
    (
        "set bias read",
        "Sets the chance of choosing read over append",
    ),
    (
        "set bias create",
        "Sets the chance of choosing create over delete",
    ),
    ("set report", "Choose verbose or terse report format"),
    ("run", "Runs one iteration of benchmark"),
    ("load", "Read configuration file"),
    ("show", "Displays current configuration"),
    ("help", "Prints out available commands"),
    ("quit", "Exit program"),
];

/// postmark's variables.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub size_low: u64,
    pub size_high: u64,
    pub number: u64,
    pub seed: u32,
    pub transactions: u64,
    /// Locations with their weights (postmark spreads files over them by weight).
    pub locations: Vec<(String, u32)>,
    pub subdirectories: u32,
    pub read_block: u64,
    pub write_block: u64,
    pub buffered: bool,
    pub bias_read: i32,
    pub bias_create: i32,
    pub terse: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            size_low: 500,
            size_high: 10_000,
            number: 500,
            seed: 42,
            transactions: 500,
            locations: Vec::new(),
            subdirectories: 0,
            read_block: 512,
            write_block: 512,
            buffered: true,
            bias_read: 5,
            bias_create: 5,
            terse: false,
        }
    }
}

/// What a line asks for beyond setting a variable.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A variable was set (or refused with `Error`).
    Set,
    /// postmark's complaint, for stderr (`Error: …`).
    Error(String),
    /// `run [FILE]`: the report appended to FILE when given.
    Run(Option<String>),
    Show(Option<String>),
    Help(Option<String>),
    Load(Option<String>),
    /// `!command`: a shell escape.
    Shell(String),
    Quit,
    /// No command matched: postmark answers "Eh?".
    Unknown,
}

/// C's `atoi`: leading blanks, a sign, digits; 0 when there are none.
pub fn atoi(text: &str) -> i64 {
    let t = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        v = v.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if neg {
        -v
    } else {
        v
    }
}

fn positive(param: Option<&str>) -> Option<u64> {
    param.map(atoi).filter(|v| *v > 0).map(|v| v as u64)
}

impl Config {
    /// Apply one line as postmark would.
    pub fn apply(&mut self, line: &str) -> Action {
        let line = match line {
            "?" => "help",
            "exit" => "quit",
            other => other,
        };
        if let Some(rest) = line.strip_prefix('!') {
            return Action::Shell(rest.to_string());
        }
        let Some((name, _)) = COMMANDS.iter().find(|(name, _)| line.starts_with(name)) else {
            return Action::Unknown;
        };
        // postmark passes what follows the name and one character (the blank).
        let param = line
            .get(name.len() + 1..)
            .filter(|_| line.len() > name.len());
        let err = |m: &str| Action::Error(format!("Error: {m}"));
        match *name {
            "set size" => match positive(param) {
                Some(low) => {
                    self.size_low = low;
                    let high = param
                        .and_then(|p| p.find(' ').map(|i| &p[i..]))
                        .map(atoi)
                        .filter(|h| *h > 0 && *h as u64 >= low);
                    self.size_high = high.map_or(low, |h| h as u64);
                    Action::Set
                }
                None => err("no file size low or high bounds specified"),
            },
            "set number" => self.int(param, "invalid number of files", |c, v| c.number = v),
            "set seed" => self.int(param, "invalid seed for random numbers", |c, v| {
                c.seed = v.min(u64::from(u32::MAX)) as u32
            }),
            "set transactions" => self.int(param, "no transactions specified", |c, v| {
                c.transactions = v
            }),
            "set location" => self.location(param),
            "set subdirectories" => self.int(param, "invalid number of subdirectories", |c, v| {
                c.subdirectories = v.min(1_000_000) as u32
            }),
            "set read" => self.int(param, "invalid read block size", |c, v| c.read_block = v),
            "set write" => self.int(param, "invalid write block size", |c, v| c.write_block = v),
            "set buffering" => match param {
                Some("true") => {
                    self.buffered = true;
                    Action::Set
                }
                Some("false") => {
                    self.buffered = false;
                    Action::Set
                }
                _ => err("no buffering mode (true/false) specified"),
            },
            "set bias read" | "set bias create" => {
                match param.map(atoi).filter(|v| (-1..=10).contains(v)) {
                    Some(v) if *name == "set bias read" => {
                        self.bias_read = v as i32;
                        Action::Set
                    }
                    Some(v) => {
                        self.bias_create = v as i32;
                        Action::Set
                    }
                    None => err("no bias specified (0-10 for greater chance,-1 to disable)"),
                }
            }
            "set report" => match param {
                Some("verbose") => {
                    self.terse = false;
                    Action::Set
                }
                Some("terse") => {
                    self.terse = true;
                    Action::Set
                }
                _ => err("either 'verbose' or 'terse' required"),
            },
            "run" => Action::Run(param.map(str::to_string)),
            "load" => Action::Load(param.map(str::to_string)),
            "show" => Action::Show(param.map(str::to_string)),
            "help" => Action::Help(param.map(str::to_string)),
            _ => Action::Quit,
        }
    }

    fn int(&mut self, param: Option<&str>, error: &str, set: impl Fn(&mut Config, u64)) -> Action {
        match positive(param) {
            Some(v) => {
                set(self, v);
                Action::Set
            }
            None => Action::Error(format!("Error: {error}")),
        }
    }

    fn location(&mut self, param: Option<&str>) -> Action {
        let Some(p) = param else {
            return Action::Error("Error: no directory name specified".into());
        };
        let (op, rest) = match p.as_bytes().first() {
            Some(b'+') => ('+', &p[1..]),
            Some(b'-') => ('-', &p[1..]),
            _ => ('=', p),
        };
        if op == '-' {
            return match self.locations.iter().position(|(n, _)| n == rest) {
                Some(i) => {
                    self.locations.remove(i);
                    Action::Set
                }
                None => Action::Error(format!("Error: cannot find location '{rest}'")),
            };
        }
        // A last word that is a number is the weight ("set location /a 3").
        let (name, weight, bad) = match rest.rsplit_once(' ') {
            Some((n, w)) if atoi(w) > 0 => (n, atoi(w) as u32, None),
            Some((n, w)) => (n, 1, Some(w)),
            None => (rest, 1, None),
        };
        if op == '=' {
            self.locations.clear();
        }
        self.locations.push((name.to_string(), weight));
        match bad {
            Some(w) => Action::Error(format!("Error: ignoring invalid weight '{w}'")),
            None => Action::Set,
        }
    }

    /// The spec of a `run`: one location (postmark's working directory when none is set).
    pub fn to_spec(&self) -> Result<FsSpec, String> {
        let location = match self.locations.as_slice() {
            [] => ".".to_string(),
            [(one, _)] => one.clone(),
            _ => {
                return Err(
                    "several locations (set location +DIR) are not supported: give one".into(),
                )
            }
        };
        Ok(FsSpec {
            location,
            files: self.number,
            transactions: Some(self.transactions),
            duration_s: None,
            size_min: self.size_low,
            size_max: self.size_high,
            subdirs: self.subdirectories,
            read_block: self.read_block,
            write_block: self.write_block,
            bias_read: self.bias_read,
            bias_create: self.bias_create,
            io: if self.buffered {
                IoMode::Buffered
            } else {
                IoMode::Unbuffered
            },
            seed: self.seed,
            ..FsSpec::default()
        })
    }

    /// `show`'s text; `cwd` is what postmark prints when no location is set.
    pub fn show(&self, cwd: &str) -> String {
        let mut out = String::from("Current configuration is:\n");
        out += &format!("The base number of files is {}\n", self.number);
        out += &format!("Transactions: {}\n", self.transactions);
        if self.size_low != self.size_high {
            out += &format!(
                "Files range between {} and {} in size\n",
                scale(self.size_low),
                scale(self.size_high)
            );
        } else {
            out += &format!("Files are {} in size\n", scale(self.size_low));
        }
        out += &format!(
            "Working director{}: {}\n",
            if self.locations.len() > 1 { "ies" } else { "y" },
            if self.locations.is_empty() { cwd } else { "" }
        );
        for (name, weight) in &self.locations {
            out += &format!("\t{name} (weight={weight})\n");
        }
        if self.subdirectories > 0 {
            out += &format!(
                "{} subdirector{} will be used\n",
                self.subdirectories,
                if self.subdirectories == 1 { "y" } else { "ies" }
            );
        }
        out += &format!(
            "Block sizes are: read={}, write={}\n",
            scale(self.read_block),
            scale(self.write_block)
        );
        out += &format!(
            "Biases are: read/append={}, create/delete={}\n",
            self.bias_read, self.bias_create
        );
        out += &format!(
            "{}sing Unix buffered file I/O\n",
            if self.buffered { "U" } else { "Not u" }
        );
        out += &format!("Random number generator seed is {}\n", self.seed);
        out += &format!(
            "Report format is {}.\n",
            if self.terse { "terse" } else { "verbose" }
        );
        out
    }
}

/// `help [TOPIC]`: the commands whose names start with TOPIC, or all of them.
pub fn help(topic: Option<&str>) -> String {
    let line = |(n, h): &(&str, &str)| format!("{n} - {h}\n");
    let matching: String = match topic.filter(|t| !t.is_empty()) {
        Some(t) => COMMANDS
            .iter()
            .filter(|(n, _)| n.starts_with(t))
            .map(line)
            .collect(),
        None => String::new(),
    };
    if matching.is_empty() {
        COMMANDS.iter().map(line).collect()
    } else {
        matching
    }
}

/// postmark's size words: bytes, kilobytes or megabytes with two decimals.
pub fn scale(n: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = KB * KB;
    if n / MB > 0 {
        format!("{:.2} megabytes", n as f32 / MB as f32)
    } else if n / KB > 0 {
        format!("{:.2} kilobytes", n as f32 / KB as f32)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_as_postmark_does() {
        let mut c = Config::default();
        assert_eq!(c.apply("set size 100 200"), Action::Set);
        assert_eq!((c.size_low, c.size_high), (100, 200));
        c.apply("set size 300 200");
        assert_eq!((c.size_low, c.size_high), (300, 300));
        assert!(matches!(c.apply("set number 0"), Action::Error(_)));
        assert_eq!(c.number, 500);
        c.apply("set bias read -1");
        assert_eq!(c.bias_read, -1);
        c.apply("set location /tmp/x");
        assert_eq!(c.locations, [("/tmp/x".to_string(), 1)]);
        assert_eq!(c.apply("run"), Action::Run(None));
        assert_eq!(c.apply("run out.txt"), Action::Run(Some("out.txt".into())));
        assert_eq!(c.apply("frobnicate"), Action::Unknown);
        assert_eq!(c.apply("exit"), Action::Quit);
        assert_eq!(atoi("  42abc"), 42);
        assert_eq!(atoi("x"), 0);
        assert_eq!(scale(10_000), "9.77 kilobytes");
        assert_eq!(scale(500), "500 bytes");
    }
}
