//! Unit tests of journeys: reading them (every key, every load-time error naming the file,
//! journey and step), their templates, extraction and the walk's order.

use super::*;
use crate::rng::Rng;
use std::path::Path;

fn parse_in(dir: &Path, text: &str) -> Result<Scenario, ScenarioError> {
    std::fs::write(dir.join("users.csv"), "name,password\nann,pw1\nbob,pw2\n").unwrap();
    parse_str(text, dir, "j.toml")
}

fn err(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let e = parse_in(dir.path(), text).unwrap_err().to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(e.starts_with("j.toml: "), "{e}");
    e
}

const FULL: &str = r#"
think = "10ms"

[[journey]]
name = "posters"
weight = 10
users = "users.csv"
unique_users = true

[[journey.step]]
name = "form"
path = "/login"
once = true
extract = { csrf = 'name="csrf" value="([^"]+)"' }

[[journey.step]]
name = "login"
method = "POST"
path = "/login"
body = "u={user:name}&c={var:csrf}"
once = true
think = "0"

[[journey.step]]
name = "browse"
repeat = "rand:1:5"

[[journey.step.step]]
name = "topic"
path = "/t/{rand:1:9}?c={var:csrf}"
extract = { id = "json:/data/id" }

[[journey.step.step]]
name = "post"
path = "/p/{var:id}"

[[journey]]
name = "readers"
weight = 90

[[journey.step]]
name = "list"
path = "/list"
repeat = 3
"#;

#[test]
fn a_full_journey_file_reads_into_steps_blocks_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let s = parse_in(dir.path(), FULL).unwrap();
    assert!(s.requests.is_empty());
    let [p, r] = &s.journeys[..] else {
        panic!("two journeys")
    };
    assert_eq!(
        (p.name.as_str(), p.weight, p.unique_users),
        ("posters", 10, true)
    );
    assert_eq!(p.user_rows(), 2);
    let names: Vec<&str> = p.steps.iter().map(|s| s.request.name.as_str()).collect();
    assert_eq!(names, ["form", "login", "topic", "post"]);
    assert_eq!(p.vars, ["csrf", "id"]);
    assert!(p.steps[0].once && p.steps[1].once && !p.steps[2].once);
    assert_eq!(p.steps[1].think, Some(Think::None));
    assert_eq!(p.blocks.len(), 3);
    assert_eq!((p.blocks[2].start, p.blocks[2].end), (2, 4));
    assert_eq!(p.blocks[2].repeat, Repeat::Rand(1, 5));
    assert_eq!(r.blocks[0].repeat, Repeat::Times(3));
}

#[test]
fn a_walk_runs_once_steps_first_then_repeats_its_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let s = parse_in(dir.path(), FULL).unwrap();
    let j = &s.journeys[1]; // readers: list ×3
    let mut rng = Rng::seeded(1);
    let mut at = j.begin(true, &mut rng).unwrap();
    let mut walked = vec![at.step];
    while let Some(next) = j.next(at, &mut rng) {
        walked.push(next.step);
        at = next;
    }
    assert_eq!(walked, [0, 0, 0]);
    let p = &s.journeys[0];
    for seed in 0..20 {
        let mut rng = Rng::seeded(seed);
        let mut at = p.begin(true, &mut rng).unwrap();
        let mut walked = vec![at.step];
        while let Some(next) = p.next(at, &mut rng) {
            walked.push(next.step);
            at = next;
        }
        assert_eq!(&walked[..2], [0, 1]);
        let group = &walked[2..];
        assert!(
            group.len() % 2 == 0 && (2..=10).contains(&group.len()),
            "{walked:?}"
        );
        assert!(group.chunks(2).all(|c| c == [2, 3]));
        // A later walk skips the once steps.
        assert_eq!(p.begin(false, &mut rng).unwrap().step, 2);
    }
}

#[test]
fn steps_render_the_users_values_and_row() {
    let dir = tempfile::tempdir().unwrap();
    let s = parse_in(dir.path(), FULL).unwrap();
    let p = &s.journeys[0];
    let vars = vec![b"tok en".to_vec(), b"42".to_vec()];
    let ctx = Ctx {
        vars: &vars,
        row: 1,
    };
    let mut out = Vec::new();
    let mut rng = Rng::seeded(3);
    encode_step_into(
        &p.steps[1].request,
        "h",
        true,
        false,
        &mut rng,
        0,
        &ctx,
        b"sid=1",
        &mut out,
    );
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(text.starts_with("POST /login HTTP/1.1\r\n"), "{text}");
    assert!(text.contains("\r\nCookie: sid=1\r\n"), "{text}");
    assert!(text.ends_with("\r\n\r\nu=bob&c=tok en"), "{text}");
    assert!(text.contains("Content-Length: 14\r\n"), "{text}");
    // In a path, a value is percent-encoded.
    encode_step_into(
        &p.steps[2].request,
        "h",
        true,
        false,
        &mut rng,
        0,
        &ctx,
        b"",
        &mut out,
    );
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("?c=tok%20en HTTP/1.1"), "{text}");
}

#[test]
fn patterns_take_the_first_group_or_a_json_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let s = parse_in(dir.path(), FULL).unwrap();
    let p = &s.journeys[0];
    let csrf = &p.steps[0].extract[0].pattern;
    let page = br#"<input name="csrf" value="abc123">"#;
    assert_eq!(csrf.find(page).as_deref(), Some(&b"abc123"[..]));
    assert!(csrf.find(b"nothing").is_none());
    let id = &p.steps[2].extract[0].pattern;
    assert_eq!(id.find(br#"{"data":{"id":7}}"#).as_deref(), Some(&b"7"[..]));
    assert_eq!(
        id.find(br#"{"data":{"id":"x"}}"#).as_deref(),
        Some(&b"x"[..])
    );
    assert!(id.find(br#"{"data":{}}"#).is_none());
    assert!(id.find(b"not json").is_none());
}

#[test]
fn bad_journeys_are_one_line_errors_naming_journey_and_step() {
    let head = "[[journey]]\nname = \"j\"\n";
    let e = err(head);
    assert!(e.contains("journey \"j\": has no steps"), "{e}");
    let e = err(&format!(
        "{head}[[journey.step]]\nname = \"a\"\npath = \"/\"\nextract = {{ x = '(' }}\n"
    ));
    assert!(
        e.contains("journey \"j\" step \"a\": extract x: the pattern \"(\" does not compile"),
        "{e}"
    );
    let e = err(&format!("{head}[[journey.step]]\nname = \"a\"\npath = \"/{{var:x}}\"\n[[journey.step]]\nname = \"b\"\npath = \"/\"\nextract = {{ x = 'y' }}\n"));
    assert!(
        e.contains("step \"a\"") && e.contains("used before any step extracts \"x\""),
        "{e}"
    );
    let e = err(&format!(
        "{head}[[journey.step]]\nname = \"a\"\npath = \"/{{var:nope}}\"\n"
    ));
    assert!(e.contains("unknown variable {var:nope}"), "{e}");
    let e = err(&format!("{head}[[journey.step]]\nname = \"a\"\npath = \"/\"\n[[journey.step]]\nname = \"b\"\npath = \"/\"\nonce = true\n"));
    assert!(
        e.contains("step \"b\": once = true after a step without it"),
        "{e}"
    );
    let e = err(&format!(
        "{head}users = \"users.csv\"\n[[journey.step]]\nname = \"a\"\npath = \"/{{user:email}}\"\n"
    ));
    assert!(e.contains("has no column \"email\""), "{e}");
    let e = err(&format!(
        "{head}[[journey.step]]\nname = \"a\"\npath = \"/{{user:name}}\"\n"
    ));
    assert!(e.contains("the journey has no users file"), "{e}");
    let e = err(&format!(
        "{head}[[journey.step]]\nname = \"a\"\npath = \"/\"\nrepeat = \"rand:5:1\"\n"
    ));
    assert!(e.contains("LO above HI"), "{e}");
    let e = err(&format!(
        "{head}[[journey.step]]\nname = \"a\"\npath = \"/\"\nextract = {{ x = 'json:data' }}\n"
    ));
    assert!(e.contains("does not start with '/'"), "{e}");
    let e = err(&format!(
        "{head}unique_users = true\n[[journey.step]]\nname = \"a\"\npath = \"/\"\n"
    ));
    assert!(e.contains("unique_users without a users file"), "{e}");
    let e = err(&format!("{head}[[journey.step]]\nname = \"a\"\npath = \"/\"\n[[journey.step]]\nname = \"a\"\npath = \"/\"\n"));
    assert!(e.contains("used twice"), "{e}");
    let e = err("[[request]]\nname = \"r\"\npath = \"/\"\n[[journey]]\nname = \"j\"\n[[journey.step]]\nname = \"a\"\npath = \"/\"\n");
    assert!(e.contains("both [[request]] and [[journey]]"), "{e}");
    let e = err("[[request]]\nname = \"r\"\npath = \"/{var:x}\"\n");
    assert!(e.contains("only known in a journey's steps"), "{e}");
    let e = err(&format!("{head}[[journey.step]]\nname = \"g\"\n[[journey.step.step]]\nname = \"a\"\npath = \"/\"\nonce = true\n"));
    assert!(e.contains("step \"a\": once inside a group"), "{e}");
    let e = err(&format!(
        "{head}[[journey.step]]\nname = \"a\"\npath = \"/\"\nonce = true\n"
    ));
    assert!(e.contains("every step has once = true"), "{e}");
}
