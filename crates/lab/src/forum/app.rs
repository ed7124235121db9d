//! The forum application (our own PHP in `crates/lab/apps/forum/`): its files, the small
//! configuration file the lab renders for each run (socket, database, account, paging),
//! installing both into a stack's document root, the scenario that loads it with seed 003's
//! mix over the generated id ranges, and the accounts file (`users_csv`) and logged-in
//! scenario (`users_scenario`: readers and posters as journeys) for its generated users.

use super::data::{password_for, user_names, Shape, POSTS_PER_PAGE, TOPICS_PER_PAGE};
use super::mariadb::{check_plain, APP_USER, DATABASE};
use crate::LabError;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The application's files: name in the document root, contents.
pub const APP_FILES: [(&str, &str); 6] = [
    ("common.php", include_str!("../../apps/forum/common.php")),
    ("index.php", include_str!("../../apps/forum/index.php")),
    ("ucp.php", include_str!("../../apps/forum/ucp.php")),
    ("posting.php", include_str!("../../apps/forum/posting.php")),
    (
        "viewforum.php",
        include_str!("../../apps/forum/viewforum.php"),
    ),
    (
        "viewtopic.php",
        include_str!("../../apps/forum/viewtopic.php"),
    ),
];

/// The rendered configuration's name in the document root.
pub const CONFIG_FILE: &str = "forum-config.php";

/// Every complete forum page ends with this comment; error pages (404, 503, a PHP fatal
/// error) do not carry it. The scenario's body check looks for it.
pub const PAGE_MARKER: &str = "webtune-forum-page-complete";

/// The configuration file for one run. The socket path is checked plain; the password
/// and the secret (which signs the login form's token) are hex, so all are safe inside
/// single-quoted PHP strings.
pub fn render_config(socket: &Path, password: &str, secret: &str) -> Result<String, LabError> {
    let socket = check_plain(socket)?;
    for (what, value) in [("password", password), ("secret", secret)] {
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(LabError::Inconsistent(format!(
                "internal: the forum {what} must be hex"
            )));
        }
    }
    Ok(format!(
        "<?php\n\
         // Rendered by webtune lab for one run: where the forum's private MariaDB listens\n\
         // and how its pages log in; the secret signs the login form's token. Not a page:\n\
         // asked for directly, it answers 404.\n\
         if (get_included_files()[0] === __FILE__) {{\n    http_response_code(404);\n    exit;\n}}\n\
         return [\n    \
             'socket' => '{socket}',\n    \
             'database' => '{DATABASE}',\n    \
             'user' => '{APP_USER}',\n    \
             'password' => '{password}',\n    \
             'secret' => '{secret}',\n    \
             'topics_per_page' => {TOPICS_PER_PAGE},\n    \
             'posts_per_page' => {POSTS_PER_PAGE},\n\
         ];\n"
    ))
}

/// Write the configuration, then the application, into a document root (files 0644: the
/// web servers' workers, which may run as another user, read them).
pub fn install(docroot: &Path, config: &str) -> Result<(), LabError> {
    write_public(&docroot.join(CONFIG_FILE), config.as_bytes())?;
    for (name, text) in APP_FILES {
        write_public(&docroot.join(name), text.as_bytes())?;
    }
    Ok(())
}

fn write_public(path: &Path, bytes: &[u8]) -> Result<(), LabError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)))
        .map_err(|e| LabError::io(format!("writing {}", path.display()), e))
}

/// A scenario for a forum of this shape: seed 003's mix (forum list 20 %, a random page of
/// a random forum's topic list 20 %, one thread 60 %), with the body check on the page
/// marker. `bench/scenarios/forum.toml` is this for 150,000 posts.
pub fn scenario(shape: &Shape, base_url: &str) -> String {
    format!(
        "# Seed 003's JMeter plan on the lab's forum ({posts} posts: {forums} forums, {topics} topics).\n\
         base_url = \"{base_url}\"\n\
         think = \"0ms\"\n\n\
         [[request]]\n\
         name = \"forum_list\"\n\
         weight = 20\n\
         path = \"/index.php\"\n\
         body_contains = \"{PAGE_MARKER}\"\n\n\
         [[request]]\n\
         name = \"topic_list\"\n\
         weight = 20\n\
         path = \"/viewforum.php?f={{rand:1:{forums}}}&page={{rand:1:{pages}}}\"\n\
         body_contains = \"{PAGE_MARKER}\"\n\n\
         [[request]]\n\
         name = \"thread\"\n\
         weight = 60\n\
         path = \"/viewtopic.php?t={{rand:1:{topics}}}\"\n\
         body_contains = \"{PAGE_MARKER}\"\n",
        posts = shape.posts,
        forums = shape.forums,
        topics = shape.topics,
        pages = shape.topic_list_pages_drawn(),
    )
}

/// The generated users' accounts as CSV (`name,password`, a header line first), user 1
/// first: the `users` file of a logged-in scenario (`users_scenario`).
pub fn users_csv(shape: &Shape, seed: u64) -> String {
    let mut csv = String::from("name,password\n");
    for name in user_names(shape, seed) {
        // Generated names are letters and digits: nothing to quote.
        csv.push_str(&format!("{name},{}\n", password_for(&name)));
    }
    csv
}

/// Seed 003's mix with logged-in users, as journeys: readers (90%) log in once, then walk
/// the board index, a random page of a random forum's topic list and three threads (seed
/// 003's 20/20/60); posters (10%) log in once, read a thread and reply to it (the write
/// path: a post inserted, its topic's, forum's and author's counters bumped). Each virtual
/// user logs in with its own row of `users_file` (`users_csv`'s accounts, one per user).
/// `bench/scenarios/forum-users.toml` is this for 150,000 posts.
pub fn users_scenario(shape: &Shape, base_url: &str, users_file: &str) -> String {
    format!(
        include_str!("users_scenario.toml.in"),
        posts = shape.posts,
        forums = shape.forums,
        topics = shape.topics,
        pages = shape.topic_list_pages_drawn(),
        base_url = base_url,
        users_file = users_file,
        marker = PAGE_MARKER,
    )
}
