//! A hostile `--result` file meets its cap: refused in one line naming the cap, quickly,
//! never read into gigabytes. (The config readers' caps are tested with the readers, in
//! crates/conf/tests/limits.rs.)

use std::path::Path;
use std::time::{Duration, Instant};
use webtune_advise::AdviseError;

/// The refusal's text, asserting it came quickly and is one line.
fn refused(read: impl FnOnce() -> Result<(), AdviseError>) -> String {
    let began = Instant::now();
    let e = read().expect_err("refused").to_string();
    assert!(began.elapsed() < Duration::from_secs(10), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    e
}

#[test]
fn an_endless_result_file_is_cut_at_its_cap() {
    let e = refused(|| webtune_advise::Evidence::from_file(Path::new("/dev/zero")).map(drop));
    assert_eq!(
        e,
        "/dev/zero: larger than 256 MiB, the cap on a --result file"
    );
}
