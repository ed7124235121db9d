//! `advise --live` (issue 24, item 4) against real servers: the lab's MariaDB (the forum's
//! database), an nginx with stub_status and an Apache with mod_status, started here on
//! loopback ports in temporary directories and stopped by their pids. Read-only: the
//! tests check that the counters are read and judged, and that nothing else is asked of
//! the servers. A missing server fails unless the run opts out by name.

mod common;

use common::opt_out::opt_out;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use webtune_advise::live::{self, LiveInputs};

/// A server this test started, stopped with SIGTERM (then SIGKILL) by its pid when dropped.
struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        if webtune_testkit::wait_until(Duration::from_secs(5), || {
            matches!(self.0.try_wait(), Ok(Some(_)))
        }) {
            return;
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn port() -> u16 {
    webtune_testkit::free_port()
}

/// Wait until `url` answers (what `read` reports has no note for it).
fn wait_for(inputs: &LiveInputs) -> live::Live {
    webtune_testkit::wait_until(Duration::from_secs(10), || {
        live::read(inputs).notes.is_empty()
    });
    live::read(inputs)
}

#[test]
fn nginx_stub_status() {
    let Some(nginx) = webtune_lab::servers::Programs::discover().nginx else {
        return opt_out("nginx", "nginx is not installed");
    };
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().display();
    let p = port();
    let conf = d.path().join("nginx.conf");
    std::fs::write(&conf, format!("pid {dir}/nginx.pid;\nerror_log {dir}/error.log;\nevents {{ worker_connections 64; }}\nhttp {{\n access_log off;\n client_body_temp_path {dir}/b; proxy_temp_path {dir}/p; fastcgi_temp_path {dir}/f; uwsgi_temp_path {dir}/u; scgi_temp_path {dir}/s;\n server {{\n  listen 127.0.0.1:{p};\n  location = /nginx_status {{ stub_status; }}\n }}\n}}\n")).unwrap();
    let _server = Started(
        Command::new(nginx)
            .args(["-c", conf.to_str().unwrap(), "-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let l = wait_for(&LiveInputs {
        nginx_status: Some(format!("http://127.0.0.1:{p}/nginx_status")),
        ..LiveInputs::default()
    });
    assert!(l.notes.is_empty(), "{:?}", l.notes);
    let figures = &l.figures["nginx"];
    assert!(
        figures["active"].parse::<u64>().unwrap() >= 1,
        "{figures:?}"
    );
    assert!(
        figures["accepts"].parse::<u64>().unwrap() >= 1,
        "{figures:?}"
    );
    assert!(l.findings.iter().any(|f| f.id == "live.nginx"));
    assert!(!l.findings.iter().any(|f| f.id == "live.nginx.dropped"));
    // A page that is not stub_status is said so.
    let l = live::read(&LiveInputs {
        nginx_status: Some(format!("http://127.0.0.1:{p}/elsewhere")),
        ..LiveInputs::default()
    });
    assert!(l.notes[0].contains("HTTP 404"), "{:?}", l.notes);
}

#[test]
fn apache_server_status() {
    let Some(apache) = webtune_lab::servers::Programs::discover().apache2 else {
        return opt_out("apache2", "apache2 is not installed");
    };
    let modules = Path::new("/usr/lib/apache2/modules");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().display();
    let p = port();
    let conf = d.path().join("apache2.conf");
    let m =
        |name: &str, file: &str| format!("LoadModule {name} {}\n", modules.join(file).display());
    let text = format!(
        "ServerRoot {dir}\nDefaultRuntimeDir {dir}\nPidFile {dir}/apache2.pid\nErrorLog {dir}/error.log\nMutex file:{dir} default\n{}{}{}ServerName localhost\nListen 127.0.0.1:{p}\n{}<Location /server-status>\n SetHandler server-status\n</Location>\n",
        m("mpm_event_module", "mod_mpm_event.so"),
        m("authz_core_module", "mod_authz_core.so"),
        m("status_module", "mod_status.so"),
        if common_root() { "User www-data\nGroup www-data\n" } else { "" },
    );
    std::fs::write(&conf, text).unwrap();
    let _server = Started(
        Command::new(apache)
            .args(["-f", conf.to_str().unwrap(), "-DFOREGROUND"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let l = wait_for(&LiveInputs {
        apache_status: Some(format!("http://127.0.0.1:{p}/server-status?auto")),
        ..LiveInputs::default()
    });
    assert!(
        l.notes.is_empty(),
        "{:?} {}",
        l.notes,
        std::fs::read_to_string(d.path().join("error.log")).unwrap_or_default()
    );
    let figures = &l.figures["apache2"];
    assert!(
        figures.contains_key("BusyWorkers") && figures.contains_key("Scoreboard"),
        "{figures:?}"
    );
    let summary = l.findings.iter().find(|f| f.id == "live.apache").unwrap();
    assert!(summary.current.contains("busy and"), "{}", summary.current);
}

fn common_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

#[test]
fn mariadb_global_status_over_the_labs_socket() {
    use webtune_lab::forum::{dataset, dbparams, DbOptions, ForumDatabase};
    if webtune_lab::forum::DbPrograms::discover().is_err() {
        return opt_out("mariadb", "mariadb-server is not installed");
    }
    let data = dataset::ensure(2_000, 11, &DbOptions::database(), &mut |_| {}).unwrap();
    let settings = dbparams::settings_for(&["db.max_connections=40".into()]).unwrap();
    let db = ForumDatabase::start(&data, &settings, DbOptions::database()).unwrap();
    let socket: PathBuf = db.database().socket().to_path_buf();
    let l = live::read(&LiveInputs {
        mysql_socket: Some(socket.clone()),
        ..LiveInputs::default()
    });
    db.stop().unwrap();
    assert!(l.notes.is_empty(), "{:?}", l.notes);
    let figures = &l.figures["mariadb"];
    assert_eq!(figures["max_connections"], "40");
    assert!(
        figures.contains_key("Threads_created") && figures.contains_key("Created_tmp_disk_tables")
    );
    // The data's size (the buffer pool is sized from it) and the release (its option
    // groups) are read in the same exchange; the forum's posts are InnoDB tables.
    let data: u64 = figures["innodb_data_bytes"].parse().unwrap();
    assert!(data > 0, "{figures:?}");
    assert!(
        webtune_conf::mycnf::Release::parse(&figures["version"]).is_some(),
        "{}",
        figures["version"]
    );
    assert!(figures.contains_key("anonymous_accounts"), "{figures:?}");
    let summary = l.findings.iter().find(|f| f.id == "live.mariadb").unwrap();
    assert!(
        summary.current.contains("of max_connections 40"),
        "{}",
        summary.current
    );
    // Just started: the figures are said to be young.
    assert!(summary.why.contains("under 24 h"), "{}", summary.why);
    assert!(summary.evidence[0].contains(&socket.display().to_string()));
}

#[test]
fn thresholds_are_mysqltuners() {
    let mut s = std::collections::BTreeMap::new();
    for (k, v) in [
        ("Uptime", "200000"),
        ("Connections", "1000"),
        ("Threads_created", "900"),
        ("Max_used_connections", "95"),
        ("max_connections", "100"),
        ("Aborted_connects", "50"),
        ("Created_tmp_tables", "1000"),
        ("Created_tmp_disk_tables", "400"),
        ("Innodb_buffer_pool_read_requests", "100000"),
        ("Innodb_buffer_pool_reads", "20000"),
    ] {
        s.insert(k.to_string(), v.to_string());
    }
    let f = live::mariadb_findings(&s, Path::new("/run/mysqld/mysqld.sock"));
    for id in [
        "live.mariadb.thread_cache",
        "live.mariadb.max_connections",
        "live.mariadb.aborted_connects",
        "live.mariadb.tmp_disk_tables",
        "live.mariadb.buffer_pool_reads",
    ] {
        let x = f
            .iter()
            .find(|x| x.id == id)
            .unwrap_or_else(|| panic!("{id}: {f:#?}"));
        assert_eq!(x.severity, webtune_advise::Severity::Warn, "{id}");
    }
    // Under 24 h of uptime the same figures are info only.
    s.insert("Uptime".into(), "600".into());
    let f = live::mariadb_findings(&s, Path::new("/s"));
    assert!(f
        .iter()
        .all(|x| x.severity == webtune_advise::Severity::Info));
    let stub = live::stub_status("Active connections: 3 \nserver accepts handled requests\n 10 8 20 \nReading: 0 Writing: 1 Waiting: 2 \n").unwrap();
    assert_eq!(stub["handled"], "8");
    let f = live::nginx_findings(&stub, "http://x/");
    assert!(f.iter().any(|x| x.id == "live.nginx.dropped"));
}

/// A status "server" that sends its headers, then one byte of body every 2 s, for up to a
/// minute (issue 33, item 9): a client without one limit for the whole exchange keeps
/// reading it.
fn dribbling_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/server-status?auto",
        listener.local_addr().unwrap()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n");
                for _ in 0..30 {
                    if s.write_all(b"B").is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_secs(2));
                }
            });
        }
    });
    url
}

/// A fake MariaDB on a Unix socket: it speaks the protocol's greeting (HandshakeV10),
/// accepts any login with an OK packet, then never answers a query, for up to a minute.
fn silent_mariadb(socket: &Path) {
    use std::io::{Read, Write};
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let Some(Ok(mut s)) = listener.incoming().next() else {
            return;
        };
        let mut greeting: Vec<u8> = vec![10];
        greeting.extend_from_slice(b"10.11.19-MariaDB-fake\0");
        greeting.extend_from_slice(&7u32.to_le_bytes());
        greeting.extend_from_slice(b"abcdefgh\0");
        // CLIENT_LONG_PASSWORD | FOUND_ROWS | LONG_FLAG | CONNECT_WITH_DB | PROTOCOL_41 |
        // TRANSACTIONS | SECURE_CONNECTION; then MULTI_STATEMENTS | MULTI_RESULTS |
        // PLUGIN_AUTH.
        greeting.extend_from_slice(&0xA20Fu16.to_le_bytes());
        greeting.push(33);
        greeting.extend_from_slice(&2u16.to_le_bytes());
        greeting.extend_from_slice(&0x000Bu16.to_le_bytes());
        greeting.push(21);
        greeting.extend_from_slice(&[0u8; 10]);
        greeting.extend_from_slice(b"ijklmnopqrst\0");
        greeting.extend_from_slice(b"mysql_native_password\0");
        let packet = |seq: u8, payload: &[u8]| {
            let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
            p.push(seq);
            p.extend_from_slice(payload);
            p
        };
        let _ = s.write_all(&packet(0, &greeting));
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf); // the login
        let _ = s.write_all(&packet(2, &[0, 0, 0, 2, 0, 0, 0]));
        // The query is read and never answered.
        let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
        }
    });
}

#[test]
fn a_source_that_never_finishes_is_cut_at_one_limit_for_the_whole_exchange() {
    // A status page that dribbles: the whole GET is limited, not each read.
    let url = dribbling_server();
    let l = live::read(&LiveInputs {
        apache_status: Some(url.clone()),
        ..LiveInputs::default()
    });
    assert!(l.figures.is_empty(), "{:?}", l.figures);
    assert_eq!(l.notes.len(), 1, "{:?}", l.notes);
    assert!(
        l.notes[0].starts_with(&format!("apache2 (live): {url}: timed out after 10 s")),
        "{:?}",
        l.notes
    );
    // A MariaDB that takes the login and never answers: the client is stopped at the limit.
    if webtune_lab::forum::DbPrograms::discover().is_err() {
        return opt_out("mariadb", "the mariadb client is not installed");
    }
    let d = tempfile::tempdir().unwrap();
    let socket = d.path().join("mysqld.sock");
    silent_mariadb(&socket);
    let l = live::read(&LiveInputs {
        mysql_socket: Some(socket.clone()),
        timeout: Duration::from_secs(3),
        ..LiveInputs::default()
    });
    assert!(l.figures.is_empty(), "{:?}", l.figures);
    assert!(
        l.notes.len() == 1 && l.notes[0].starts_with("mariadb (live): timed out after 3 s"),
        "{:?}",
        l.notes
    );
}

/// A server that answers every GET with `body` (HTTP 200).
fn answering(body: &'static str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut s) = stream else { continue };
            use std::io::{Read, Write};
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n{body}"
            );
        }
    });
    base
}

#[test]
fn a_page_that_is_not_apaches_server_status_is_refused() {
    for body in [
        "BusyWorkers: -5\nIdleWorkers: 0\n",
        "<html><body><h1>Apache Server Status</h1></body></html>\n",
        "BusyWorkers: 3\nIdleWorkers: 2\nScoreboard: W_?x\n",
        "BusyWorkers: 9\nIdleWorkers: 9\nScoreboard: W__\n",
    ] {
        let url = format!("{}/server-status?auto", answering(body));
        let l = live::read(&LiveInputs {
            apache_status: Some(url.clone()),
            ..LiveInputs::default()
        });
        assert!(
            !l.figures.contains_key("apache2"),
            "{body:?}: {:?}",
            l.figures
        );
        assert!(
            l.notes.len() == 1
                && l.notes[0].starts_with(&format!(
                    "apache2 (live): {url}: not an Apache server-status?auto page"
                )),
            "{body:?}: {:?}",
            l.notes
        );
        assert!(!l.findings.iter().any(|f| f.id.starts_with("live.apache")));
    }
    // A real ?auto page is read.
    let url = answering(
        "ServerVersion: Apache/2.4.62 (Debian)\nTotal Accesses: 10\nBusyWorkers: 1\nIdleWorkers: 49\nScoreboard: W_________________________________________________......\n",
    );
    let l = live::read(&LiveInputs {
        apache_status: Some(format!("{url}/server-status?auto")),
        ..LiveInputs::default()
    });
    assert!(l.notes.is_empty(), "{:?}", l.notes);
    assert_eq!(l.figures["apache2"]["BusyWorkers"], "1");
}
