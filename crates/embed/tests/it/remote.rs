//! Remote providers against a local HTTP server that speaks the OpenAI and
//! Ollama embedding protocols: happy path, 429 then success, 500 until the
//! provider cools down, and recovery.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mempalace_embed::remote::{Protocol, RemoteConfig, RemoteEmbedder, Secret};
use mempalace_embed::resilient::{Clock, Resilient};
use mempalace_embed::{EmbedError, Embedder};
use serde_json::{Value, json};

/// A scripted response: status and JSON body; `None` body means "answer
/// with vectors for the request's inputs".
#[derive(Clone)]
struct Reply {
    status: u16,
    body: Option<Value>,
}

/// One request the server saw.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

struct FakeServer {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<Vec<Reply>>>,
}

/// A deterministic, unnormalised vector for a text.
fn vector_for(text: &str) -> Vec<f32> {
    vec![text.len() as f32, 2.0, 0.5]
}

impl FakeServer {
    fn start(protocol: Protocol) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Mutex<Vec<Reply>>> = Arc::new(Mutex::new(Vec::new()));
        let (seen_t, script_t) = (Arc::clone(&seen), Arc::clone(&script));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
                let mut length = 0;
                let mut authorization = None;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    let (name, value) = line.split_once(':').unwrap_or((line, ""));
                    match name.to_ascii_lowercase().as_str() {
                        "content-length" => length = value.trim().parse().unwrap(),
                        "authorization" => authorization = Some(value.trim().to_string()),
                        _ => {}
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                seen_t.lock().unwrap().push(Seen { path, authorization, body: body.clone() });
                let reply = {
                    let mut script = script_t.lock().unwrap();
                    if script.is_empty() { Reply { status: 200, body: None } } else { script.remove(0) }
                };
                let inputs: Vec<String> = body["input"]
                    .as_array()
                    .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
                    .unwrap_or_default();
                let payload = reply.body.unwrap_or_else(|| match protocol {
                    // Indices deliberately out of order: the client must sort them.
                    Protocol::OpenAi => json!({"object": "list", "data": inputs.iter().enumerate().rev()
                        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": vector_for(t)})).collect::<Vec<_>>()}),
                    Protocol::Ollama => json!({"model": "m", "embeddings": inputs.iter().map(|t| vector_for(t)).collect::<Vec<_>>()}),
                });
                let text = payload.to_string();
                let reason = if reply.status == 200 { "OK" } else { "ERR" };
                let response = format!(
                    "HTTP/1.1 {} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    reply.status,
                    text.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Self { url, seen, script }
    }

    fn push(&self, status: u16, body: Option<Value>) {
        self.script.lock().unwrap().push(Reply { status, body });
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn config(protocol: Protocol, server: &FakeServer) -> RemoteConfig {
    let mut config = RemoteConfig::new(protocol, server.url.clone(), "text-embedding-3-small");
    config.initial_backoff = Duration::from_millis(10);
    config.max_batch = 2;
    config
}

#[test]
fn openai_protocol_happy_path_with_batching_and_auth() {
    let server = FakeServer::start(Protocol::OpenAi);
    let mut config = config(Protocol::OpenAi, &server);
    config.api_key = Some(Secret::new("sk-test"));
    let provider = RemoteEmbedder::new(config);
    assert_eq!(provider.model_id(), "openai:text-embedding-3-small");
    let vectors = provider.embed_batch(&["a", "bbb", "cc"]).unwrap();
    assert_eq!(vectors.len(), 3);
    for (text, vector) in ["a", "bbb", "cc"].iter().zip(&vectors) {
        let mut expected = vector_for(text);
        mempalace_core::vector::normalize(&mut expected);
        assert_eq!(vector, &expected, "vectors come back in input order, normalised");
    }
    assert_eq!(provider.dim(), 3);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "max_batch 2 splits three texts into two requests");
    assert_eq!(requests[0].path, "/v1/embeddings");
    assert_eq!(requests[0].authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(requests[0].body["model"], "text-embedding-3-small");
}

#[test]
fn ollama_protocol_happy_path() {
    let server = FakeServer::start(Protocol::Ollama);
    let provider = RemoteEmbedder::new(config(Protocol::Ollama, &server));
    assert_eq!(provider.model_id(), "ollama:text-embedding-3-small");
    let vectors = provider.embed_batch(&["hello"]).unwrap();
    assert!((mempalace_core::vector::norm(&vectors[0]) - 1.0).abs() < 1e-6);
    assert_eq!(server.requests()[0].path, "/api/embed");
    assert!(server.requests()[0].authorization.is_none());
}

#[test]
fn a_429_is_retried_and_then_succeeds() {
    let server = FakeServer::start(Protocol::OpenAi);
    server.push(429, Some(json!({"error": {"message": "rate limited"}})));
    let provider = RemoteEmbedder::new(config(Protocol::OpenAi, &server));
    let vectors = provider.embed_batch(&["x"]).unwrap();
    assert_eq!(vectors.len(), 1);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn client_errors_are_not_retried() {
    let server = FakeServer::start(Protocol::OpenAi);
    server.push(401, Some(json!({"error": {"message": "bad key"}})));
    let provider = RemoteEmbedder::new(config(Protocol::OpenAi, &server));
    let error = provider.embed_batch(&["x"]).unwrap_err().to_string();
    assert!(error.contains("HTTP 401") && error.contains("bad key"), "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn persistent_500s_cool_the_provider_down_until_it_recovers() {
    let server = FakeServer::start(Protocol::OpenAi);
    for _ in 0..4 {
        server.push(500, Some(json!({"error": "boom"})));
    }
    let base = Instant::now();
    let offset = Arc::new(AtomicU64::new(0));
    let clock_offset = Arc::clone(&offset);
    let clock: Clock = Arc::new(move || base + Duration::from_secs(clock_offset.load(Ordering::SeqCst)));
    let provider = Resilient::with_clock(RemoteEmbedder::new(config(Protocol::OpenAi, &server)), clock);
    let error = provider.embed_batch(&["x"]).unwrap_err().to_string();
    assert!(error.contains("after 3 retries: HTTP 500"), "{error}");
    assert_eq!(server.requests().len(), 4, "one try and three retries");
    assert!(!provider.available());
    assert!(matches!(provider.embed_batch(&["x"]), Err(EmbedError::CoolingDown { .. })));
    assert_eq!(server.requests().len(), 4, "no request while cooling down");
    offset.store(61, Ordering::SeqCst);
    assert!(provider.available());
    assert_eq!(provider.embed_batch(&["x"]).unwrap().len(), 1, "the server works again");
    assert!(provider.available());
}
