//! The forum's data and its private MariaDB: generation is deterministic (same seed, same
//! checksum; another seed, another checksum), and a private instance starts from the
//! cached data, answers, and stops leaving no process behind.

mod support;

use std::path::PathBuf;
use webtune_lab::forum::{self, dataset, dbparams, DbOptions, ForumDatabase};

#[test]
fn same_seed_same_data_other_seed_other_data() {
    let a = forum::data::checksum(2_000, 1).unwrap();
    let b = forum::data::checksum(2_000, 1).unwrap();
    let c = forum::data::checksum(2_000, 2).unwrap();
    let d = forum::data::checksum(2_001, 1).unwrap();
    assert_eq!(a, b, "the same seed must give the same data");
    assert_ne!(a, c, "another seed must give other data");
    assert_ne!(a, d, "another size must give other data");

    // The files written are exactly the bytes the checksum covers.
    let dir = scratch_dir("generate");
    let summary = forum::data::generate(2_000, 1, &dir).unwrap();
    assert_eq!(summary.checksum, a);
    let written: u64 = forum::data::TABLES
        .iter()
        .map(|t| {
            std::fs::metadata(dir.join(format!("{t}.tsv")))
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(written, summary.bytes);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_sizes_are_refused_with_the_range() {
    let err = forum::data::checksum(5, 1).unwrap_err().to_string();
    assert!(err.contains("100..="), "{err}");
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("webtune-forum-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mariadb_installed() -> bool {
    forum::DbPrograms::discover().is_ok()
}

#[test]
fn private_mariadb_starts_from_the_cache_answers_and_stops() {
    if !mariadb_installed() {
        support::opt_out::opt_out("mariadb", "mariadb-server is not installed");
        return;
    }
    let mut steps = Vec::new();
    let data = dataset::ensure(2_000, 11, &DbOptions::database(), &mut |s| {
        steps.push(s.to_string())
    })
    .unwrap();
    // A second call comes from the cache.
    let again = dataset::ensure(2_000, 11, &DbOptions::database(), &mut |_| {}).unwrap();
    assert!(!again.built_now);
    assert_eq!(again.summary, data.summary);

    let settings = dbparams::settings_for(&["db.max_connections=40".into()]).unwrap();
    let db = ForumDatabase::start(&data, &settings, DbOptions::database()).unwrap();
    let server = db.database();
    let pids = server.processes();
    assert_eq!(pids.len(), 1, "one mariadbd: {pids:?}");
    let counts = server
        .admin_sql("SELECT COUNT(*) FROM forum.posts; SELECT COUNT(*) FROM forum.topics; SELECT @@max_connections, @@bind_address;")
        .unwrap();
    let lines: Vec<&str> = counts.lines().collect();
    assert_eq!(lines[0], "2000");
    assert_eq!(lines[1], data.summary.shape.topics.to_string());
    assert_eq!(lines[2], "40\t127.0.0.1");
    // The pages' account reads and cannot write.
    let config = db.app_config().unwrap();
    assert!(config.contains(&server.socket().display().to_string()));
    let dir = server.dir().to_path_buf();
    db.stop().unwrap();
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map(|s| s.contains(") Z "))
                    .unwrap_or(true),
            "mariadbd {pid} is still running"
        );
    }
    assert!(!dir.exists(), "{} was not removed", dir.display());
}

#[test]
fn shipped_scenario_matches_seed_003_data() {
    let shipped = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/scenarios/forum.toml"),
    )
    .unwrap();
    let shape = forum::data::Shape::for_posts(forum::data::SEED_003_POSTS).unwrap();
    let rendered = forum::app::scenario(&shape, "http://127.0.0.1:8080");
    for line in rendered.lines().filter(|l| {
        l.starts_with("path") || l.starts_with("weight") || l.starts_with("body_contains")
    }) {
        assert!(shipped.contains(line), "forum.toml lacks {line:?}");
    }
}

/// The logged-in scenario and its accounts file, as shipped, are what the generator renders
/// for seed 003's forum (150,000 posts, the default seed): regenerate both with
/// `WEBTUNE_WRITE_SHIPPED=1 cargo test -p webtune-lab --test forum_data shipped_users`.
#[test]
fn shipped_users_scenario_and_accounts_match_seed_003_data() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/scenarios");
    let shape = forum::data::Shape::for_posts(forum::data::SEED_003_POSTS).unwrap();
    let seed = forum::data::DEFAULT_SEED;
    let scenario = forum::app::users_scenario(&shape, "http://127.0.0.1:8080", "forum-users.csv");
    let accounts = forum::app::users_csv(&shape, seed);
    if std::env::var_os("WEBTUNE_WRITE_SHIPPED").is_some() {
        std::fs::write(dir.join("forum-users.toml"), &scenario).unwrap();
        std::fs::write(dir.join("forum-users.csv"), &accounts).unwrap();
    }
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    assert_eq!(
        read("forum-users.toml"),
        scenario,
        "forum-users.toml is stale"
    );
    assert_eq!(
        read("forum-users.csv"),
        accounts,
        "forum-users.csv is stale"
    );
    assert_eq!(accounts.lines().count() as u64, shape.users + 1);
}

#[test]
fn lab_clean_reaps_a_database_whose_owner_is_gone() {
    if !mariadb_installed() {
        support::opt_out::opt_out("mariadb", "mariadb-server is not installed");
        return;
    }
    let data = dataset::ensure(2_000, 11, &DbOptions::database(), &mut |_| {}).unwrap();
    let db = ForumDatabase::start(
        &data,
        &dbparams::settings_for(&[]).unwrap(),
        DbOptions::database(),
    )
    .unwrap();
    let dir = db.database().dir().to_path_buf();
    let pids = db.database().processes();
    assert_eq!(pids.len(), 1, "{pids:?}");
    // Make the registry entry look like a killed webtune's: same pid, another start time.
    let root = webtune_lab::registry::lab_root().unwrap();
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let entry_path = root.join("registry").join(format!("{id}.json"));
    let mut entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&entry_path).unwrap()).unwrap();
    entry["owner_start_ticks"] = serde_json::json!(1);
    std::fs::write(&entry_path, entry.to_string()).unwrap();

    let report = webtune_lab::registry::clean_stale(&root);
    assert!(
        report.reaped.iter().any(|line| line.contains(&id)),
        "{report:?}"
    );
    assert!(report.survivors.is_empty(), "{report:?}");
    assert!(db.database().processes().is_empty());
    assert!(!dir.exists());
    assert!(!entry_path.exists());
    // Stopping what was already reaped is not an error.
    db.stop().unwrap();
}

#[test]
fn a_copy_of_your_my_cnf_runs_privately_on_the_forums_data() {
    use webtune_conf::config::Directive;
    use webtune_lab::forum::DbConfig;
    use webtune_lab::import::{ConfigTree, Import, Server};
    if !mariadb_installed() {
        support::opt_out::opt_out("mariadb", "mariadb-server is not installed");
        return;
    }
    let data = dataset::ensure(2_000, 11, &DbOptions::database(), &mut |_| {}).unwrap();
    let dir = scratch_dir("my-cnf");
    let main = dir.join("my.cnf");
    // Production paths that the copy must not use, and a tuning value it must keep.
    let text = "[mysqld]\nmax_connections = 33\nsocket = /run/mysqld/webtune-test.sock\n\
                datadir = /var/lib/webtune-test-none\nport = 3306\n";
    std::fs::write(&main, text).unwrap();
    let located = |name: &str, value: &str, line: usize| Directive {
        name: name.into(),
        args: vec![value.into()],
        file: main.clone(),
        line,
        context: vec!["mysqld".into()],
        block: 0,
    };
    let tree = ConfigTree {
        server: Server::MariaDb,
        main: main.clone(),
        root: dir.clone(),
        copy_root: None,
        files: vec![main.clone()],
        directives: vec![
            located("max_connections", "33", 2),
            located("socket", "/run/mysqld/webtune-test.sock", 3),
            located("datadir", "/var/lib/webtune-test-none", 4),
            located("port", "3306", 5),
        ],
        env: Default::default(),
    };
    // Names the import sets itself are refused; the database's options are db.NAME.
    let refused = Import::new(tree.clone(), &[("db.datadir".into(), "/x".into())]);
    assert!(refused
        .unwrap_err()
        .to_string()
        .contains("sets db.datadir itself"));
    assert!(Import::new(tree.clone(), &[("thread_cache_size".into(), "7".into())]).is_err());
    let import = Import::new(tree, &[("db.thread_cache_size".into(), "7".into())]).unwrap();
    let db = ForumDatabase::start_with(
        &data,
        &DbConfig::Imported(Box::new(import)),
        DbOptions::database(),
    )
    .unwrap();
    let server = db.database();
    let row = server
        .admin_sql("SELECT @@max_connections, @@thread_cache_size, @@datadir, @@port, @@log_bin, (SELECT COUNT(*) FROM forum.posts);")
        .unwrap();
    let fields: Vec<&str> = row.trim().split('\t').collect();
    assert_eq!(fields[0], "33", "{row}");
    assert_eq!(fields[1], "7", "{row}");
    assert!(
        fields[2].starts_with(&server.dir().display().to_string()),
        "{row}"
    );
    assert_ne!(fields[3], "3306", "{row}");
    assert_eq!(fields[4], "0", "{row}");
    assert_eq!(fields[5], "2000", "{row}");
    let instance = server.dir().to_path_buf();
    db.stop().unwrap();
    assert!(!instance.exists());
    assert!(!std::path::Path::new("/run/mysqld/webtune-test.sock").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
