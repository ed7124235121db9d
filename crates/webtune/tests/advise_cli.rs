//! `webtune advise` end to end through the built binary: on this host (discovery), on
//! Debian's stock configs given by path, with a saved run as evidence, writing suggested
//! files (the originals untouched), and bad input (exit 2, one line naming file and line).

mod support;

use std::path::Path;
use std::process::{Command, Output};

fn webtune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .output()
        .unwrap()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn advise_on_this_host() {
    let d = tempfile::tempdir().unwrap();
    let out_json = d.path().join("advice.json");
    let out = webtune(&["advise", "--json", out_json.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("host: "), "{stdout}");
    let v = json(&out_json);
    assert!(v["host"]["cores"].as_u64().unwrap() >= 1);
    assert!(v["host"]["mem_total_kib"].as_u64().unwrap() > 0);
    assert!(v["host"]["sysctls"]["net.core.somaxconn"].is_string());
    assert!(v["findings"].is_array());
}

#[test]
fn advise_on_debian_stock_configs() {
    let mut args = vec!["advise", "--no-discover", "--json", "-"];
    let stock = [
        ("--apache-config", "/etc/apache2/apache2.conf", "apache2"),
        ("--nginx-config", "/etc/nginx/nginx.conf", "nginx"),
        ("--mysql-config", "/etc/mysql/my.cnf", "mariadb"),
    ];
    for (flag, path, name) in stock {
        if Path::new(path).is_file() {
            args.extend([flag, path]);
        } else {
            support::opt_out::opt_out(name, &format!("{path} is not installed"));
        }
    }
    let fpm: Vec<String> = std::fs::read_dir("/etc/php")
        .map(|r| {
            r.flatten()
                .map(|e| e.path().join("fpm/php-fpm.conf").display().to_string())
                .filter(|p| Path::new(p).is_file())
                .collect()
        })
        .unwrap_or_default();
    if let Some(p) = fpm.first() {
        args.extend(["--php-fpm-config", p.as_str()]);
    } else {
        support::opt_out::opt_out("php-fpm", "no /etc/php/*/fpm/php-fpm.conf");
    }
    if args.len() == 4 {
        return; // every stock config was opted out of
    }
    let out = webtune(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["configs"].as_array().unwrap().len(), (args.len() - 4) / 2);
    for c in v["configs"].as_array().unwrap() {
        assert_eq!(c["found"], "given");
    }
    let findings = v["findings"].as_array().unwrap();
    assert!(!findings.is_empty(), "the memory budget at least");
    for f in findings {
        for field in [
            "id",
            "severity",
            "component",
            "directives",
            "current",
            "recommended",
            "why",
            "evidence",
            "source",
        ] {
            assert!(!f[field].is_null(), "{field} missing in {f}");
        }
        assert!(["info", "warn", "critical"].contains(&f["severity"].as_str().unwrap()));
    }
    // Evidence points at real lines of the stock files.
    let cited: Vec<&str> = findings
        .iter()
        .flat_map(|f| f["evidence"].as_array().unwrap())
        .filter_map(|e| e.as_str())
        .filter(|e| e.contains("/etc/"))
        .collect();
    assert!(!cited.is_empty());
    for e in cited {
        let place = e.rsplit(": ").next().unwrap();
        let (file, line) = place.rsplit_once(':').unwrap();
        let n: usize = line.parse().unwrap_or_else(|_| panic!("{e}"));
        let text = std::fs::read_to_string(file).unwrap();
        assert!(n >= 1 && n <= text.lines().count(), "{e}");
    }
}

#[test]
fn write_patch_leaves_the_originals_alone() {
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("apache2.conf");
    // The patch is written only when apache2 -t accepts the patched copy.
    let module = "/usr/lib/apache2/modules/mod_mpm_prefork.so";
    if !Path::new(module).exists() {
        return support::opt_out::opt_out("apache2", &format!("{module} is not installed"));
    }
    let original = format!("LoadModule mpm_prefork_module {module}\nServerName localhost\nListen 127.0.0.1:8080\nKeepAlive On\nKeepAliveTimeout 15\nMaxRequestWorkers 10\nMaxConnectionsPerChild 1000\n");
    std::fs::write(&conf, &original).unwrap();
    let patch = d.path().join("suggested");
    let out = webtune(&[
        "advise",
        "--no-discover",
        "--apache-config",
        conf.to_str().unwrap(),
        "--write-patch",
        patch.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("[apache.keepalive_timeout]"), "{stdout}");
    assert!(stdout.contains("Recommended directives per file:"));
    assert!(stdout.contains("patch check: apache2"), "{stdout}");
    assert!(stdout.contains(": passed ("), "{stdout}");
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), original);
    let written = patch.join(conf.strip_prefix("/").unwrap());
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(text.contains("# webtune advise [apache.keepalive_timeout]: was: KeepAliveTimeout 15\nKeepAliveTimeout 2\n"), "{text}");
}

#[test]
fn a_saved_run_is_evidence() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run.json");
    let out = webtune(&[
        "bench",
        "-c",
        "2",
        "-d",
        "1s",
        "--json",
        run.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The lab's sampler fills `server`; here its log messages and counters are given.
    let mut v = json(&run);
    let server = webtune_model::ServerSamples {
        target: "apache-prefork".into(),
        samples: vec![webtune_model::server::ServerSample { listen_overflows: 7, processes: 3, pss_kib: 3000, ..Default::default() }],
        log_messages: vec![webtune_model::server::LogMessage {
            server: "apache2 (prefork)".into(),
            level: "error".into(),
            message: "server reached MaxRequestWorkers setting, consider raising the MaxRequestWorkers setting".into(),
            count: 2,
        }],
        ..Default::default()
    };
    v["server"] = serde_json::to_value(server).unwrap();
    std::fs::write(&run, serde_json::to_string(&v).unwrap()).unwrap();
    let out = webtune(&["advise", "--no-discover", "--result", run.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("evidence: "), "{stdout}");
    assert!(
        stdout.contains("[evidence.apache_workers_full]"),
        "{stdout}"
    );
    assert!(stdout.contains("[queue.listen_overflows]"), "{stdout}");
}

fn fails_with(args: &[&str], expected: &str) {
    let out = webtune(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(expected), "{stderr} lacks {expected}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let d = tempfile::tempdir().unwrap();
    fails_with(
        &["advise", "--nginx-config", "/nonexistent/nginx.conf"],
        "/nonexistent/nginx.conf: No such file",
    );
    let n = d.path().join("n.conf");
    std::fs::write(&n, "events {\n worker_connections 10\n}\n").unwrap();
    fails_with(
        &["advise", "--nginx-config", n.to_str().unwrap()],
        &format!(
            "{}:2: \"worker_connections\" is not terminated",
            n.display()
        ),
    );
    let a = d.path().join("a.conf");
    std::fs::write(&a, "<IfModule x>\nKeepAlive On\n").unwrap();
    fails_with(
        &["advise", "--apache-config", a.to_str().unwrap()],
        &format!("{}:1: <IfModule> is never closed", a.display()),
    );
    // A Define that doubles each line (41 lines once took 24 GB): refused at the cap.
    let doubling = d.path().join("doubling.conf");
    let mut text = String::from("Define a x\n");
    for _ in 0..40 {
        text.push_str("Define a ${a}${a}\n");
    }
    std::fs::write(&doubling, text).unwrap();
    let began = std::time::Instant::now();
    fails_with(
        &["advise", "--apache-config", doubling.to_str().unwrap()],
        &format!(
            "{}:17: longer than 64 KiB after ${{VAR}} expansion, the cap on one line",
            doubling.display()
        ),
    );
    assert!(began.elapsed() < std::time::Duration::from_secs(10));
    let r = d.path().join("r.json");
    std::fs::write(&r, "{\"not\": 1}").unwrap();
    fails_with(
        &["advise", "--result", r.to_str().unwrap()],
        "not a webtune result",
    );
    // A file of the wrong kind, a size mysqld refuses, a RAM size without a unit.
    let nginx = d.path().join("nginx.conf");
    std::fs::write(
        &nginx,
        "worker_processes 2;
events {
}
",
    )
    .unwrap();
    fails_with(
        &[
            "advise",
            "--no-discover",
            "--mysql-config",
            nginx.to_str().unwrap(),
        ],
        &format!(
            "webtune: {}:1: not a my.cnf (MariaDB/MySQL): it reads as an nginx config",
            nginx.display()
        ),
    );
    let my = d.path().join("my.cnf");
    std::fs::write(&my, "[mysqld]\ninnodb_buffer_pool_size = 1.5G\n").unwrap();
    fails_with(
        &[
            "advise",
            "--no-discover",
            "--mysql-config",
            my.to_str().unwrap(),
        ],
        &format!(
            "{}:2: innodb_buffer_pool_size = 1.5G: not a size",
            my.display()
        ),
    );
    let out = webtune(&["advise", "--no-discover", "--ram", "16"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_tree_missing_its_includes_is_judged_for_another_machine() {
    let d = tempfile::tempdir().unwrap();
    let n = d.path().join("nginx.conf");
    std::fs::write(
        &n,
        "worker_processes 1;\nevents { worker_connections 512; }\nhttp {\n include /nonexistent-webtune/mime.types;\n include /dev/null;\n}\n",
    )
    .unwrap();
    let out = webtune(&[
        "advise",
        "--no-discover",
        "--nginx-config",
        n.to_str().unwrap(),
        "--cores",
        "8",
        "--ram",
        "16G",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("host: 8 cores, RAM 16.0 GiB"),
        "{stdout}"
    );
    assert!(
        stdout.contains("judged for another machine: --cores 8, --ram 16.0 GiB"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "warning: nginx: {}:4: include /nonexistent-webtune/mime.types: no such file",
            n.display()
        )),
        "{stdout}"
    );
}

/// `webtune` with a lab root of the test's own.
fn webtune_in(lab: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
        .env("WEBTUNE_LAB_DIR", lab)
        .args(args)
        .output()
        .unwrap()
}

/// What a lab root holds besides its (empty) registry.
fn lab_leftovers(lab: &Path) -> Vec<String> {
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut left: Vec<String> = names(lab).into_iter().filter(|n| n != "registry").collect();
    left.extend(names(&lab.join("registry")));
    left
}

/// `advise --no-discover FLAG CONFIG --json … --verify --pairs 1 [EXTRA] -- BENCH` in a lab
/// root of its own: asserts exit 0, a verified server and nothing left in the lab root;
/// returns stdout, stderr and the first verified server's JSON.
fn verify_one_pair(
    flag: &str,
    config: &Path,
    extra: &[&str],
    bench: &[&str],
) -> (String, String, serde_json::Value) {
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    let out_json = d.path().join("advice.json");
    let mut args = vec![
        "advise",
        flag,
        config.to_str().unwrap(),
        "--no-discover",
        "--json",
        out_json.to_str().unwrap(),
        "--verify",
        "--pairs",
        "1",
    ];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(bench);
    let out = webtune_in(&lab, &args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("Measured (advise --verify"), "{stdout}");
    // The verdict opens the measured part, before the pairs behind it (issue 39).
    let verdict = stdout
        .find("copies)\nVerdict: ")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(verdict < stdout.find("pair(s)").unwrap(), "{stdout}");
    assert!(stdout.contains("  What to do: "), "{stdout}");
    let v = json(&out_json);
    let server = v["verify"]["servers"][0].clone();
    assert_eq!(server["verified"], true, "{v}");
    assert_eq!(server["runs"]["current"].as_array().map(Vec::len), Some(1));
    assert_eq!(server["runs"]["advised"].as_array().map(Vec::len), Some(1));
    assert!(server["runs"]["advised"][0]["requests_per_s"].as_f64() > Some(0.0));
    assert_eq!(lab_leftovers(&lab), Vec::<String>::new());
    (stdout, stderr, server)
}

#[test]
fn verify_measures_the_advice_on_private_copies() {
    if !Path::new("/etc/apache2/mods-enabled/mpm_prefork.conf").exists() {
        support::opt_out::opt_out("apache2", "Debian's Apache with prefork is not installed");
        return;
    }
    let (stdout, stderr, _) = verify_one_pair(
        "--apache-config",
        Path::new("/etc/apache2/apache2.conf"),
        &[],
        &["-c", "2", "-n", "40", "/"],
    );
    // Debian's prefork + mod_php has MaxConnectionsPerChild 0: that finding is measured.
    assert!(
        stdout.contains("[apache.max_connections_per_child] MaxConnectionsPerChild 0 → MaxConnectionsPerChild 1000: measured"),
        "{stdout}"
    );
    assert!(stderr.contains("run 2/2 (B advised)"), "{stderr}");
    // The pairs and the interval, as tune's proof shows them; never a change labelled
    // "(no difference)".
    assert!(
        stdout.contains("      pairs, current → advised (req/s): "),
        "{stdout}"
    );
    assert!(stdout.contains("advised/current ×"), "{stdout}");
    assert!(!stdout.contains("% (no difference)"), "{stdout}");
}

#[test]
fn verify_never_loads_a_backend_and_needs_its_flag() {
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("nginx.conf");
    std::fs::write(
        &conf,
        "events {}\nhttp {\n    server {\n        listen 8080;\n        location / { proxy_pass http://127.0.0.1:9; }\n    }\n}\n",
    )
    .unwrap();
    let lab = d.path().join("lab");
    let conf = conf.to_str().unwrap();
    let out = webtune_in(
        &lab,
        &[
            "advise",
            "--nginx-config",
            conf,
            "--no-discover",
            "--verify",
            "--",
            "-n",
            "1",
            "/",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("not verified: it passes requests on (proxy_pass http://127.0.0.1:9"),
        "{stdout}"
    );
    assert_eq!(lab_leftovers(&lab), Vec::<String>::new());
    let out = webtune(&["advise", "--nginx-config", conf, "--", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("go with --verify"));
}

#[test]
fn verify_measures_php_fpm_advice_behind_the_labs_nginx() {
    if std::fs::read_dir("/etc/php").is_err() {
        support::opt_out::opt_out("php-fpm", "php-fpm is not installed");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let pool = d.path().join("www.conf");
    // No pm.max_requests: the advisor recommends 500, and --verify measures it.
    std::fs::write(
        &pool,
        "[www]\nuser = www-data\ngroup = www-data\nlisten = /run/php/webtune-test-never.sock\n\
         pm = static\npm.max_children = 2\n",
    )
    .unwrap();
    // "/" is a static file of the lab's nginx: the pool is loaded at /cpu/2000 instead.
    let (stdout, _, server) = verify_one_pair(
        "--php-fpm-config",
        &pool,
        &[],
        &["-c", "2", "-n", "20", "/"],
    );
    assert!(stdout.contains("advised = pm.max_requests=500"), "{stdout}");
    assert!(
        stdout.contains(
            "[php_fpm.max_requests] pool www: pm.max_requests 0 → pm.max_requests = 500: measured"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("loaded at /cpu/2000: / is a static file"),
        "{stdout}"
    );
    assert_eq!(server["server"], "php-fpm", "{server}");
    assert_eq!(server["path"], "/cpu/2000", "{server}");
    assert_eq!(server["findings"][0], "php_fpm.max_requests", "{server}");
    assert!(!Path::new("/run/php/webtune-test-never.sock").exists());
}

#[test]
fn verify_measures_my_cnf_advice_under_the_labs_forum() {
    if support::lab::forum_database_missing() {
        support::opt_out::opt_out("mariadb", "mariadb-server or php-mysql is not installed");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let my_cnf = d.path().join("my.cnf");
    // thread_cache_size below 8: the advisor recommends more, and --verify measures it. The
    // buffer pool is set above its default, which a large host would flag.
    std::fs::write(
        &my_cnf,
        "[mysqld]\nthread_cache_size = 2\ninnodb_buffer_pool_size = 256M\nsocket = /run/mysqld/webtune-test-never.sock\n",
    )
    .unwrap();
    let (stdout, _, server) = verify_one_pair(
        "--mysql-config",
        &my_cnf,
        &["--posts", "2000", "--seed", "11"],
        &["-c", "2", "-n", "30"],
    );
    assert!(
        stdout.contains("under the forum (2000 posts) on nginx-php-fpm"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[mariadb.thread_cache_size] thread_cache_size = 2 → thread_cache_size"),
        "{stdout}"
    );
    assert_eq!(server["server"], "mariadb", "{server}");
    assert_eq!(server["path"], "", "the forum's page mix: {server}");
    assert_eq!(
        server["findings"][0], "mariadb.thread_cache_size",
        "{server}"
    );
    assert!(!Path::new("/run/mysqld/webtune-test-never.sock").exists());
}

#[test]
fn live_sources_that_do_not_answer_are_notes() {
    let d = tempfile::tempdir().unwrap();
    let socket = d.path().join("none.sock");
    let out = webtune(&[
        "advise",
        "--no-discover",
        "--live",
        "--mysql-socket",
        socket.to_str().unwrap(),
        "--apache-status",
        "http://127.0.0.1:1/server-status?auto",
        "--nginx-status",
        "http://127.0.0.1:1/nginx_status",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    for source in ["mariadb (live)", "apache2 (live)", "nginx (live)"] {
        assert!(stdout.contains(&format!("note: {source}: ")), "{stdout}");
    }
    // The live flags go with --live.
    let out = webtune(&[
        "advise",
        "--no-discover",
        "--nginx-status",
        "http://127.0.0.1:1/",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn live_timeout_limits_each_whole_exchange() {
    // A status page that sends its headers and then one byte every 2 s (issue 33, item 9).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/server-status?auto",
        listener.local_addr().unwrap()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\n");
                for _ in 0..30 {
                    if s.write_all(b"B").is_err() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_secs(2));
                }
            });
        }
    });
    let d = tempfile::tempdir().unwrap();
    let socket = d.path().join("none.sock");
    let out = webtune(&[
        "advise",
        "--no-discover",
        "--live",
        "--live-timeout",
        "3s",
        "--mysql-socket",
        socket.to_str().unwrap(),
        "--apache-status",
        &url,
        "--nginx-status",
        "http://127.0.0.1:1/nginx_status",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!("note: apache2 (live): {url}: timed out after 3 s")),
        "{stdout}"
    );
    // clap refuses a zero limit (its usual "invalid value" message), exit 2.
    let out = webtune(&["advise", "--no-discover", "--live", "--live-timeout", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("more than 0"));
    let out = webtune(&["advise", "--no-discover", "--live-timeout", "3s"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_copied_tree_is_read_for_its_release_and_patched_at_its_own_paths() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("copy");
    std::fs::create_dir_all(root.join("etc/mysql")).unwrap();
    std::fs::create_dir_all(root.join("etc/nginx")).unwrap();
    std::fs::write(
        root.join("etc/mysql/my.cnf"),
        "[mysqld]\n[mariadb-10.0]\ninnodb_buffer_pool_size = 1G\n[mariadb-10.11]\nmax_connections = 300\n",
    )
    .unwrap();
    std::fs::write(
        root.join("etc/nginx/nginx.conf"),
        "worker_processes 1;\nevents { worker_connections 64; }\nhttp {\n sendfile on;\n server { listen 80; }\n}\n",
    )
    .unwrap();
    let json_out = d.path().join("advice.json");
    let patches = d.path().join("suggested");
    let out = webtune(&[
        "advise",
        "--root",
        root.to_str().unwrap(),
        "--no-discover",
        "--mysql-config",
        "/etc/mysql/my.cnf",
        "--nginx-config",
        "/etc/nginx/nginx.conf",
        "--mysql-version",
        "10.11",
        "--cores",
        "4",
        "--ram",
        "8G",
        "--json",
        json_out.to_str().unwrap(),
        "--write-patch",
        patches.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("MariaDB 10.11 (--mysql-version 10.11)"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("[mariadb-10.0]: 1 option not read: MariaDB 10.11 does not read this group"),
        "{stdout}"
    );
    let v = json(&json_out);
    assert_eq!(v["facts"]["database"]["value"]["minor"], 11, "{v}");
    // The patch of the copy lands at the tree's own path, and says the command that ran.
    if std::path::Path::new("/usr/sbin/nginx").is_file() {
        assert!(
            stdout.contains(&format!(
                "wrote {}",
                patches.join("etc/nginx/nginx.conf").display()
            )),
            "{stdout}"
        );
        assert!(stdout.contains("(on a private copy of "), "{stdout}");
    }
    fails_with(
        &["advise", "--no-discover", "--mysql-version", "ten"],
        "is not a release",
    );
}

#[test]
fn verify_interleaves_both_copies_by_default() {
    if !Path::new("/etc/apache2/mods-enabled/mpm_prefork.conf").exists() {
        support::opt_out::opt_out("apache2", "Debian's Apache with prefork is not installed");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    let out_json = d.path().join("advice.json");
    let out = webtune_in(
        &lab,
        &[
            "advise",
            "--apache-config",
            "/etc/apache2/apache2.conf",
            "--no-discover",
            "--json",
            out_json.to_str().unwrap(),
            "--verify",
            "--verify-budget",
            "8s",
            "--",
            "-c",
            "2",
            "/",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("advise --verify: memory: "), "{stderr}");
    let v = json(&out_json);
    let server = &v["verify"]["servers"][0];
    assert_eq!(server["verified"], true, "{v}");
    assert_eq!(server["protocol"], "interleaved");
    assert_eq!(server["interleaved"]["schema"], "webtune.compare-live/1");
    assert!(server["throughput"]["verdict"].is_string());
    assert!(server["runs"]["advised"][0]["requests_per_s"].as_f64() > Some(0.0));
    assert!(stdout.contains("interleaved"), "{stdout}");
    assert_eq!(lab_leftovers(&lab), Vec::<String>::new());
}

/// A my.cnf's advice is measured interleaved too: two forums at once, each on its own
/// database copy (the current my.cnf, the advised one).
#[test]
fn verify_interleaves_two_forums_for_a_my_cnf() {
    if support::lab::forum_database_missing() {
        support::opt_out::opt_out("mariadb", "mariadb-server or php-mysql is not installed");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    let out_json = d.path().join("advice.json");
    let my_cnf = d.path().join("my.cnf");
    std::fs::write(&my_cnf, "[mysqld]\nthread_cache_size = 2\n").unwrap();
    let out = webtune_in(
        &lab,
        &[
            "advise",
            "--mysql-config",
            my_cnf.to_str().unwrap(),
            "--no-discover",
            "--posts",
            "2000",
            "--seed",
            "11",
            "--json",
            out_json.to_str().unwrap(),
            "--verify",
            "--verify-budget",
            "8s",
            "--",
            "-c",
            "2",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("advise --verify: memory: "), "{stderr}");
    let v = json(&out_json);
    let server = &v["verify"]["servers"][0];
    assert_eq!(server["verified"], true, "{v}");
    assert_eq!(server["server"], "mariadb", "{server}");
    assert_eq!(server["protocol"], "interleaved", "{server}");
    assert!(stdout.contains("under the forum (2000 posts)"), "{stdout}");
    assert_eq!(lab_leftovers(&lab), Vec::<String>::new());
}
