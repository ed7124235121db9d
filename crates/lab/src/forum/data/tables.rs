//! Writing the board's rows: one tab-separated file per table in `LOAD DATA`'s default
//! format (backslash escapes, one row a line), every byte hashed (FNV-1a) and counted as it
//! goes. The text of forums, users, topics and posts comes from one stream of the seed
//! (`ForumRng::stream(seed, 6)`), drawn in table order; users and topics have their own
//! streams for everything else (7 and 8).

use super::super::rng::ForumRng;
use super::board::{Board, BOARD_OPENS};
use super::words::{pick, Words, ADJECTIVES, ANIMALS, CATEGORY_NAMES, FORUM_NAMES, PLACES};
use super::Shape;
use std::io::Write;

/// What writing the tables produced.
pub(super) struct Written {
    /// FNV-1a 64 over every table's bytes, in `TABLES` order.
    pub(super) checksum: u64,
    /// Bytes of all the tables together.
    pub(super) bytes: u64,
    /// Posts in the longest topic.
    pub(super) longest_topic_posts: u64,
}

/// Write every table of `board` into `sinks` (one per table, in `TABLES` order).
pub(super) fn write<W: Write>(
    shape: &Shape,
    seed: u64,
    board: &Board,
    sinks: &mut [W],
) -> std::io::Result<Written> {
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
    categories(&mut writer!(categories_sink), shape)?;
    forums(
        &mut writer!(forums_sink),
        shape,
        board,
        &mut words,
        &mut text_rng,
    )?;
    users(
        &mut writer!(users_sink),
        seed,
        board,
        &mut words,
        &mut text_rng,
    )?;
    let (titles, longest_topic_posts) = topics(
        &mut writer!(topics_sink),
        seed,
        board,
        &mut words,
        &mut text_rng,
    )?;
    posts(
        &mut writer!(posts_sink),
        board,
        &titles,
        &mut words,
        &mut text_rng,
    )?;
    Ok(Written {
        checksum: hash.0,
        bytes,
        longest_topic_posts,
    })
}

fn categories<W: Write>(w: &mut TableWriter<W>, shape: &Shape) -> std::io::Result<()> {
    for c in 0..shape.categories {
        w.num(c + 1).num(c + 1).text(CATEGORY_NAMES[c as usize]);
        w.end_row()?;
    }
    Ok(())
}

fn forums<W: Write>(
    w: &mut TableWriter<W>,
    shape: &Shape,
    board: &Board,
    words: &mut Words,
    text_rng: &mut ForumRng,
) -> std::io::Result<()> {
    let per_category = shape.forums.div_ceil(shape.categories);
    for (f, facts) in board.forum_facts.iter().enumerate() {
        let f = f as u64;
        let description = words.sentence(text_rng, 8, 16);
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
    Ok(())
}

fn users<W: Write>(
    w: &mut TableWriter<W>,
    seed: u64,
    board: &Board,
    words: &mut Words,
    text_rng: &mut ForumRng,
) -> std::io::Result<()> {
    let mut rng = super::rng_for_users(seed);
    for (u, &count) in board.user_posts.iter().enumerate() {
        let user = UserDraw::next(&mut rng, u);
        let signature = if user.signed {
            words.sentence(text_rng, 4, 14)
        } else {
            String::new()
        };
        w.num(u as u64 + 1)
            .text(&user.name)
            .num(user.joined)
            .num(count)
            .text(user.location)
            .text(&signature);
        w.end_row()?;
    }
    Ok(())
}

/// What one user's row draws from the users' stream (`ForumRng::stream(seed, 7)`), in its
/// order: the one home of that order, so `user_names` replays exactly the names the table
/// holds.
pub(super) struct UserDraw {
    pub(super) name: String,
    joined: u64,
    location: &'static str,
    /// Whether the user has a signature (its text comes from the text stream).
    signed: bool,
}

impl UserDraw {
    /// The draws of user `index` (0-based), the stream positioned after user `index - 1`.
    pub(super) fn next(rng: &mut ForumRng, index: usize) -> UserDraw {
        let name = format!(
            "{}{}{}",
            pick(rng, ADJECTIVES),
            pick(rng, ANIMALS),
            index + 1
        );
        let joined = BOARD_OPENS - 365 * 86_400 + rng.below(365 * 86_400);
        let location = if rng.below(3) == 0 {
            ""
        } else {
            pick(rng, PLACES)
        };
        let signed = rng.below(5) < 2;
        UserDraw {
            name,
            joined,
            location,
            signed,
        }
    }
}

/// The topics' rows; their titles (posts repeat them) and the longest topic's posts.
fn topics<W: Write>(
    w: &mut TableWriter<W>,
    seed: u64,
    board: &Board,
    words: &mut Words,
    text_rng: &mut ForumRng,
) -> std::io::Result<(Vec<String>, u64)> {
    let mut titles = Vec::with_capacity(board.topic_facts.len());
    let mut longest_topic_posts = 0;
    let mut rng = ForumRng::stream(seed, 8);
    for (t, facts) in board.topic_facts.iter().enumerate() {
        let title = words.title(text_rng);
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
    Ok((titles, longest_topic_posts))
}

fn posts<W: Write>(
    w: &mut TableWriter<W>,
    board: &Board,
    titles: &[String],
    words: &mut Words,
    text_rng: &mut ForumRng,
) -> std::io::Result<()> {
    let mut body = String::with_capacity(8192);
    let mut subject = String::with_capacity(256);
    for (index, &(time, topic, k)) in board.timeline.iter().enumerate() {
        let facts = &board.topic_facts[topic as usize];
        subject.clear();
        if k > 0 {
            subject.push_str("Re: ");
        }
        subject.push_str(&titles[topic as usize]);
        words.body(text_rng, &mut body);
        w.num(index as u64 + 1)
            .num(u64::from(topic) + 1)
            .num(u64::from(facts.forum) + 1)
            .num(u64::from(board.post_author[index]) + 1)
            .num(time)
            .text(&subject)
            .text(&body);
        w.end_row()?;
    }
    Ok(())
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
