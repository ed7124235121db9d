//! The readers never give up on a tree: an include that is missing, unreadable, a symlink
//! loop or a wildcard matching nothing becomes a note at the include's `file:line` and the
//! rest is read; `/dev/null` reads as empty; `Options::root` reads a copied tree's absolute
//! paths under its root; messages are one line with control characters escaped.

use std::path::{Path, PathBuf};
use webtune_conf::config::{NoteLevel, Options, ReadNote};
use webtune_conf::{apache, ini, mycnf, nginx};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

fn warnings(notes: &[ReadNote]) -> Vec<String> {
    notes
        .iter()
        .filter(|n| n.level == NoteLevel::Warning)
        .map(ToString::to_string)
        .collect()
}

#[test]
fn nginx_reads_on_past_missing_and_odd_includes() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "plain", "not a directory\n");
    std::fs::create_dir(d.path().join("conf.d")).unwrap();
    std::os::unix::fs::symlink(d.path().join("loop_b"), d.path().join("loop_a")).unwrap();
    std::os::unix::fs::symlink(d.path().join("loop_a"), d.path().join("loop_b")).unwrap();
    let main = write(
        d.path(),
        "nginx.conf",
        "include /dev/null;\nevents { worker_connections 4096; }\nhttp {\n include /nonexistent-webtune/mime.types;\n include conf.d/*.conf;\n include loop_a;\n include plain/x.conf;\n sendfile on;\n}\n",
    );
    let c = nginx::read(&main).expect("read on past every include");
    assert_eq!(c.worker_connections().0, 4096);
    assert!(
        c.parsed.last("sendfile").is_some(),
        "the rest of http is read"
    );
    let at = |line: usize| format!("{}:{line}", main.display());
    let w = warnings(&c.parsed.notes);
    assert_eq!(w.len(), 3, "{w:#?}");
    assert!(
        w[0].starts_with(&format!(
            "{}: include /nonexistent-webtune/mime.types: no such file",
            at(4)
        )),
        "{}",
        w[0]
    );
    assert!(w[0].contains("--root DIR"), "{}", w[0]);
    assert!(
        w[1].starts_with(&at(6)) && w[1].contains("symlink loop"),
        "{}",
        w[1]
    );
    assert!(!w[1].contains("no such file"), "{}", w[1]);
    // An OS error said once.
    assert!(
        w[2].starts_with(&at(7)) && w[2].contains("Not a directory (os error 20)"),
        "{}",
        w[2]
    );
    assert_eq!(w[2].matches("os error").count(), 1, "{}", w[2]);
    // The empty wildcard is a note, and /dev/null was read as the servers read it.
    let notes: Vec<String> = c
        .parsed
        .notes
        .iter()
        .filter(|n| n.level == NoteLevel::Note)
        .map(ToString::to_string)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with(&at(5)) && n.contains("matches no file")),
        "{notes:#?}"
    );
    assert!(c.parsed.files.iter().any(|f| f == Path::new("/dev/null")));
}

#[test]
fn apache_missing_mpm_include_and_empty_wildcard() {
    let d = tempfile::tempdir().unwrap();
    let main = write(
        d.path(),
        "httpd.conf",
        "Include conf.modules.d/*.conf\nInclude extra/httpd-mpm.conf\nIncludeOptional sites/*.conf\nKeepAlive On\n",
    );
    let c = apache::read(&main, &[]).unwrap();
    assert_eq!(c.get("KeepAlive").unwrap().value(), "On");
    let w = warnings(&c.parsed.notes);
    assert_eq!(w.len(), 2, "{w:#?}");
    assert!(
        w[0].contains(":1: Include conf.modules.d/*.conf: matches no file"),
        "{}",
        w[0]
    );
    assert!(
        w[1].contains(":2: Include extra/httpd-mpm.conf: no such file"),
        "{}",
        w[1]
    );
    assert!(c
        .parsed
        .notes
        .iter()
        .any(|n| n.level == NoteLevel::Note && n.at.ends_with(":3")));
}

#[test]
fn a_root_reads_a_copied_trees_absolute_paths_under_it() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    write(
        root,
        "etc/httpd/conf.d/mpm.conf",
        "LoadModule mpm_event_module modules/mod_mpm_event.so\n",
    );
    let main = write(
        root,
        "etc/httpd/conf/httpd.conf",
        "ServerRoot \"/etc/httpd\"\nInclude conf.d/*.conf\nInclude /etc/httpd/conf.d/mpm.conf\n",
    );
    let opts = Options {
        root: Some(root.to_path_buf()),
        ..Options::default()
    };
    let c = apache::read_with(&main, &opts).unwrap();
    assert_eq!(c.server_root, root.join("etc/httpd"));
    assert_eq!(c.mpm().unwrap().0, "event");
    assert!(
        warnings(&c.parsed.notes).is_empty(),
        "{:#?}",
        c.parsed.notes
    );
    // Without the root, ServerRoot is this host's directory, and the note says so.
    let c = apache::read(&main, &[]).unwrap();
    assert!(
        c.parsed
            .notes
            .iter()
            .any(|n| n.message.contains("ServerRoot \"/etc/httpd\"")
                || n.message.contains("ServerRoot /etc/httpd")),
        "{:#?}",
        c.parsed.notes
    );
    // nginx and my.cnf: absolute includes under the root; without it, a note says the
    // host's file was read.
    write(root, "etc/nginx/mime.types", "types { text/html html; }\n");
    let n = write(
        root,
        "etc/nginx/nginx.conf",
        "http { include /etc/nginx/mime.types; }\n",
    );
    let c = nginx::read_with(&n, &opts).unwrap();
    assert!(c.parsed.files.contains(&root.join("etc/nginx/mime.types")));
    write(
        root,
        "etc/mysql/conf.d/a.cnf",
        "[mysqld]\nmax_connections = 77\n",
    );
    let m = write(root, "etc/mysql/my.cnf", "!includedir /etc/mysql/conf.d/\n");
    let p = ini::read_with(&m, ini::Dialect::MyCnf, &opts).unwrap();
    assert_eq!(
        mycnf::mysqld_value(&p, "max_connections").unwrap().value(),
        "77"
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = write(elsewhere.path(), "extra.conf", "sendfile on;\n");
    let host = write(
        root,
        "host/nginx.conf",
        &format!("include /dev/null;\ninclude {};\n", outside.display()),
    );
    {
        let c = nginx::read(&host).unwrap();
        assert!(
            c.parsed.notes.iter().any(|n| n.level == NoteLevel::Note
                && n.message
                    .contains(&format!("read this host's {}", outside.display()))),
            "{:#?}",
            c.parsed.notes
        );
    }
}

#[test]
fn messages_escape_control_characters_and_say_an_os_error_once() {
    let d = tempfile::tempdir().unwrap();
    let main = write(
        d.path(),
        "n.conf",
        "events {\n wor\0ker_connections 10\n}\n",
    );
    let e = nginx::read(&main).unwrap_err().to_string();
    assert!(
        e.contains("\"wor\\0ker_connections\" is not terminated"),
        "{e}"
    );
    assert!(!e.contains('\0'));
    let plain = write(d.path(), "plain", "x\n");
    let e = nginx::read(&plain.join("nginx.conf")).unwrap_err();
    let text = anyhow_like(&e);
    assert_eq!(text.matches("os error 20").count(), 1, "{text}");
}

/// What `{:#}` of an error chain prints: the error and each source.
fn anyhow_like(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
