//! What `webtune -V` and `--version` say: the package version and the commit the binary was
//! built from (from the build script; "unknown" outside a git checkout), and for
//! `--version` also what the engine was built with (TLS provider, HTTP versions, I/O backend).

use std::sync::LazyLock;
use webtune_engine::build_info;

/// `-V`: `0.1.0 (commit 0123456789ab)`.
pub const SHORT: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("WEBTUNE_COMMIT"),
    ")"
);

static LONG: LazyLock<String> = LazyLock::new(|| {
    let mut text = SHORT.to_string();
    for (name, value) in build_info::lines() {
        text.push_str(&format!("\n{name}: {value}"));
    }
    text
});

/// `--version`: the short line, then one `name: value` line per built-in feature.
pub fn long() -> &'static str {
    LONG.as_str()
}
