//! The forum's data: a deterministic generator of categories, forums, users, topics and
//! posts with the shapes of a real board (a few busy forums, skewed topic lengths, a few
//! prolific users, chronological post ids), written as tab-separated files that MariaDB
//! bulk-loads with `LOAD DATA`, and a checksum over exactly those bytes. The same
//! `(posts, seed)` gives the same bytes on every machine: only our own generator
//! (`rng.rs`) and integer arithmetic decide them, never the locale or the clock.
//!
//! A generation is two steps: `board` simulates the board (which forum each topic opens
//! in, thread lengths, post times and authors, the counters that follow), then `tables`
//! writes its rows, with the text from `words`. This file holds the schema, the shape of a
//! forum of N posts and the entry points.

mod board;
mod tables;
mod words;

use crate::LabError;
use board::Board;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;
use words::{CATEGORY_NAMES, FORUM_NAMES};

/// Bumped whenever the schema or the generator's output changes: cached data built by
/// another version is not reused.
pub const SCHEMA_VERSION: u32 = 3;
/// Topics per page of a forum's topic list (phpBB's default is 25).
pub const TOPICS_PER_PAGE: u64 = 25;
/// Posts per page of a thread (phpBB's default is 10; 15 makes pages of tens of KB).
pub const POSTS_PER_PAGE: u64 = 15;
/// Fewest and most posts `generate` accepts.
pub const MIN_POSTS: u64 = 100;
pub const MAX_POSTS: u64 = 20_000_000;
/// The posts of seed 003's forum, and the seed used when none is given (named in the model,
/// where the command-line grammar reads them too).
pub use webtune_model::defaults::{DEFAULT_FORUM_SEED as DEFAULT_SEED, SEED_003_POSTS};

/// The tables, in load order (every foreign key points to an earlier table).
pub const TABLES: [&str; 5] = ["categories", "forums", "users", "topics", "posts"];

/// The schema (InnoDB, utf8mb4). Counters are denormalised into forums and topics as
/// phpBB does (`forum_posts`, `topic_replies`, `forum_last_post_id`), so the index page
/// reads one row per forum; the indexes are the ones the three pages need. Two tables are
/// not generated: `sessions` (a logged-in user's session and its form token, as phpBB's
/// `phpbb_sessions`: read on every page a logged-in user views, written at login and at
/// most once a minute after) and `credentials` (filled from `users` by `CREDENTIALS_SQL`
/// after the load). New posts take ids after the generated ones (`AUTO_INCREMENT`).
pub const SCHEMA_SQL: &str = "\
CREATE TABLE categories (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  position INT UNSIGNED NOT NULL,
  name VARCHAR(100) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE forums (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  category_id INT UNSIGNED NOT NULL,
  position INT UNSIGNED NOT NULL,
  name VARCHAR(100) NOT NULL,
  description VARCHAR(255) NOT NULL,
  topics INT UNSIGNED NOT NULL,
  posts INT UNSIGNED NOT NULL,
  last_post_id INT UNSIGNED NOT NULL,
  last_post_time INT UNSIGNED NOT NULL,
  last_poster_id INT UNSIGNED NOT NULL,
  last_topic_id INT UNSIGNED NOT NULL,
  KEY category_position (category_id, position)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE users (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  name VARCHAR(60) NOT NULL,
  joined INT UNSIGNED NOT NULL,
  posts INT UNSIGNED NOT NULL,
  location VARCHAR(100) NOT NULL,
  signature VARCHAR(255) NOT NULL,
  UNIQUE KEY name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE topics (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  forum_id INT UNSIGNED NOT NULL,
  title VARCHAR(200) NOT NULL,
  author_id INT UNSIGNED NOT NULL,
  created INT UNSIGNED NOT NULL,
  replies INT UNSIGNED NOT NULL,
  views INT UNSIGNED NOT NULL,
  first_post_id INT UNSIGNED NOT NULL,
  last_post_id INT UNSIGNED NOT NULL,
  last_post_time INT UNSIGNED NOT NULL,
  last_poster_id INT UNSIGNED NOT NULL,
  KEY forum_last_post (forum_id, last_post_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE posts (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  topic_id INT UNSIGNED NOT NULL,
  forum_id INT UNSIGNED NOT NULL,
  user_id INT UNSIGNED NOT NULL,
  posted INT UNSIGNED NOT NULL,
  subject VARCHAR(220) NOT NULL,
  body MEDIUMTEXT NOT NULL,
  KEY topic_post (topic_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE credentials (
  user_id INT UNSIGNED NOT NULL PRIMARY KEY,
  hash CHAR(64) CHARACTER SET ascii NOT NULL
) ENGINE=InnoDB;
CREATE TABLE sessions (
  id CHAR(32) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  user_id INT UNSIGNED NOT NULL,
  form_token CHAR(32) CHARACTER SET ascii NOT NULL,
  created INT UNSIGNED NOT NULL,
  seen INT UNSIGNED NOT NULL,
  KEY user (user_id)
) ENGINE=InnoDB;
";

/// Every generated user's password is `PASSWORD_PREFIX` followed by the user's name (a
/// lab's accounts, published in docs/forum.md; `app::users_csv` lists them). The stored
/// credential is SHA-256 of `name:password` — lighter than phpBB's bcrypt, which a
/// logged-in journey pays once per user.
pub const PASSWORD_PREFIX: &str = "pw-";

/// Fill `credentials` from the loaded `users` (run after the bulk load).
pub fn credentials_sql() -> String {
    format!(
        "INSERT INTO credentials (user_id, hash) \
         SELECT id, SHA2(CONCAT(name, ':{PASSWORD_PREFIX}', name), 256) FROM users;\n"
    )
}

/// The password of the generated user `name`.
pub fn password_for(name: &str) -> String {
    format!("{PASSWORD_PREFIX}{name}")
}

/// How many rows of each kind a forum of `posts` posts has. Seed 003's 150,000 posts give
/// 40 forums in 5 categories, 15,000 topics and 5,000 users; the scenario's id ranges come
/// from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub posts: u64,
    pub topics: u64,
    pub forums: u64,
    pub categories: u64,
    pub users: u64,
}

impl Shape {
    pub fn for_posts(posts: u64) -> Result<Shape, LabError> {
        if !(MIN_POSTS..=MAX_POSTS).contains(&posts) {
            return Err(LabError::OutOfRange {
                name: "posts".into(),
                value: posts.to_string(),
                allowed: format!("{MIN_POSTS}..={MAX_POSTS}"),
            });
        }
        let forums = (posts / 1000).clamp(4, FORUM_NAMES.len() as u64);
        let categories = forums.div_ceil(8).min(CATEGORY_NAMES.len() as u64);
        Ok(Shape {
            posts,
            topics: (posts / 10).max(forums),
            forums,
            categories,
            users: (posts / 30).max(20),
        })
    }

    /// Pages of the busiest forum's topic list would be many; the scenario draws pages
    /// 1..=10 (the viewforum page clamps a page past the end to the last one, as phpBB does).
    pub fn topic_list_pages_drawn(&self) -> u64 {
        10
    }
}

/// What a generation produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataSummary {
    pub shape: Shape,
    pub seed: u64,
    pub schema_version: u32,
    /// FNV-1a 64 over every table's bytes, in `TABLES` order.
    pub checksum: u64,
    /// Bytes of all the tab-separated files together.
    pub bytes: u64,
    /// Posts in the longest topic (the skew shows here).
    pub longest_topic_posts: u64,
}

/// Generate the forum for `(posts, seed)` into `dir` as `TABLE.tsv` files (LOAD DATA's
/// default format: tab-separated, backslash escapes, one row a line).
pub fn generate(posts: u64, seed: u64, dir: &Path) -> Result<DataSummary, LabError> {
    let open = |table: &str| -> Result<std::io::BufWriter<std::fs::File>, LabError> {
        let path = dir.join(format!("{table}.tsv"));
        std::fs::File::create(&path)
            .map(|f| std::io::BufWriter::with_capacity(1 << 20, f))
            .map_err(|e| LabError::io(format!("creating {}", path.display()), e))
    };
    let mut sinks = Vec::new();
    for table in TABLES {
        sinks.push(open(table)?);
    }
    let summary = generate_into(posts, seed, &mut sinks)
        .map_err(|e| LabError::io(format!("writing the forum data into {}", dir.display()), e))?;
    for mut sink in sinks {
        sink.flush()
            .map_err(|e| LabError::io(format!("writing into {}", dir.display()), e))?;
    }
    Ok(summary)
}

/// The checksum of the data `generate(posts, seed, …)` writes, computed without writing
/// anything.
pub fn checksum(posts: u64, seed: u64) -> Result<u64, LabError> {
    let mut sinks: Vec<std::io::Sink> = (0..TABLES.len()).map(|_| std::io::sink()).collect();
    generate_into(posts, seed, &mut sinks)
        .map(|s| s.checksum)
        .map_err(|e| LabError::io("generating the forum data", e))
}

/// The user names of the forum for `(posts, seed)`, user 1 first: the same names the
/// `users` table holds, without generating the rest (the accounts file of
/// `app::users_csv`).
pub fn user_names(shape: &Shape, seed: u64) -> Vec<String> {
    let mut rng = rng_for_users(seed);
    (0..shape.users as usize)
        .map(|u| tables::UserDraw::next(&mut rng, u).name)
        .collect()
}

fn rng_for_users(seed: u64) -> super::rng::ForumRng {
    super::rng::ForumRng::stream(seed, 7)
}

/// Generate every table for `(posts, seed)` into `sinks`, one per table in `TABLES` order.
fn generate_into<W: Write>(posts: u64, seed: u64, sinks: &mut [W]) -> std::io::Result<DataSummary> {
    let shape = Shape::for_posts(posts).map_err(|e| std::io::Error::other(e.to_string()))?;
    if sinks.len() != TABLES.len() {
        return Err(std::io::Error::other("internal: one sink per table"));
    }
    let board = Board::simulate(&shape, seed);
    let written = tables::write(&shape, seed, &board, sinks)?;
    Ok(DataSummary {
        shape,
        seed,
        schema_version: SCHEMA_VERSION,
        checksum: written.checksum,
        bytes: written.bytes,
        longest_topic_posts: written.longest_topic_posts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_follow_seed_003() {
        let s = Shape::for_posts(SEED_003_POSTS).unwrap();
        assert_eq!(
            (s.forums, s.topics, s.users, s.categories),
            (40, 15_000, 5_000, 5)
        );
        assert!(Shape::for_posts(10).is_err());
        let small = Shape::for_posts(2_000).unwrap();
        assert_eq!((small.forums, small.topics, small.categories), (4, 200, 1));
    }

    /// The same `(posts, seed)` gives the same bytes: these checksums were taken before the
    /// generator was split into `board`, `tables` and `words`, and hold after. A change of
    /// the generator's output must bump `SCHEMA_VERSION` and update them.
    #[test]
    fn a_seed_gives_the_bytes_it_always_gave() {
        assert_eq!(
            SCHEMA_VERSION, 3,
            "the output changed: update the checksums below (v3 changed the schema only: \
             sessions, credentials, posts' AUTO_INCREMENT; the rows are v2's)"
        );
        assert_eq!(checksum(100, 1).unwrap(), 0x8c93_7742_eef5_f998);
        assert_eq!(checksum(1_000, 9).unwrap(), 0x41fb_1750_4562_8c5e);
        assert_eq!(checksum(2_000, 1).unwrap(), 0x5478_5f93_e771_f781);
    }

    #[test]
    fn user_names_are_the_users_tables_names() {
        let mut sinks: Vec<Vec<u8>> = vec![Vec::new(); TABLES.len()];
        let summary = generate_into(1_000, 9, &mut sinks).unwrap();
        let from_table: Vec<String> = String::from_utf8(sinks[2].clone())
            .unwrap()
            .lines()
            .map(|row| row.split('\t').nth(1).unwrap().to_string())
            .collect();
        assert_eq!(user_names(&summary.shape, 9), from_table);
    }

    #[test]
    fn rows_and_counts_add_up() {
        let mut sinks: Vec<Vec<u8>> = vec![Vec::new(); TABLES.len()];
        let summary = generate_into(1_000, 9, &mut sinks).unwrap();
        let lines = |i: usize| sinks[i].iter().filter(|b| **b == b'\n').count() as u64;
        assert_eq!(lines(0), summary.shape.categories);
        assert_eq!(lines(1), summary.shape.forums);
        assert_eq!(lines(2), summary.shape.users);
        assert_eq!(lines(3), summary.shape.topics);
        assert_eq!(lines(4), 1_000);
        // Every row has its table's column count.
        for (i, columns) in [(0, 3), (1, 11), (2, 6), (3, 11), (4, 7)] {
            for row in sinks[i].split(|b| *b == b'\n').filter(|r| !r.is_empty()) {
                assert_eq!(row.iter().filter(|b| **b == b'\t').count() + 1, columns);
            }
        }
        // The forums' post counters sum to the posts.
        let forum_posts: u64 = String::from_utf8_lossy(&sinks[1])
            .lines()
            .map(|l| l.split('\t').nth(6).unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(forum_posts, 1_000);
        assert!(summary.longest_topic_posts > 10, "{summary:?}");
        let total: u64 = sinks.iter().map(|s| s.len() as u64).sum();
        assert_eq!(total, summary.bytes);
    }
}
