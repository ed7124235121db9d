//! Each route of the embedded server answers as documented, over a real loopback socket.

mod support;

use support::{start_server, Client};
use webtune_serve::EMPTY_GIF;

#[test]
fn empty_gif_is_the_exact_43_byte_gif() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    let response = client.get("/empty.gif");
    assert_eq!(response.status, 200);
    assert_eq!(response.body, EMPTY_GIF);
    assert_eq!(response.body.len(), 43);
    assert_eq!(response.header("content-type"), Some("image/gif"));
    assert_eq!(response.header("content-length"), Some("43"));
    let server_name = response.header("server").unwrap_or_default();
    assert!(server_name.starts_with("webtune/"), "{server_name:?}");
    // A query string does not change the answer.
    assert_eq!(client.get("/empty.gif?x=1").body, EMPTY_GIF);
}

#[test]
fn bytes_sends_exactly_n_bytes_with_content_length() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    for n in [0usize, 1, 4096, 65_536, 1_000_001] {
        let response = client.get(&format!("/bytes/{n}"));
        assert_eq!(response.status, 200, "/bytes/{n}");
        assert_eq!(response.body.len(), n, "/bytes/{n}");
        assert_eq!(
            response.header("content-length"),
            Some(n.to_string().as_str())
        );
        assert_eq!(response.header("transfer-encoding"), None);
    }
}

#[test]
fn bytes_above_one_gib_is_refused() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    let response = client.get("/bytes/1073741825");
    assert_eq!(response.status, 400);
    assert!(String::from_utf8_lossy(&response.body).contains("at most"));
    // The cap itself is allowed: HEAD shows the length without sending it.
    let response = client.request("HEAD", "/bytes/1073741824");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-length"), Some("1073741824"));
}

#[test]
fn chunked_body_decodes_to_n_bytes_in_several_chunks() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    for n in [10usize, 100_000] {
        let response = client.get(&format!("/chunked/{n}"));
        assert_eq!(response.status, 200);
        assert_eq!(response.header("transfer-encoding"), Some("chunked"));
        assert_eq!(response.header("content-length"), None);
        assert_eq!(response.body.len(), n);
        assert!(
            response.chunks >= 2,
            "{n} bytes came in {} chunk(s)",
            response.chunks
        );
    }
    let response = client.get("/chunked/0");
    assert_eq!(response.status, 200);
    assert!(response.body.is_empty());
}

#[test]
fn status_answers_with_the_code_asked_for() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    for code in [200u16, 201, 204, 301, 404, 500, 503, 599] {
        let response = client.get(&format!("/status/{code}"));
        assert_eq!(response.status, code);
    }
    for bad in [
        "/status/199",
        "/status/600",
        "/status/100",
        "/status/abc",
        "/status/",
    ] {
        assert_eq!(client.get(bad).status, 400, "{bad}");
    }
}

#[test]
fn unknown_paths_are_404_and_bad_numbers_400() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    for path in ["/nope", "/empty.gif/", "/bytes", "/files/1"] {
        let response = client.get(path);
        assert_eq!(response.status, 404, "{path}");
        assert!(response
            .header("server")
            .is_some_and(|s| s.starts_with("webtune/")));
        assert_eq!(
            response.header("content-length"),
            Some(response.body.len().to_string().as_str())
        );
    }
    for path in [
        "/bytes/abc",
        "/bytes/-1",
        "/bytes/1.5",
        "/chunked/x",
        "/cpu/ten",
        "/sleep/1s",
    ] {
        let response = client.get(path);
        assert_eq!(response.status, 400, "{path}");
        assert!(!response.body.is_empty(), "{path}: the 400 says why");
    }
}

#[test]
fn index_lists_the_routes() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    let response = client.get("/");
    assert_eq!(response.status, 200);
    let text = String::from_utf8_lossy(&response.body);
    for route in [
        "/empty.gif",
        "/bytes/N",
        "/chunked/N",
        "/cpu/US",
        "/sleep/MS",
        "/status/CODE",
    ] {
        assert!(text.contains(route), "index misses {route}");
    }
}

#[test]
fn cpu_and_sleep_answer_and_enforce_their_caps() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    assert_eq!(client.get("/cpu/2000").status, 200);
    assert_eq!(client.get("/sleep/20").status, 200);
    assert_eq!(client.get("/cpu/10000001").status, 400);
    assert_eq!(client.get("/sleep/60001").status, 400);
}

#[test]
fn head_announces_the_length_and_keeps_the_connection() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    let response = client.request("HEAD", "/empty.gif");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-length"), Some("43"));
    let response = client.request("HEAD", "/chunked/100");
    assert_eq!(response.status, 200);
    let response = client.request("HEAD", "/status/204");
    assert_eq!(response.status, 204);
    assert_eq!(response.header("content-length"), None);
    // No body bytes were sent: the next response on the connection parses cleanly.
    let response = client.get("/bytes/7");
    assert_eq!(response.body.len(), 7);
}

#[test]
fn other_methods_are_refused_with_405() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    client.send("DELETE /empty.gif HTTP/1.1\r\nHost: test\r\n\r\n");
    let response = client.read_response(false).expect("an answer to DELETE");
    assert_eq!(response.status, 405);
    assert_eq!(response.header("allow"), Some("GET, HEAD"));
}

#[test]
fn http_1_0_keeps_alive_only_when_asked() {
    let server = start_server(|_| {});
    let mut client = Client::connect(server.local_addr());
    for _ in 0..3 {
        client.send("GET /empty.gif HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        let response = client
            .read_response(false)
            .expect("an HTTP/1.0 keep-alive answer");
        assert_eq!(response.version, "HTTP/1.0");
        assert_eq!(response.body, EMPTY_GIF);
        assert_eq!(response.header("connection"), Some("keep-alive"));
    }
    let mut client = Client::connect(server.local_addr());
    client.send("GET /bytes/5 HTTP/1.0\r\n\r\n");
    let response = client.read_response(false).expect("an HTTP/1.0 answer");
    assert_eq!(response.body.len(), 5);
    assert!(
        client.server_closes(),
        "HTTP/1.0 without keep-alive is closed after one answer"
    );
}
