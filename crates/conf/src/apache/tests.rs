//! The Apache reader on small trees: includes, conditionals, defines, old names, and
//! the errors that name file and line.

use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn includes_ifmodule_define_and_old_names() {
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        "envvars",
        "export APACHE_LOG_DIR=/var/log/apache2$SUFFIX\n",
    );
    write(
        d.path(),
        "mods/a.load",
        "LoadModule mpm_worker_module x/mod_mpm_worker.so\n",
    );
    write(
        d.path(),
        "mods/b.conf",
        "<IfModule mpm_worker_module>\n  MaxClients 300\n</IfModule>\n<IfModule mpm_prefork_module>\n  MaxClients 7\n</IfModule>\n",
    );
    let main = write(
        d.path(),
        "apache2.conf",
        "Define X on\nIncludeOptional mods/*.load\nInclude mods/*.conf\nIncludeOptional none/*.conf\n\
         <IfDefine X>\nErrorLog ${APACHE_LOG_DIR}/e.log\n</IfDefine>\n<IfDefine !X>\nKeepAlive Off\n</IfDefine>\n\
         <VirtualHost *:80>\n  KeepAlive On\n</VirtualHost>\nTimeout \\\n  30\n",
    );
    let c = read(&main, &[]).unwrap();
    assert_eq!(c.mpm().unwrap().0, "worker");
    let (v, d2) = c.get_int("MaxRequestWorkers").unwrap();
    assert_eq!(v, 300);
    assert!(d2.at().ends_with("mods/b.conf:2"), "{}", d2.at());
    assert_eq!(c.get("ErrorLog").unwrap().value(), "/var/log/apache2/e.log");
    assert!(
        c.get("KeepAlive").is_none(),
        "the vhost's KeepAlive is not global"
    );
    assert_eq!(c.get("Timeout").unwrap().value(), "30");
    assert_eq!(c.parsed.files.len(), 3);
}

#[test]
fn unclosed_and_mismatched_sections_name_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let main = write(
        d.path(),
        "a.conf",
        "KeepAlive On\n<IfModule x>\nTimeout 5\n",
    );
    let e = read(&main, &[]).unwrap_err().to_string();
    assert!(e.ends_with("a.conf:2: <IfModule> is never closed"), "{e}");
    let main = write(d.path(), "b.conf", "<Directory />\n</IfModule>\n");
    let e = read(&main, &[]).unwrap_err().to_string();
    assert!(
        e.contains("b.conf:2: </IfModule> closes <Directory>"),
        "{e}"
    );
    let main = write(d.path(), "c.conf", "Include missing.conf\n");
    let c = read(&main, &[]).unwrap();
    assert!(c.parsed.notes[0].to_string().contains("c.conf:1: Include"));
}
