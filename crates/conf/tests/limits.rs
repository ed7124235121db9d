//! Hostile configs meet the readers' caps (`webtune_conf::limits`): each is refused in
//! one line naming the cap, quickly and in little memory, never followed into gigabytes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use webtune_conf::{apache, ini, nginx, ReadError};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

/// The refusal's text, asserting it came quickly and is one line.
fn refused(read: impl FnOnce() -> Result<(), ReadError>) -> String {
    let began = Instant::now();
    let e = read().expect_err("refused").to_string();
    assert!(began.elapsed() < Duration::from_secs(10), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    e
}

fn apache_read(main: &Path) -> Result<(), ReadError> {
    apache::read(main, &[]).map(drop)
}

#[test]
fn a_define_that_doubles_each_line_stops_at_the_line_cap() {
    let d = tempfile::tempdir().unwrap();
    let mut text = String::from("Define a x\n");
    for _ in 0..40 {
        text.push_str("Define a ${a}${a}\n");
    }
    let main = write(d.path(), "apache2.conf", &text);
    let e = refused(|| apache_read(&main));
    assert!(
        e.ends_with(
            "apache2.conf:17: longer than 64 KiB after ${VAR} expansion, the cap on one line"
        ),
        "{e}"
    );
    // The same in Debian's envvars beside the main file.
    let mut env = String::from("export A=x\n");
    for _ in 0..40 {
        env.push_str("export A=$A$A\n");
    }
    write(d.path(), "envvars", &env);
    let main = write(d.path(), "apache2.conf", "KeepAlive On\n");
    let e = refused(|| apache_read(&main));
    assert!(e.contains("envvars:18: longer than 64 KiB"), "{e}");
    // Values below the cap still expand.
    std::fs::remove_file(d.path().join("envvars")).unwrap();
    let main = write(
        d.path(),
        "apache2.conf",
        "Define a 0123456789\nDefine b ${a}${a}${a}\nErrorLog /x/${b}\n",
    );
    let c = apache::read(&main, &[]).unwrap();
    assert_eq!(c.get("ErrorLog").unwrap().value().len(), 33);
}

#[test]
fn an_endless_include_is_cut_at_the_file_cap() {
    let d = tempfile::tempdir().unwrap();
    let main = write(d.path(), "apache2.conf", "Include /dev/zero\n");
    let e = refused(|| apache_read(&main));
    assert_eq!(
        e,
        "/dev/zero: larger than 16 MiB, the cap on one config file"
    );
    let e = refused(|| ini::read(Path::new("/dev/zero"), ini::Dialect::MyCnf).map(drop));
    assert!(e.contains("the cap on one config file"), "{e}");
}

#[test]
fn includes_that_fan_out_stop_at_the_file_count_cap() {
    // Two files per level, each including both of the next level: 2^20 reads.
    let d = tempfile::tempdir().unwrap();
    for level in 0..20 {
        for name in ["a", "b"] {
            write(
                d.path(),
                &format!("l{level}/{name}.conf"),
                &format!("Include l{}/*.conf\nKeepAlive On\n", level + 1),
            );
        }
    }
    write(d.path(), "l20/a.conf", "KeepAlive Off\n");
    let main = write(d.path(), "apache2.conf", "Include l0/*.conf\n");
    let e = refused(|| apache_read(&main));
    assert!(
        e.contains("more than 10000 files read, the cap on one configuration tree"),
        "{e}"
    );
    // nginx: the same fan-out.
    for level in 0..20 {
        for name in ["a", "b"] {
            write(
                d.path(),
                &format!("n{level}/{name}.conf"),
                &format!("include n{}/*.conf;\n", level + 1),
            );
        }
    }
    let main = write(d.path(), "nginx.conf", "include n0/*.conf;\n");
    let e = refused(|| nginx::read(&main).map(drop));
    assert!(e.contains("more than 10000 files read"), "{e}");
}

#[test]
fn deep_nesting_and_huge_block_labels_are_capped() {
    let d = tempfile::tempdir().unwrap();
    let main = write(d.path(), "nginx.conf", &"a {\n".repeat(200));
    let e = refused(|| nginx::read(&main).map(drop));
    assert!(
        e.ends_with("nginx.conf:101: blocks nested deeper than 100, the cap on nesting"),
        "{e}"
    );
    let main = write(d.path(), "apache2.conf", &"<Directory />\n".repeat(200));
    let e = refused(|| apache_read(&main));
    assert!(
        e.ends_with("apache2.conf:101: blocks nested deeper than 100, the cap on nesting"),
        "{e}"
    );
    // A 1 MiB block label copied into each of 300 directives inside it: 300 MiB kept.
    let text = format!(
        "server {} {{\n{}}}\n",
        "x".repeat(1 << 20),
        "listen 80;\n".repeat(300)
    );
    let main = write(d.path(), "nginx.conf", &text);
    let e = refused(|| nginx::read(&main).map(drop));
    assert!(
        e.contains("the directives read take more than 256 MiB, the cap on one configuration tree"),
        "{e}"
    );
}

#[test]
fn an_include_loop_ends_at_the_depth_cap() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "b.conf", "include a.conf;\n");
    let main = write(d.path(), "a.conf", "include b.conf;\n");
    let e = refused(|| nginx::read(&main).map(drop));
    assert!(
        e.ends_with(":1: includes nested deeper than 32 (an include loop?)"),
        "{e}"
    );
    let main = write(d.path(), "self.conf", "Include self.conf\n");
    let e = refused(|| apache_read(&main));
    assert!(e.contains("includes nested deeper than 32"), "{e}");
    let main = write(
        d.path(),
        "my.cnf",
        &format!("!include {}\n", d.path().join("my.cnf").display()),
    );
    // mysqld skips an include loop with a warning and reads on: so does the reader.
    let p = ini::read(&main, ini::Dialect::MyCnf).unwrap();
    assert!(
        p.notes[0]
            .message
            .contains("(an include loop); not read again"),
        "{:?}",
        p.notes
    );
}
