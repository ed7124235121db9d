//! Rendering a stack: its validated settings and a directory layout become each server's
//! config files (every server renders its own, from the templates in
//! `crates/lab/templates/`; see `servers`), the site's files, and a plan for each server
//! process (program, check command, run command, stop signal, readiness).
//!
//! Only typed values from `params::Settings`, ports we chose and paths we created reach a
//! config file; paths are checked to hold no character that could end a directive.

use crate::params::Settings;
use crate::servers::{unprivileged_account, RenderContext};
use crate::stacks::StackKind;
use crate::vocab::check_path_is_plain;
use crate::LabError;

pub use crate::servers::{Programs, ServerPlan};
pub use crate::vocab::Layout;

const CPU_PHP: &str = include_str!("../templates/cpu.php");

/// The 43-byte transparent 1×1 GIF of seed 002's test.
pub const EMPTY_GIF: [u8; 43] = [
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
];

/// Size of the static page (seed 001 loaded a 79 KB page).
pub const PAGE_BYTES: usize = 80 * 1024;

/// Everything one start needs on disk and in processes.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// Config files: name inside the private directory, contents.
    pub configs: Vec<(String, String)>,
    /// Site files: name inside the document root, contents.
    pub site: Vec<(String, Vec<u8>)>,
    /// Servers in start order.
    pub servers: Vec<ServerPlan>,
}

/// Render every config and plan every server of a stack: each server renders itself (see
/// `servers`), knowing its place in the stack (prefix, port, its backend's port, front).
pub fn render(
    stack: StackKind,
    settings: &Settings,
    layout: &Layout,
    programs: &Programs,
) -> Result<Rendered, LabError> {
    let components = stack.components();
    if layout.ports.len() < components.len() {
        return Err(LabError::Inconsistent(format!(
            "internal: {} ports for {} servers",
            layout.ports.len(),
            components.len()
        )));
    }
    for path in [&layout.dir, &layout.docroot, &programs.apache_modules] {
        check_path_is_plain(path)?;
    }
    let account = layout.privileged.then(unprivileged_account);
    let mut configs = Vec::new();
    let mut servers = Vec::new();
    for (i, (prefix, component)) in components.iter().enumerate() {
        let front = i + 1 == components.len();
        let context = RenderContext {
            stack: stack.name(),
            prefix,
            settings,
            layout,
            programs,
            port: layout.ports[i],
            backend_port: if i > 0 { layout.ports[i - 1] } else { 0 },
            front,
            tls: front && stack.is_tls(),
            account: account.clone(),
        };
        let rendered = component.server().render(&context)?;
        configs.extend(rendered.configs);
        servers.push(rendered.plan);
    }
    Ok(Rendered {
        configs,
        site: site_files(stack),
        servers,
    })
}

/// Does a load path reach PHP on the lab's site: `/cpu/US` (rewritten to cpu.php) or a
/// `*.php` page? Everything else is a static file the front server answers itself.
pub fn reaches_php(path: &str) -> bool {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let cpu = path
        .strip_prefix("/cpu/")
        .is_some_and(|us| !us.is_empty() && us.bytes().all(|b| b.is_ascii_digit()));
    cpu || path.ends_with(".php")
}

/// The document root's files: empty.gif, an ~80 KB index.html and, where PHP runs, cpu.php.
pub fn site_files(stack: StackKind) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![
        ("empty.gif".to_string(), EMPTY_GIF.to_vec()),
        ("index.html".to_string(), page_bytes(PAGE_BYTES)),
    ];
    if stack.has_php() {
        files.push(("cpu.php".to_string(), CPU_PHP.as_bytes().to_vec()));
    }
    files
}

/// A deterministic HTML page of exactly `size` bytes.
fn page_bytes(size: usize) -> Vec<u8> {
    let head = "<!DOCTYPE html>\n<html><head><title>webtune lab page</title></head><body>\n";
    let tail = "</body></html>\n";
    let mut page = String::with_capacity(size + 128);
    page.push_str(head);
    let mut line = 0u32;
    while page.len() + tail.len() < size {
        line += 1;
        page.push_str(&format!(
            "<p>Paragraph {line}: the quick brown fox jumps over the lazy dog.</p>\n"
        ));
    }
    page.truncate(size.saturating_sub(tail.len()));
    page.push_str(tail);
    page.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Settings;
    use crate::stacks::Mpm;
    use std::path::PathBuf;

    fn layout(n: usize) -> Layout {
        Layout {
            dir: PathBuf::from("/tmp/webtune-lab-0/s-1"),
            docroot: PathBuf::from("/tmp/webtune-lab-0/s-1.www"),
            ports: (0..n as u16).map(|i| 18080 + i).collect(),
            privileged: true,
            addresses: 1,
        }
    }

    fn rendered(stack: StackKind, sets: &[(&str, &str)]) -> Rendered {
        let a: Vec<(String, String)> = sets
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let settings = Settings::from_assignments(stack.name(), &stack.parameters(), &a).unwrap();
        render(
            stack,
            &settings,
            &layout(stack.components().len()),
            &Programs::discover(),
        )
        .unwrap()
    }

    #[test]
    fn every_stack_renders_without_leftover_placeholders() {
        for stack in StackKind::all() {
            let r = rendered(*stack, &[]);
            assert_eq!(r.servers.len(), stack.components().len());
            for (name, text) in &r.configs {
                assert!(!text.contains("{{"), "{name} of {}", stack.name());
            }
        }
    }

    #[test]
    fn values_land_in_their_directives() {
        let r = rendered(
            StackKind::NginxApache(Mpm::Prefork),
            &[
                ("backend.MaxRequestWorkers", "4"),
                ("backend.KeepAlive", "off"),
                ("frontend.upstream_keepalive", "16"),
                ("frontend.reuseport", "on"),
            ],
        );
        let apache = &r
            .configs
            .iter()
            .find(|(n, _)| n == "apache2.conf")
            .unwrap()
            .1;
        assert!(apache.contains("\nMaxRequestWorkers 4\n"), "{apache}");
        assert!(apache.contains("\nKeepAlive Off\n"));
        assert!(apache.contains("Listen 127.0.0.1:18080\n"));
        let nginx = &r.configs.iter().find(|(n, _)| n == "nginx.conf").unwrap().1;
        assert!(nginx.contains("server 127.0.0.1:18080;"), "{nginx}");
        assert!(nginx.contains("keepalive 16;"));
        assert!(nginx.contains("listen 127.0.0.1:18081 backlog=511 reuseport;"));
        assert!(nginx.contains("proxy_set_header Connection \"\";"));
    }

    #[test]
    fn only_cpu_and_php_paths_reach_php() {
        assert!(reaches_php("/cpu/2000"));
        assert!(reaches_php("/viewtopic.php?t=1"));
        assert!(!reaches_php("/"));
        assert!(!reaches_php("/empty.gif"));
        assert!(!reaches_php("/cpu/"));
        assert!(!reaches_php("/cpu/x"));
    }

    #[test]
    fn site_files_have_their_sizes() {
        let files = site_files(StackKind::Nginx);
        assert_eq!(files[0].1.len(), 43);
        assert_eq!(files[1].1.len(), PAGE_BYTES);
        assert!(!files.iter().any(|(n, _)| n == "cpu.php"));
        assert!(site_files(StackKind::NginxPhpFpm)
            .iter()
            .any(|(n, _)| n == "cpu.php"));
    }

    #[test]
    fn the_front_server_listens_on_every_address() {
        let settings = |stack: StackKind| {
            Settings::from_assignments(stack.name(), &stack.parameters(), &[]).unwrap()
        };
        let layout = Layout {
            addresses: 3,
            ..layout(2)
        };
        let stack = StackKind::NginxApache(Mpm::Prefork);
        let out = render(stack, &settings(stack), &layout, &Programs::discover()).unwrap();
        let text = |name: &str| &out.configs.iter().find(|(n, _)| n == name).unwrap().1;
        let nginx = text("nginx.conf");
        for i in 1..=3 {
            assert!(
                nginx.contains(&format!("listen 127.0.0.{i}:18081 backlog=511;")),
                "{nginx}"
            );
        }
        // The backend stays on one address.
        assert_eq!(text("apache2.conf").matches("Listen 127.").count(), 1);
        let stack = StackKind::Apache(Mpm::Prefork);
        let out = render(stack, &settings(stack), &layout, &Programs::discover()).unwrap();
        let apache = &out.configs[0].1;
        assert!(
            apache.contains(
                "Listen 127.0.0.1:18080\nListen 127.0.0.2:18080\nListen 127.0.0.3:18080\n"
            ),
            "{apache}"
        );
    }
}
