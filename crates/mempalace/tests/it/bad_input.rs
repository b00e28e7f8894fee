//! Bad input over every transport (issue 21): an oversized body, invalid
//! UTF-8, JSON nested 100,000 deep, an unknown argument and a wrong type —
//! over the REST API, MCP streamable HTTP and MCP stdio. Each gets a clear
//! error (an HTTP status and a problem or JSON-RPC error that names the
//! field where there is one), and the server keeps serving: a normal call
//! right after succeeds.

use std::io::{BufRead as _, Write as _};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::harness::{Answer, Sandbox, call, call_bytes};

const JSON: (&str, &str) = ("Content-Type", "application/json");

/// 100,000 opening brackets.
fn deep() -> Vec<u8> {
    vec![b'['; 100_000]
}

/// A drawer body whose content holds bytes that are not UTF-8.
fn not_utf8() -> Vec<u8> {
    let mut body = br#"{"wing": "w", "room": "r", "content": "caf"#.to_vec();
    body.extend_from_slice(&[0xff, 0xfe, 0xe9]);
    body.extend_from_slice(br#""}"#);
    body
}

#[test]
fn rest_refuses_bad_bodies_clearly_and_goes_on_serving() {
    let sandbox = Sandbox::new().with_static_model();
    let server = sandbox.serve("127.0.0.1", &["--no-workers"], &[]);
    let port = server.port;
    let post = |path: &str, content_type: &str, body: &[u8]| {
        call_bytes(port, "POST", path, &[("Content-Type", content_type)], body)
    };

    // Over the 2 MiB limit: 413, naming the limit.
    let mut big = br#"{"wing": "w", "room": "r", "content": ""#.to_vec();
    big.extend(std::iter::repeat_n(b'a', 3 << 20));
    big.extend_from_slice(br#""}"#);
    let detail = post("/api/v1/drawers", "application/json", &big).problem(413);
    assert!(detail.contains("2097152 bytes"), "{detail}");
    let detail = post("/api/v1/import", "application/x-ndjson", &big).problem(413);
    assert!(detail.contains("mempalace import"), "{detail}");

    // Not UTF-8: 400, naming the field.
    let detail = post("/api/v1/drawers", "application/json", &not_utf8()).problem(400);
    assert!(detail.contains("content") && detail.contains("unicode"), "{detail}");
    let detail = post("/api/v1/import", "application/x-ndjson", &[0xff, 0xfe, b'\n']).problem(400);
    assert!(detail.contains("UTF-8"), "{detail}");

    // Nested 100,000 deep: 400, not a stack overflow.
    post("/api/v1/drawers", "application/json", &deep()).problem(400);
    let detail = post("/api/v1/import", "application/x-ndjson", &deep()).problem(400);
    assert!(detail.contains("line 1"), "{detail}");
    let mut nested_field = br#"{"wing": "w", "room": "r", "content": "x", "tags": "#.to_vec();
    nested_field.extend(deep());
    assert!(post("/api/v1/drawers", "application/json", &nested_field).problem(400).contains("tags"));

    // An unknown field and a wrong type: 400, naming the field.
    let unknown = json!({"wing": "w", "room": "r", "content": "x", "colour": "red"}).to_string();
    assert!(post("/api/v1/drawers", "application/json", unknown.as_bytes()).problem(400).contains("colour"));
    let wrong = json!({"wing": "w", "room": "r", "content": 42}).to_string();
    let detail = post("/api/v1/drawers", "application/json", wrong.as_bytes()).problem(400);
    assert!(detail.contains("content") && detail.contains("invalid type"), "{detail}");
    let wrong = json!({"subject": "a", "predicate": "b", "object": ["c"]}).to_string();
    assert!(post("/api/v1/kg/facts", "application/json", wrong.as_bytes()).problem(400).contains("object"));

    // Still serving, and nothing refused was written.
    let good = json!({"wing": "w", "room": "r", "content": "the kiln runs at 1240 degrees"}).to_string();
    let added = call(port, "POST", "/api/v1/drawers", &[JSON], Some(&good));
    assert_eq!(added.status, 201, "{}", added.body);
    assert_eq!(call(port, "GET", "/api/v1/taxonomy", &[], None).json()["total_drawers"], 1);
}

/// The JSON-RPC message of an MCP HTTP answer (a JSON body or SSE frames).
fn message(answer: &Answer) -> Value {
    std::iter::once(answer.body.as_str())
        .chain(answer.body.lines().filter_map(|l| l.strip_prefix("data:")))
        .find_map(|text| serde_json::from_str::<Value>(text.trim()).ok().filter(|m| m.get("jsonrpc").is_some()))
        .unwrap_or_else(|| panic!("no JSON-RPC message in {} {}", answer.status, answer.body))
}

const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

/// Opens an MCP session over HTTP; returns its id.
fn open_session(port: u16) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let answer = call(port, "POST", "/mcp", &[JSON, ACCEPT], Some(&init.to_string()));
    assert_eq!(answer.status, 200, "{}", answer.body);
    let session = answer.header("mcp-session-id").expect("a session id").to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let answer = call(port, "POST", "/mcp", &[JSON, ACCEPT, ("Mcp-Session-Id", &session)], Some(&initialized));
    assert_eq!(answer.status, 202, "{}", answer.body);
    session
}

fn tool_call(id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
        .to_string()
        .into_bytes()
}

#[test]
fn mcp_http_refuses_bad_bodies_clearly_and_goes_on_serving() {
    let sandbox = Sandbox::new().with_static_model();
    let server = sandbox.serve("127.0.0.1", &["--no-workers"], &[]);
    let port = server.port;
    let session = open_session(port);
    let post = |body: &[u8]| {
        call_bytes(
            port,
            "POST",
            "/mcp",
            &[JSON, ACCEPT, ("Mcp-Session-Id", &session), ("MCP-Protocol-Version", "2025-06-18")],
            body,
        )
    };

    // Over the SDK's 4 MiB limit.
    let mut big = br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "mempalace_search", "arguments": {"query": ""#.to_vec();
    big.extend(std::iter::repeat_n(b'a', 5 << 20));
    big.extend_from_slice(br#""}}}"#);
    let answer = post(&big);
    assert_eq!(answer.status, 413, "{}", answer.body);
    assert!(answer.body.contains("4194304"), "{}", answer.body);

    // Not UTF-8, not JSON, nested 100,000 deep: 400 and a parse error
    // saying where.
    let mut bad_utf8 = br#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "mempalace_search", "arguments": {"query": ""#.to_vec();
    bad_utf8.extend_from_slice(&[0xff, 0xfe]);
    bad_utf8.extend_from_slice(br#""}}}"#);
    for (body, expected) in
        [(bad_utf8, "unicode"), (b"{not json".to_vec(), "line 1 column"), (deep(), "recursion limit")]
    {
        let answer = post(&body);
        assert_eq!(answer.status, 400, "{}", answer.body);
        let error = message(&answer);
        assert_eq!(error["error"]["code"], -32700, "{error}");
        assert!(error["error"]["message"].as_str().unwrap().contains(expected), "{error}");
    }
    // JSON, but not a message.
    let answer = post(br#"{"hello": "world"}"#);
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(message(&answer)["error"]["code"], -32600, "{}", answer.body);

    // Arguments: an unknown one, a wrong type, a nested one — -32602
    // naming the parameter.
    let mut nested = br#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "mempalace_search", "arguments": {"query": "x", "wing": "#.to_vec();
    nested.extend(vec![b'['; 100]);
    nested.extend(vec![b']'; 100]);
    nested.extend_from_slice(b"}}}");
    for (body, field) in [
        (
            tool_call(4, "mempalace_add_drawer", json!({"wing": "w", "room": "r", "content": "x", "colour": "red"})),
            "colour",
        ),
        (tool_call(5, "mempalace_add_drawer", json!({"wing": "w", "room": "r", "content": 42})), "content"),
        (tool_call(6, "mempalace_search", json!({"query": "x", "limit": "many"})), "limit"),
        (nested, "wing"),
    ] {
        let answer = post(&body);
        assert_eq!(answer.status, 200, "{}", answer.body);
        let error = message(&answer);
        assert_eq!(error["error"]["code"], -32602, "{error}");
        assert!(error["error"]["message"].as_str().unwrap().contains(field), "{field}: {error}");
    }

    // Still serving, in the same session.
    let answer = post(&tool_call(
        7,
        "mempalace_add_drawer",
        json!({"wing": "w", "room": "r",
        "content": "the kiln runs at 1240 degrees"}),
    ));
    let added = message(&answer);
    let text: Value = serde_json::from_str(added["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["success"], true, "{added}");
    let answer = post(&tool_call(8, "mempalace_status", json!({})));
    let status: Value =
        serde_json::from_str(message(&answer)["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(status["total_drawers"], 1, "nothing refused was written: {status}");
}

#[test]
fn mcp_stdio_answers_unreadable_lines_and_goes_on_serving() {
    let sandbox = Sandbox::new().with_static_model();
    let mut child = sandbox
        .cmd(&["mcp", "serve", "--no-workers"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the stdio server");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = move |line: &[u8]| {
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    let mut next = move || -> Value { serde_json::from_str(&lines.next().expect("an answer").unwrap()).unwrap() };

    send(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
    assert!(next()["result"]["protocolVersion"].is_string());
    send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    let mut bad_utf8 =
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mempalace_search","arguments":{"query":""#
            .to_vec();
    bad_utf8.extend_from_slice(&[0xff, 0xfe]);
    bad_utf8.extend_from_slice(br#""}}}"#);
    send(&bad_utf8);
    let error = next();
    assert_eq!((error["id"].clone(), error["error"]["code"].clone()), (Value::Null, json!(-32700)), "{error}");
    send(&deep());
    let error = next();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    send(&tool_call(2, "mempalace_add_drawer", json!({"wing": "w", "room": "r", "content": "x", "colour": "red"})));
    let error = next();
    assert_eq!(error["error"]["code"], -32602, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("colour"), "{error}");

    send(&tool_call(3, "mempalace_status", json!({})));
    let status = next();
    assert_eq!(status["id"], 3, "{status}");
    assert!(status["result"]["content"][0]["text"].as_str().unwrap().contains("total_drawers"), "{status}");
    drop(send);
    assert!(child.wait().unwrap().success(), "the server ends cleanly when stdin closes");
}
