//! What `webtune --version` says: `-V`'s line (the grammar's, `webtune_cli::version`), then
//! what the engine was built with (TLS provider, HTTP versions, I/O backend).

use std::sync::LazyLock;
use webtune_engine::build_info;

pub use webtune_cli::version::SHORT;

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
