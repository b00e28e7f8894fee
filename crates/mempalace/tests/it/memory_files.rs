//! GoClaw's memory files through the real binary, on both stores (issue
//! 18): `memory-files sync` picks hand edits up and drops removed
//! paragraphs, `memory-files edit` and `delete` write back to the file, an
//! unsynced hand edit is never overwritten, `add` appends, `get` reads
//! ranges with the user's own file first, `mine` files a project's memory
//! files as memory, and `search --user` boosts the user's own.

use std::path::Path;

use serde_json::Value;

use crate::harness::{Sandbox, Store, code, on_both, text};

fn write(path: &Path, text: &str, seconds: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    // Each write gets its own time, whatever the file system's granularity.
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_790_000_000 + seconds);
    std::fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
}

fn ids(search: &Value) -> Vec<String> {
    search["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

const MAIN: &str = "# Notes\nThe user prefers dark mode.\n\nDeploys happen on Friday mornings.\n\nThe staging database is called orca.\n";

fn sync_edit_delete_and_refusal(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let root = sandbox.path("agent");
    let file = root.join("MEMORY.md");
    write(&file, MAIN, 1);
    write(&root.join("memory/2026-03-23.md"), "Flushed fact.\n", 1);
    write(&root.join("memory/raw.json"), "{}", 1);
    let dir = root.display().to_string();

    let first = sandbox.json(&["memory-files", "sync", &dir, "--json"]);
    assert_eq!((first["files"].as_u64(), first["drawers_added"].as_u64()), (Some(2), Some(4)), "{first}");
    let list = sandbox.json(&["memory-files", "list", &dir, "--json"]);
    assert_eq!(list[0]["path"], "MEMORY.md");
    assert_eq!((list[0]["state"].as_str(), list[0]["drawers"].as_u64()), (Some("synced"), Some(3)), "{list}");

    let found = sandbox.json(&["search", "when do deploys happen", "--room", "memory", "--json"]);
    let deploy = found["results"][0].clone();
    assert_eq!(deploy["text"], "Deploys happen on Friday mornings.", "{found}");
    let id = deploy["id"].as_str().unwrap().to_string();

    // Hand edit: paragraph changed, one removed.
    write(
        &file,
        "# Notes\nThe user prefers dark mode.\n\nDeploys happen on Friday mornings.\n\nCI runs on GitHub.\n",
        2,
    );
    let listed = sandbox.json(&["memory-files", "list", &dir, "--json"]);
    assert_eq!(listed[0]["state"], "changed");
    let edited = sandbox.json(&["memory-files", "sync", &dir, "--json"]);
    assert_eq!((edited["drawers_added"].as_u64(), edited["drawers_removed"].as_u64()), (Some(1), Some(1)), "{edited}");
    let orca = sandbox.json(&["search", "what is the staging database called", "--room", "memory", "--json"]);
    assert!(!orca.to_string().contains("orca"), "the removed paragraph's drawer is gone: {orca}");

    // A palace edit goes back to the file, keeping the id.
    let out = sandbox.json(&["memory-files", "edit", &id, "Deploys happen on Monday evenings.", "--json"]);
    assert_eq!((out["drawer_id"].as_str(), out["line_start"].as_u64()), (Some(id.as_str()), Some(4)), "{out}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "# Notes\nThe user prefers dark mode.\n\nDeploys happen on Monday evenings.\n\nCI runs on GitHub.\n"
    );
    let got = sandbox.json(&["get", &id, "--json"]);
    assert_eq!(got["content"], "Deploys happen on Monday evenings.", "{got}");

    // A hand edit not yet synced: the palace edit is refused (exit 2) and the file kept.
    let hand = format!("{}\nHand-written line.\n", std::fs::read_to_string(&file).unwrap());
    write(&file, &hand, 3);
    let refused = sandbox.run(&["memory-files", "edit", &id, "Overwrite"]);
    assert_eq!(code(&refused), 2, "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("changed since the palace last read it"), "{}", text(&refused.stderr));
    let refused = sandbox.run(&["delete", &id, "--hard"]);
    assert_eq!(code(&refused), 2);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), hand, "the hand edit is intact");

    sandbox.ok(&["memory-files", "sync", &dir]);
    sandbox.ok(&["delete", &id, "--hard"]);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "# Notes\nThe user prefers dark mode.\n\nCI runs on GitHub.\n\nHand-written line.\n"
    );
    assert_eq!(code(&sandbox.run(&["get", &id])), 3, "the drawer is gone");
    let again = sandbox.json(&["memory-files", "sync", &dir, "--json"]);
    assert_eq!((again["refiled"].as_u64(), again["drawers_unchanged"].as_u64()), (Some(0), Some(4)), "{again}");
}

fn add_get_user_boost_and_mine(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let root = sandbox.path("proj");
    write(&root.join("README.md"), "# Proj\n\nA small project.\n", 1);
    let dir = root.display().to_string();
    let added = sandbox.json(&["memory-files", "add", "Backups run nightly at 02:00.", "--dir", &dir, "--json"]);
    assert_eq!(added["path"], "MEMORY.md", "{added}");
    sandbox.json(&["memory-files", "add", "Backups run nightly at 02:00.", "--user", "alice", "--dir", &dir, "--json"]);
    let stdin = sandbox.run_with_stdin(&["memory-files", "add", "-", "--daily", "--dir", &dir], b"From stdin.\n");
    assert_eq!(code(&stdin), 0, "{}", text(&stdin.stderr));

    assert_eq!(sandbox.ok(&["memory-files", "get", "MEMORY.md", "--dir", &dir]), "Backups run nightly at 02:00.\n");
    let own = sandbox.json(&["memory-files", "get", "MEMORY.md", "--user", "alice", "--dir", &dir, "--json"]);
    assert_eq!(own["scope"], "user");
    let fallback = sandbox.json(&["memory-files", "get", "MEMORY.md", "--user", "bob", "--dir", &dir, "--json"]);
    assert_eq!(fallback["scope"], "shared");
    let missing = sandbox.run(&["memory-files", "get", "memory/none.md", "--dir", &dir]);
    assert_eq!(code(&missing), 3, "{}", text(&missing.stderr));
    let escape = sandbox.run(&["memory-files", "get", "../x.md", "--dir", &dir]);
    assert_eq!(code(&escape), 2);
    assert!(text(&escape.stderr).contains("leaves the memory root"));
    let past = sandbox.run(&["memory-files", "get", "MEMORY.md", "--from", "5", "--dir", &dir]);
    assert!(text(&past.stderr).contains("past the end of MEMORY.md, which has 1 lines"), "{}", text(&past.stderr));

    // Alice's copy replaces the shared one and scores 1.2 × as much.
    let shared = sandbox.json(&["search", "when do backups run", "--json"]);
    let alice = sandbox.json(&["search", "when do backups run", "--user", "alice", "--json"]);
    let (plain, boosted) = (&shared["results"][0], &alice["results"][0]);
    assert_eq!(plain["text"], boosted["text"]);
    assert_ne!(plain["id"], boosted["id"], "her own copy");
    let ratio = boosted["score"].as_f64().unwrap() / plain["score"].as_f64().unwrap();
    assert!((ratio - 1.2).abs() < 1e-6, "boosted 1.2×: {ratio}");
    assert!(!ids(&alice).contains(&plain["id"].as_str().unwrap().to_string()), "the shared copy gave way");
    let first = sandbox.json(&["search", "what does the project do", "--user", "bob", "--user-first", "--json"]);
    assert!(!first["results"].as_array().unwrap().is_empty(), "bob has nothing: the shared pool answers");

    // `mine` on the project files its memory files as memory, once.
    let mined = sandbox.json(&["mine", &dir, "--json"]);
    assert_eq!(mined["drawers_added"], 1, "only the README was new: {mined}");
    let memory = sandbox.json(&["search", "backups", "--room", "memory", "--json"]);
    assert_eq!(memory["results"][0]["text"], "Backups run nightly at 02:00.", "{memory}");
}

on_both!(sync_edit_delete_and_refusal, add_get_user_boost_and_mine);
