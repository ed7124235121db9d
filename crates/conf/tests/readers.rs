//! The readers on Debian's stock trees (installed on the test host: /etc/apache2,
//! /etc/nginx, /etc/php/*/fpm, /etc/mysql). On the configs the lab renders:
//! crates/lab/tests/readers.rs.

mod support;

use std::path::{Path, PathBuf};
use webtune_conf::{apache, ini, mycnf, nginx};

/// The stock file at `path`; None when it is missing and the run opts out of `name`.
fn stock(path: &str, name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(path);
    if p.is_file() {
        Some(p)
    } else {
        support::opt_out::opt_out(name, &format!("{path} is not installed here"));
        None
    }
}

#[test]
fn debian_apache_tree() {
    let Some(main) = stock("/etc/apache2/apache2.conf", "apache2") else {
        return;
    };
    let c = apache::read(&main, &[]).unwrap();
    // envvars expanded.
    let log = c.get("ErrorLog").unwrap();
    assert_eq!(log.value(), "/var/log/apache2/error.log");
    assert!(log.at().starts_with("/etc/apache2/apache2.conf:"));
    // The loaded MPM and its directives from mods-enabled/mpm_*.conf, through <IfModule>.
    let (mpm, loaded) = c.mpm().expect("Debian loads one MPM");
    assert!(["prefork", "worker", "event"].contains(&mpm));
    assert!(
        loaded.at.contains("/etc/apache2/mods-enabled/mpm_"),
        "{}",
        loaded.at
    );
    let mrw = c
        .get("MaxRequestWorkers")
        .expect("Debian's mpm_*.conf sets it");
    assert!(
        mrw.file.ends_with(format!("mpm_{mpm}.conf")),
        "{}",
        mrw.at()
    );
    assert!(mrw.int().is_some());
    // Every file named is a real file, ports.conf among them.
    assert!(c.parsed.files.iter().any(|f| f.ends_with("ports.conf")));
    assert!(c.parsed.files.iter().all(|f| f.is_file()));
    // <IfModule ssl_module> is not entered without mod_ssl.
    if !c.has_module("ssl_module") {
        assert!(!c.parsed.all("Listen").any(|d| d.value() == "443"));
    }
}

#[test]
fn debian_nginx_tree() {
    let Some(main) = stock("/etc/nginx/nginx.conf", "nginx") else {
        return;
    };
    let c = nginx::read(&main).unwrap();
    let (wc, at) = c.worker_connections();
    assert!(wc > 0);
    assert!(at.unwrap().at().starts_with("/etc/nginx/nginx.conf:"));
    assert!(c.parsed.files.iter().any(|f| f.ends_with("mime.types")));
    if Path::new("/etc/nginx/sites-enabled/default").is_file() {
        let listens = c.listens();
        assert!(listens
            .iter()
            .any(|(d, b)| d.file.ends_with("sites-enabled/default") && *b == 511));
    }
}

#[test]
fn debian_php_fpm_tree() {
    let found: Vec<PathBuf> = glob::glob("/etc/php/*/fpm/php-fpm.conf")
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    let Some(main) = found.first() else {
        support::opt_out::opt_out("php-fpm", "no /etc/php/*/fpm/php-fpm.conf");
        return;
    };
    let p = ini::read(main, ini::Dialect::PhpFpm).unwrap();
    let pools = ini::pools(&p);
    let www = pools
        .iter()
        .find(|p| p.name == "www")
        .expect("Debian's www pool");
    let (n, d) = www.max_children.as_ref().unwrap();
    assert!(*n > 0);
    assert!(d.file.ends_with("pool.d/www.conf"));
    // A pool file alone reads too.
    let pool_only = ini::read(&d.file, ini::Dialect::PhpFpm).unwrap();
    assert_eq!(ini::pools(&pool_only).len(), 1);
}

#[test]
fn debian_mysql_tree() {
    let Some(main) = stock("/etc/mysql/my.cnf", "mariadb") else {
        return;
    };
    let p = ini::read(&main, ini::Dialect::MyCnf).unwrap();
    assert!(p.files.len() > 1, "!includedir followed: {:?}", p.files);
    if let Some(b) = mycnf::mysqld_value(&p, "bind_address") {
        assert!(
            b.file.to_string_lossy().contains("mariadb.conf.d")
                || b.file.to_string_lossy().contains("mysql")
        );
    }
}
