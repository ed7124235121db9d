//! Unit tests of `plan` (kept apart so the module stays readable).
use super::*;

#[test]
fn parses_urls() {
    let t = parse_url("http://127.0.0.1:8080/a/b?x=1").unwrap();
    assert_eq!(t.port, 8080);
    assert_eq!(t.path, "/a/b?x=1");
    assert_eq!(t.host_header, "127.0.0.1:8080");
    let t = parse_url("http://localhost").unwrap();
    assert_eq!(
        (t.port, t.path.as_str(), t.host_header.as_str()),
        (80, "/", "localhost")
    );
    let t = parse_url("http://[::1]:81/").unwrap();
    assert_eq!(t.host_header, "[::1]:81");
    let t = parse_url("https://localhost/x").unwrap();
    assert_eq!(
        (t.port, t.tls, t.host_header.as_str()),
        (443, true, "localhost")
    );
    let t = parse_url("https://localhost:8443/").unwrap();
    assert_eq!(t.host_header, "localhost:8443");
}

#[test]
fn refuses_bad_urls_with_advice() {
    let e = parse_url("ftp://example.com/").unwrap_err().to_string();
    assert!(e.contains("ftp:// is not supported"), "{e}");
    let e = parse_url("127.0.0.1:8080").unwrap_err().to_string();
    assert!(e.contains("expected e.g. http://"), "{e}");
    assert!(parse_url("not a url").is_err());
}

#[test]
fn encodes_requests() {
    let spec = RunSpec {
        url: "http://h:81/p".into(),
        method: "POST".into(),
        headers: vec![("X-A".into(), "1".into())],
        body: b"hello".to_vec(),
        keepalive: false,
        ..RunSpec::default()
    };
    let t = parse_url(&spec.url).unwrap();
    let text = String::from_utf8(encode_request(&spec, &t).unwrap()).unwrap();
    assert!(
        text.starts_with("POST /p HTTP/1.1\r\nHost: h:81\r\n"),
        "{text}"
    );
    assert!(text.contains("Connection: close\r\n"));
    assert!(text.contains("Content-Length: 5\r\n"));
    assert!(text.ends_with("X-A: 1\r\n\r\nhello"));
}

#[test]
fn http10_without_keepalive_sends_no_connection_header_as_ab() {
    let spec = RunSpec {
        url: "http://h/p".into(),
        http10: true,
        keepalive: false,
        ..RunSpec::default()
    };
    let t = parse_url(&spec.url).unwrap();
    let text = String::from_utf8(encode_request(&spec, &t).unwrap()).unwrap();
    assert!(!text.contains("Connection:"), "{text}");
    let keep = RunSpec {
        keepalive: true,
        ..spec
    };
    let text = String::from_utf8(encode_request(&keep, &t).unwrap()).unwrap();
    assert!(text.contains("Connection: keep-alive\r\n"), "{text}");
}

#[test]
fn user_host_header_wins_and_injection_is_refused() {
    let mut spec = RunSpec {
        url: "http://h/".into(),
        headers: vec![("Host".into(), "other".into())],
        ..RunSpec::default()
    };
    let t = parse_url(&spec.url).unwrap();
    let text = String::from_utf8(encode_request(&spec, &t).unwrap()).unwrap();
    assert_eq!(text.matches("Host:").count(), 1);
    assert!(text.contains("Host: other\r\n"));
    spec.headers = vec![("X".into(), "a\r\nEvil: 1".into())];
    assert!(encode_request(&spec, &t).is_err());
}

#[test]
fn addresses_that_refuse_are_left_out_unless_all_do() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let up = listener.local_addr().unwrap();
    let down: SocketAddr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (kept, skipped) = keep_listening(vec![up, down], 500);
    assert_eq!((kept, skipped), (vec![up], vec![down]));
    let (kept, skipped) = keep_listening(vec![down, down], 500);
    assert_eq!(kept.len(), 2);
    assert!(skipped.is_empty());
}

#[test]
fn smtp_targets_parse_with_port_25_by_default() {
    let t = parse_smtp_url("smtp://127.0.0.1:2525").unwrap();
    assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 2525));
    assert_eq!(parse_smtp_url("smtp://mail.example.com").unwrap().port, 25);
    let t = parse_smtp_url("smtp://[::1]:26").unwrap();
    assert_eq!((t.host.as_str(), t.port), ("::1", 26));
    assert!(parse_smtp_url("smtp://h:x").is_err());
    assert!(parse_smtp_url("http://h").is_err());
}

#[test]
fn connect_to_overrides_resolution() {
    let t = parse_url("http://no-such-host.invalid/").unwrap();
    let a = resolve(&t, &["127.0.0.1:1".into(), "127.0.0.2:1".into()]).unwrap();
    assert_eq!(a.len(), 2);
    assert!(resolve(&t, &["nonsense".into()]).is_err());
}
