//! Fixtures shared by the rule and plan tests: a host (2 cores, RAM as given, somaxconn
//! 128), config files in a temporary directory, and the rules run on them.
#![allow(dead_code)]

#[allow(unused_imports)] // each test binary uses its own part of the support module
pub use webtune_testkit::opt_out;

use std::path::PathBuf;
use webtune_advise::plan::Plan;
use webtune_advise::{Evidence, Finding, HostFacts, Layers};
use webtune_conf::{apache, ini, nginx};

pub fn host(ram_mib: u64) -> HostFacts {
    let mut h = HostFacts {
        cores: 2,
        mem_total_kib: ram_mib * 1024,
        mem_available_kib: ram_mib * 1024 / 2,
        ..HostFacts::default()
    };
    h.sysctls.insert("net.core.somaxconn".into(), "128".into());
    h.sysctls
        .insert("net.ipv4.ip_local_port_range".into(), "32768 60999".into());
    h
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

#[derive(Default)]
pub struct Run<'a> {
    pub apache: Option<&'a str>,
    pub nginx: Option<&'a str>,
    pub fpm: Option<&'a str>,
    pub mysql: Option<&'a str>,
    pub evidence: Option<Evidence>,
    /// What the trees are for beyond their text (release, data size, compiled-in modules).
    pub facts: webtune_advise::Facts,
    pub live: Option<webtune_advise::live::Live>,
}

pub fn findings_with(h: &HostFacts, r: Run) -> Vec<Finding> {
    plan_with(h, r).0
}

/// The findings and the plan.
pub fn plan_with(h: &HostFacts, r: Run) -> (Vec<Finding>, Plan) {
    let f = Fixture::new();
    let a = r
        .apache
        .map(|t| apache::read(&f.file("apache2.conf", t), &[]).unwrap());
    let n = r
        .nginx
        .map(|t| nginx::read(&f.file("nginx.conf", t)).unwrap());
    let p = r
        .fpm
        .map(|t| ini::read(&f.file("php-fpm.conf", t), ini::Dialect::PhpFpm).unwrap());
    let m = r
        .mysql
        .map(|t| ini::read(&f.file("my.cnf", t), ini::Dialect::MyCnf).unwrap());
    webtune_advise::rules::plan(&Layers {
        host: h,
        apache: a.as_ref(),
        nginx: n.as_ref(),
        php_fpm: p.as_ref(),
        mysql: m.as_ref(),
        evidence: r.evidence.as_ref(),
        facts: &r.facts,
        live: r.live.as_ref(),
    })
}

pub fn findings(r: Run) -> Vec<Finding> {
    findings_with(&host(2048), r)
}

pub fn get<'a>(f: &'a [Finding], id: &str) -> Option<&'a Finding> {
    f.iter().find(|x| x.id == id)
}

pub const PREFORK_PHP: &str =
    "LoadModule mpm_prefork_module m/mod_mpm_prefork.so\nLoadModule php_module m/libphp8.2.so\n";
pub const WORKER: &str = "LoadModule mpm_worker_module m/mod_mpm_worker.so\n";
pub const EVENT: &str = "LoadModule mpm_event_module m/mod_mpm_event.so\n";

pub const PROXY_KEEPALIVE: &str = "events { worker_connections 1024; }\nhttp {\n upstream app { server 127.0.0.1:8080; keepalive 16; }\n server {\n  listen 80;\n  location / {\n   proxy_pass http://app;\n   proxy_http_version 1.1;\n   proxy_set_header Connection \"\";\n  }\n }\n}\n";

pub fn evidence(connections: u32) -> Evidence {
    Evidence {
        file: PathBuf::from("run.json"),
        connections,
        responses: 10_000,
        duration_s: 10.0,
        ..Evidence::default()
    }
}

/// The patch check as the binary runs it: the lab's private copy (one copy, the tuner's).
#[allow(unused_imports)] // not every test binary checks patches
pub use webtune_tuner::advise_verify::lab_checker;
