//! The forum's data: a deterministic generator of categories, forums, users, topics and
//! posts with the shapes of a real board (a few busy forums, skewed topic lengths, a few
//! prolific users, chronological post ids), written as tab-separated files that MariaDB
//! bulk-loads with `LOAD DATA`, and a checksum over exactly those bytes. The same
//! `(posts, seed)` gives the same bytes on every machine: only our own generator
//! (`rng.rs`) and integer arithmetic decide them, never the locale or the clock.

use super::rng::{ForumRng, Zipf};
use crate::LabError;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// Bumped whenever the schema or the generator's output changes: cached data built by
/// another version is not reused.
pub const SCHEMA_VERSION: u32 = 2;
/// Topics per page of a forum's topic list (phpBB's default is 25).
pub const TOPICS_PER_PAGE: u64 = 25;
/// Posts per page of a thread (phpBB's default is 10; 15 makes pages of tens of KB).
pub const POSTS_PER_PAGE: u64 = 15;
/// Fewest and most posts `generate` accepts.
pub const MIN_POSTS: u64 = 100;
pub const MAX_POSTS: u64 = 20_000_000;
/// The posts of seed 003's forum.
pub const SEED_003_POSTS: u64 = 150_000;
/// The seed used when none is given.
pub const DEFAULT_SEED: u64 = 3;

/// The tables, in load order (every foreign key points to an earlier table).
pub const TABLES: [&str; 5] = ["categories", "forums", "users", "topics", "posts"];

/// The schema (InnoDB, utf8mb4). Counters are denormalised into forums and topics as
/// phpBB does (`forum_posts`, `topic_replies`, `forum_last_post_id`), so the index page
/// reads one row per forum; the indexes are the ones the three pages need.
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
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  topic_id INT UNSIGNED NOT NULL,
  forum_id INT UNSIGNED NOT NULL,
  user_id INT UNSIGNED NOT NULL,
  posted INT UNSIGNED NOT NULL,
  subject VARCHAR(220) NOT NULL,
  body MEDIUMTEXT NOT NULL,
  KEY topic_post (topic_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
";

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

/// FNV-1a, 64 bits (Fowler, Noll, Vo; <http://www.isthe.com/chongo/tech/comp/fnv/>).
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn update(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(Self::PRIME);
        }
        self.0 = h;
    }
}

/// Rows go through here: escaped into a line buffer, hashed, then written.
struct TableWriter<'a, W: Write> {
    sink: &'a mut W,
    hash: &'a mut Fnv,
    bytes: &'a mut u64,
    line: Vec<u8>,
}

impl<W: Write> TableWriter<'_, W> {
    fn text(&mut self, value: &str) -> &mut Self {
        self.separator();
        for b in value.bytes() {
            match b {
                b'\\' => self.line.extend_from_slice(b"\\\\"),
                b'\t' => self.line.extend_from_slice(b"\\t"),
                b'\n' => self.line.extend_from_slice(b"\\n"),
                b'\r' => self.line.extend_from_slice(b"\\r"),
                _ => self.line.push(b),
            }
        }
        self
    }

    fn num(&mut self, value: u64) -> &mut Self {
        self.separator();
        // itoa by hand keeps this allocation-free.
        let mut digits = [0u8; 20];
        let mut n = value;
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.line.extend_from_slice(&digits[i..]);
        self
    }

    fn separator(&mut self) {
        if !self.line.is_empty() {
            self.line.push(b'\t');
        }
    }

    fn end_row(&mut self) -> std::io::Result<()> {
        self.line.push(b'\n');
        self.hash.update(&self.line);
        *self.bytes += self.line.len() as u64;
        self.sink.write_all(&self.line)?;
        self.line.clear();
        Ok(())
    }
}

/// 2019-01-01T00:00:00Z: the board opens.
const BOARD_OPENS: u64 = 1_546_300_800;
/// Five years of activity.
const BOARD_SPAN: u64 = 5 * 365 * 86_400;

struct TopicFacts {
    forum: u32,
    posts: u32,
    created: u64,
    first_post: u32,
    last_post: u32,
    last_time: u64,
    author: u32,
    last_poster: u32,
}

#[derive(Default, Clone)]
struct ForumFacts {
    topics: u64,
    posts: u64,
    last_post: u32,
    last_time: u64,
    last_poster: u32,
    last_topic: u32,
}

fn generate_into<W: Write>(posts: u64, seed: u64, sinks: &mut [W]) -> std::io::Result<DataSummary> {
    let shape = Shape::for_posts(posts).map_err(|e| std::io::Error::other(e.to_string()))?;
    if sinks.len() != TABLES.len() {
        return Err(std::io::Error::other("internal: one sink per table"));
    }
    let forums = shape.forums as usize;
    let topics = shape.topics as usize;
    let users = shape.users as usize;

    // Forums: a few busy ones. Zipf rank → forum id through a seeded permutation, so the
    // busy forums are spread over the categories instead of being forums 1, 2, 3.
    let mut rng = ForumRng::stream(seed, 1);
    let mut busy_order: Vec<u32> = (0..forums as u32).collect();
    for i in (1..busy_order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        busy_order.swap(i, j);
    }
    let forum_popularity = Zipf::new(forums, 1.0);

    // Topics, in the order they were opened (ids grow with time). The first `forums`
    // topics open one forum each, so no forum is empty.
    let mut rng = ForumRng::stream(seed, 2);
    let topic_forum: Vec<u32> = (0..topics)
        .map(|t| {
            if t < forums {
                t as u32
            } else {
                busy_order[forum_popularity.sample(&mut rng)]
            }
        })
        .collect();

    // Topic lengths: one post each, the rest spread by heavy-tailed weights (Pareto,
    // shape 1.2): most threads are short, a few run to hundreds of pages.
    let mut rng = ForumRng::stream(seed, 3);
    let weights: Vec<f64> = (0..topics).map(|_| rng.pareto(1.2).min(5_000.0)).collect();
    let total_weight: f64 = weights.iter().sum();
    let extra = shape.posts - shape.topics;
    let mut lengths: Vec<u64> = weights
        .iter()
        .map(|w| 1 + (extra as f64 * w / total_weight).floor() as u64)
        .collect();
    let mut assigned: u64 = lengths.iter().sum();
    let mut cursor = rng.below(topics as u64) as usize;
    while assigned < shape.posts {
        lengths[cursor] += 1;
        assigned += 1;
        cursor = (cursor + 1) % topics;
    }
    while assigned > shape.posts {
        // Floating-point rounding can only overshoot by a handful; take from long topics.
        if lengths[cursor] > 1 {
            lengths[cursor] -= 1;
            assigned -= 1;
        }
        cursor = (cursor + 1) % topics;
    }

    // Post times: a topic opens at its place on the time line; replies follow at
    // exponential gaps (mean 3 hours). Post ids are then given in time order, as a board
    // gives them, so a thread's posts lie scattered through the posts table.
    let mut rng = ForumRng::stream(seed, 4);
    let slot = BOARD_SPAN / shape.topics;
    let mut timeline: Vec<(u64, u32, u32)> = Vec::with_capacity(shape.posts as usize);
    let mut created = Vec::with_capacity(topics);
    for (t, &length) in lengths.iter().enumerate() {
        let start = BOARD_OPENS + slot * t as u64 + rng.below(slot.max(1));
        created.push(start);
        let mut time = start;
        for k in 0..length {
            if k > 0 {
                time += 1 + rng.exponential(3.0 * 3600.0) as u64;
            }
            timeline.push((time, t as u32, k as u32));
        }
    }
    timeline.sort_unstable();

    // Authors: a few prolific users (Zipf over users).
    let mut rng = ForumRng::stream(seed, 5);
    let user_activity = Zipf::new(users, 1.05);
    let mut post_author = Vec::with_capacity(timeline.len());
    let mut topic_facts: Vec<TopicFacts> = (0..topics)
        .map(|t| TopicFacts {
            forum: topic_forum[t],
            posts: 0,
            created: created[t],
            first_post: 0,
            last_post: 0,
            last_time: 0,
            author: 0,
            last_poster: 0,
        })
        .collect();
    let mut forum_facts = vec![ForumFacts::default(); forums];
    let mut user_posts = vec![0u64; users];
    for (index, &(time, topic, _)) in timeline.iter().enumerate() {
        let id = index as u32 + 1;
        let author = user_activity.sample(&mut rng) as u32;
        post_author.push(author);
        user_posts[author as usize] += 1;
        let facts = &mut topic_facts[topic as usize];
        if facts.posts == 0 {
            facts.first_post = id;
            facts.author = author;
        }
        facts.posts += 1;
        facts.last_post = id;
        facts.last_time = time;
        facts.last_poster = author;
        let forum = &mut forum_facts[facts.forum as usize];
        forum.posts += 1;
        forum.last_post = id;
        forum.last_time = time;
        forum.last_poster = author;
        forum.last_topic = topic;
    }
    for facts in &topic_facts {
        forum_facts[facts.forum as usize].topics += 1;
    }

    let mut hash = Fnv(Fnv::OFFSET);
    let mut bytes = 0u64;
    let mut text_rng = ForumRng::stream(seed, 6);
    let mut words = Words;
    let (categories_sink, rest) = sinks.split_at_mut(1);
    let (forums_sink, rest) = rest.split_at_mut(1);
    let (users_sink, rest) = rest.split_at_mut(1);
    let (topics_sink, posts_sink) = rest.split_at_mut(1);
    macro_rules! writer {
        ($sink:expr) => {
            TableWriter {
                sink: &mut $sink[0],
                hash: &mut hash,
                bytes: &mut bytes,
                line: Vec::with_capacity(4096),
            }
        };
    }

    {
        let mut w = writer!(categories_sink);
        for c in 0..shape.categories {
            w.num(c + 1).num(c + 1).text(CATEGORY_NAMES[c as usize]);
            w.end_row()?;
        }
    }
    {
        let mut w = writer!(forums_sink);
        let per_category = shape.forums.div_ceil(shape.categories);
        for (f, facts) in forum_facts.iter().enumerate() {
            let f = f as u64;
            let description = words.sentence(&mut text_rng, 8, 16);
            w.num(f + 1)
                .num(f / per_category + 1)
                .num(f % per_category + 1)
                .text(FORUM_NAMES[f as usize])
                .text(&description)
                .num(facts.topics)
                .num(facts.posts)
                .num(u64::from(facts.last_post))
                .num(facts.last_time)
                .num(u64::from(facts.last_poster) + 1)
                .num(u64::from(facts.last_topic) + 1);
            w.end_row()?;
        }
    }
    {
        let mut w = writer!(users_sink);
        let mut rng = ForumRng::stream(seed, 7);
        for (u, &count) in user_posts.iter().enumerate() {
            let name = format!(
                "{}{}{}",
                pick(&mut rng, ADJECTIVES),
                pick(&mut rng, ANIMALS),
                u + 1
            );
            let joined = BOARD_OPENS - 365 * 86_400 + rng.below(365 * 86_400);
            let location = if rng.below(3) == 0 {
                ""
            } else {
                pick(&mut rng, PLACES)
            };
            let signature = if rng.below(5) < 2 {
                words.sentence(&mut text_rng, 4, 14)
            } else {
                String::new()
            };
            w.num(u as u64 + 1)
                .text(&name)
                .num(joined)
                .num(count)
                .text(location)
                .text(&signature);
            w.end_row()?;
        }
    }
    let mut titles = Vec::with_capacity(topics);
    let mut longest_topic_posts = 0;
    {
        let mut w = writer!(topics_sink);
        let mut rng = ForumRng::stream(seed, 8);
        for (t, facts) in topic_facts.iter().enumerate() {
            let title = words.title(&mut text_rng);
            let replies = u64::from(facts.posts) - 1;
            longest_topic_posts = longest_topic_posts.max(u64::from(facts.posts));
            let views = replies * rng.between(5, 40) + rng.between(10, 500);
            w.num(t as u64 + 1)
                .num(u64::from(facts.forum) + 1)
                .text(&title)
                .num(u64::from(facts.author) + 1)
                .num(facts.created)
                .num(replies)
                .num(views)
                .num(u64::from(facts.first_post))
                .num(u64::from(facts.last_post))
                .num(facts.last_time)
                .num(u64::from(facts.last_poster) + 1);
            w.end_row()?;
            titles.push(title);
        }
    }
    {
        let mut w = writer!(posts_sink);
        let mut body = String::with_capacity(8192);
        let mut subject = String::with_capacity(256);
        for (index, &(time, topic, k)) in timeline.iter().enumerate() {
            let facts = &topic_facts[topic as usize];
            subject.clear();
            if k > 0 {
                subject.push_str("Re: ");
            }
            subject.push_str(&titles[topic as usize]);
            words.body(&mut text_rng, &mut body);
            w.num(index as u64 + 1)
                .num(u64::from(topic) + 1)
                .num(u64::from(facts.forum) + 1)
                .num(u64::from(post_author[index]) + 1)
                .num(time)
                .text(&subject)
                .text(&body);
            w.end_row()?;
        }
    }
    Ok(DataSummary {
        shape,
        seed,
        schema_version: SCHEMA_VERSION,
        checksum: hash.0,
        bytes,
        longest_topic_posts,
    })
}

fn pick(rng: &mut ForumRng, list: &[&'static str]) -> &'static str {
    list[rng.below(list.len() as u64) as usize]
}

/// Text from a fixed vocabulary: titles, sentences, and post bodies whose length varies a
/// lot (most posts a paragraph or two, some long), with the occasional quote or code line
/// holding characters a page must escape (`<`, `>`, `&`, quotes).
struct Words;

impl Words {
    fn sentence(&mut self, rng: &mut ForumRng, min: u64, max: u64) -> String {
        let mut s = String::new();
        self.push_sentence(rng, min, max, &mut s);
        s
    }

    fn push_sentence(&mut self, rng: &mut ForumRng, min: u64, max: u64, out: &mut String) {
        let count = rng.between(min, max);
        for i in 0..count {
            let word = pick(rng, VOCABULARY);
            if i == 0 {
                let mut chars = word.chars();
                if let Some(first) = chars.next() {
                    out.extend(first.to_uppercase());
                    out.push_str(chars.as_str());
                }
            } else {
                out.push(' ');
                out.push_str(word);
                if rng.below(12) == 0 {
                    out.push(',');
                }
            }
        }
        out.push(match rng.below(8) {
            0 => '?',
            1 => '!',
            _ => '.',
        });
    }

    fn title(&mut self, rng: &mut ForumRng) -> String {
        let mut s = String::new();
        let count = rng.between(3, 9);
        for i in 0..count {
            if i > 0 {
                s.push(' ');
            }
            let word = pick(rng, VOCABULARY);
            if i == 0 {
                let mut chars = word.chars();
                if let Some(first) = chars.next() {
                    s.extend(first.to_uppercase());
                    s.push_str(chars.as_str());
                }
            } else {
                s.push_str(word);
            }
        }
        if rng.below(4) == 0 {
            s.push('?');
        }
        s
    }

    fn body(&mut self, rng: &mut ForumRng, out: &mut String) {
        out.clear();
        // Paragraphs: 1 + geometric (mean about 2.5), so a few posts are long.
        let mut paragraphs = 1;
        while paragraphs < 12 && rng.below(100) < 60 {
            paragraphs += 1;
        }
        for p in 0..paragraphs {
            if p > 0 {
                out.push_str("\n\n");
            }
            match rng.below(14) {
                0 => {
                    out.push_str("> ");
                    self.push_sentence(rng, 6, 20, out);
                }
                1 => out.push_str(pick(rng, CODE_LINES)),
                _ => {
                    let sentences = rng.between(1, 5);
                    for s in 0..sentences {
                        if s > 0 {
                            out.push(' ');
                        }
                        self.push_sentence(rng, 5, 18, out);
                    }
                }
            }
        }
    }
}

const CATEGORY_NAMES: [&str; 5] = [
    "General",
    "Servers and systems",
    "Development",
    "Hardware",
    "Off topic",
];

const FORUM_NAMES: [&str; 40] = [
    "Announcements",
    "Introductions",
    "Site feedback",
    "Help and support",
    "FAQ",
    "Rules & guidelines",
    "Events",
    "Jobs",
    "Apache httpd",
    "nginx",
    "Load balancing",
    "Caching",
    "Linux",
    "FreeBSD",
    "Solaris",
    "Networking",
    "PHP",
    "Perl",
    "Python",
    "C and C++",
    "JavaScript",
    "SQL & databases",
    "Version control",
    "Testing",
    "CPUs",
    "Memory",
    "Disks and RAID",
    "Network cards",
    "Laptops",
    "Monitors",
    "Power & cooling",
    "Buying advice",
    "The lounge",
    "Music",
    "Films",
    "Books",
    "Games",
    "Sports",
    "Travel",
    "Photography",
];

const VOCABULARY: &[&str] = &[
    "server",
    "apache",
    "nginx",
    "process",
    "thread",
    "request",
    "response",
    "latency",
    "throughput",
    "config",
    "module",
    "worker",
    "prefork",
    "keepalive",
    "timeout",
    "socket",
    "kernel",
    "memory",
    "cache",
    "query",
    "index",
    "table",
    "database",
    "forum",
    "page",
    "load",
    "test",
    "benchmark",
    "result",
    "error",
    "log",
    "file",
    "disk",
    "network",
    "card",
    "driver",
    "update",
    "version",
    "release",
    "patch",
    "bug",
    "fix",
    "problem",
    "solution",
    "question",
    "answer",
    "idea",
    "thanks",
    "help",
    "please",
    "maybe",
    "really",
    "quite",
    "very",
    "much",
    "more",
    "less",
    "fast",
    "slow",
    "faster",
    "slower",
    "big",
    "small",
    "new",
    "old",
    "good",
    "bad",
    "better",
    "worse",
    "same",
    "different",
    "simple",
    "hard",
    "easy",
    "strange",
    "normal",
    "default",
    "tuned",
    "untuned",
    "every",
    "some",
    "any",
    "no",
    "all",
    "most",
    "few",
    "many",
    "one",
    "two",
    "three",
    "ten",
    "hundred",
    "thousand",
    "the",
    "a",
    "an",
    "and",
    "or",
    "but",
    "if",
    "when",
    "then",
    "because",
    "so",
    "with",
    "without",
    "for",
    "from",
    "to",
    "in",
    "on",
    "at",
    "by",
    "of",
    "after",
    "before",
    "under",
    "over",
    "behind",
    "between",
    "is",
    "was",
    "are",
    "were",
    "be",
    "have",
    "has",
    "had",
    "do",
    "does",
    "did",
    "can",
    "could",
    "should",
    "would",
    "will",
    "run",
    "runs",
    "ran",
    "start",
    "stop",
    "restart",
    "reload",
    "measure",
    "measured",
    "change",
    "changed",
    "try",
    "tried",
    "set",
    "think",
    "know",
    "see",
    "saw",
    "found",
    "use",
    "used",
    "need",
    "want",
    "work",
    "works",
    "worked",
    "break",
    "broke",
    "read",
    "write",
    "wrote",
    "send",
    "sent",
    "receive",
    "wait",
    "waited",
    "i",
    "you",
    "we",
    "they",
    "it",
    "this",
    "that",
    "my",
    "your",
    "our",
    "their",
    "here",
    "there",
    "now",
    "today",
    "yesterday",
    "week",
    "month",
    "year",
    "again",
    "still",
    "already",
    "just",
    "only",
    "also",
    "too",
    "not",
    "never",
    "always",
    "often",
    "sometimes",
    "percent",
    "second",
    "minute",
    "hour",
    "machine",
    "box",
    "host",
    "client",
    "user",
    "admin",
    "root",
    "script",
    "shell",
    "command",
    "option",
    "flag",
    "value",
    "number",
    "limit",
    "queue",
    "backlog",
    "connection",
    "header",
    "body",
    "length",
    "size",
    "byte",
    "kilobyte",
    "megabyte",
    "core",
    "cpu",
    "scheduler",
    "interrupt",
    "context",
    "switch",
    "swap",
    "ram",
    "ssd",
    "raid",
    "mirror",
];

const ADJECTIVES: &[&str] = &[
    "quiet", "rapid", "lazy", "brave", "clever", "silent", "green", "red", "blue", "old", "young",
    "happy", "grumpy", "sleepy", "busy", "tiny", "giant", "swift", "calm", "wild",
];

const ANIMALS: &[&str] = &[
    "falcon", "otter", "badger", "fox", "heron", "lynx", "panda", "raven", "tiger", "wolf", "yak",
    "gecko", "moose", "koala", "bison", "crane", "eagle", "ferret", "hare", "ibex",
];

const PLACES: &[&str] = &[
    "Moscow",
    "Tokyo",
    "Berlin",
    "Paris",
    "Osaka",
    "Kyiv",
    "Minsk",
    "Riga",
    "Prague",
    "Vienna",
    "Oslo",
    "Lisbon",
    "Madrid",
    "Rome",
    "Sapporo",
    "Novosibirsk",
    "Helsinki",
    "Tallinn",
    "Warsaw",
    "Budapest",
];

/// Lines a post may quote as code: each holds characters HTML must escape.
const CODE_LINES: &[&str] = &[
    "<IfModule mpm_prefork_module> MaxRequestWorkers 4 </IfModule>",
    "if ($a < $b && $b > $c) { echo \"<b>odd</b>\"; }",
    "ab -n 100 -c 20 \"http://example.test/index.php?f=1&t=2\"",
    "worker_processes 2; events { worker_connections 1024; }",
    "SELECT * FROM posts WHERE topic_id = 42 AND id > 10 ORDER BY id LIMIT 15;",
    "<script>alert('not executed')</script>",
    "sysctl -w kern.ipc.somaxconn=4096 # 'tuned' & \"untuned\"",
];

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
