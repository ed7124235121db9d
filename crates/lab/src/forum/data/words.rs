//! The forum's text: names of categories, forums and users, and titles, sentences and post
//! bodies from a fixed vocabulary, drawn from the generator's streams.

use super::super::rng::ForumRng;

pub(super) fn pick(rng: &mut ForumRng, list: &[&'static str]) -> &'static str {
    list[rng.below(list.len() as u64) as usize]
}

/// Text from a fixed vocabulary: titles, sentences, and post bodies whose length varies a
/// lot (most posts a paragraph or two, some long), with the occasional quote or code line
/// holding characters a page must escape (`<`, `>`, `&`, quotes).
pub(super) struct Words;

impl Words {
    pub(super) fn sentence(&mut self, rng: &mut ForumRng, min: u64, max: u64) -> String {
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

    pub(super) fn title(&mut self, rng: &mut ForumRng) -> String {
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

    pub(super) fn body(&mut self, rng: &mut ForumRng, out: &mut String) {
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

pub(super) const CATEGORY_NAMES: [&str; 5] = [
    "General",
    "Servers and systems",
    "Development",
    "Hardware",
    "Off topic",
];

pub(super) const FORUM_NAMES: [&str; 40] = [
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

pub(super) const ADJECTIVES: &[&str] = &[
    "quiet", "rapid", "lazy", "brave", "clever", "silent", "green", "red", "blue", "old", "young",
    "happy", "grumpy", "sleepy", "busy", "tiny", "giant", "swift", "calm", "wild",
];

pub(super) const ANIMALS: &[&str] = &[
    "falcon", "otter", "badger", "fox", "heron", "lynx", "panda", "raven", "tiger", "wolf", "yak",
    "gecko", "moose", "koala", "bison", "crane", "eagle", "ferret", "hare", "ibex",
];

pub(super) const PLACES: &[&str] = &[
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
