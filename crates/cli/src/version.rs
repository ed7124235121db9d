//! What `webtune -V` says: the package version and the commit the binary was built from (from
//! the build script; "unknown" outside a git checkout). `--version` adds what the engine was
//! built with, which only the binary knows (`Vocabulary::long_version`).

/// `-V`: `0.1.0 (commit 0123456789ab)`.
pub const SHORT: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("WEBTUNE_COMMIT"),
    ")"
);
