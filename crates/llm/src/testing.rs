//! A scripted local HTTP server that speaks both chat protocols, for tests
//! here and in other crates (feature `testing`).
//!
//! Each request gets the next scripted [`Reply`] (status, body, headers such
//! as `Retry-After`, a delay before answering), or when the script is empty
//! the fallback: a well-formed answer `{"ok": true}` in the protocol of the
//! path asked (`/api/chat` → Ollama, anything else → OpenAI). The server
//! records every request it received ([`Received`]) and the most requests
//! it ever held at once, and serves each connection on its own thread.
//!
//! ```no_run
//! use mempalace_llm::testing::{Reply, ScriptedServer};
//! let server = ScriptedServer::start();
//! server.push(Reply::status(500, r#"{"error": {"message": "busy"}}"#));
//! server.push(Reply::openai(r#"{"type": "decision"}"#));
//! // … point an LlmConfig at server.url(), call, then:
//! assert_eq!(server.requests().len(), 2);
//! ```

// Test support: a fault here is a broken test, reported as a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    body: String,
    headers: Vec<(String, String)>,
    delay: Duration,
}

impl Reply {
    /// A 200 OpenAI chat completion whose answer text is `text`, with 11
    /// prompt and 7 completion tokens.
    pub fn openai(text: &str) -> Self {
        Self::openai_with_usage(text, 11, 7)
    }

    /// A 200 OpenAI chat completion with the given token counts.
    pub fn openai_with_usage(text: &str, prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self::json(
            200,
            &json!({
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "model": "scripted-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens},
            }),
        )
    }

    /// A 200 Ollama chat answer whose text is `text`, with 13 prompt and 5
    /// completion tokens.
    pub fn ollama(text: &str) -> Self {
        Self::ollama_with_usage(text, 13, 5)
    }

    /// A 200 Ollama chat answer with the given token counts.
    pub fn ollama_with_usage(text: &str, prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self::json(
            200,
            &json!({
                "model": "scripted-model",
                "created_at": "2026-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": text},
                "done": true,
                "done_reason": "stop",
                "prompt_eval_count": prompt_tokens,
                "eval_count": completion_tokens,
            }),
        )
    }

    /// Any JSON body with a status.
    pub fn json(status: u16, body: &Value) -> Self {
        Self { status, body: body.to_string(), headers: Vec::new(), delay: Duration::ZERO }
    }

    /// Any body text with a status (malformed bodies, HTML error pages).
    pub fn status(status: u16, body: &str) -> Self {
        Self { status, body: body.to_string(), headers: Vec::new(), delay: Duration::ZERO }
    }

    /// Waits `delay` before answering (the request counts as in flight meanwhile).
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Adds `Retry-After: secs`.
    pub fn retry_after(self, secs: u64) -> Self {
        self.header("Retry-After", &secs.to_string())
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// `POST`.
    pub method: String,
    /// The path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers, names in lowercase.
    pub headers: Vec<(String, String)>,
    /// The body as sent.
    pub raw_body: String,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
}

impl Received {
    /// A header's value (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(key, _)| *key == name).map(|(_, value)| value.as_str())
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    fallback: Mutex<Option<Reply>>,
    received: Mutex<Vec<Received>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    stop: AtomicBool,
}

/// The server; it stops when dropped.
pub struct ScriptedServer {
    url: String,
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Default for ScriptedServer {
    fn default() -> Self {
        Self::start()
    }
}

impl ScriptedServer {
    /// Starts a server on a free loopback port.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        let shared = Arc::new(Shared::default());
        let for_thread = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("scripted-llm".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if for_thread.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let shared = Arc::clone(&for_thread);
                    let _ = std::thread::Builder::new().name("scripted-llm-conn".into()).spawn(move || {
                        serve(stream, &shared);
                    });
                }
            })
            .expect("starting the scripted server");
        Self { url: format!("http://{addr}"), addr, shared }
    }

    /// `http://127.0.0.1:PORT`, the base URL to configure.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Queues a reply for the next request not yet answered.
    pub fn push(&self, reply: Reply) {
        self.shared.script.lock().unwrap().push_back(reply);
    }

    /// The reply for requests beyond the script (default: `{"ok": true}` in
    /// the protocol of the path).
    pub fn set_fallback(&self, reply: Reply) {
        *self.shared.fallback.lock().unwrap() = Some(reply);
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.shared.received.lock().unwrap().len()
    }

    /// The most requests held at once (received, not yet answered).
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn read_request(stream: &TcpStream) -> Option<Received> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut parts = request_line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length: usize =
        headers.iter().find(|(name, _)| name == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let body = serde_json::from_str(&raw_body).unwrap_or(Value::Null);
    Some(Received { method, path, headers, raw_body, body })
}

fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some(request) = read_request(&stream) else { return };
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let path = request.path.clone();
    shared.received.lock().unwrap().push(request);
    let reply = shared.script.lock().unwrap().pop_front().or_else(|| shared.fallback.lock().unwrap().clone());
    let reply = reply.unwrap_or_else(|| {
        if path.ends_with("/api/chat") { Reply::ollama(r#"{"ok": true}"#) } else { Reply::openai(r#"{"ok": true}"#) }
    });
    std::thread::sleep(reply.delay);
    // The request stops counting before its reply is written: once the
    // client has the reply it may start another request, which must not
    // find this one still counted.
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        if reply.status < 400 { "OK" } else { "Error" },
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(reply.body.as_bytes()));
    let _ = stream.flush();
}
