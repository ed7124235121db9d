//! The servers' own logs, read for what matters to a run: every warning and error line,
//! stripped of timestamps, process ids and per-request details, and counted. Apache's
//! silent adjustments at start ("decreasing to nearest multiple"), php-fpm's "server reached
//! pm.max_children", nginx's "upstream prematurely closed connection" are findings a
//! throughput number hides.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use webtune_model::server::LogMessage;

/// Most bytes read from the end of one log.
const MAX_LOG_BYTES: u64 = 16 * 1024 * 1024;
/// Most distinct messages kept per server.
const MAX_DISTINCT: usize = 20;

/// Severity of a log line, if it is a warning or worse.
pub fn level_of(line: &str) -> Option<&'static str> {
    const LEVELS: [(&str, [&str; 3]); 5] = [
        ("emerg", ["[emerg]", ":emerg]", "EMERG:"]),
        ("alert", ["[alert]", ":alert]", "ALERT:"]),
        ("crit", ["[crit]", ":crit]", "CRIT:"]),
        ("error", ["[error]", ":error]", "ERROR:"]),
        ("warn", ["[warn]", ":warn]", "WARNING:"]),
    ];
    LEVELS
        .iter()
        .find(|(_, marks)| marks.iter().any(|m| line.contains(m)))
        .map(|(level, _)| *level)
}

/// The message of a log line, without what differs from one occurrence to the next:
/// timestamps, `[module:level]`, `[pid N:tid N]`, nginx's `pid#tid: *conn`, its
/// `, client: …` tail, php-fpm's level word, and long numbers (ports, pids).
pub fn normalise(line: &str) -> String {
    let mut rest = line.trim();
    // nginx: "2026/11/22 17:46:17 [alert] ..."
    let b = rest.as_bytes();
    if b.len() > 20 && b[4] == b'/' && b[7] == b'/' && b[13] == b':' {
        rest = rest[19..].trim_start();
    }
    loop {
        let before = rest;
        if rest.starts_with('[') {
            if let Some(end) = rest.find(']') {
                rest = rest[end + 1..].trim_start();
            }
        }
        for word in ["WARNING:", "ERROR:", "ALERT:", "NOTICE:", "CRIT:", "EMERG:"] {
            if let Some(after) = rest.strip_prefix(word) {
                rest = after.trim_start();
            }
        }
        // nginx "6778#6778: *12 "
        if let Some(colon) = rest.find(": ") {
            let head = &rest[..colon];
            if head.contains('#') && head.chars().all(|c| c.is_ascii_digit() || c == '#') {
                rest = rest[colon + 2..].trim_start();
            }
        }
        if let Some(after) = rest.strip_prefix('*') {
            let digits = after.chars().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 {
                rest = after[digits..].trim_start();
            }
        }
        if rest == before {
            break;
        }
    }
    if let Some(cut) = rest.find(", client: ") {
        rest = &rest[..cut];
    }
    // Long digit runs not glued to a letter (ports, pids) vary between occurrences.
    let mut out = String::with_capacity(rest.len());
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_ascii_alphanumeric()) {
            let run = chars[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            if run >= 4 {
                out.push('N');
            } else {
                out.extend(&chars[i..i + run]);
            }
            i += run;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out.chars().take(240).collect()
}

/// The last `MAX_LOG_BYTES` of a file as text (nothing when it cannot be read).
fn read_tail(path: &Path) -> String {
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_LOG_BYTES {
        let _ = file.seek(SeekFrom::Start(len - MAX_LOG_BYTES));
    }
    let mut bytes = Vec::new();
    let _ = file.take(MAX_LOG_BYTES).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Distinct warnings and errors of one server's log files, in order of first appearance.
pub fn collect(server: &str, files: &[&Path]) -> Vec<LogMessage> {
    let mut found: Vec<LogMessage> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    for file in files {
        for line in read_tail(file).lines() {
            let Some(level) = level_of(line) else {
                continue;
            };
            let message = normalise(line);
            let key = (level.to_string(), message.clone());
            match index.get(&key) {
                Some(&i) => found[i].count += 1,
                None if found.len() < MAX_DISTINCT => {
                    index.insert(key, found.len());
                    found.push(LogMessage {
                        server: server.to_string(),
                        level: level.to_string(),
                        message,
                        count: 1,
                    });
                }
                None => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_of_each_server() {
        assert_eq!(
            level_of("2026/11/22 17:46:17 [alert] 6778#6778: 2 worker_connections"),
            Some("alert")
        );
        assert_eq!(
            level_of("[Sun Nov 22 18:30:08 2026] [mpm_event:warn] [pid 1:tid 1] AH00514: x"),
            Some("warn")
        );
        assert_eq!(
            level_of("[22-Nov-2026 18:09:30] WARNING: [pool lab] server reached"),
            Some("warn")
        );
        assert_eq!(
            level_of("[Sun Nov 22 2026] [mpm_event:notice] [pid 1:tid 1] AH00489: ok"),
            None
        );
    }

    #[test]
    fn normalising_makes_repeats_equal() {
        let a = "2026/11/22 17:46:17 [error] 6778#6778: *12 upstream prematurely closed \
                 connection while reading response header from upstream, client: \
                 127.0.0.1, server: localhost, request: \"GET /cpu/1 HTTP/1.1\"";
        let b = "2026/11/22 17:46:19 [error] 6779#6779: *4031 upstream prematurely closed \
                 connection while reading response header from upstream, client: \
                 127.0.0.1, server: localhost, request: \"GET /cpu/2 HTTP/1.1\"";
        assert_eq!(normalise(a), normalise(b));
        assert_eq!(
            normalise(a),
            "upstream prematurely closed connection while reading response header from upstream"
        );
        let apache = "[Sun Nov 22 18:30:08.395208 2026] [mpm_event:warn] [pid 14011:tid 14011] \
                      AH00514: MaxRequestWorkers of 40 is not an integer multiple";
        assert_eq!(
            normalise(apache),
            "AH00514: MaxRequestWorkers of 40 is not an integer multiple"
        );
        let fpm = "[22-Nov-2026 18:09:30] WARNING: [pool lab] server reached \
                   pm.max_children setting (5), consider raising it";
        assert_eq!(
            normalise(fpm),
            "server reached pm.max_children setting (5), consider raising it"
        );
        assert_eq!(
            normalise("bind() to 127.0.0.1:48003 failed"),
            "bind() to 127.0.0.1:N failed"
        );
    }

    #[test]
    fn collects_counts_per_message() {
        let dir = std::env::temp_dir().join(format!("webtune-logs-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let log = dir.join("error.log");
        let text = "2026/11/22 17:46:17 [warn] 1#1: *1 an upstream response is buffered, client: a\n\
                    2026/11/22 17:46:18 [warn] 1#1: *2 an upstream response is buffered, client: b\n\
                    2026/11/22 17:46:18 [notice] 1#1: signal process started\n\
                    2026/11/22 17:46:19 [error] 1#1: *3 connect() failed, client: c\n";
        std::fs::write(&log, text).unwrap();
        let found = collect("nginx", &[&log, &dir.join("missing.out")]);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].count, 2);
        assert_eq!(found[0].level, "warn");
        assert_eq!(found[1].message, "connect() failed");
    }
}
