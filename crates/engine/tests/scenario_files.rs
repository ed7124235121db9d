//! Scenario files as users write them: the shipped examples load, a full-featured file (CSV,
//! body file, headers) encodes as documented, the embedded-target mix passes its own checks
//! against the real embedded server, and every broken file is refused with one line that
//! names the file, the request and the fix.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;
use webtune_engine::rng::Rng;
use webtune_engine::scenario::{self, Scenario, Think};
use webtune_serve::{EmbeddedServer, ServeOptions};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/scenarios")
        .join(name)
}

fn load_ok(path: &Path) -> Scenario {
    match scenario::load(path) {
        Ok(s) => s,
        Err(e) => panic!("{} should load: {e}", path.display()),
    }
}

#[test]
fn the_shipped_forum_scenario_is_seed_003s_mix() {
    let s = load_ok(&shipped("forum.toml"));
    let names: Vec<&str> = s.requests.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["forum_list", "topic_list", "thread"]);
    assert_eq!(s.weights(), [20, 20, 60]);
    assert_eq!(s.think, Think::None);
    assert_eq!(s.base_url.as_deref(), Some("http://127.0.0.1:8080"));
    assert!(s.requests[0].path.is_static());
    assert!(!s.requests[2].path.is_static());
}

/// Send one encoded request on a fresh connection and read the whole response.
fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect to the embedded target");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("set a read timeout");
    stream.write_all(request).expect("send");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read to close");
    let head_end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head");
    let status_line = std::str::from_utf8(&response[..head_end]).expect("ASCII head");
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    (status, response[head_end + 4..].to_vec())
}

/// The first fenced block of `lang` in `text`.
fn fenced<'a>(text: &'a str, lang: &str) -> &'a str {
    let open = format!("```{lang}\n");
    let start = text.find(&open).expect("a fenced block") + open.len();
    let len = text[start..].find("```").expect("a closing fence");
    &text[start..start + len]
}

#[test]
fn the_complete_example_in_the_docs_loads() {
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenarios.md"),
    )
    .expect("docs/scenarios.md");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("users.csv"), fenced(&docs, "csv")).unwrap();
    let file = dir.path().join("forum.toml");
    std::fs::write(&file, fenced(&docs, "toml")).unwrap();
    let s = load_ok(&file);
    assert_eq!(s.weights(), [20, 20, 60, 2]);
    assert_eq!(
        s.think,
        Think::Uniform(Duration::from_millis(50), Duration::from_millis(150))
    );
    let login = &s.requests[3];
    let mut out = Vec::new();
    let mut rng = Rng::seeded(3);
    for seq in 0..20 {
        scenario::encode_into(login, "h", true, false, &mut rng, seq, &mut out);
        let text = String::from_utf8(out.clone()).unwrap();
        let ok = text.ends_with("username=alice&password=secret1")
            && text.contains("X-User: alice\r\n")
            || text.ends_with("username=bob&password=pass,with,commas")
                && text.contains("X-User: bob\r\n");
        assert!(ok, "{text}");
    }
}

#[test]
fn the_embedded_mix_passes_its_checks_against_the_embedded_target() {
    let s = load_ok(&shipped("embedded-mix.toml"));
    assert_eq!(s.weights(), [60, 30, 10]);
    assert!(s.requests.iter().any(|r| r.body_contains.is_some()));
    let srv = EmbeddedServer::start(ServeOptions {
        workers: 1,
        ..ServeOptions::default()
    })
    .expect("embedded target starts");
    let addr = srv.local_addr();
    let host = addr.to_string();
    let picker = s.picker();
    let mut rng = Rng::seeded(2026);
    let mut seen = vec![0u32; s.requests.len()];
    let mut buf = Vec::with_capacity(4096);
    for seq in 0..60 {
        let i = picker.pick(&mut rng);
        let def = &s.requests[i];
        scenario::encode_into(def, &host, false, false, &mut rng, seq, &mut buf);
        let (status, body) = exchange(addr, &buf);
        assert!(def.status_ok(status), "{}: status {status}", def.name);
        if let Some(needle) = &def.body_contains {
            assert!(
                body.windows(needle.len()).any(|w| w == needle.as_slice()),
                "{}: body lacks its check",
                def.name
            );
        }
        if def.name == "bytes" {
            assert!((1000..=20000).contains(&body.len()), "{}", body.len());
        }
        seen[i] += 1;
    }
    assert!(
        seen.iter().all(|&n| n > 0),
        "every request was picked: {seen:?}"
    );
    srv.shutdown();
}

#[test]
fn a_full_featured_file_encodes_csv_rows_headers_and_body_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("users.csv"),
        "name,token\nann,t-ann\nbob,t-bob\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("payloads")).unwrap();
    std::fs::write(
        dir.path().join("payloads/post.json"),
        b"{\"raw\": \"{seq}\"}",
    )
    .unwrap();
    let file = dir.path().join("full.toml");
    std::fs::write(
        &file,
        r#"
think = "uniform:10ms:20ms"

[[request]]
name = "login"
weight = 1
method = "POST"
path = "/login?u={csv:users.csv:name}&n={seq}"
headers = { "X-Token" = "{csv:users.csv:token}", "Content-Type" = "application/x-www-form-urlencoded" }
body = "user={csv:users.csv:name}&literal={{braces}}"
expect_status = ["200", "302"]
body_contains = "welcome"

[[request]]
name = "upload"
method = "PUT"
path = "/upload"
body_file = "payloads/post.json"
expect_status = "2xx,3xx"
"#,
    )
    .unwrap();
    let s = load_ok(&file);
    assert_eq!(
        s.think,
        Think::Uniform(Duration::from_millis(10), Duration::from_millis(20))
    );
    let login = &s.requests[0];
    assert_eq!(login.expect_status, vec![(200, 200), (302, 302)]);
    assert_eq!(login.body_contains.as_deref(), Some(&b"welcome"[..]));
    let upload = &s.requests[1];
    assert_eq!(upload.weight, 1, "weight defaults to 1");
    assert!(upload.is_static());
    assert_eq!(upload.expect_status, vec![(200, 299), (300, 399)]);

    let mut rng = Rng::seeded(1);
    let mut out = Vec::new();
    for seq in 0..50 {
        scenario::encode_into(login, "example:81", true, false, &mut rng, seq, &mut out);
        let text = String::from_utf8(out.clone()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let user = if head.starts_with("POST /login?u=ann&") {
            "ann"
        } else {
            assert!(head.starts_with("POST /login?u=bob&"), "{head}");
            "bob"
        };
        assert!(head.contains(&format!("&n={seq} HTTP/1.1\r\n")), "{head}");
        let token = format!("X-Token: t-{user}");
        assert!(head.lines().any(|l| l == token), "same row: {head}");
        assert_eq!(body, format!("user={user}&literal={{braces}}"));
        assert!(head.contains(&format!("\r\nContent-Length: {}\r\n", body.len())));
    }
    scenario::encode_into(upload, "example:81", true, false, &mut rng, 0, &mut out);
    let text = String::from_utf8(out).unwrap();
    // A body file is sent as it is: no placeholders inside it.
    assert!(text.ends_with("\r\n\r\n{\"raw\": \"{seq}\"}"), "{text}");
}

/// Write `toml` (and any extra files) into a fresh folder, load it, and return the message.
fn load_err(toml: &str, extra: &[(&str, &str)]) -> (String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, body) in extra {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let file = dir.path().join("broken.toml");
    std::fs::write(&file, toml).unwrap();
    let message = match scenario::load(&file) {
        Ok(_) => panic!("should be refused:\n{toml}"),
        Err(e) => e.to_string(),
    };
    (message, file.display().to_string())
}

/// File text, extra files, the request the message names ("" for none), words of the
/// problem, words of the fix.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str, &'a str);

const OK_REQUEST: &str = "[[request]]\nname = \"ok\"\npath = \"/\"\n";

#[test]
fn every_broken_file_is_refused_in_one_line_naming_file_request_and_fix() {
    let cases: &[Case] = &[
        ("[[request]\nname = 1", &[], "", "line 1", "fix the syntax"),
        (
            "foo = 1\n",
            &[],
            "",
            "unknown key \"foo\"",
            "base_url, think and [[request]]",
        ),
        ("think = \"5\"\n", &[], "", "has no unit", "write e.g. 5ms"),
        (
            "think = \"uniform:2s:1s\"\n",
            &[],
            "",
            "lower bound above",
            "swap",
        ),
        (
            "base_url = \"ftp://h/\"\n",
            &[],
            "",
            "not http:// or https://",
            "https://localhost:8443",
        ),
        (
            "base_url = \"http://h/app\"\n",
            &[],
            "",
            "has a path",
            "each request's path",
        ),
        ("base_url = 5\n", &[], "", "must be a string", "quote"),
        ("", &[], "", "no requests", "add at least one [[request]]"),
        (
            "[request]\nname = \"a\"\npath = \"/\"\n",
            &[],
            "",
            "not a list of tables",
            "[[request]] (two brackets)",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nwieght = 2\n",
            &[],
            "a",
            "unknown field `wieght`",
            "docs/scenarios.md",
        ),
        (
            "[[request]]\npath = \"/\"\n",
            &[],
            "#1",
            "missing field `name`",
            "docs/scenarios.md",
        ),
        (
            "[[request]]\nname = \"a\"\n",
            &[],
            "a",
            "missing field `path`",
            "docs/scenarios.md",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nweight = -1\n",
            &[],
            "a",
            "weight",
            "docs/scenarios.md",
        ),
        (
            "[[request]]\nname = \"a b\"\npath = \"/\"\n",
            &[],
            "a b",
            "the name must be",
            "rename",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[request]]\nname = \"a\"\npath = \"/x\"\n",
            &[],
            "a",
            "used twice",
            "its own name",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nweight = 0\n",
            &[],
            "",
            "weight 0",
            "above 0",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/t={rnd:1:5}\"\n",
            &[],
            "a",
            "path: unknown placeholder {rnd:1:5}",
            "{rand:LO:HI}",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/t={rand:9:1}\"\n",
            &[],
            "a",
            "LO above HI",
            "{rand:1:9}",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/{seq\"\n",
            &[],
            "a",
            "unclosed",
            "'{{'",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"index.php\"\n",
            &[],
            "a",
            "does not start with '/'",
            "path = \"/index.php\"",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"http://h/x\"\n",
            &[],
            "a",
            "is a full URL",
            "base_url",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/a b\"\n",
            &[],
            "a",
            "a space",
            "percent-encode",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/{csv:u.csv:id}\"\n",
            &[("u.csv", "name\nx\n")],
            "a",
            "has no column \"id\" (its columns: name)",
            "header row",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/{csv:u.csv:id}\"\n",
            &[("u.csv", "")],
            "a",
            "is empty",
            "header row",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/{csv:none.csv:id}\"\n",
            &[],
            "a",
            "cannot read CSV file",
            "relative to the scenario file",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/{csv:u.csv:n}\"\n",
            &[("u.csv", "n\nx y\n")],
            "a",
            "cannot go into a path",
            "percent-encode",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nheaders = { X = \"{csv:u.csv:n}\" }\n",
            &[("u.csv", "n\n\"x\ny\"\n")],
            "a",
            "header X",
            "control characters",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nheaders = { X = \"a\\r\\nEvil: 1\" }\n",
            &[],
            "a",
            "contains a CR",
            "control characters",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nheaders = { \"X Y\" = \"1\" }\n",
            &[],
            "a",
            "not a token",
            "letters, digits",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nheaders = { \"Content-Length\" = \"1\" }\n",
            &[],
            "a",
            "cannot be set",
            "webtune sets Content-Length",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nmethod = \"GE T\"\n",
            &[],
            "a",
            "not a valid HTTP method",
            "method = \"POST\"",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nbody = \"x\"\nbody_file = \"b\"\n",
            &[("b", "y")],
            "a",
            "both body and body_file",
            "keep one",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nbody_file = \"b\"\n",
            &[("b", "")],
            "a",
            "is empty",
            "remove body_file",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nbody_file = \"nope\"\n",
            &[],
            "a",
            "cannot read body_file",
            "relative to the scenario file",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nexpect_status = [\"6xx\"]\n",
            &[],
            "a",
            "bad status class",
            "expect_status = [\"2xx\"",
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nbody_contains = \"\"\n",
            &[],
            "a",
            "body_contains is empty",
            "remove the key",
        ),
    ];
    for (toml, extra, request, problem, fix) in cases {
        let text = if toml.contains("[[request]]") || toml.contains("[request]") || toml.is_empty()
        {
            toml.to_string()
        } else {
            format!("{toml}{OK_REQUEST}")
        };
        let (message, file) = load_err(&text, extra);
        assert!(!message.contains('\n'), "one line: {message}");
        assert!(message.starts_with(&file), "names the file: {message}");
        if !request.is_empty() {
            assert!(
                message.contains(&format!("request {request:?}: ")),
                "names the request {request:?}: {message}"
            );
        }
        assert!(message.contains(problem), "says {problem:?}: {message}");
        assert!(
            message.contains(fix),
            "says how to fix ({fix:?}): {message}"
        );
    }
}

#[test]
fn a_missing_scenario_file_names_its_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nope.toml");
    let message = scenario::load(&path).unwrap_err().to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("check the path"), "{message}");
    assert!(!message.contains('\n'));
}

#[test]
fn the_shipped_journey_files_load() {
    let forum = load_ok(&shipped("forum-users.toml"));
    let weights: Vec<u32> = forum.journeys.iter().map(|j| j.weight).collect();
    assert_eq!(weights, [90, 10]);
    assert!(forum.requests.is_empty());
    // Both journeys log in first, once, with a token carried from the form.
    for j in &forum.journeys {
        assert!(j.steps[0].once && j.steps[1].once, "{}", j.name);
        assert!(!j.steps[0].extract.is_empty(), "{}", j.name);
        assert!(j.user_rows() > 0, "{}", j.name);
    }
    let embedded = load_ok(&shipped("embedded-journey.toml"));
    assert_eq!(embedded.journeys.len(), 2);
}
