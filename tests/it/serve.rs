//! The review page: its API refuses state changes without the page's token or from another
//! origin, and in a real headless Chromium (driven through chromedriver) the list loads, a diff
//! renders side by side, and clicking approve changes the entry's state in runs.db.

use crate::common::Env;
use base64::Engine as _;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(env: &Env) -> Server {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("polymorph"))
        .current_dir(env.path())
        .args([
            "--db",
            env.db().to_str().unwrap(),
            "--ledger",
            env.ledger().to_str().unwrap(),
            "serve",
            "--port",
            "0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    Server { child, port }
}

/// A minimal HTTP/1.1 exchange (Connection: close): (status, body).
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).unwrap();
    // Read the head, then exactly the body it announces (some servers keep the socket open).
    let mut reader = BufReader::new(s);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (mut length, mut chunked) = (None, false);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).unwrap();
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        reader.read_exact(&mut body).unwrap();
    } else {
        reader.read_to_end(&mut body).unwrap();
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn state_of(env: &Env, entry: i64) -> String {
    env.json(&[
        "query",
        &format!("SELECT review_state FROM ledger_entries WHERE id = {entry}"),
    ])[0]["review_state"]
        .as_str()
        .unwrap()
        .to_string()
}

/// DNS rebinding: a page under another name that resolves to 127.0.0.1 gets nothing; and
/// reading never creates anything, not even a missing ledger.
#[test]
fn requests_must_name_the_page_and_reads_create_nothing() {
    let env = Env::new();
    env.accepted_entries(&[300]);
    std::fs::rename(env.ledger(), env.path().join("ledger.moved")).unwrap();
    let server = serve(&env);
    let port = server.port;
    for host in [
        format!("evil.example:{port}"),
        format!("127.0.0.1:{}", port + 1),
    ] {
        let (status, body) = http(port, "GET", "/api/entries", &[("Host", &host)], None);
        assert_eq!(status, 421, "{host}: {body}");
        assert!(body.contains("is not this page's address"), "{body}");
    }
    let (status, _) = http(
        port,
        "GET",
        "/",
        &[("Host", &format!("localhost:{port}"))],
        None,
    );
    assert_eq!(status, 200);
    let candidate = env.json(&[
        "query",
        "SELECT candidate_id AS c FROM ledger_entries WHERE kind = 'accepted'",
    ])[0]["c"]
        .as_i64()
        .unwrap();
    let (status, body) = http(
        port,
        "GET",
        &format!("/api/candidates/{candidate}"),
        &[],
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("PAD_PERMILLE 300"),
        "the recorded diff: {body}"
    );
    assert!(!env.ledger().exists(), "a GET created a ledger");
}

#[test]
fn state_changes_need_the_page_token_and_the_same_origin() {
    let env = Env::new();
    env.accepted_entries(&[300, 0]);
    let server = serve(&env);
    let (status, page) = http(server.port, "GET", "/", &[], None);
    assert_eq!(status, 200);
    let token = page
        .split("const TOKEN = \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    assert_eq!(token.len(), 32);
    let (status, entries) = http(server.port, "GET", "/api/entries", &[], None);
    assert_eq!(status, 200);
    assert!(entries.contains("\"entry\":2") && entries.contains("pending"));

    let body = json!({ "reason": "x" });
    assert_eq!(
        http(
            server.port,
            "POST",
            "/api/entries/2/approve",
            &[],
            Some(&body)
        )
        .0,
        403
    );
    assert_eq!(
        http(
            server.port,
            "POST",
            "/api/entries/2/approve",
            &[("X-Polymorph-Token", "0000")],
            Some(&body)
        )
        .0,
        403
    );
    let evil = [
        ("X-Polymorph-Token", token.as_str()),
        ("Origin", "http://evil.example"),
    ];
    assert_eq!(
        http(
            server.port,
            "POST",
            "/api/entries/2/approve",
            &evil,
            Some(&body)
        )
        .0,
        403
    );
    assert_eq!(
        http(server.port, "GET", "/api/entries/2/approve", &[], None).0,
        405,
        "no state change on GET"
    );
    assert_eq!(state_of(&env, 2), "pending");

    let good = [
        ("X-Polymorph-Token", token.as_str()),
        (
            "Origin",
            &format!("http://127.0.0.1:{}", server.port) as &str,
        ),
    ];
    assert_eq!(
        http(
            server.port,
            "POST",
            "/api/entries/3/reject",
            &good,
            Some(&json!({}))
        )
        .0,
        400,
        "a reason is required"
    );
    assert_eq!(
        http(
            server.port,
            "POST",
            "/api/entries/2/approve",
            &good,
            Some(&body)
        )
        .0,
        200
    );
    assert_eq!(state_of(&env, 2), "approved");
    let who = env.json(&[
        "query",
        "SELECT reviewed_by FROM ledger_entries WHERE id = 2",
    ]);
    assert_eq!(who[0]["reviewed_by"], "review page");
}

/// WebDriver over plain HTTP to chromedriver.
struct Driver {
    child: Child,
    port: u16,
    session: String,
}

impl Driver {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (_, text) = http(
            self.port,
            method,
            &format!("/session/{}{path}", self.session),
            &[],
            body.as_ref(),
        );
        serde_json::from_str::<Value>(text.trim()).unwrap_or_else(|e| panic!("{path}: {e}: {text}"))
            ["value"]
            .clone()
    }

    fn find(&self, css: &str) -> Option<String> {
        let v = self.call(
            "POST",
            "/elements",
            Some(json!({ "using": "css selector", "value": css })),
        );
        v.as_array()?
            .first()
            .and_then(|e| e.as_object()?.values().next()?.as_str().map(str::to_string))
    }

    fn wait_for(&self, css: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(e) = self.find(css) {
                return e;
            }
            assert!(Instant::now() < deadline, "{css} never appeared");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn click(&self, element: &str) {
        self.call(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    fn text(&self, element: &str) -> String {
        self.call("GET", &format!("/element/{element}/text"), None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = http(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            &[],
            None,
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn chromium() -> Option<Driver> {
    let found = |p: &str| std::path::Path::new(p).exists();
    if !found("/usr/bin/chromium") || !found("/usr/bin/chromedriver") {
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new("/usr/bin/chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let profile = tempfile::tempdir().unwrap().keep();
    let caps = json!({ "capabilities": { "alwaysMatch": { "goog:chromeOptions": {
        "binary": "/usr/bin/chromium",
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,1000", format!("--user-data-dir={}", profile.display())]
    } } } });
    let (_, text) = http(port, "POST", "/session", &[], Some(&caps));
    let v: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
    let session = v["value"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {text}"))
        .to_string();
    Some(Driver {
        child,
        port,
        session,
    })
}

#[test]
fn the_page_in_headless_chromium_lists_entries_renders_a_diff_and_approves() {
    let Some(browser) = chromium() else {
        crate::common::tools::missing(
            crate::common::tools::Tool::Chromium,
            "chromium or chromedriver is not installed (.ci/run installs them): browser test",
        );
        return;
    };
    let env = Env::new();
    env.accepted_entries(&[300, 0]);
    let server = serve(&env);
    browser.call(
        "POST",
        "/url",
        Some(json!({ "url": format!("http://127.0.0.1:{}/", server.port) })),
    );
    browser.wait_for("#runs tr.run");
    browser.wait_for("#chart svg circle");
    let first = browser.wait_for("#entries tr.entry");
    assert!(
        browser.text(&first).starts_with("e2"),
        "{}",
        browser.text(&first)
    );
    browser.click(&first);
    let added = browser.wait_for("#diff .add");
    assert!(
        browser.text(&added).contains("PAD_PERMILLE 300"),
        "{}",
        browser.text(&added)
    );
    let removed = browser.wait_for("#diff .del");
    assert!(browser.text(&removed).contains("PAD_PERMILLE 800"));
    let approve = browser.wait_for("#approve");
    browser.click(&approve);
    let deadline = Instant::now() + Duration::from_secs(20);
    while state_of(&env, 2) != "approved" {
        assert!(
            Instant::now() < deadline,
            "clicking approve did not approve e2"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = browser.wait_for("#status");
    assert!(browser.text(&status).contains("approved e2"));
    let png = base64::engine::general_purpose::STANDARD
        .decode(browser.call("GET", "/screenshot", None).as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    if let Ok(out) = std::env::var("POLYMORPH_SCREENSHOT") {
        std::fs::write(out, &png).unwrap();
    }
}
