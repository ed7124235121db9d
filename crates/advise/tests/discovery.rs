//! Discovery of a running server's config: nginx rewrites its process title to "nginx:
//! master process /usr/sbin/nginx -c FILE", and the advisor still finds FILE.

use webtune_testkit::opt_out;

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    /// SIGTERM, so that the master stops its workers too (a SIGKILL would orphan them).
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        if webtune_testkit::wait_until(Duration::from_secs(10), || {
            matches!(self.0.try_wait(), Ok(Some(_)))
        }) {
            return;
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_running_nginx_c_file_is_found_from_its_title() {
    let nginx = Path::new("/usr/sbin/nginx");
    if !nginx.is_file() {
        opt_out::opt_out("nginx", "/usr/sbin/nginx is not installed");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().display().to_string();
    let port = webtune_testkit::free_port();
    let conf = d.path().join("own-nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "worker_processes 1;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log;\nevents {{ worker_connections 32; }}\n\
             http {{\n access_log off;\n client_body_temp_path {dir}/b;\n proxy_temp_path {dir}/p;\n fastcgi_temp_path {dir}/f;\n uwsgi_temp_path {dir}/u;\n scgi_temp_path {dir}/s;\n\
             server {{ listen 127.0.0.1:{port}; }}\n}}\n"
        ),
    )
    .unwrap();
    let child = Command::new(nginx)
        .args(["-c", conf.to_str().unwrap(), "-g", "daemon off;"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let _guard = KillOnDrop(child);
    let started = webtune_testkit::wait_until(Duration::from_secs(10), || {
        let title = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&title).starts_with("nginx: master process")
    });
    assert!(
        started,
        "nginx did not start: {}",
        std::fs::read_to_string(d.path().join("error.log")).unwrap_or_default()
    );
    let servers = webtune_advise::host_facts::running_servers();
    let me = servers
        .iter()
        .find(|s| s.master_pid == pid)
        .expect("the nginx started is found");
    assert!(me.cmdline.contains(" -c "), "{}", me.cmdline);
    assert_eq!(me.config.as_deref(), Some(conf.as_path()), "{}", me.cmdline);
}
