//! webtune-lab: real web stacks for load tests. It owns the stacks (nginx, Apache
//! prefork / worker / event, nginx → Apache, nginx → php-fpm, an external URL), the servers
//! they are made of (`servers`: one module per server type behind one trait, owning its
//! parameters, program, config, readiness, tuning space and logs), the one supervision of
//! every server process (`process`: start, readiness, stop that leaves nothing behind;
//! `supervisor`: a whole stack; `registry`: reaping what a killed webtune left), and the
//! /proc sampler whose series go into `RunResult.server` (`external` finds an external
//! server's processes for it; /proc and users' config trees are
//! read with `webtune-conf`, the crate below this one). TLS variants of the stacks are
//! `TlsStack` (in `stacks`; their certificate per lab directory is made in `tls`), the forum and
//! its MariaDB in `forum`; private file systems for the fs workload (tmpfs, ext4, xfs on a
//! loop device, in a mount namespace of their own) in `filesystem`, and the host-wide lock around
//! the host sysctls such a run may change in `host_sysctl`. What the servers share (layout, templates, tunables, TLS names)
//! is `vocab`, below `servers`: docs/architecture.md draws the module graph.
//!
//! It does not make load (that is `webtune-engine`) and does not decide what is best (that
//! is the tuner): it starts, samples and stops what it is told to.

// The public surface: the nouns most callers need at the root (below), and a few modules
// whose namespace helps a reader (`forum::dbparams::settings_for` beside `settings_for`,
// `trial::run` beside `hook::run`). Every other module is private; each public item has one
// path. docs/architecture.md lists the surface.
pub mod filesystem;
pub mod forum;
pub mod hook;
pub mod host;
pub mod import;
pub mod listing;
pub mod registry;
pub mod servers;
pub mod trial;
pub mod tuning;

mod dirs;
mod error;
mod external;
mod host_sysctl;
mod leaders;
mod logs;
mod netns;
mod params;
mod process;
mod render;
mod selector;
mod server_sampler;
mod stacks;
mod supervisor;
mod tls;
mod vocab;

/// Tests' opt-outs of what this host may lack (every crate's tests share them).
#[cfg(test)]
use webtune_testkit::opt_out;

pub use error::LabError;
pub use netns::namespace_of;
pub use params::{parse_assignment, InertRule, ParamKind, ParamSpec, Settings, Value};
pub use render::{reaches_php, render, Layout, Rendered, PAGE_BYTES};
pub use selector::ProcessSelector;
pub use server_sampler::{ServerSampler, DEFAULT_INTERVAL};
pub use stacks::{settings_for, StackKind, TlsStack};
pub use supervisor::{http_get, http_request, HttpReply, RunningStack, StartOptions};
