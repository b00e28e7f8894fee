//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout,
//! with what rmcp's own stdio transport leaves to the server.
//!
//! * A line that is not JSON is answered `-32700 Parse error` (id null) and a
//!   JSON value that is not a message object (a batch array, a number) with
//!   `-32600 Invalid Request`, as the Python MemPalace does; rmcp drops such
//!   lines without a word, leaving the client waiting.
//! * Tool calls take effect in the order they were sent. rmcp runs every
//!   request as its own task, so an `add_drawer` and a `search` piped back
//!   to back could run in either order, and the search would miss what the
//!   same client had just filed. Here each `tools/call` is registered with
//!   the [`Sequencer`] as it arrives; a call starts only after every earlier
//!   call that writes has finished, and a call that writes also waits for
//!   the reads sent before it. Calls that only read still run side by side.
//!
//! Lines go to rmcp through an in-memory pipe; everything bound for stdout
//! (rmcp's messages and our own errors) passes one writer, so messages are
//! never interleaved.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc};

use crate::server::McpServer;

/// Orders the tool calls of one stdio session by arrival.
#[derive(Default)]
pub struct Sequencer {
    state: Mutex<SequencerState>,
    changed: Notify,
}

#[derive(Default)]
struct SequencerState {
    next: u64,
    /// Pending calls by arrival number: whether each writes.
    pending: BTreeMap<u64, bool>,
    /// Arrival number of each pending call, by its JSON-RPC id (as JSON).
    by_id: HashMap<String, u64>,
}

impl Sequencer {
    /// Registers a call as it arrives.
    pub fn arrive(&self, id: &str, writes: bool) {
        let mut state = lock(&self.state);
        let seq = state.next;
        state.next += 1;
        if let Some(old) = state.by_id.insert(id.to_string(), seq) {
            // An id reused before its answer: the older call no longer blocks.
            state.pending.remove(&old);
        }
        state.pending.insert(seq, writes);
    }

    /// Waits until the call `id` may start (see the module doc); calls not
    /// registered here (another transport) start at once.
    pub async fn enter(&self, id: &str) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = lock(&self.state);
                let Some(&seq) = state.by_id.get(id) else { return };
                let writes = state.pending.get(&seq).copied().unwrap_or(false);
                let blocked = state.pending.range(..seq).any(|(_, earlier_writes)| writes || *earlier_writes);
                if !blocked {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Marks the call `id` finished (idempotent).
    pub fn finish(&self, id: &str) {
        let mut state = lock(&self.state);
        if let Some(seq) = state.by_id.remove(id) {
            state.pending.remove(&seq);
            drop(state);
            self.changed.notify_waiters();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The key a JSON-RPC id is tracked under (its JSON text: `7`, `"abc"`).
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// What to do with one line read from stdin.
#[derive(Debug, PartialEq)]
enum Incoming {
    /// Blank: ignore.
    Blank,
    /// Answer this error ourselves.
    Reject(String),
    /// Hand the line (or its rewrite) to rmcp; a tool call is registered first.
    Forward { call: Option<(String, String)>, cancelled: Option<String>, rewritten: Option<String> },
}

/// The answer to a line that is not JSON (or not UTF-8, or nested deeper
/// than 128 levels).
fn not_json() -> String {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}).to_string()
}

fn classify(line: &str) -> Incoming {
    if line.trim().is_empty() {
        return Incoming::Blank;
    }
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(_) => return Incoming::Reject(not_json()),
    };
    let Value::Object(mut message) = value else {
        return Incoming::Reject(
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid Request"}}).to_string(),
        );
    };
    let method = message.get("method").and_then(Value::as_str);
    let call = match (method, message.get("id")) {
        (Some("tools/call"), Some(id)) if !id.is_null() => {
            let tool = message.get("params").and_then(|p| p.get("name")).and_then(Value::as_str).unwrap_or("");
            Some((id_key(id), tool.to_string()))
        }
        _ => None,
    };
    let cancelled = (method == Some("notifications/cancelled"))
        .then(|| message.get("params").and_then(|p| p.get("requestId")).map(id_key))
        .flatten();
    // An `initialize` without a protocol version gets the oldest one, as the
    // Python MemPalace answers it (rmcp would take it for the stateless
    // revision and refuse it).
    let mut rewritten = None;
    if method == Some("initialize")
        && let Some(Value::Object(params)) = message.get_mut("params")
        && !params.contains_key("protocolVersion")
    {
        params.insert("protocolVersion".into(), Value::String("2024-11-05".into()));
        rewritten = Some(Value::Object(message).to_string());
    }
    Incoming::Forward { call, cancelled, rewritten }
}

/// Serves MCP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio(server: McpServer) -> Result<(), std::io::Error> {
    use rmcp::ServiceExt;
    let sequencer = server.sequencer();
    let (mut to_rmcp, rmcp_in) = tokio::io::duplex(1 << 20);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 20);
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<String>();

    // The one writer of stdout: the MCP stdio transport owns it.
    let writer = tokio::spawn(async move {
        #[allow(clippy::disallowed_methods)]
        let mut stdout = tokio::io::stdout();
        while let Some(message) = out_rx.recv().await {
            stdout.write_all(message.as_bytes()).await?;
            stdout.write_all(b"\n").await?;
            stdout.flush().await?;
        }
        Ok::<(), std::io::Error>(())
    });

    // rmcp's messages out; each response finishes its call.
    let responses = {
        let out_tx = out_tx.clone();
        let sequencer = Arc::clone(&sequencer);
        tokio::spawn(async move {
            let mut lines = BufReader::new(from_rmcp).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(Value::Object(message)) = serde_json::from_str::<Value>(&line)
                    && message.get("method").is_none()
                    && let Some(id) = message.get("id")
                {
                    sequencer.finish(&id_key(id));
                }
                if out_tx.send(line).is_err() {
                    break;
                }
            }
        })
    };

    // stdin in: checked, registered, handed to rmcp.
    let tools = server.tool_writes();
    let reader = {
        let sequencer = Arc::clone(&sequencer);
        tokio::spawn(async move {
            let mut stdin = BufReader::new(tokio::io::stdin());
            let mut bytes = Vec::new();
            loop {
                bytes.clear();
                match stdin.read_until(b'\n', &mut bytes).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                // A line that is not UTF-8 is answered like any unreadable
                // line; the session goes on (reading lines as text would end it).
                let incoming = match std::str::from_utf8(&bytes) {
                    Ok(text) => classify(text.strip_suffix('\n').map_or(text, |t| t.strip_suffix('\r').unwrap_or(t))),
                    Err(_) => Incoming::Reject(not_json()),
                };
                let line = String::from_utf8_lossy(&bytes).trim_end_matches(['\n', '\r']).to_string();
                match incoming {
                    Incoming::Blank => {}
                    Incoming::Reject(error) => {
                        tracing::warn!("a malformed JSON-RPC line on stdin was answered with an error");
                        let _ = out_tx.send(error);
                    }
                    Incoming::Forward { call, cancelled, rewritten } => {
                        if let Some((id, tool)) = call {
                            sequencer.arrive(&id, tools.get(tool.as_str()).copied().unwrap_or(true));
                        }
                        if let Some(id) = cancelled {
                            sequencer.finish(&id);
                        }
                        let line = rewritten.unwrap_or(line);
                        if to_rmcp.write_all(line.as_bytes()).await.is_err() || to_rmcp.write_all(b"\n").await.is_err()
                        {
                            break;
                        }
                    }
                }
            }
            // End of input: rmcp sees its input close and stops.
            let _ = to_rmcp.shutdown().await;
        })
    };

    let running = server.serve((rmcp_in, rmcp_out)).await.map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    reader.abort();
    let _ = responses.await;
    writer.await.map_err(std::io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classified() {
        assert_eq!(classify("   "), Incoming::Blank);
        match classify("{not json") {
            Incoming::Reject(error) => assert!(error.contains("-32700") && error.contains("\"id\":null"), "{error}"),
            other => panic!("{other:?}"),
        }
        match classify("[1, 2]") {
            Incoming::Reject(error) => assert!(error.contains("-32600"), "{error}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mempalace_search"}}"#),
            Incoming::Forward { call: Some(("7".into(), "mempalace_search".into())), cancelled: None, rewritten: None }
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#),
            Incoming::Forward { call: None, cancelled: Some("\"a\"".into()), rewritten: None }
        );
        match classify(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}"#) {
            Incoming::Forward { rewritten: Some(line), .. } => {
                assert!(line.contains("\"protocolVersion\":\"2024-11-05\""))
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_call_waits_for_earlier_writes_and_a_write_for_everything_before_it() {
        let sequencer = Arc::new(Sequencer::default());
        sequencer.arrive("1", true); // add_drawer
        sequencer.arrive("2", false); // search
        sequencer.arrive("3", false); // status
        sequencer.arrive("4", true); // delete
        let waiting = |id: &'static str| {
            let sequencer = Arc::clone(&sequencer);
            tokio::spawn(async move { sequencer.enter(id).await })
        };
        let (search, status, delete) = (waiting("2"), waiting("3"), waiting("4"));
        tokio::task::yield_now().await;
        assert!(!search.is_finished() && !status.is_finished() && !delete.is_finished());
        sequencer.enter("1").await; // the first call starts at once
        sequencer.finish("1");
        search.await.unwrap();
        status.await.unwrap(); // reads run side by side
        tokio::task::yield_now().await;
        assert!(!delete.is_finished(), "a write waits for the reads sent before it");
        sequencer.finish("2");
        sequencer.finish("3");
        delete.await.unwrap();
        sequencer.enter("unregistered").await; // another transport: no waiting
    }
}
