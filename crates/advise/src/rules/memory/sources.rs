//! Where the memory budget's less obvious figures come from: PHP's memory_limit (the
//! pool's `php_admin_value`/`php_value`, the php.ini beside the fpm directory, else PHP's
//! default) and the tmpfs mounts the configs write to (what is written there lives in RAM).

use super::Layer;
use crate::rules::{mib, Layers};

/// PHP's memory_limit for php-fpm's children, in bytes, with where it was read (the
/// pool's `php_admin_value`/`php_value`, else the php.ini files beside the fpm
/// directory), else PHP's default 128M. None for -1 (no limit).
pub(super) fn php_memory_limit(f: &webtune_conf::config::Parsed) -> Option<(u64, String)> {
    match crate::rules::php::setting(f, "memory_limit") {
        Some((v, at)) => webtune_conf::ini::parse_size(v.trim().trim_matches('"')).map(|b| (b, at)),
        None => Some((128 << 20, "PHP's default 128M: no php.ini read".into())),
    }
}

/// tmpfs mounts the configs write to (nginx's cache and temp paths, MariaDB's tmpdir,
/// PHP's session and upload directories): what is written there lives in RAM, up to the
/// mount's size (an nginx cache's max_size when smaller).
pub(super) fn tmpfs_layers(l: &Layers) -> Vec<Layer> {
    // A copied tree's paths are not this host's mounts.
    if l.facts.copied() {
        return Vec::new();
    }
    let mut used: Vec<(String, String, u64)> = Vec::new();
    let mut paths: Vec<(String, String, Option<u64>)> = Vec::new();
    if let Some(n) = l.nginx {
        for d in n
            .parsed
            .directives
            .iter()
            .filter(|d| d.name.ends_with("_cache_path") || d.name.ends_with("_temp_path"))
        {
            let max = d
                .args
                .iter()
                .find_map(|a| a.strip_prefix("max_size="))
                .and_then(webtune_conf::ini::parse_size);
            paths.push((
                d.value().to_string(),
                format!("{} {}: {}", d.name, d.value(), d.at()),
                max,
            ));
        }
    }
    if let Some(m) = l.mysql {
        if let Some(d) = webtune_conf::mycnf::mysqld_value(m, "tmpdir") {
            paths.push((
                d.value().to_string(),
                format!("tmpdir = {}: {}", d.value(), d.at()),
                None,
            ));
        }
    }
    if let Some(f) = l.php_fpm {
        for d in f.directives.iter().filter(|d| {
            d.name.contains("[session.save_path]") || d.name.contains("[upload_tmp_dir]")
        }) {
            paths.push((
                d.value().trim_matches('"').to_string(),
                format!("{} = {}: {}", d.name, d.value(), d.at()),
                None,
            ));
        }
    }
    for (path, cite, max) in paths {
        let mount = l
            .host
            .tmpfs
            .iter()
            .filter(|(m, _)| std::path::Path::new(&path).starts_with(m))
            .max_by_key(|(m, _)| m.as_os_str().len());
        let Some((m, size)) = mount else { continue };
        let kib = max.map_or(*size, |b| (b / 1024).min(*size));
        let m = m.display().to_string();
        match used.iter_mut().find(|(x, _, _)| *x == m) {
            Some(u) => u.2 = u.2.max(kib),
            None => used.push((m, cite, kib)),
        }
    }
    used.into_iter()
        .map(|(m, cite, kib)| Layer {
            label: "tmpfs".into(),
            kib,
            line: format!("tmpfs {m} (RAM, up to its size): {} for {cite}", mib(kib)),
        })
        .collect()
}
