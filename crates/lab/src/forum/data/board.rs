//! The board behind the tables, simulated before a row is written: which forum each topic
//! opens in (a few busy forums), how long each thread runs (heavy-tailed), when each post
//! is written and by whom (a few prolific users), and the counters that follow (a forum's
//! posts and last post, a topic's replies). Each step draws from its own stream of the seed
//! (`ForumRng::stream(seed, 1..=5)`), so no step changes another's draws.

use super::super::rng::{ForumRng, Zipf};
use super::Shape;

/// 2019-01-01T00:00:00Z: the board opens.
pub(super) const BOARD_OPENS: u64 = 1_546_300_800;
/// Five years of activity.
const BOARD_SPAN: u64 = 5 * 365 * 86_400;

pub(super) struct TopicFacts {
    pub(super) forum: u32,
    pub(super) posts: u32,
    pub(super) created: u64,
    pub(super) first_post: u32,
    pub(super) last_post: u32,
    pub(super) last_time: u64,
    pub(super) author: u32,
    pub(super) last_poster: u32,
}

#[derive(Default, Clone)]
pub(super) struct ForumFacts {
    pub(super) topics: u64,
    pub(super) posts: u64,
    pub(super) last_post: u32,
    pub(super) last_time: u64,
    pub(super) last_poster: u32,
    pub(super) last_topic: u32,
}

/// One post on the time line: when, in which topic (index), its place in the topic.
pub(super) type TimelinePost = (u64, u32, u32);

/// The simulated board: what the tables' rows say.
pub(super) struct Board {
    /// Every post in time order; a post's id is its index + 1.
    pub(super) timeline: Vec<TimelinePost>,
    /// Each post's author (user index), by post index.
    pub(super) post_author: Vec<u32>,
    pub(super) topic_facts: Vec<TopicFacts>,
    pub(super) forum_facts: Vec<ForumFacts>,
    /// Posts per user, by user index.
    pub(super) user_posts: Vec<u64>,
}

impl Board {
    pub(super) fn simulate(shape: &Shape, seed: u64) -> Board {
        let busy_order = busy_order(shape, seed);
        let topic_forum = topic_forums(shape, seed, &busy_order);
        let lengths = topic_lengths(shape, seed);
        let (timeline, created) = timeline(shape, seed, &lengths);
        authors(shape, seed, timeline, &topic_forum, &created)
    }
}

/// Forums: a few busy ones. Zipf rank → forum id through a seeded permutation, so the
/// busy forums are spread over the categories instead of being forums 1, 2, 3.
fn busy_order(shape: &Shape, seed: u64) -> Vec<u32> {
    let forums = shape.forums as usize;
    let mut rng = ForumRng::stream(seed, 1);
    let mut busy_order: Vec<u32> = (0..forums as u32).collect();
    for i in (1..busy_order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        busy_order.swap(i, j);
    }
    busy_order
}

/// Topics, in the order they were opened (ids grow with time): each one's forum. The first
/// `forums` topics open one forum each, so no forum is empty.
fn topic_forums(shape: &Shape, seed: u64, busy_order: &[u32]) -> Vec<u32> {
    let forums = shape.forums as usize;
    let topics = shape.topics as usize;
    let forum_popularity = Zipf::new(forums, 1.0);
    let mut rng = ForumRng::stream(seed, 2);
    (0..topics)
        .map(|t| {
            if t < forums {
                t as u32
            } else {
                busy_order[forum_popularity.sample(&mut rng)]
            }
        })
        .collect()
}

/// Topic lengths: one post each, the rest spread by heavy-tailed weights (Pareto,
/// shape 1.2): most threads are short, a few run to hundreds of pages.
fn topic_lengths(shape: &Shape, seed: u64) -> Vec<u64> {
    let topics = shape.topics as usize;
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
    lengths
}

/// Post times: a topic opens at its place on the time line; replies follow at
/// exponential gaps (mean 3 hours). Post ids are then given in time order, as a board
/// gives them, so a thread's posts lie scattered through the posts table. Also each
/// topic's opening time.
fn timeline(shape: &Shape, seed: u64, lengths: &[u64]) -> (Vec<TimelinePost>, Vec<u64>) {
    let topics = shape.topics as usize;
    let mut rng = ForumRng::stream(seed, 4);
    let slot = BOARD_SPAN / shape.topics;
    let mut timeline: Vec<TimelinePost> = Vec::with_capacity(shape.posts as usize);
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
    (timeline, created)
}

/// Authors: a few prolific users (Zipf over users); and the counters every post adds to
/// its topic, its forum and its author.
fn authors(
    shape: &Shape,
    seed: u64,
    timeline: Vec<TimelinePost>,
    topic_forum: &[u32],
    created: &[u64],
) -> Board {
    let forums = shape.forums as usize;
    let topics = shape.topics as usize;
    let users = shape.users as usize;
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
    Board {
        timeline,
        post_author,
        topic_facts,
        forum_facts,
        user_posts,
    }
}
