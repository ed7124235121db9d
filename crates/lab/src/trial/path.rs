//! What a trial loads on the target the lab started: the default path of a stack or of a
//! user's imported config when none is given after `--`, and the check that what was given
//! is a path (the lab picks the address, so a URL is refused). Shared by `lab run`, `lab
//! sweep`, `tune` and `advise --verify`, which all load a lab target.

use crate::import::Import;
use crate::stacks::StackKind;
use webtune_engine::Workload;

/// What the lab loads: one of its stacks, or a private copy of a config of the user's.
#[derive(Clone, Copy)]
pub enum Served<'a> {
    Stack(StackKind),
    Imported(&'a Import),
}

/// What the lab loads when no path is given after --: its base with a scenario (the
/// scenario's requests carry the paths); the lab's CPU-bound PHP page where PHP serves it
/// (a PHP stack, or an imported php-fpm config behind the lab's nginx); else a lab stack's
/// empty GIF, or an imported site's root.
pub fn default_path(served: Served, workload: &Workload) -> &'static str {
    let php = match served {
        Served::Stack(stack) => stack.has_php(),
        Served::Imported(import) => import.serves_php(),
    };
    if workload.scenario().is_some() {
        ""
    } else if php {
        "/cpu/2000"
    } else if let Served::Stack(_) = served {
        "/empty.gif"
    } else {
        "/"
    }
}

/// Why a path after -- cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("give a path after -- (e.g. /cpu/2000), not a URL: the lab picks the address")]
    Url,
    #[error("the path after -- must start with '/', e.g. /empty.gif")]
    NotAbsolute,
}

/// The path to load on a stack, as given after -- (or `default_path`): it must start with
/// '/' (the lab picks the address, so a full URL is refused).
pub fn load_path(given: Option<&str>, default_path: &str) -> Result<String, PathError> {
    let path = given.unwrap_or(default_path);
    if path.is_empty() {
        return Ok(String::new());
    }
    if path.contains("://") {
        return Err(PathError::Url);
    }
    if !path.starts_with('/') {
        return Err(PathError::NotAbsolute);
    }
    Ok(path.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_loads_its_gif_or_php_page_and_a_url_is_refused() {
        let plain = Workload::request();
        assert_eq!(
            default_path(Served::Stack(StackKind::Nginx), &plain),
            "/empty.gif"
        );
        assert_eq!(
            default_path(Served::Stack(StackKind::NginxPhpFpm), &plain),
            "/cpu/2000"
        );
        assert_eq!(load_path(None, "/x").unwrap(), "/x");
        assert_eq!(load_path(Some(""), "/x").unwrap(), "");
        assert_eq!(
            load_path(Some("http://h/"), "/x").unwrap_err(),
            PathError::Url
        );
        assert_eq!(
            load_path(Some("cpu"), "/x").unwrap_err(),
            PathError::NotAbsolute
        );
    }
}
