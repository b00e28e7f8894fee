//! A team palace set up the way docs/tenancy.md says, on both stores, then
//! used through every surface with the right and the wrong credentials: the
//! CLI with `$MEMPALACE_TOKEN` and `--token-file`, MCP over stdio with a
//! token, and MCP over streamable HTTP with per-request bearer tokens and
//! workspace headers (driven by the official Python SDK).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::harness::{Sandbox, Store, call, code, on_both, text};

fn python() -> PathBuf {
    std::env::var_os("MEMPALACE_TEST_PYTHON")
        .map(PathBuf::from)
        .expect("MEMPALACE_TEST_PYTHON is not set: run ./scripts/test.sh (it creates the MCP client's virtualenv)")
}

/// Creates a token for `user` into a file; returns (file, token).
fn token(sandbox: &Sandbox, user: &str, label: &str) -> (PathBuf, String) {
    let path = sandbox.path(&format!("{user}-{label}.token"));
    let out = sandbox.ok(&["token", "create", "--user", user, "--label", label, "--out", path.to_str().unwrap()]);
    assert!(out.contains("written to") && !out.contains("mpt_"), "the token is not printed with --out: {out}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a token file is private to its owner");
    }
    let secret = std::fs::read_to_string(&path).unwrap().trim().to_string();
    assert!(secret.starts_with("mpt_"), "{secret}");
    (path, secret)
}

fn as_user(sandbox: &Sandbox, secret: &str, args: &[&str]) -> std::process::Output {
    sandbox.cmd(args).env("MEMPALACE_TOKEN", secret).output().expect("run mempalace")
}

fn team_palace_through_every_surface(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    // A single-user palace: no token anywhere, no limits, no trail.
    sandbox.ok(&["add", "--wing", "notes", "--room", "misc", "A note from before the team existed."]);
    let who = sandbox.json(&["user", "whoami", "--json"]);
    assert_eq!((who["caller"].as_str(), who["workspaces"].is_null()), (Some("local"), true), "{who}");
    assert!(sandbox.json(&["status", "--json"])["limits"].is_null());

    // docs/tenancy.md: a team palace in five commands.
    sandbox.ok(&["user", "add", "alice"]);
    sandbox.ok(&["user", "add", "bob"]);
    sandbox.ok(&["team", "create", "eng", "--leader", "alice", "--member", "bob"]);
    sandbox.ok(&["workspace", "create", "team-ws"]);
    sandbox.ok(&["workspace", "grant", "team-ws", "team:eng", "writer"]);
    sandbox.ok(&["user", "add", "mallory"]);

    let (_, alice) = token(&sandbox, "alice", "laptop");
    let (bob_file, bob) = token(&sandbox, "bob", "laptop");
    let (_, mallory) = token(&sandbox, "mallory", "laptop");
    let (_, revoked) = token(&sandbox, "alice", "old");
    let listed = sandbox.json(&["token", "list", "--user", "alice", "--json"]);
    let old = listed["tokens"].as_array().unwrap().iter().find(|t| t["label"] == "old").unwrap()["id"].clone();
    sandbox.ok(&["token", "revoke", old.as_str().unwrap()]);
    assert!(
        !text(&std::fs::read(sandbox.palace().join("palace.db")).unwrap_or_default()).contains(&alice),
        "no secret at rest"
    );

    // The CLI with a token.
    let filed = as_user(
        &sandbox,
        &alice,
        &[
            "--workspace",
            "team-ws",
            "add",
            "--wing",
            "launch",
            "--room",
            "orion",
            "The launch code for the Orion release is 4721.",
        ],
    );
    assert!(filed.status.success(), "{}", text(&filed.stderr));
    let refused = as_user(
        &sandbox,
        &bob,
        &["--workspace", "team-ws", "add", "--wing", "launch", "--room", "orion", "bob was here"],
    );
    assert_eq!(code(&refused), 9, "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("access denied: bob is a reader in workspace team-ws"),
        "{}",
        text(&refused.stderr)
    );
    let outsider = as_user(&sandbox, &mallory, &["--workspace", "team-ws", "status"]);
    assert_eq!(code(&outsider), 9);
    assert!(text(&outsider.stderr).contains("mallory has no role in workspace team-ws"), "{}", text(&outsider.stderr));
    let stale = as_user(&sandbox, &revoked, &["--workspace", "team-ws", "status"]);
    assert_eq!(code(&stale), 9);
    assert!(text(&stale.stderr).contains("was revoked"), "{}", text(&stale.stderr));
    let default_ws = as_user(&sandbox, &bob, &["status"]);
    assert_eq!(code(&default_ws), 9, "bob has no role in the default workspace");
    let found = sandbox.json(&[
        "--token-file",
        bob_file.to_str().unwrap(),
        "--workspace",
        "team-ws",
        "search",
        "Orion launch code",
        "--json",
    ]);
    assert!(found["results"].to_string().contains("4721"), "{found}");
    let whoami = as_user(&sandbox, &bob, &["user", "whoami", "--json"]);
    let whoami: Value = serde_json::from_slice(&whoami.stdout).unwrap();
    let roles: BTreeMap<String, String> = whoami["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["workspace"].as_str().unwrap().to_string(), w["role"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(roles, BTreeMap::from([("personal.bob".into(), "owner".into()), ("team-ws".into(), "reader".into())]));
    let not_admin = as_user(&sandbox, &bob, &["user", "add", "eve"]);
    assert_eq!(code(&not_admin), 9, "{}", text(&not_admin.stderr));

    // status shows use against the workspace's limits; the owner can change them.
    let status = as_user(&sandbox, &alice, &["--workspace", "team-ws", "status", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["limits"]["drawers"], serde_json::json!({"used": 1, "limit": 10000}), "{status}");
    sandbox.ok(&["workspace", "limits", "team-ws", "--set", "drawers=1"]);
    let over = as_user(
        &sandbox,
        &alice,
        &["--workspace", "team-ws", "add", "--wing", "launch", "--room", "orion", "One drawer too many."],
    );
    assert_eq!(code(&over), 2, "{}", text(&over.stderr));
    assert!(text(&over.stderr).contains("over its limit of 1"), "{}", text(&over.stderr));
    sandbox.ok(&["workspace", "limits", "team-ws", "--set", "drawers=none"]);

    // The audit trail names who wrote what; refused calls left nothing.
    let log = sandbox.ok(&["workspace", "log", "team-ws", "--json"]);
    let entries: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(entries.iter().any(|e| e["actor"] == "alice" && e["action"] == "drawer.put"), "{log}");
    assert!(entries.iter().all(|e| e["actor"] != "bob"), "{log}");
    let unlisted = as_user(&sandbox, &bob, &["workspace", "log", "team-ws"]);
    assert_eq!(code(&unlisted), 9, "only owners read a workspace's trail");

    // MCP over stdio acting for bob: reads, cannot write.
    let stdio = Command::new(python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/tenancy_stdio.py"))
        .arg(env!("CARGO_BIN_EXE_mempalace"))
        .args(sandbox.palace_args())
        .env_clear()
        .envs(sandbox.envs())
        .env("MEMPALACE_TOKEN", &bob)
        .env("MEMPALACE_WORKSPACE", "team-ws")
        .output()
        .expect("run the stdio client");
    assert!(text(&stdio.stdout).lines().any(|l| l == "PASS"), "{}\n{}", text(&stdio.stdout), text(&stdio.stderr));

    // MCP over HTTP: each request for its own token and workspace.
    let server = sandbox.serve("127.0.0.1", &["--no-workers", "--tools", "all"], &[]);
    let port = server.port;
    let tokens = serde_json::json!({"alice": alice, "bob": bob, "mallory": mallory, "revoked": revoked});
    let output = Command::new(python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py"))
        .args(["tenancy", "--bin", env!("CARGO_BIN_EXE_mempalace")])
        .args(sandbox.palace_args())
        .args(["--url", &format!("http://127.0.0.1:{port}/mcp"), "--tokens", &tokens.to_string()])
        .env_clear()
        .envs(sandbox.envs())
        .env("TEST_HOME", sandbox.home())
        .output()
        .expect("run the Python MCP client");
    assert!(
        output.status.success() && text(&output.stdout).lines().any(|l| l == "PASS"),
        "{}\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    // Off loopback a team palace serves without the admin token: its
    // users' tokens are required instead.
    let open = sandbox.serve("0.0.0.0", &["--no-workers"], &[]);
    let bearer = format!("Bearer {bob}");
    assert_eq!(call(open.port, "GET", "/metrics", &[], None).status, 401, "no token off loopback");
    assert_eq!(call(open.port, "GET", "/metrics", &[("Authorization", &bearer)], None).status, 200, "a user's token");

    // Nothing bob or mallory tried was written; alice's call was audited.
    let log = sandbox.ok(&["workspace", "log", "team-ws", "--json"]);
    assert!(log.lines().all(|l| !l.contains("\"actor\":\"bob\"") && !l.contains("\"actor\":\"mallory\"")), "{log}");
    assert_eq!(
        log.lines().filter(|l| l.contains("\"actor\":\"alice\"") && l.contains("drawer.put")).count(),
        2,
        "{log}"
    );
}

on_both!(team_palace_through_every_surface);
