//! Real TLS servers for the HTTPS and HTTP/2 tests: a server process that is stopped when
//! dropped, a self-signed certificate made with the openssl CLI (as the lab makes them), a
//! free loopback port, and a wait until the server listens.

use std::io::Read;
use std::net::TcpListener;
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

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
