//! Opting out of a test's requirement, by name. A test that needs something this host may
//! lack (root, a server package, a browser) fails without it, unless the run names it in
//! `WEBTUNE_SKIP` (`WEBTUNE_SKIP=root,mariadb cargo test`); then the test prints which
//! opt-out it used and passes without running. `WEBTUNE_SKIP_BROWSER=1` is the older
//! spelling of `browser`. One list of names for every crate's tests.

/// The names `WEBTUNE_SKIP` may hold, with how to get each.
pub const REQUIREMENTS: [(&str, &str); 10] = [
    (
        "root",
        "run the tests as root (network namespaces, sysctls, mknod)",
    ),
    ("nginx", "apt-get install nginx-light"),
    ("apache2", "apt-get install apache2 libapache2-mod-php"),
    ("php-fpm", "apt-get install php-fpm"),
    ("mariadb", "apt-get install mariadb-server php-mysql"),
    ("browser", "apt-get install chromium"),
    (
        "postfix",
        "apt-get install postfix (for smtp-sink and smtp-source; preseed \"No configuration\")",
    ),
    ("postal", "apt-get install postal"),
    ("postmark", "apt-get install postmark"),
    (
        "slurm",
        "apt-get install slurmctld slurmd slurm-client munge (the test runs a private cluster)",
    ),
];

/// The test found `name` missing (`why` says how): returns, after printing the opt-out used,
/// when the run opts out of `name`; panics with the fix and the opt-out otherwise. The test
/// returns right after.
#[track_caller]
pub fn opt_out(name: &str, why: &str) {
    match opted_out(name) {
        Some(how) => eprintln!("skipped ({how}): {why}"),
        None => {
            let fix = REQUIREMENTS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, fix)| *fix)
                .unwrap_or_else(|| panic!("opt_out({name:?}): not one of {REQUIREMENTS:?}"));
            panic!(
                "{why}: this test cannot run. To run it: {fix}, as `bash .ci/run` does; or \
                 opt out with WEBTUNE_SKIP={name}"
            )
        }
    }
}

/// How the run opts out of `name` ("WEBTUNE_SKIP=nginx,root"), if it does. An unknown name
/// in `WEBTUNE_SKIP` is a mistake and panics, so that a typo never skips in silence.
pub fn opted_out(name: &str) -> Option<String> {
    let list = std::env::var("WEBTUNE_SKIP").unwrap_or_default();
    for named in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        assert!(
            REQUIREMENTS.iter().any(|(n, _)| *n == named),
            "WEBTUNE_SKIP names {named:?}, which no test needs; the names: {}",
            REQUIREMENTS.map(|(n, _)| n).join(", ")
        );
        if named == name {
            return Some(format!("WEBTUNE_SKIP={list}"));
        }
    }
    let legacy = std::env::var("WEBTUNE_SKIP_BROWSER");
    (name == "browser" && legacy.as_deref() == Ok("1")).then(|| "WEBTUNE_SKIP_BROWSER=1".into())
}
