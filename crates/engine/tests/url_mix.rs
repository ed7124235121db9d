//! http_load's URL file as the engine's workload: the mix `model::dropin::http_load::url_mix`
//! makes from several URLs becomes a scenario (`Workload::url_mix`) whose paths are taken
//! literally, one request per URL, each equally often, on the URLs' one server.

use webtune_engine::Workload;
use webtune_model::dropin::http_load::url_mix;

#[test]
fn http_loads_url_mix_is_a_workload_taken_literally() {
    let urls = vec![
        "http://127.0.0.1:8080/a?x=\"1\"".to_string(),
        "http://127.0.0.1:8080/{b}".to_string(),
        "http://127.0.0.1:8080".to_string(),
    ];
    let (origin, requests) = url_mix(&urls).unwrap();
    // Taken literally: the braces are the path's, the quotes too.
    let w = Workload::url_mix(&origin, &requests, "mix").unwrap();
    let s = w.scenario().unwrap();
    let paths: Vec<&str> = s.requests.iter().map(|r| r.path.source()).collect();
    assert_eq!(paths, ["/a?x=\"1\"", "/{{b}}", "/"]);
    assert_eq!(s.requests[1].path.literal_len(), "/{b}".len());
    assert!(s.requests.iter().all(|r| r.weight == 1 && r.is_static()));
    assert_eq!(s.base_url.as_deref(), Some("http://127.0.0.1:8080"));
    // A path a request line cannot carry is refused, naming the URL's request.
    let bad = vec![
        "http://127.0.0.1:8080/a b".to_string(),
        "http://127.0.0.1:8080/c".to_string(),
    ];
    let (origin, requests) = url_mix(&bad).unwrap();
    let e = Workload::url_mix(&origin, &requests, "urls.txt").unwrap_err();
    assert!(e.to_string().contains("url1_a_b"), "{e}");
}
