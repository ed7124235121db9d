//! Real servers for the engine's nginx, HTTPS, HTTP/2 and STARTTLS tests and the CLI's
//! HTTPS tests: a server process that is stopped when dropped, nginx from Debian's package
//! in a private directory (`start_nginx`: one worker, `daemon off;`, the test's own `http`
//! block), `openssl s_server`, a self-signed certificate made with the openssl CLI (as the
//! lab makes them), and a wait until the server listens.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

impl Server {
    pub fn cert(&self) -> String {
        self.dir.path().join("cert.pem").display().to_string()
    }
}

pub fn binary(candidates: &[&str], package: &str) -> PathBuf {
    for p in candidates {
        if Path::new(p).exists() {
            return p.into();
        }
    }
    panic!("{package} is not installed: run .ci/run or `apt-get install {package}`");
}

use crate::free_port;

/// nginx in `dir`, one worker, `daemon off;`, with `files` written to `dir`/www (readable by
/// its workers, which run as nobody when started as root) and `http` (directives and server
/// blocks; `{d}` in it is the directory) in its `http` block; running once `port` listens.
pub fn start_nginx(
    dir: tempfile::TempDir,
    port: u16,
    files: &[(&str, &[u8])],
    http: &str,
) -> Server {
    use std::os::unix::fs::PermissionsExt;
    let root = dir.path();
    let docroot = root.join("www");
    std::fs::create_dir(&docroot).unwrap();
    for (name, bytes) in files {
        std::fs::write(docroot.join(name), bytes).unwrap();
    }
    for p in [root, docroot.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let readable = files.iter().map(|(name, _)| docroot.join(name));
    let certs = ["cert.pem", "key.pem"].map(|f| root.join(f));
    for f in readable.chain(certs.into_iter().filter(|f| f.exists())) {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let d = root.display().to_string();
    let conf = format!(
        "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/cb;\n  proxy_temp_path {d}/px;\n\
           fastcgi_temp_path {d}/fc;\n  uwsgi_temp_path {d}/uw;\n  scgi_temp_path {d}/sc;\n\
           {}\n}}\n",
        http.replace("{d}", &d)
    );
    std::fs::write(root.join("nginx.conf"), conf).unwrap();
    let child = Command::new(binary(
        &["/usr/sbin/nginx", "/usr/local/sbin/nginx"],
        "nginx-light",
    ))
    .arg("-p")
    .arg(root)
    .arg("-c")
    .arg(root.join("nginx.conf"))
    .arg("-e")
    .arg(root.join("error.log"))
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("nginx starts");
    let mut server = Server { child, port, dir };
    wait_listening(&mut server);
    server
}

/// A self-signed P-256 certificate for localhost and 127.0.0.1 (LAB-NOTES "TLS").
pub fn make_cert(dir: &Path, name: &str) {
    let openssl = binary(&["/usr/bin/openssl"], "openssl");
    let status = Command::new(openssl)
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .arg("ec_paramgen_curve:P-256")
        .args(["-nodes", "-days", "30", "-subj", "/CN=localhost", "-addext"])
        .arg("subjectAltName=DNS:localhost,IP:127.0.0.1")
        .arg("-keyout")
        .arg(dir.join(format!("{name}key.pem")))
        .arg("-out")
        .arg(dir.join(format!("{name}cert.pem")))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl runs");
    assert!(status.success(), "openssl req failed");
}

pub fn wait_listening(server: &mut Server) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", server.port)).is_err() {
        if let Ok(Some(_)) = server.child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = server.child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("server exited at start: {err}");
        }
        assert!(Instant::now() < deadline, "server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A self-signed certificate like `make_cert`'s (CA:TRUE, localhost and 127.0.0.1) valid
/// only from `start` to `end` (`YYYYMMDDHHMMSSZ`): `openssl ca -selfsign` sets any dates,
/// which `openssl req -x509` of OpenSSL 3.0 cannot.
pub fn make_dated_cert(dir: &Path, start: &str, end: &str) {
    let openssl = binary(&["/usr/bin/openssl"], "openssl");
    std::fs::write(dir.join("index.txt"), "").unwrap();
    std::fs::write(dir.join("serial"), "01\n").unwrap();
    let d = dir.display();
    std::fs::write(
        dir.join("ca.cnf"),
        format!(
            "[ca]\ndefault_ca = dated\n[dated]\ndatabase = {d}/index.txt\nnew_certs_dir = {d}\n\
             serial = {d}/serial\ndefault_md = sha256\npolicy = anything\nunique_subject = no\n\
             [anything]\ncommonName = supplied\n[ext]\nbasicConstraints = critical,CA:TRUE\n\
             subjectAltName = DNS:localhost,IP:127.0.0.1\n"
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let status = Command::new(&openssl)
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("openssl runs");
        assert!(status.success(), "openssl {args:?} failed");
    };
    run(&[
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "key.pem",
        "-out",
        "req.pem",
    ]);
    run(&[
        "ca",
        "-batch",
        "-config",
        "ca.cnf",
        "-selfsign",
        "-keyfile",
        "key.pem",
        "-in",
        "req.pem",
        "-out",
        "cert.pem",
        "-notext",
        "-extensions",
        "ext",
        "-startdate",
        start,
        "-enddate",
        end,
    ]);
}

/// `openssl s_server` serving `dir`'s cert.pem and key.pem on a free loopback port: with
/// `www`, a status page for every request; without, it finishes the handshake and then
/// never answers.
pub fn start_s_server(dir: tempfile::TempDir, www: bool) -> Server {
    let port = free_port();
    let child = Command::new(binary(&["/usr/bin/openssl"], "openssl"))
        .args(["s_server", "-quiet"])
        .args(www.then_some("-www"))
        .arg("-accept")
        .arg(format!("127.0.0.1:{port}"))
        .arg("-cert")
        .arg(dir.path().join("cert.pem"))
        .arg("-key")
        .arg(dir.path().join("key.pem"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl s_server starts");
    let mut server = Server { child, port, dir };
    wait_listening(&mut server);
    server
}
