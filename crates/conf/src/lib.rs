//! webtune-conf: reading what is on the host, at the bottom of the crate graph so that
//! the advisor (crates/advise) and the lab (crates/lab) share one reader of each thing and
//! one shape of what was read.
//!
//! - Config trees, read the way each server reads them (includes, conditionals,
//!   variables), as a flat list of `config::Directive`s that each carry their `file:line`
//!   and enclosing blocks: nginx (`nginx`), Apache httpd (`apache`), and the ini dialects
//!   of php-fpm and my.cnf (`ini`). What a reader takes in is capped (`limits`), so no
//!   config makes it run out of memory or read forever; every refusal is a `ReadError`
//!   of one line.
//! - Never giving up on a tree (`include`): an include missing, unreadable or looping is a
//!   `config::ReadNote` at its `file:line`; `config::Options::root` reads a copied tree.
//! - What a file is (`kind`: a wrong one refused) and what it is written for (Apache
//!   2.2/2.4 in `apache`, MariaDB/MySQL 5.7/8 with their defaults and size syntax in
//!   `mycnf`).
//! - Linux's /proc (`procfs`): process status, sessions, command lines, system counters;
//!   and its listening TCP sockets and who holds them (`sockets`).
//!
//! Readers still to come belong here too: a filesystem's mount options (/proc/mounts,
//! fstab) and Postfix's main.cf/master.cf, each as one module producing `Directive`s.
//!
//! It only reads: nothing here writes a file, starts a process or changes a setting. (The
//! name is for what it mostly reads, the host's configuration; /proc is the kernel's side
//! of the same question, "what is this host set up to do".)

pub mod apache;
pub mod config;
mod error;
mod include;
pub mod ini;
pub mod kind;
pub mod limits;
pub mod mycnf;
pub mod nginx;
pub mod procfs;
pub mod sockets;

pub use error::ReadError;
