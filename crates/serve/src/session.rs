//! The embedded target's pages with a session, for journeys (a login with a CSRF token, a
//! cookie, a write): `GET /login` (a form with a fresh hidden `csrf` field), `POST /login`
//! (form `user`, `password`, `csrf`: the token must be one `/login` handed out, the password
//! `secret-USER`; sets `sid`), `GET /account` (needs the `sid` cookie; a page with the
//! session's own `csrf` for replies), `POST /reply` (needs the cookie and that `csrf`),
//! `GET /api/me` (JSON `{"user":{"name":…,"id":…}}` with the cookie). Without a valid
//! session these answer 403. It counts logins per user and replies, for tests to read.
//!
//! Sessions live in memory behind one mutex, never expire and are never cleaned: this is a
//! test target for bounded runs, not a server to leave running.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use hyper::header::{HeaderValue, CONTENT_TYPE, COOKIE, SERVER, SET_COOKIE};
use hyper::{Method, Response, StatusCode};

use crate::body::ResponseBody;

/// Paths served here (the rest go to `routes`).
pub(crate) fn is_session_path(path: &str) -> bool {
    matches!(path, "/login" | "/account" | "/reply" | "/api/me")
}

/// Does this request need its body read before it is answered?
pub(crate) fn wants_body(method: &Method) -> bool {
    method == Method::POST
}

#[derive(Default)]
struct State {
    /// Tokens `GET /login` handed out, each good for one login.
    login_tokens: HashSet<String>,
    /// sid → (user, the session's reply token, user id).
    sessions: HashMap<String, (String, String, u64)>,
    logins: BTreeMap<String, u64>,
    replies: u64,
}

/// Every connection's view of the sessions.
#[derive(Default)]
pub(crate) struct Sessions {
    state: Mutex<State>,
    counter: AtomicU64,
}

/// What the session pages saw, for tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Successful logins per user name.
    pub logins: BTreeMap<String, u64>,
    /// Replies saved.
    pub replies: u64,
}

impl Sessions {
    pub(crate) fn stats(&self) -> SessionStats {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        SessionStats {
            logins: s.logins.clone(),
            replies: s.replies,
        }
    }

    /// A fresh token (a counter mixed by splitmix64: unique, not guessable by a test by
    /// accident, not meant as security).
    fn token(&self) -> String {
        let mut x = self
            .counter
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        format!("{:016x}", x ^ (x >> 31))
    }

    /// Answer a session page; `cookie` is the request's Cookie header, `body` its body.
    pub(crate) fn answer(
        &self,
        method: &Method,
        path: &str,
        cookie: Option<&str>,
        body: &[u8],
    ) -> Response<ResponseBody> {
        let sid = cookie.and_then(|c| {
            c.split(';')
                .filter_map(|kv| kv.trim().split_once('='))
                .find(|(k, _)| *k == "sid")
                .map(|(_, v)| v.to_string())
        });
        let form = parse_form(body);
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let session = sid.as_ref().and_then(|sid| s.sessions.get(sid).cloned());
        match (method.as_str(), path) {
            ("GET", "/login") => {
                let token = self.token();
                s.login_tokens.insert(token.clone());
                html(
                    StatusCode::OK,
                    format!(
                        "<html><body><form method=\"post\" action=\"/login\">\n<input type=\"hidden\" name=\"csrf\" value=\"{token}\">\n<input name=\"user\"><input name=\"password\" type=\"password\">\n</form></body></html>\n"
                    ),
                )
            }
            ("POST", "/login") => {
                let (Some(user), Some(password), Some(csrf)) =
                    (form.get("user"), form.get("password"), form.get("csrf"))
                else {
                    return html(
                        StatusCode::BAD_REQUEST,
                        "user, password and csrf please\n".into(),
                    );
                };
                if !s.login_tokens.remove(*csrf) {
                    return html(StatusCode::FORBIDDEN, "bad csrf token\n".into());
                }
                if *password != format!("secret-{user}") {
                    return html(StatusCode::FORBIDDEN, "wrong password\n".into());
                }
                let sid = self.token();
                let reply_token = self.token();
                let id = s.sessions.len() as u64 + 1;
                s.sessions
                    .insert(sid.clone(), (user.to_string(), reply_token, id));
                *s.logins.entry(user.to_string()).or_insert(0) += 1;
                let mut r = html(StatusCode::OK, format!("welcome {user}\n"));
                if let Ok(v) = HeaderValue::from_str(&format!("sid={sid}; Path=/; HttpOnly")) {
                    r.headers_mut().insert(SET_COOKIE, v);
                }
                r
            }
            (_, _) if session.is_none() => html(StatusCode::FORBIDDEN, "log in first\n".into()),
            ("GET", "/account") => {
                let (user, token, _) = session.expect("checked");
                html(
                    StatusCode::OK,
                    format!(
                        "<html><body>account of {user}\n<form method=\"post\" action=\"/reply\"><input type=\"hidden\" name=\"csrf\" value=\"{token}\"></form></body></html>\n"
                    ),
                )
            }
            ("POST", "/reply") => {
                let (_, token, _) = session.expect("checked");
                if form.get("csrf") != Some(&token.as_str()) {
                    return html(StatusCode::FORBIDDEN, "bad csrf token\n".into());
                }
                s.replies += 1;
                html(StatusCode::OK, format!("reply {} saved\n", s.replies))
            }
            ("GET", "/api/me") => {
                let (user, _, id) = session.expect("checked");
                let mut r = html(
                    StatusCode::OK,
                    format!("{{\"user\":{{\"name\":\"{user}\",\"id\":{id}}}}}\n"),
                );
                r.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                r
            }
            _ => html(
                StatusCode::METHOD_NOT_ALLOWED,
                "GET /login, POST /login, GET /account, POST /reply, GET /api/me\n".into(),
            ),
        }
    }
}

/// The request's `Cookie` header, if it is text.
pub(crate) fn cookie_of(headers: &hyper::HeaderMap) -> Option<String> {
    headers
        .get(COOKIE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `a=1&b=2` as pairs (values taken as they are: the tests send no escapes).
fn parse_form(body: &[u8]) -> HashMap<&str, &str> {
    std::str::from_utf8(body)
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

fn html(status: StatusCode, body: String) -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::whole(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        SERVER,
        HeaderValue::from_static(concat!("webtune/", env!("CARGO_PKG_VERSION"))),
    );
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: Response<ResponseBody>) -> (u16, String, Option<String>) {
        let status = r.status().as_u16();
        let cookie = r
            .headers()
            .get(SET_COOKIE)
            .map(|v| v.to_str().unwrap().to_string());
        let body = match r.into_body() {
            ResponseBody::Whole(Some(b)) => String::from_utf8(b.to_vec()).unwrap(),
            other => panic!("{other:?}"),
        };
        (status, body, cookie)
    }

    #[test]
    fn login_then_account_then_reply() {
        let s = Sessions::default();
        let (_, page, _) = text(s.answer(&Method::GET, "/login", None, b""));
        let csrf = page
            .split("value=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let form = format!("user=ann&password=secret-ann&csrf={csrf}");
        let (status, _, cookie) = text(s.answer(&Method::POST, "/login", None, form.as_bytes()));
        assert_eq!(status, 200);
        let sid = cookie.unwrap().split(';').next().unwrap().to_string();
        // The token is used up.
        let (status, _, _) = text(s.answer(&Method::POST, "/login", None, form.as_bytes()));
        assert_eq!(status, 403);
        let (status, page, _) = text(s.answer(&Method::GET, "/account", Some(&sid), b""));
        assert_eq!(status, 200);
        let reply = page
            .split("value=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let (status, _, _) = text(s.answer(
            &Method::POST,
            "/reply",
            Some(&sid),
            format!("csrf={reply}").as_bytes(),
        ));
        assert_eq!(status, 200);
        let (status, _, _) = text(s.answer(&Method::GET, "/account", None, b""));
        assert_eq!(status, 403);
        assert_eq!(s.stats().logins["ann"], 1);
        assert_eq!(s.stats().replies, 1);
    }
}
