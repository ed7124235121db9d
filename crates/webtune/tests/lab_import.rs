//! `webtune lab run` on a user's own config, end to end: Debian's stock nginx, Apache and
//! php-fpm configs run on private copies (nothing of the production server is touched,
//! nothing is left behind), and a config error is one line naming the user's file and line.

mod support;

use std::path::Path;
use support::lab::{leftovers, processes_naming, LabDir};

#[test]
fn your_own_nginx_config_serves_debians_default_site_privately() {
    if !Path::new("/etc/nginx/sites-enabled/default").exists() {
        support::opt_out::opt_out("nginx", "Debian's nginx default site is not installed");
        return;
    }
    let lab = LabDir::new("import-nginx");
    let json = lab.0.with_extension("json");
    let output = lab
        .command()
        .args(["lab", "run", "--nginx-config", "/etc/nginx/nginx.conf"])
        .args([
            "--set",
            "worker_connections=512",
            "--",
            "-c",
            "5",
            "-d",
            "1s",
        ])
        .arg("--json")
        .arg(&json)
        .arg("/")
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no process of it is left"), "{stderr}");
    let text = std::fs::read_to_string(&json).expect("json written");
    let _ = std::fs::remove_file(&json);
    let value: serde_json::Value = serde_json::from_str(&text).expect("valid json");
    // Debian's default page, served from /var/www/html by the private copy.
    assert!(value["status"]["200"].as_u64() > Some(0), "{text}");
    assert_eq!(value["server"]["target"], "nginx-config");
    assert_eq!(value["server"]["parameters"]["worker_connections"], "512");
    assert!(processes_naming(&lab.0).is_empty());
    assert_eq!(leftovers(&lab.0), Vec::<String>::new());
}

#[test]
fn your_own_apache_config_runs_privately() {
    if !Path::new("/etc/apache2/sites-enabled/000-default.conf").exists() {
        support::opt_out::opt_out("apache2", "Debian's Apache default site is not installed");
        return;
    }
    let lab = LabDir::new("import-apache");
    let output = lab
        .command()
        .args(["lab", "run", "--apache-config", "/etc/apache2/apache2.conf"])
        .args(["--", "-c", "2", "-n", "20", "/"])
        .output()
        .expect("run webtune");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("200  20"), "{stdout}");
    assert!(processes_naming(&lab.0).is_empty());
    assert_eq!(leftovers(&lab.0), Vec::<String>::new());
}

#[test]
fn a_syntax_error_in_your_config_is_its_file_and_line_and_exit_2() {
    let lab = LabDir::new("import-bad");
    std::fs::create_dir_all(&lab.0).expect("lab dir");
    let conf = lab.0.join("user-nginx.conf");
    // Caught by the reader: a directive without its ';'.
    std::fs::write(&conf, "events {\n    worker_connections 10\n}\n").expect("write");
    let output = lab
        .command()
        .arg("lab")
        .arg("run")
        .arg("--nginx-config")
        .arg(&conf)
        .args(["--", "-n", "1", "/"])
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{}:2:", conf.display())),
        "{stderr}"
    );
    // Caught by nginx -t on the copy: reported at the user's file and line.
    std::fs::write(
        &conf,
        "events {}\nhttp {\n    sendfile on;\n    no_such_directive 1;\n    server { listen 8080; }\n}\n",
    )
    .expect("write");
    let output = lab
        .command()
        .arg("lab")
        .arg("run")
        .arg("--nginx-config")
        .arg(&conf)
        .args(["--", "-n", "1", "/"])
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let last = stderr.trim().lines().last().unwrap_or_default();
    assert!(last.contains(&format!("{}:4", conf.display())), "{stderr}");
    assert!(last.contains("no_such_directive"), "{stderr}");
    assert!(processes_naming(&lab.0).is_empty());
    let left = leftovers(&lab.0);
    assert_eq!(left, vec!["user-nginx.conf".to_string()], "{left:?}");
}

/// Debian's php-fpm.conf (whichever PHP version is installed).
fn stock_php_fpm_config() -> Option<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir("/etc/php")
        .ok()?
        .flatten()
        .map(|e| e.path().join("fpm/php-fpm.conf"))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.pop()
}

#[test]
fn your_own_php_fpm_config_runs_behind_the_labs_nginx_privately() {
    let Some(conf) = stock_php_fpm_config() else {
        support::opt_out::opt_out("php-fpm", "Debian's php-fpm is not installed");
        return;
    };
    // The production pool's socket: the copy must not create it.
    let socket = Path::new("/run/php").join(format!(
        "php{}-fpm.sock",
        conf.parent()
            .and_then(|fpm| fpm.parent())
            .and_then(|v| v.file_name())
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let socket_before = socket.exists();
    let lab = LabDir::new("import-php-fpm");
    let json = lab.0.with_extension("json");
    let output = lab
        .command()
        .args(["lab", "run", "--php-fpm-config"])
        .arg(&conf)
        .args(["--set", "pm.max_children=4", "--", "-c", "3", "-n", "30"])
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&json).expect("json written");
    let _ = std::fs::remove_file(&json);
    let value: serde_json::Value = serde_json::from_str(&text).expect("valid json");
    // The lab's CPU-bound page, through the lab's nginx, answered by the user's pool.
    assert_eq!(value["status"]["200"].as_u64(), Some(30), "{text}");
    let url = value["spec"]["url"].as_str().unwrap_or_default();
    assert!(url.ends_with("/cpu/2000"), "{url}");
    assert_eq!(value["server"]["target"], "php-fpm-config");
    assert_eq!(value["server"]["parameters"]["pm.max_children"], "4");
    assert_eq!(
        socket.exists(),
        socket_before,
        "the copy touched {socket:?}"
    );
    assert!(processes_naming(&lab.0).is_empty());
    assert_eq!(leftovers(&lab.0), Vec::<String>::new());
}

#[test]
fn a_php_fpm_config_the_lab_cannot_run_privately_is_one_line_and_exit_2() {
    let lab = LabDir::new("import-php-fpm-bad");
    std::fs::create_dir_all(&lab.0).expect("lab dir");
    let conf = lab.0.join("pool.conf");
    let run = |conf: &Path| {
        lab.command()
            .args(["lab", "run", "--php-fpm-config"])
            .arg(conf)
            .args(["--", "-n", "1"])
            .output()
            .expect("run webtune")
    };
    std::fs::write(
        &conf,
        "[www]\npm = static\npm.max_children = 2\nchroot = /srv\n",
    )
    .unwrap();
    let output = run(&conf);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{}:4: chroot", conf.display())),
        "{stderr}"
    );
    std::fs::write(&conf, "[global]\nlog_level = notice\n").unwrap();
    let stderr = String::from_utf8_lossy(&run(&conf).stderr).into_owned();
    assert!(stderr.contains("no pool"), "{stderr}");
    // A key php-fpm does not know: its own check, at the user's file and line.
    std::fs::write(
        &conf,
        "[www]\npm = static\npm.max_children = 2\npm.no_such_key = 1\n",
    )
    .unwrap();
    let output = run(&conf);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("pm.no_such_key"), "{stderr}");
    assert!(stderr.contains(&conf.display().to_string()), "{stderr}");
    assert!(processes_naming(&lab.0).is_empty());
}
