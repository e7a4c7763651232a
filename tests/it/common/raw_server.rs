//! A raw HTTP server for streamed replies written by hand, as llama.cpp and vLLM stream them:
//! each request gets a head and a first part, a pause, then the rest. One request at a time, as
//! a one-slot CPU server serves them; during a pause it notices a client that hung up (and then
//! stops, as a server cancels an abandoned request), and it keeps every request body.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the server saw.
#[derive(Default)]
pub struct Raw {
    pub requests: AtomicUsize,
    /// Replies whose client closed the connection during the pause.
    pub hung_up: AtomicUsize,
    pub bodies: Mutex<Vec<Value>>,
}

/// Serves `replies[k]` (head and first part, pause, rest) to the k-th request; the base URL.
pub fn raw_server(replies: Vec<(String, Duration, String)>) -> (String, Arc<Raw>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let raw = Arc::new(Raw::default());
    let seen = Arc::clone(&raw);
    std::thread::spawn(move || {
        for (first, pause, rest) in replies {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            seen.bodies
                .lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            seen.requests.fetch_add(1, Ordering::SeqCst);
            let mut w = stream;
            let _ = w.write_all(first.as_bytes());
            let _ = w.flush();
            if hung_up_within(&mut reader, pause) {
                seen.hung_up.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            let _ = w.write_all(rest.as_bytes());
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), raw)
}

/// Waits `pause`, watching for the client to close its end.
fn hung_up_within(reader: &mut BufReader<std::net::TcpStream>, pause: Duration) -> bool {
    let end = Instant::now() + pause;
    let mut byte = [0u8; 1];
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        let wait = left
            .min(Duration::from_millis(50))
            .max(Duration::from_millis(1));
        let _ = reader.get_ref().set_read_timeout(Some(wait));
        match reader.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => {}
        }
    }
    false
}

/// Server-sent events, one `data:` line each.
pub fn sse(events: &[Value]) -> String {
    let mut out = String::new();
    for e in events {
        out.push_str(&format!("data: {e}\n\n"));
    }
    out
}

/// The head of a streamed reply.
pub const HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
