//! `advise --live` (issue 24, item 4) against real servers: the lab's MariaDB (the forum's
//! database), an nginx with stub_status and an Apache with mod_status, started here on
//! loopback ports in temporary directories and stopped by their pids. Read-only: the
//! tests check that the counters are read and judged, and that nothing else is asked of
//! the servers. A missing server fails unless the run opts out by name.

mod common;

use common::opt_out::opt_out;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use webtune_advise::live::{self, LiveInputs};

/// A server this test started, stopped with SIGTERM (then SIGKILL) by its pid when dropped.
struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
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
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let l = live::read(inputs);
        if l.notes.is_empty() || Instant::now() > deadline {
            return l;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
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
