//! What a file is and what it is written for: a file of the wrong kind is refused in one
//! line; Apache 2.2 is told from 2.4 and MariaDB from MySQL 5.7/8 where the tree says it
//! (and said to be assumed where it does not); sizes are read as mysqld reads them or
//! refused at `file:line`; option prefixes and `skip-innodb` as MariaDB takes them.

use std::path::{Path, PathBuf};
use webtune_conf::apache::ApacheVersion;
use webtune_conf::mycnf::{self, Server};
use webtune_conf::{apache, ini, nginx};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

const NGINX: &str = "user www-data;\nworker_processes auto;\nevents {\n worker_connections 768;\n}\nhttp {\n sendfile on;\n}\n";

#[test]
fn a_file_of_the_wrong_kind_is_refused_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let n = write(d.path(), "nginx.conf", NGINX);
    let e = ini::read(&n, ini::Dialect::MyCnf).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}:1: not a my.cnf (MariaDB/MySQL): it reads as an nginx config (`user www-data;`)",
            n.display()
        )
    );
    let e = apache::read(&n, &[]).unwrap_err().to_string();
    assert!(
        e.contains("not an Apache config: it reads as an nginx config"),
        "{e}"
    );
    let m = write(
        d.path(),
        "my.cnf",
        "[mysqld]\ninnodb_buffer_pool_size = 1G\nmax_connections = 10\n",
    );
    let e = nginx::read(&m).unwrap_err().to_string();
    assert!(
        e.contains(":1: not an nginx config: it reads as a my.cnf"),
        "{e}"
    );
    let e = ini::read(&m, ini::Dialect::PhpFpm).unwrap_err().to_string();
    assert!(
        e.contains("not a php-fpm config: it reads as a my.cnf"),
        "{e}"
    );
    // The right kinds still read.
    assert!(nginx::read(&n).is_ok());
    assert!(ini::read(&m, ini::Dialect::MyCnf).is_ok());
    // A pool file without its [section], given alone: a fragment meant to be included
    // after a pool's [name], read as that pool's keys with a warning.
    let p = write(d.path(), "www.conf", "pm = dynamic\npm.max_children = 5\n");
    let f = ini::read(&p, ini::Dialect::PhpFpm).unwrap();
    assert_eq!(
        f.notes[0].to_string(),
        format!("{}:1: pm before any [section]: a pool fragment, meant to be included after a pool's [name] (php-fpm alone reads such keys as [global] and refuses them); read as the keys of the pool that includes it", p.display())
    );
    assert_eq!(f.notes[0].level, webtune_conf::config::NoteLevel::Warning);
    let pools = ini::pools(&f);
    assert_eq!(pools[0].name, ini::FRAGMENT_POOL);
    assert_eq!(pools[0].max_children.as_ref().unwrap().0, 5);
    // Included before any section, it is still refused as php-fpm refuses it.
    let inc = write(d.path(), "main.conf", "include = www.conf\n");
    let e = ini::read(&inc, ini::Dialect::PhpFpm)
        .unwrap_err()
        .to_string();
    assert!(e.contains("www.conf:1: pm outside any [section]"), "{e}");
    let g = write(
        d.path(),
        "fpm.conf",
        "pid = /run/x.pid\n[www]\npm.max_children = 5\n",
    );
    assert_eq!(
        ini::pools(&ini::read(&g, ini::Dialect::PhpFpm).unwrap()).len(),
        1
    );
}

#[test]
fn apache_22_and_24_are_told_apart() {
    let d = tempfile::tempdir().unwrap();
    let old = write(
        d.path(),
        "22.conf",
        "NameVirtualHost *:80\n<IfModule prefork.c>\nMaxClients 150\n</IfModule>\n<IfModule worker.c>\nMaxClients 400\n</IfModule>\n",
    );
    let c = apache::read(&old, &[]).unwrap();
    assert_eq!(c.dialect.version, ApacheVersion::V22);
    assert!(!c.dialect.assumed);
    // 2.2's MPM is built in, and which one is the binary's to say: unknown, neither
    // block applies; compiled-in prefork (`httpd -l`), its block does.
    assert!(c.get("MaxRequestWorkers").is_none());
    let built = apache::read_with(
        &old,
        &webtune_conf::config::Options {
            compiled_in: Some(vec!["core.c".into(), "prefork.c".into()]),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(built.get_int("MaxRequestWorkers").unwrap().1.line, 3);
    assert_eq!(built.mpm().unwrap().0, "prefork");
    assert!(
        c.dialect
            .to_string()
            .starts_with("Apache 2.2 (NameVirtualHost at "),
        "{}",
        c.dialect
    );
    assert_eq!(
        c.dialect.version.name_for("MaxRequestWorkers"),
        "MaxClients"
    );
    assert_eq!(c.dialect.version.name_for("ServerLimit"), "ServerLimit");
    let new = write(d.path(), "24.conf", "LoadModule mpm_event_module m.so\nMaxClients 150\n<Directory />\nRequire all denied\n</Directory>\n");
    let c = apache::read(&new, &[]).unwrap();
    assert_eq!(c.dialect.version, ApacheVersion::V24);
    assert!(
        c.dialect.why.starts_with("LoadModule mpm_event_module at "),
        "{}",
        c.dialect.why
    );
    assert_eq!(
        c.dialect.version.name_for("MaxRequestWorkers"),
        "MaxRequestWorkers"
    );
    let plain = write(d.path(), "plain.conf", "KeepAlive On\n");
    let c = apache::read(&plain, &[]).unwrap();
    assert!(c.dialect.assumed && c.dialect.version == ApacheVersion::V24);
    assert!(c.dialect.to_string().starts_with("Apache 2.4 assumed"));
}

#[test]
fn mariadb_and_mysql_are_told_apart_with_their_defaults() {
    let d = tempfile::tempdir().unwrap();
    let maria = write(d.path(), "a/my.cnf", "[mariadb]\nmax_connections = 10\n");
    let p = ini::read(&maria, ini::Dialect::MyCnf).unwrap();
    assert_eq!(mycnf::flavor(&p).server, Server::MariaDb);
    assert_eq!(
        mycnf::server_default(&p, "key_buffer_size"),
        Some(128 << 20)
    );
    write(
        d.path(),
        "b/mysql.conf.d/mysqld.cnf",
        "[mysqld]\ninnodb_dedicated_server = ON\n",
    );
    let mysql8 = write(
        d.path(),
        "b/my.cnf",
        &format!("!includedir {}/b/mysql.conf.d/\n", d.path().display()),
    );
    let p = ini::read(&mysql8, ini::Dialect::MyCnf).unwrap();
    let f = mycnf::flavor(&p);
    assert_eq!(f.server, Server::MySql80, "{f}");
    assert!(f.why.starts_with("innodb_dedicated_server at "), "{f}");
    assert_eq!(mycnf::server_default(&p, "key_buffer_size"), Some(8 << 20));
    assert_eq!(
        mycnf::server_default(&p, "sort_buffer_size"),
        Some(256 << 10)
    );
    assert_eq!(mycnf::server_default(&p, "query_cache_size"), Some(0));
    write(
        d.path(),
        "c/mysql.conf.d/mysqld.cnf",
        "[mysqld]\nquery_cache_size = 16M\n",
    );
    let mysql57 = write(
        d.path(),
        "c/my.cnf",
        &format!("!includedir {}/c/mysql.conf.d/\n", d.path().display()),
    );
    let p = ini::read(&mysql57, ini::Dialect::MyCnf).unwrap();
    assert_eq!(mycnf::flavor(&p).server, Server::MySql57);
    let plain = write(d.path(), "d/my.cnf", "[mysqld]\nmax_connections = 10\n");
    let f = mycnf::flavor(&ini::read(&plain, ini::Dialect::MyCnf).unwrap());
    assert!(
        f.assumed && f.to_string().starts_with("MariaDB assumed"),
        "{f}"
    );
}

#[test]
fn sizes_are_read_as_mysqld_reads_them_or_refused_at_file_and_line() {
    assert_eq!(mycnf::parse_size("2P"), Ok(2 << 50));
    assert_eq!(mycnf::parse_size("1E"), Ok(1 << 60));
    assert_eq!(mycnf::parse_size("128m"), Ok(128 << 20));
    assert!(mycnf::parse_size("16E").is_err());
    let d = tempfile::tempdir().unwrap();
    for (value, why) in [
        ("1.5G", "a fraction"),
        ("0x10000000", "a hexadecimal number"),
        ("16E", "larger than 2^64"),
        ("lots", "not a number"),
    ] {
        let m = write(
            d.path(),
            "my.cnf",
            &format!("[mysqld]\nmax_connections = 10\ninnodb_buffer_pool_size = {value}\n"),
        );
        let e = ini::read(&m, ini::Dialect::MyCnf).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}:3: innodb_buffer_pool_size = {value}: not a size MariaDB accepts ({why}",
                m.display()
            )),
            "{e}"
        );
    }
    let m = write(
        d.path(),
        "my.cnf",
        "[mysqld]\nkey_buffer = 8M\nskip-innodb\ninnodb_buffer_pool_size = 2P\n",
    );
    let p = ini::read(&m, ini::Dialect::MyCnf).unwrap();
    let kb = mycnf::mysqld_value(&p, "key_buffer_size").expect("key_buffer is key_buffer_size");
    assert_eq!((kb.value(), kb.line), ("8M", 2));
    assert!(p
        .notes
        .iter()
        .any(|n| n.message.starts_with("key_buffer read as key_buffer_size")));
    assert_eq!(mycnf::innodb_disabled(&p).unwrap().line, 3);
    // An ambiguous prefix is left as written (mysqld refuses it).
    assert_eq!(mycnf::full_name("max_conn"), None);
    assert_eq!(mycnf::full_name("key_buffer"), Some("key_buffer_size"));
}

#[test]
fn mysql_takes_no_option_prefixes() {
    let d = tempfile::tempdir().unwrap();
    let m = write(
        d.path(),
        "my.cnf",
        "[mysqld]\ninnodb_dedicated_server = ON\nkey_buffer = 8M\n",
    );
    let p = ini::read(&m, ini::Dialect::MyCnf).unwrap();
    assert!(mycnf::mysqld_value(&p, "key_buffer_size").is_none());
    let w = p.notes.iter().find(|n| n.at.ends_with(":3")).unwrap();
    assert!(
        w.message.contains("MySQL 8 takes no option prefixes"),
        "{}",
        w.message
    );
}
