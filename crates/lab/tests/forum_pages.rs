//! The forum's pages under real lab stacks (Apache prefork + mod_php, nginx + php-fpm) on
//! the private MariaDB: valid ids give complete pages of tens of KB whose sizes vary with
//! the content, invalid or malformed ids give a proper 404, output is escaped, the
//! configuration file is not readable over HTTP, a generated user logs in (form token,
//! session cookie) and replies (the post and every counter it bumps written, wrong tokens
//! and guests refused), and stopping leaves no process.

mod support;

use std::net::SocketAddr;
use std::time::Duration;
use webtune_lab::forum::{app, data, dataset, dbparams, DbOptions, ForumStack, RunningDatabase};
use webtune_lab::{http_get, http_request, settings_for, HttpReply, StackKind, StartOptions};

/// What the stack and the forum's database need that this host lacks: the opt-out's name
/// and why.
fn missing(stack: StackKind) -> Option<(&'static str, String)> {
    use webtune_lab::servers::Component;
    let programs = webtune_lab::servers::Programs::discover();
    for (_, c) in stack.components().iter() {
        if let Err(e) = programs.program_for(*c) {
            // The opt-out names are the programs' ("nginx", "apache2", "php-fpm"), but
            // "mariadb" for MariaDB's "mariadbd".
            let name = match c {
                Component::MariaDb => "mariadb",
                other => other.server_name(),
            };
            return Some((name, e.to_string()));
        }
    }
    if let Err(e) = webtune_lab::forum::DbPrograms::discover() {
        return Some(("mariadb", e.to_string()));
    }
    webtune_lab::forum::php_mysqli()
        .is_none()
        .then(|| ("mariadb", "php-mysql is not installed".to_string()))
}

fn get(address: SocketAddr, path: &str) -> (u16, String) {
    let (status, body) = http_get(address, path, Duration::from_secs(10)).unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn complete(body: &str) -> bool {
    body.contains(app::PAGE_MARKER) && body.trim_end().ends_with("</html>")
}

fn check_pages(stack: StackKind) {
    if let Some((name, why)) = missing(stack) {
        support::opt_out::opt_out(name, &why);
        return;
    }
    let data = dataset::ensure(2_000, 11, &DbOptions::database(), &mut |_| {}).unwrap();
    let shape = data.summary.shape;
    let forum = ForumStack::start(
        stack,
        &settings_for(stack, &[]).unwrap(),
        &dbparams::settings_for(&[]).unwrap().into(),
        &data,
        StartOptions::default(),
        DbOptions::database(),
    )
    .unwrap();
    let address = forum.front_address();

    let (status, index) = get(address, "/index.php");
    assert_eq!(status, 200, "{index}");
    assert!(complete(&index));
    assert!(
        index.contains("viewforum.php?f=1"),
        "the index links its forums"
    );
    assert!(index.len() > 5_000, "index is {} bytes", index.len());

    let (status, list) = get(address, "/viewforum.php?f=1");
    assert_eq!(status, 200, "{list}");
    assert!(complete(&list));
    assert!(
        list.contains("viewtopic.php?t="),
        "a topic list links its topics"
    );
    // A page past the end shows the last page (phpBB clamps the same way).
    let (status, past_end) = get(address, "/viewforum.php?f=1&page=9999");
    assert_eq!(status, 200);
    assert!(complete(&past_end));

    let mut sizes = Vec::new();
    for t in [1, 2, 3, shape.topics / 2, shape.topics] {
        let (status, thread) = get(address, &format!("/viewtopic.php?t={t}"));
        assert_eq!(status, 200, "topic {t}: {thread}");
        assert!(complete(&thread), "topic {t}");
        assert!(thread.contains("class=\"post "), "topic {t} shows posts");
        sizes.push(thread.len());
    }
    eprintln!(
        "{}: index {} B, list {} B, threads {sizes:?}",
        stack.name(),
        index.len(),
        list.len()
    );
    sizes.sort_unstable();
    sizes.dedup();
    assert!(sizes.len() > 1, "page sizes vary with content: {sizes:?}");

    // Invalid and malformed ids: 404, without the marker of a complete page.
    let last_forum = shape.forums;
    let last_topic = shape.topics;
    for path in [
        format!("/viewtopic.php?t={}", last_topic + 1),
        "/viewtopic.php?t=0".to_string(),
        "/viewtopic.php?t=-1".to_string(),
        "/viewtopic.php?t=abc".to_string(),
        "/viewtopic.php?t=1e3".to_string(),
        "/viewtopic.php?t[]=1".to_string(),
        "/viewtopic.php?t=99999999999999999999".to_string(),
        "/viewtopic.php".to_string(),
        "/viewtopic.php?t=1&page=x".to_string(),
        format!("/viewforum.php?f={}", last_forum + 1),
        "/viewforum.php?f=%27%20OR%201=1".to_string(),
        "/viewforum.php".to_string(),
        "/forum-config.php".to_string(),
    ] {
        let (status, body) = get(address, &path);
        assert_eq!(status, 404, "{path}: {body}");
        assert!(!body.contains(app::PAGE_MARKER), "{path}");
        assert!(!body.contains("password"), "{path}");
    }

    // Output is escaped: a post quoting a <script> tag shows it as text.
    let database = forum.database().unwrap().database();
    let topic = database
        .admin_sql(
            "SELECT p.topic_id FROM forum.posts p JOIN forum.topics t ON t.id = p.topic_id \
             WHERE p.body LIKE '%<script>%' AND t.replies < 15 ORDER BY p.id LIMIT 1;",
        )
        .unwrap();
    let topic = topic.trim();
    eprintln!("escaping checked on topic {topic:?}");
    if !topic.is_empty() {
        let (status, thread) = get(address, &format!("/viewtopic.php?t={topic}"));
        assert_eq!(status, 200);
        assert!(thread.contains("&lt;script&gt;alert("), "topic {topic}");
        assert!(!thread.contains("<script>"), "topic {topic}");
    }

    check_login_and_reply(address, &shape, data.summary.seed, database);

    let pids = forum.processes();
    assert!(pids.len() >= 2, "web server and mariadbd: {pids:?}");
    forum.stop().unwrap();
    let alive: Vec<i32> = pids
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| !s.contains(") Z "))
                .unwrap_or(false)
        })
        .collect();
    assert!(alive.is_empty(), "left running: {alive:?}");
}

fn request(address: SocketAddr, method: &str, path: &str, cookie: &str, form: &str) -> HttpReply {
    let cookie_line = format!("forum_sid={cookie}");
    let mut headers = vec![("Content-Type", "application/x-www-form-urlencoded")];
    if !cookie.is_empty() {
        headers.push(("Cookie", &cookie_line));
    }
    http_request(
        address,
        method,
        path,
        &headers,
        form.as_bytes(),
        Duration::from_secs(10),
    )
    .unwrap()
}

fn text(reply: &HttpReply) -> String {
    String::from_utf8_lossy(&reply.body).into_owned()
}

/// The value of the hidden input `name` in a page.
fn hidden(page: &str, name: &str) -> Option<String> {
    let start = page.find(&format!("name=\"{name}\" value=\""))? + name.len() + 15;
    Some(page[start..start + page[start..].find('"')?].to_string())
}

fn one_number(database: &RunningDatabase, sql: &str) -> u64 {
    let out = database.admin_sql(sql).unwrap();
    out.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{sql}: {out:?}"))
}

/// Seed 003's forum with a logged-in user: the login form's token, a wrong password and a
/// forged token refused, the session cookie, the quick-reply form only for the logged-in,
/// and a reply that writes the post and bumps the topic's, forum's and author's counters.
fn check_login_and_reply(
    address: SocketAddr,
    shape: &data::Shape,
    seed: u64,
    database: &RunningDatabase,
) {
    let names = data::user_names(shape, seed);
    let csv = app::users_csv(shape, seed);
    assert_eq!(csv.lines().count() as u64, shape.users + 1);
    let (name, password) = (names[0].as_str(), data::password_for(&names[0]));
    assert!(csv.contains(&format!("\n{name},{password}\n")));

    let form = request(address, "GET", "/ucp.php?mode=login", "", "");
    assert_eq!(form.status, 200, "{}", text(&form));
    let token = hidden(&text(&form), "form_token").expect("the login form has a token");
    let login = |user: &str, pw: &str, token: &str| {
        request(
            address,
            "POST",
            "/ucp.php?mode=login",
            "",
            &format!("username={user}&password={pw}&form_token={token}"),
        )
    };
    let session_cookie = |reply: &HttpReply| {
        reply
            .header_values("Set-Cookie")
            .find_map(|c| c.strip_prefix("forum_sid="))
            .map(|c| c.split(';').next().unwrap().to_string())
    };
    let wrong = login(name, "pw-nobody", &token);
    assert_eq!(wrong.status, 403, "{}", text(&wrong));
    assert_eq!(session_cookie(&wrong), None);
    let forged = login(name, &password, &format!("{}.{}", u32::MAX, "0".repeat(64)));
    assert_eq!(forged.status, 403, "{}", text(&forged));
    let ok = login(name, &password, &token);
    assert_eq!(ok.status, 200, "{}", text(&ok));
    assert!(text(&ok).contains("You have been successfully logged in"));
    let sid = session_cookie(&ok).expect("a session cookie");
    assert_eq!(sid.len(), 32);

    let topic = 1;
    let guest = request(address, "GET", &format!("/viewtopic.php?t={topic}"), "", "");
    assert_eq!(
        hidden(&text(&guest), "form_token"),
        None,
        "no reply form for a guest"
    );
    let thread = request(
        address,
        "GET",
        &format!("/viewtopic.php?t={topic}"),
        &sid,
        "",
    );
    assert!(complete(&text(&thread)));
    assert!(text(&thread).contains(&format!("Logged in as <strong>{name}</strong>")));
    let form_token = hidden(&text(&thread), "form_token").expect("the quick-reply form");

    let counters = || {
        (
            one_number(database, &format!("SELECT replies FROM forum.topics WHERE id = {topic};")),
            one_number(
                database,
                &format!("SELECT f.posts FROM forum.forums f JOIN forum.topics t ON t.forum_id = f.id WHERE t.id = {topic};"),
            ),
            one_number(database, &format!("SELECT posts FROM forum.users WHERE name = '{name}';")),
            one_number(database, "SELECT COUNT(*) FROM forum.posts;"),
        )
    };
    let before = counters();
    let reply_path = format!("/posting.php?mode=reply&t={topic}");
    let message = format!("t={topic}&form_token={form_token}&message=A+reply+from+the+lab+test");
    for (cookie, form, status) in [
        ("", message.as_str(), 403),
        (sid.as_str(), "message=no+token", 403),
        (
            sid.as_str(),
            &format!("form_token={form_token}&message=++"),
            400,
        ),
    ] {
        let refused = request(address, "POST", &reply_path, cookie, form);
        assert_eq!(refused.status, status, "{form}: {}", text(&refused));
    }
    assert_eq!(counters(), before, "a refused reply writes nothing");
    let posted = request(address, "POST", &reply_path, &sid, &message);
    assert_eq!(posted.status, 200, "{}", text(&posted));
    assert!(text(&posted).contains("Your message has been posted successfully"));
    let after = counters();
    assert_eq!(
        after,
        (before.0 + 1, before.1 + 1, before.2 + 1, before.3 + 1)
    );
    let last_page = request(
        address,
        "GET",
        &format!("/viewtopic.php?t={topic}&page=9999"),
        "",
        "",
    );
    assert!(text(&last_page).contains("A reply from the lab test"));
}

#[test]
fn forum_pages_under_apache_prefork_with_mod_php() {
    check_pages(StackKind::Apache(webtune_lab::servers::Mpm::Prefork));
}

#[test]
fn forum_pages_under_nginx_with_php_fpm() {
    check_pages(StackKind::NginxPhpFpm);
}
