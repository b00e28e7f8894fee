//! The REST API over real HTTP, on both stores: `serve --mcp-http` started
//! as a subprocess, every route called with a plain HTTP/1.1 client —
//! drawers (list, get, add, edit, soft and hard delete, restore), search
//! with its score breakdown, the knowledge graph, the palace graph,
//! sessions, episodes, jobs, conflicts, export and import, health, the
//! OpenAPI document — and the error and safety cases: problem+json for
//! every refusal, browser checks (Host, Origin, media type), tokens and
//! roles, and the request metrics.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Answer, Sandbox, Server, Store, call, on_both};

fn start(sandbox: &Sandbox) -> Server {
    sandbox.serve("127.0.0.1", &["--no-workers"], &[])
}

const JSON: (&str, &str) = ("Content-Type", "application/json");

fn get(port: u16, path: &str) -> Answer {
    call(port, "GET", path, &[], None)
}

fn send(port: u16, method: &str, path: &str, body: &Value) -> Answer {
    call(port, method, path, &[JSON], Some(&body.to_string()))
}

fn drawers_and_search(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let server = start(&sandbox);
    let port = server.port;

    let health = get(port, "/api/v1/health");
    assert_eq!(health.status, 200, "{}", health.body);
    let health = health.json();
    assert_eq!(
        (health["status"].as_str(), health["caller"].as_str(), health["drawers"].as_u64()),
        (Some("ok"), Some("local"), Some(0))
    );

    // File, and file the same text again.
    let new = json!({"wing": "project", "room": "decisions",
                     "content": "We decided to use PostgreSQL instead of MongoDB because of transactions.",
                     "memory_type": "decision", "importance": 4.0, "tags": ["db"]});
    let created = send(port, "POST", "/api/v1/drawers", &new);
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.json()["id"].as_str().unwrap().to_string();
    let again = send(port, "POST", "/api/v1/drawers", &new);
    assert_eq!((again.status, again.json()["created"].as_bool()), (200, Some(false)));
    for (wing, room, text) in [
        ("project", "notes", "The database migration script lives in tools/migrate.sh and runs nightly."),
        ("project", "notes", "Picked a new colour for the dashboard header: teal."),
        ("personal", "food", "Lunch on Friday was a mushroom risotto."),
    ] {
        assert_eq!(
            send(port, "POST", "/api/v1/drawers", &json!({"wing": wing, "room": room, "content": text})).status,
            201
        );
    }

    // The map and the browser.
    let taxonomy = get(port, "/api/v1/taxonomy").json();
    assert_eq!(taxonomy["total_drawers"], 4);
    let project = taxonomy["wings"].as_array().unwrap().iter().find(|w| w["wing"] == "project").unwrap().clone();
    assert_eq!(project["drawers"], 3);
    let page = get(port, "/api/v1/drawers?wing=project&limit=2").json();
    assert_eq!(
        (page["total"].as_u64(), page["drawers"].as_array().unwrap().len(), page["next_offset"].as_u64()),
        (Some(3), 2, Some(2))
    );
    let rest = get(port, "/api/v1/drawers?wing=project&limit=2&offset=2").json();
    assert_eq!((rest["drawers"].as_array().unwrap().len(), rest["next_offset"].is_null()), (1, true));
    let one = get(port, &format!("/api/v1/drawers/{id}")).json();
    assert_eq!(
        (one["wing"].as_str(), one["memory_type"].as_str(), one["importance"].as_f64()),
        (Some("project"), Some("decision"), Some(4.0))
    );
    assert_eq!(one["tags"], json!(["db"]));

    // Search, with why each result scored what it did.
    let found = get(port, "/api/v1/search?q=which%20database%20did%20we%20pick%20and%20why&limit=3").json();
    let top = &found["results"][0];
    assert_eq!(top["drawer"]["id"].as_str(), Some(id.as_str()), "{found}");
    let b = &top["breakdown"];
    assert_eq!(b["fusion"], "weighted");
    assert!(b["vector"].as_f64().unwrap() > 0.0 && b["score"] == top["score"], "{b}");
    let evidence = 1.0
        - (1.0 - b["vector"].as_f64().unwrap())
            * (1.0 - b["lexical"].as_f64().unwrap())
            * (1.0 - b["graph_weighted"].as_f64().unwrap())
            * (1.0 - b["date"].as_f64().unwrap());
    assert!((evidence - b["base"].as_f64().unwrap()).abs() < 1e-4, "the parts make the score: {b}");
    assert!(b.get("rerank").is_some() && b["owner_boost"].is_null());
    let rrf = get(port, "/api/v1/search?q=database&fusion=rrf").json();
    assert!(rrf["results"][0]["breakdown"]["rrf"].as_f64().unwrap() > 0.0, "{rrf}");

    // Edit keeps the id; soft delete hides, restore brings back, hard delete removes.
    let edited = send(
        port,
        "PATCH",
        &format!("/api/v1/drawers/{id}"),
        &json!({"content": "We use PostgreSQL (not MongoDB) for its transactions."}),
    );
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(edited.json()["id"].as_str(), Some(id.as_str()));
    assert!(
        get(port, &format!("/api/v1/drawers/{id}")).json()["content"]
            .as_str()
            .unwrap()
            .starts_with("We use PostgreSQL")
    );
    let deleted = call(port, "DELETE", &format!("/api/v1/drawers/{id}?reason=wrong%20room"), &[], None);
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    let hidden = get(port, &format!("/api/v1/drawers/{id}")).json();
    assert_eq!(
        (hidden["status"].as_str(), hidden["status_reason"].as_str()),
        (Some("invalidated"), Some("wrong room"))
    );
    assert_eq!(get(port, "/api/v1/taxonomy").json()["total_drawers"], 3);
    let trash = get(port, "/api/v1/drawers?status=hidden").json();
    assert_eq!(trash["drawers"][0]["id"].as_str(), Some(id.as_str()), "{trash}");
    let restored =
        call(port, "POST", &format!("/api/v1/drawers/{id}/restore"), &[("X-Requested-With", "mempalace")], None);
    assert_eq!((restored.status, restored.json()["status"].as_str()), (200, Some("active")));
    assert_eq!(get(port, "/api/v1/taxonomy").json()["total_drawers"], 4);
    assert_eq!(call(port, "DELETE", &format!("/api/v1/drawers/{id}?hard=true"), &[], None).status, 204);
    get(port, &format!("/api/v1/drawers/{id}")).problem(404);

    // Knowledge graph: add, query, timeline, invalidate.
    let fact = json!({"subject": "Orion", "predicate": "uses", "object": "PostgreSQL", "valid_from": "2026-01-10"});
    let added = send(port, "POST", "/api/v1/kg/facts", &fact);
    assert_eq!(added.status, 201, "{}", added.body);
    assert_eq!(send(port, "POST", "/api/v1/kg/facts", &fact).json()["created"], false);
    let facts = get(port, "/api/v1/kg/entities/Orion").json();
    assert_eq!(
        (facts["facts"][0]["object"].as_str(), facts["facts"][0]["current"].as_bool()),
        (Some("PostgreSQL"), Some(true))
    );
    assert_eq!(get(port, "/api/v1/kg/timeline?entity=PostgreSQL").json()["facts"].as_array().unwrap().len(), 1);
    let ended = send(
        port,
        "POST",
        "/api/v1/kg/invalidate",
        &json!({"subject": "Orion", "predicate": "uses", "object": "PostgreSQL", "ended": "2026-06-01"}),
    );
    assert_eq!(ended.json()["invalidated"], 1);
    assert_eq!(get(port, "/api/v1/kg/entities/Orion").json()["facts"][0]["current"], false);
    assert_eq!(get(port, "/api/v1/kg/stats").status, 200);
    let entities = get(port, "/api/v1/kg/entities?q=orion").json();
    assert_eq!(
        (entities["total"].as_u64(), entities["entities"][0]["name"].as_str()),
        (Some(1), Some("Orion")),
        "{entities}"
    );
    assert_eq!(entities["entities"][0]["facts"], 1);
    get(port, "/api/v1/kg/entities?limit=0").problem(400);

    // The rest of the read side answers in its shapes.
    let graph = get(port, "/api/v1/graph").json();
    assert!(graph["rooms_per_wing"].is_object() && graph["tunnels"].is_array(), "{graph}");
    assert!(get(port, "/api/v1/sessions").json()["sessions"].is_array());
    assert!(get(port, "/api/v1/episodes").json()["episodes"].is_array());
    assert!(get(port, "/api/v1/diaries/claude").json()["entries"].is_array());
    assert!(get(port, "/api/v1/jobs").status == 200);
    let conflicts = get(port, "/api/v1/conflicts").json();
    assert!(conflicts["superseded"].is_array() && conflicts["merged"].is_array());

    // Export, then import into another palace through its own server.
    let export = get(port, "/api/v1/export");
    assert_eq!((export.status, export.header("content-type")), (200, Some("application/x-ndjson")));
    let lines: Vec<Value> = export.body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["type"], "header");
    assert_eq!(lines.iter().filter(|l| l["type"] == "drawer").count(), 3);
    let other = Sandbox::on(Store::Sqlite).with_static_model();
    let second = start(&other);
    let imported =
        call(second.port, "POST", "/api/v1/import", &[("Content-Type", "application/x-ndjson")], Some(&export.body));
    assert_eq!(imported.status, 200, "{}", imported.body);
    assert!(imported.json()["inserted"].as_u64().unwrap() >= 4, "{}", imported.body);
    assert_eq!(get(second.port, "/api/v1/taxonomy").json()["total_drawers"], 3);
    let again =
        call(second.port, "POST", "/api/v1/import", &[("Content-Type", "application/x-ndjson")], Some(&export.body))
            .json();
    assert_eq!(again["inserted"], 0, "importing twice adds nothing");

    // Every request was counted by its route pattern.
    let metrics = get(port, "/metrics").body;
    for needle in [
        "mempalace_http_requests_total{route=\"/api/v1/drawers/{id}\",method=\"PATCH\",status=\"200\"} 1",
        "mempalace_http_requests_total{route=\"/api/v1/drawers\",method=\"POST\",status=\"201\"} 4",
        "mempalace_http_request_duration_seconds_count{route=\"/api/v1/search\"} 2",
        "# TYPE mempalace_store_size_bytes gauge",
        "mempalace_drawers_by_status{status=\"active\"}",
    ] {
        assert!(metrics.contains(needle), "{needle} in\n{metrics}");
    }
}

fn refusals_are_problems_and_browsers_are_checked(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let server = start(&sandbox);
    let port = server.port;
    let good = json!({"wing": "w", "room": "r", "content": "a drawer"});

    assert!(send(port, "POST", "/api/v1/drawers", &json!({"wing": "w", "room": "r"})).problem(400).contains("content"));
    assert!(
        send(port, "POST", "/api/v1/drawers", &json!({"wing": "w", "room": "r", "content": "x", "colour": "red"}))
            .problem(400)
            .contains("colour")
    );
    assert!(call(port, "POST", "/api/v1/drawers", &[JSON], Some("{not json")).problem(400).contains("request body"));
    assert!(
        send(port, "POST", "/api/v1/drawers", &json!({"wing": "w", "room": "r", "content": "   "}))
            .problem(400)
            .contains("empty")
    );
    assert!(
        send(port, "POST", "/api/v1/drawers", &json!({"wing": "w", "room": "r", "content": "x", "importance": 9}))
            .problem(400)
            .contains("importance")
    );
    assert!(get(port, "/api/v1/drawers/not-an-id").problem(404).contains("not-an-id"));
    get(port, "/api/v1/drawers/drawer_w_r_000000000000000000000000").problem(404);
    assert!(get(port, "/api/v1/drawers?limit=0").problem(400).contains("limit"));
    assert!(get(port, "/api/v1/drawers?colour=red").problem(400).contains("query string"));
    assert!(get(port, "/api/v1/search?q=%20").problem(400).contains("empty"));
    assert!(get(port, "/api/v1/nope").problem(404).contains("openapi.json"));
    // A form post (the only write a foreign page can make without asking)
    // is refused, as are foreign origins and unknown hosts.
    let form = call(
        port,
        "POST",
        "/api/v1/drawers",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some("wing=w&room=r&content=x"),
    );
    assert!(form.problem(415).contains("application/json"));
    let foreign =
        call(port, "POST", "/api/v1/drawers", &[JSON, ("Origin", "http://evil.example")], Some(&good.to_string()));
    assert!(foreign.problem(403).contains("evil.example"));
    let own = call(
        port,
        "POST",
        "/api/v1/drawers",
        &[JSON, ("Origin", &format!("http://127.0.0.1:{port}"))],
        Some(&good.to_string()),
    );
    assert_eq!(own.status, 201, "the server's own page may write: {}", own.body);
    call(port, "GET", "/api/v1/taxonomy", &[("Host", "evil.example")], None).problem(403);
    let id = own.json()["id"].as_str().unwrap().to_string();
    call(port, "DELETE", &format!("/api/v1/drawers/{id}"), &[], None);
    let bare = call(port, "POST", &format!("/api/v1/drawers/{id}/restore"), &[], None);
    assert!(bare.problem(403).contains("X-Requested-With"));
    assert_eq!(get(port, "/api/v1/taxonomy").json()["total_drawers"], 0, "nothing refused was written");

    // The document lists every route with its parameters and schemas.
    let document = get(port, "/api/v1/openapi.json").json();
    assert_eq!(document["openapi"], "3.0.3");
    let search = &document["paths"]["/api/v1/search"]["get"];
    assert!(
        search["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "q" && p["required"] == true),
        "{search}"
    );
    assert!(document["components"]["schemas"]["ScoreBreakdown"]["properties"]["bm25"].is_object());
    assert!(document["paths"]["/api/v1/drawers/{id}"]["patch"]["requestBody"].is_object());

    // The UI's files are served to anyone, with a strict policy.
    let page = get(port, "/");
    assert_eq!(page.status, 200);
    assert!(page.header("content-security-policy").unwrap().contains("default-src 'self'"));
    assert_eq!(get(port, "/ui/app.js").header("content-type"), Some("text/javascript; charset=utf-8"));
}

fn tokens_and_roles_hold_over_rest(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    sandbox.ok(&["user", "add", "alice"]);
    sandbox.ok(&["user", "add", "bob"]);
    sandbox.ok(&["workspace", "create", "team"]);
    sandbox.ok(&["workspace", "grant", "team", "alice", "writer"]);
    sandbox.ok(&["workspace", "grant", "team", "bob", "reader"]);
    let token = |user: &str| {
        let path = sandbox.path(&format!("{user}.token"));
        sandbox.ok(&["token", "create", "--user", user, "--out", path.to_str().unwrap()]);
        std::fs::read_to_string(path).unwrap().trim().to_string()
    };
    let (alice, bob) = (format!("Bearer {}", token("alice")), format!("Bearer {}", token("bob")));
    let server = start(&sandbox);
    let port = server.port;
    let team = ("Mempalace-Workspace", "team");
    let body = json!({"wing": "w", "room": "r", "content": "The team's shared note about the release."}).to_string();

    let filed = call(port, "POST", "/api/v1/drawers", &[JSON, team, ("Authorization", &alice)], Some(&body));
    assert_eq!(filed.status, 201, "{}", filed.body);
    let bobs = json!({"wing": "w", "room": "r", "content": "Bob tries to file his own note."}).to_string();
    let refused = call(port, "POST", "/api/v1/drawers", &[JSON, team, ("Authorization", &bob)], Some(&bobs));
    assert!(refused.problem(403).contains("bob is a reader in workspace team"));
    let read = call(port, "GET", "/api/v1/search?q=release%20note", &[team, ("Authorization", &bob)], None);
    assert_eq!(read.json()["results"].as_array().unwrap().len(), 1, "{}", read.body);
    let health = call(port, "GET", "/api/v1/health", &[team, ("Authorization", &bob)], None).json();
    assert_eq!((health["caller"].as_str(), health["workspace"].as_str()), (Some("bob"), Some("team")));
    // Bob has no role in the default workspace; a wrong token is 401.
    call(port, "GET", "/api/v1/taxonomy", &[("Authorization", &bob)], None).problem(403);
    let wrong = call(
        port,
        "GET",
        "/api/v1/taxonomy",
        &[("Authorization", "Bearer mpt_0000000000000000_000000000000000000000000000000000000000000000000")],
        None,
    );
    assert!(wrong.problem(401).contains("not valid"), "{}", wrong.body);
    assert_eq!(wrong.header("www-authenticate"), Some("Bearer"));
    // The export holds only what the caller may read.
    let export = call(port, "GET", "/api/v1/export", &[team, ("Authorization", &bob)], None);
    assert_eq!(export.status, 200);
    assert!(
        export
            .body
            .lines()
            .filter(|l| l.contains("\"type\":\"drawer\""))
            .all(|l| l.contains("\"workspace_id\":\"team\"")),
        "{}",
        export.body
    );
    let log = sandbox.ok(&["workspace", "log", "team", "--json"]);
    assert!(log.lines().any(|l| l.contains("\"actor\":\"alice\"") && l.contains("drawer.put")), "{log}");

    // The directory over REST: the same rules as the CLI's.
    let carol = json!({"id": "carol", "display_name": "Carol"}).to_string();
    assert!(
        call(port, "POST", "/api/v1/users", &[JSON, ("Authorization", &alice)], Some(&carol))
            .problem(403)
            .contains("admins")
    );
    let added = call(port, "POST", "/api/v1/users", &[JSON], Some(&carol));
    assert_eq!((added.status, added.json()["kind"].as_str()), (201, Some("user")), "{}", added.body);
    let users = get(port, "/api/v1/users").json();
    assert_eq!(users["users"].as_array().unwrap().len(), 3);
    let issued =
        call(port, "POST", "/api/v1/tokens", &[JSON], Some(&json!({"user": "carol", "label": "api"}).to_string()));
    assert_eq!((issued.status, issued.header("cache-control")), (201, Some("no-store")), "{}", issued.body);
    let issued = issued.json();
    let carol_token = format!("Bearer {}", issued["token"].as_str().unwrap());
    let granted = call(
        port,
        "PUT",
        "/api/v1/workspaces/team/members/carol",
        &[JSON],
        Some(&json!({"role": "writer"}).to_string()),
    );
    assert_eq!((granted.status, granted.json()["role"].as_str()), (200, Some("writer")), "{}", granted.body);
    let who = call(port, "GET", "/api/v1/whoami", &[("Authorization", &carol_token)], None).json();
    assert_eq!(who["caller"], "carol");
    assert!(
        who["workspaces"].as_array().unwrap().iter().any(|w| w["workspace"] == "team" && w["role"] == "writer"),
        "{who}"
    );
    let mine = call(port, "GET", "/api/v1/tokens", &[("Authorization", &carol_token)], None).json();
    assert_eq!(mine["tokens"].as_array().unwrap().len(), 1);
    assert!(!mine.to_string().contains(issued["token"].as_str().unwrap()), "a listing never holds secrets");
    let members = call(port, "GET", "/api/v1/workspaces/team/members", &[("Authorization", &bob)], None).json();
    assert_eq!(members["members"].as_array().unwrap().len(), 3, "{members}");
    assert!(
        call(
            port,
            "PUT",
            "/api/v1/workspaces/team/members/bob",
            &[JSON, ("Authorization", &carol_token)],
            Some(&json!({"role": "owner"}).to_string())
        )
        .problem(403)
        .contains("owner")
    );
    let limits = call(
        port,
        "PATCH",
        "/api/v1/workspaces/team/limits",
        &[JSON],
        Some(&json!({"drawers": 100, "bytes": null}).to_string()),
    )
    .json();
    let drawers = limits["limits"].as_array().unwrap().iter().find(|l| l["name"] == "drawers").unwrap().clone();
    assert_eq!((drawers["limit"].as_u64(), drawers["used"].as_u64()), (Some(100), Some(1)), "{limits}");
    let trail = get(port, "/api/v1/audit?workspace=team&action=grant.").json();
    assert!(trail["entries"].as_array().unwrap().iter().any(|e| e["target"] == "carol writer"), "{trail}");
    call(port, "GET", "/api/v1/audit", &[("Authorization", &bob)], None).problem(403);
    let id = issued["record"]["id"].as_str().unwrap();
    assert_eq!(
        call(port, "DELETE", &format!("/api/v1/tokens/{id}"), &[("Authorization", &carol_token)], None).status,
        204
    );
    call(port, "GET", "/api/v1/whoami", &[("Authorization", &carol_token)], None).problem(401);
    let bare = call(port, "POST", "/api/v1/users/bob/disable", &[], None);
    assert!(bare.problem(403).contains("X-Requested-With"), "a body-less write needs a header no form can send");
    assert_eq!(call(port, "POST", "/api/v1/users/bob/disable", &[("X-Requested-With", "mempalace")], None).status, 204);
    assert!(
        call(port, "GET", "/api/v1/health", &[team, ("Authorization", &bob)], None).problem(401).contains("disabled")
    );
}

on_both!(drawers_and_search, refusals_are_problems_and_browsers_are_checked, tokens_and_roles_hold_over_rest);

/// docs/serve.md: the systemd unit passes `systemd-analyze verify` (with
/// this build's path), the launchd agent is a property list with the same
/// command, and that command serves and stops cleanly on SIGTERM (what
/// both service managers send) well within their stop timeout.
#[test]
fn service_files_are_valid_and_sigterm_stops_the_server() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sandbox = Sandbox::new();
    let unit = std::fs::read_to_string(root.join("contrib/systemd/mempalace.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/mempalace serve --mcp-http 127.0.0.1:7878"), "{unit}");
    let local = sandbox.path("mempalace.service");
    std::fs::write(&local, unit.replace("/usr/local/bin/mempalace", env!("CARGO_BIN_EXE_mempalace"))).unwrap();
    let verify = std::process::Command::new("systemd-analyze")
        .args(["verify", local.to_str().unwrap()])
        .output()
        .expect("systemd-analyze (Debian: apt-get install systemd) checks the unit; scripts/test.sh installs it");
    assert!(verify.status.success(), "systemd-analyze verify: {}", String::from_utf8_lossy(&verify.stderr));

    let plist = std::fs::read(root.join("contrib/launchd/com.mempalace.serve.plist")).unwrap();
    let python = std::env::var("MEMPALACE_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = std::process::Command::new(python)
        .args(["-c", "import json, plistlib, sys; print(json.dumps(plistlib.loads(sys.stdin.buffer.read())))"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&plist).unwrap();
    let parsed = child.wait_with_output().unwrap();
    assert!(parsed.status.success(), "plistlib: {}", String::from_utf8_lossy(&parsed.stderr));
    let agent: Value = serde_json::from_slice(&parsed.stdout).unwrap();
    assert_eq!(agent["ProgramArguments"], json!(["/usr/local/bin/mempalace", "serve", "--mcp-http", "127.0.0.1:7878"]));
    assert_eq!((agent["RunAtLoad"].as_bool(), agent["ExitTimeOut"].as_u64()), (Some(true), Some(30)));

    // The same command, on a free port: it serves, then SIGTERM ends it.
    let server = start(&sandbox);
    assert_eq!(get(server.port, "/api/v1/health").status, 200);
    let pid = server.child.id().to_string();
    let started = Instant::now();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let mut server = server;
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the server did not stop within 30 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "a SIGTERM'd server exits 0: {status:?}");
}
