#!/usr/bin/env bash
# Build webtune's Debian package: the release binary, then the man pages (one per command)
# and the bash/zsh/fish completions written by that binary from the same clap definitions
# as --help, then `cargo deb --no-build`, which packs them as crates/webtune/Cargo.toml's
# [package.metadata.deb] lists. The .deb's path is the last line printed.
#   bash deploy/deb.sh && sudo dpkg -i target/debian/webtune_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo-deb >/dev/null 2>&1; then
    echo "== installing cargo-deb" >&2
    cargo install cargo-deb --locked >&2
fi

echo "== release build" >&2
cargo build --release -p webtune >&2

target=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
release="$target/release"
echo "== man pages and completions into $release" >&2
rm -rf "$release/man" "$release/completions"
mkdir -p "$release/completions"
"$release/webtune" man "$release/man" >/dev/null
# Compressed as Debian policy asks (cargo-deb compresses only pages that are not build outputs).
gzip -9n "$release/man"/*.1
for shell in bash zsh fish; do
    "$release/webtune" completions "$shell" >"$release/completions/webtune.$shell"
done

echo "== cargo deb" >&2
# Stripped: the release profile keeps debug info for profiling a source build (perf), which
# would make the installed binary five times larger.
cargo deb -p webtune --no-build --strip
