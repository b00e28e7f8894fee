"""Drives a real `mempalace` MCP server with the official Python MCP SDK.

Run by crates/mempalace/tests/it/mcp.rs; one scenario per invocation:

    client.py SCENARIO --bin PATH (--palace DIR | --store URL) [--url URL] [--token T]

Every call waits for its reply before the next one (the server may answer
concurrent requests out of order). Prints one line per check and exits
non-zero, with the failing assertion, when a check fails.
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from contextlib import asynccontextmanager

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

# The Python MemPalace 3.11's tools in its order, then ours alone (wake_up).
MEMPALACE_TOOLS = ["mempalace_" + name for name in [
    "status", "list_wings", "list_rooms", "get_taxonomy", "get_aaak_spec", "kg_query", "kg_add", "kg_invalidate",
    "kg_supersede", "kg_timeline", "kg_stats", "traverse", "find_tunnels", "graph_stats", "mesh_peers",
    "create_tunnel", "list_tunnels", "delete_tunnel", "list_hallways", "delete_hallway", "follow_tunnels", "search",
    "check_duplicate", "add_drawer", "checkpoint", "delete_drawer", "delete_drawers", "mine", "delete_by_source",
    "sync", "get_drawer", "get_drawers", "list_drawers", "update_drawer", "diary_write", "diary_read",
    "hook_settings", "memories_filed_away", "reconnect", "event_append", "task_create", "event_list", "event_wait",
    "event_ack", "artifact_put", "artifact_get", "patch_submit", "wake_up",
]]
# Parameters and required ones of the coordination tools, as MemPalace 3.11's tools/list has them.
COORDINATION_SCHEMAS = {
    "mempalace_event_append": ({"type", "stream", "room", "topic", "from_agent", "to_agent", "correlation_id", "branch",
                                "base_commit", "status", "body", "metadata", "artifact_ids"},
                               {"type", "stream", "room", "from_agent"}),
    "mempalace_event_list": ({"stream", "room", "topic", "type", "to_agent", "from_agent", "writer", "correlation_id",
                              "status", "since_event_id", "before_event_id", "since_created_at", "limit", "order",
                              "preview"}, set()),
    "mempalace_event_wait": ({"stream", "room", "topic", "type", "to_agent", "from_agent", "writer", "correlation_id",
                              "status", "since_event_id", "since_created_at", "timeout_ms", "limit"}, set()),
    "mempalace_event_ack": ({"event_id", "from_agent", "status", "body", "topic"}, {"event_id", "from_agent"}),
    "mempalace_task_create": ({"project", "from_agent", "to_agent", "goal", "branch", "base_commit", "done"},
                              {"project", "from_agent", "to_agent", "goal", "branch", "base_commit", "done"}),
    "mempalace_artifact_put": ({"kind", "content", "created_by", "metadata"}, {"kind", "content", "created_by"}),
    "mempalace_artifact_get": ({"artifact_id"}, {"artifact_id"}),
    "mempalace_patch_submit": ({"content", "from_agent", "stream", "room", "topic", "to_agent", "correlation_id",
                                "branch", "base_commit", "body", "metadata"}, {"content", "from_agent", "stream"}),
}
EVENT_KEYS = {"id", "seq", "origin_replica", "origin_seq", "hlc", "type", "stream", "room", "topic", "from_agent",
              "to_agent", "correlation_id", "branch", "base_commit", "status", "artifact_ids", "body", "created_at",
              "metadata"}
MEMORY_TOOLS = [
    "memory_status", "memory_list_wings", "memory_list_rooms", "memory_get_taxonomy", "memory_search",
    "memory_check_duplicate", "memory_traverse", "memory_find_tunnels", "memory_graph_stats", "memory_add_drawer",
    "memory_ingest_turn", "memory_delete_drawer", "memory_set_identity", "memory_kg_query", "memory_kg_add", "memory_kg_invalidate",
    "memory_kg_timeline", "memory_kg_stats", "memory_diary_write", "memory_diary_read",
    "memory_extract", "memory_list_memories", "memory_inject", "memory_episodes", "memory_prune", "memory_restore",
    "memory_kg_dedup", "memory_kg_merge", "memory_kg_unmerge", "memory_kg_aliases", "memory_get", "memory_append",
]
ROBOTMEM_TOOLS = ["learn", "recall", "save_perception", "forget", "update", "start_session", "end_session"]


def check(condition, what, detail=""):
    if not condition:
        raise AssertionError(f"{what}: {detail}")
    print(f"ok {what}", flush=True)


async def call(session, name, arguments=None):
    """A tool call that must succeed; returns the parsed JSON."""
    result = await session.call_tool(name, arguments or {})
    text = result.content[0].text
    if result.is_error:
        raise AssertionError(f"{name} {arguments} failed: {text}")
    return json.loads(text)


async def call_error(session, name, arguments):
    """A tool call that must come back flagged is_error; returns its JSON."""
    result = await session.call_tool(name, arguments)
    check(result.is_error, f"{name} reports an error", result.content[0].text)
    return json.loads(result.content[0].text)


async def rpc_error(session, name, arguments):
    """A tool call that must raise a JSON-RPC error; returns (code, message)."""
    try:
        result = await session.call_tool(name, arguments)
    except MCPError as error:
        return error.code, error.message
    raise AssertionError(f"{name} {arguments} should have raised; got {result.content[0].text[:300]}")


def palace_args(args):
    """The server's palace: a SQLite palace directory or a PostgreSQL URL."""
    return ["--store", args.store] if args.store else ["--palace", args.palace]


def server_env():
    env = {"HOME": os.environ["TEST_HOME"], "PATH": os.environ.get("PATH", "")}
    for key in ("MEMPALACE_MODEL_DIR", "MEMPALACE_EMBEDDER", "MEMPALACE_LOG", "MEMPALACE_WORKSPACE",
                "MEMPALACE_LLM_BASE_URL", "MEMPALACE_LLM_MODEL", "MEMPALACE_PROCESS_EVERY_S",
                "MEMPALACE_MEMORY_DIR"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


@asynccontextmanager
async def stdio_session(args, profile="mempalace", workers=False):
    # The background jobs stay off unless a scenario is about them: they
    # would reclassify and extract while the other scenarios check results.
    extra = [] if workers else ["--no-workers"]
    params = StdioServerParameters(
        command=args.bin, args=palace_args(args) + ["mcp", "serve", "--tools", profile] + extra, env=server_env()
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            started = time.monotonic()
            await session.initialize()
            session.initialize_seconds = time.monotonic() - started
            yield session


@asynccontextmanager
async def http_session(url, token=None, workspace=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if workspace:
        headers["Mempalace-Workspace"] = workspace
    headers = headers or None
    async with create_mcp_http_client(headers=headers) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                started = time.monotonic()
                await session.initialize()
                session.initialize_seconds = time.monotonic() - started
                yield session


async def round_trips(session):
    """The mempalace_* tools end to end, on an empty palace."""
    print(f"initialize took {session.initialize_seconds * 1000:.1f} ms", flush=True)
    check(session.initialize_seconds < 1.0, "initialize is answered quickly", session.initialize_seconds)
    names = [tool.name for tool in (await session.list_tools()).tools]
    check(names == MEMPALACE_TOOLS, "the mempalace profile lists exactly its tools", names)
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    search_schema = tools["mempalace_search"].input_schema
    check(search_schema["required"] == ["query"], "search requires query", search_schema)
    check(all(tool.description for tool in tools.values()), "every tool has a description")

    status = await call(session, "mempalace_status")
    check(status["total_drawers"] == 0 and "mempalace_diary_write" in status["protocol"], "status on an empty palace")
    check("AAAK" in status["aaak_dialect"], "status carries the AAAK description")

    added = await call(session, "mempalace_add_drawer", {
        "wing": "crawbl", "room": "database",
        "content": "We switched the Crawbl backend from MySQL to PostgreSQL on 2025-01-15 because we needed JSONB.",
        "source_file": "/notes/db.md",
    })
    check(added["success"] and added["drawer_id"].startswith("drawer_crawbl_database_"), "add_drawer files", added)
    drawer_id = added["drawer_id"]
    again = await call(session, "mempalace_add_drawer", {
        "wing": "crawbl", "room": "database",
        "content": "We switched the Crawbl backend from MySQL to PostgreSQL on 2025-01-15 because we needed JSONB.",
    })
    check(again.get("reason") == "already_exists" and again["drawer_id"] == drawer_id, "the same text is not filed twice", again)
    await call(session, "mempalace_add_drawer", {
        "wing": "robot", "room": "database", "content": "The robot logs sensor data to SQLite files on the arm controller.",
    })
    await call(session, "mempalace_add_drawer", {
        "wing": "crawbl", "room": "frontend", "content": "The dashboard is written in Svelte and talks to the API over HTTP.",
    })

    found = await call(session, "mempalace_search", {"query": "why did the backend switch to PostgreSQL", "limit": 3})
    check(found["results"] and found["results"][0]["drawer_id"] == drawer_id, "search finds the drawer", found)
    first = found["results"][0]
    check(first["source_file"] == "db.md" and first["wing"] == "crawbl", "search hits carry MemPalace's keys", first)
    filtered = await call(session, "mempalace_search", {"query": "database", "wing": "robot"})
    check(all(r["wing"] == "robot" for r in filtered["results"]) and filtered["results"], "search filters by wing", filtered)
    pasted = "<system-reminder>" * 30 + "\nwhat did we switch the backend database to?"
    cleaned = await call(session, "mempalace_search", {"query": pasted})
    check(cleaned.get("query_sanitized") and cleaned["query"] == "what did we switch the backend database to?",
          "a pasted prompt is reduced to its question", cleaned.get("sanitizer"))

    dup = await call(session, "mempalace_check_duplicate", {
        "content": "We switched the Crawbl backend from MySQL to PostgreSQL on 2025-01-15 because we needed JSONB."})
    check(dup["is_duplicate"] and dup["matches"][0]["id"] == drawer_id, "check_duplicate finds the copy", dup)
    other_day = await call(session, "mempalace_check_duplicate", {
        "content": "We switched the Crawbl backend from MySQL to PostgreSQL on 2025-02-20 because we needed JSONB."})
    check(not other_day["is_duplicate"] and "2025-02-20" in other_day["matches"][0]["differs"],
          "check_duplicate: another date is a new fact, not a duplicate", other_day)

    got = await call(session, "mempalace_get_drawer", {"drawer_id": drawer_id})
    check(got["content"].startswith("We switched") and got["metadata"]["wing"] == "crawbl", "get_drawer", got)
    page = await call(session, "mempalace_list_drawers", {"wing": "crawbl", "limit": 1})
    check(page["total"] == 2 and page["count"] == 1 and len(page["drawers"]) == 1, "list_drawers pages", page)
    updated = await call(session, "mempalace_update_drawer", {"drawer_id": drawer_id, "room": "decisions"})
    check(updated == {"success": True, "drawer_id": drawer_id, "wing": "crawbl", "room": "decisions"}, "update_drawer moves", updated)
    rooms = await call(session, "mempalace_list_rooms", {"wing": "crawbl"})
    check(rooms["rooms"] == {"decisions": 1, "frontend": 1}, "counts follow the update", rooms)
    taxonomy = await call(session, "mempalace_get_taxonomy")
    check(taxonomy["taxonomy"]["robot"] == {"database": 1}, "taxonomy", taxonomy)

    fact = await call(session, "mempalace_kg_add", {
        "subject": "Crawbl Backend", "predicate": "uses", "object": "MySQL",
        "valid_from": "2023-03-01", "valid_to": "2025-01-14"})
    check(fact["success"] and fact["fact"] == "Crawbl Backend → uses → MySQL", "kg_add", fact)
    await call(session, "mempalace_kg_add", {
        "subject": "Crawbl Backend", "predicate": "uses", "object": "PostgreSQL", "valid_from": "2025-01-15",
        "source_drawer_id": drawer_id})
    before = await call(session, "mempalace_kg_query", {"entity": "Crawbl Backend", "as_of": "2024-06-01", "direction": "outgoing"})
    check([f["object"] for f in before["facts"]] == ["MySQL"], "as_of answers what held before", before)
    now = await call(session, "mempalace_kg_query", {"entity": "Crawbl Backend"})
    current = [f["object"] for f in now["facts"] if f["current"]]
    check(current == ["PostgreSQL"], "the current fact", now)
    ended = await call(session, "mempalace_kg_invalidate", {
        "subject": "Crawbl Backend", "predicate": "uses", "object": "PostgreSQL", "ended": "2026-06-30"})
    check(ended["success"] and ended["ended"].startswith("2026-06-30"), "kg_invalidate", ended)
    timeline = await call(session, "mempalace_kg_timeline", {"entity": "Crawbl Backend"})
    check([f["object"] for f in timeline["timeline"]] == ["MySQL", "PostgreSQL"]
          and timeline["timeline"][1]["valid_to"].startswith("2026-06-30"), "timeline in order with ends", timeline)
    stats = await call(session, "mempalace_kg_stats")
    check(stats["triples"] >= 2 and "uses" in stats["relationship_types"], "kg_stats", stats)
    missing_fact = await call_error(session, "mempalace_kg_invalidate", {"subject": "Nobody", "predicate": "uses", "object": "Nothing"})
    check(missing_fact["success"] is False, "invalidating an unknown fact is reported", missing_fact)

    wrote = await call(session, "mempalace_diary_write", {"agent_name": "Claude", "entry": "SESSION:2026-11-22|moved db notes|★★", "topic": "work"})
    check(wrote["success"] and wrote["agent"] == "claude", "diary_write", wrote)
    await call(session, "mempalace_diary_write", {"agent_name": "claude", "entry": "SESSION:2026-11-22|second entry"})
    # Issue 15: diary entries get vectors like every other drawer (they were
    # filed without one): the search finds the entry by meaning too.
    diary_hit = await call(session, "mempalace_search", {"query": "moved db notes", "wing": "wing_claude"})
    check(diary_hit["results"] and diary_hit["results"][0]["similarity"] is not None,
          "a diary entry is filed with a vector", diary_hit)
    await call(session, "mempalace_diary_write", {"agent_name": "other", "entry": "not claude's"})
    diary = await call(session, "mempalace_diary_read", {"agent_name": "CLAUDE", "last_n": 5})
    check(diary["total"] == 2 and [e["content"] for e in diary["entries"]][0].endswith("second entry"), "diary_read newest first, own entries", diary)
    empty = await call(session, "mempalace_diary_read", {"agent_name": "nobody"})
    check(empty["entries"] == [] and "message" in empty, "an empty diary", empty)

    tunnel = await call(session, "mempalace_create_tunnel", {
        "source_wing": "crawbl", "source_room": "decisions", "target_wing": "robot", "target_room": "database",
        "label": "both store data"})
    check(tunnel["source"]["wing"] == "crawbl" or tunnel["target"]["wing"] == "crawbl", "create_tunnel", tunnel)
    follow = await call(session, "mempalace_follow_tunnels", {"wing": "robot", "room": "database"})
    check(len(follow) == 1 and follow[0]["connected_wing"] == "crawbl", "follow_tunnels", follow)
    listed = await call(session, "mempalace_list_tunnels", {"wing": "robot"})
    check([t["id"] for t in listed] == [tunnel["id"]], "list_tunnels", listed)
    graph = await call(session, "mempalace_graph_stats")
    check(graph["explicit_tunnels"] == 1 and graph["total_rooms"] >= 3, "graph_stats", graph)
    walked = await call(session, "mempalace_traverse", {"start_room": "decisions", "max_hops": 2})
    check(walked[0]["room"] == "decisions" and any(r["room"] == "database" for r in walked), "traverse", walked)
    lost = await call_error(session, "mempalace_traverse", {"start_room": "decision"})
    check("not found" in lost["error"] and "decisions" in lost["suggestions"], "an unknown room gets suggestions", lost)
    check((await call(session, "mempalace_delete_tunnel", {"tunnel_id": tunnel["id"]}))["deleted"] == tunnel["id"], "delete_tunnel")

    wake = await call(session, "mempalace_wake_up")
    check("PostgreSQL" in wake["text"] or "Svelte" in wake["text"], "wake_up tells the essential story", wake)
    check((await call(session, "mempalace_reconnect"))["drawers"] == 6, "reconnect counts drawers")
    check((await call(session, "mempalace_delete_drawer", {"drawer_id": drawer_id}))["success"], "delete_drawer")
    gone = await call_error(session, "mempalace_get_drawer", {"drawer_id": drawer_id})
    check(gone == {"error": f"Drawer not found: {drawer_id}"}, "a deleted drawer is gone", gone)
    gone = await call_error(session, "mempalace_delete_drawer", {"drawer_id": drawer_id})
    check(gone["success"] is False, "deleting it again is reported", gone)

    # Maintenance facts that differ in a number are each filed (issue 23).
    valves = set()
    for n in range(1, 21):
        filed = await call(session, "mempalace_add_drawer", {
            "wing": "plant", "room": "maintenance",
            "content": f"client 1 fact {n}: the valve {100 + n} was replaced on shift {n}"})
        check(filed["success"] and "reason" not in filed, f"maintenance fact {n} is filed", filed)
        valves.add(filed["drawer_id"])
    check(len(valves) == 20, "twenty facts, twenty drawers", len(valves))
    repeat = await call(session, "mempalace_add_drawer", {
        "wing": "plant", "room": "shifts", "content": "Client 1, fact 7: the valve 107 was replaced on shift 7."})
    check(repeat.get("reason") == "already_exists" and repeat["drawer_id"] in valves, "a reformatted repeat is not", repeat)

    await errors(session)


async def errors(session):
    """Parameter problems are JSON-RPC -32602 naming the parameter."""
    code, message = await rpc_error(session, "mempalace_search", {"query": "x", "bogus": 1})
    check(code == -32602 and "'bogus'" in message, "an unknown parameter", message)
    code, message = await rpc_error(session, "mempalace_search", {})
    check(code == -32602 and "'query'" in message, "a missing parameter", message)
    code, message = await rpc_error(session, "mempalace_search", {"query": "x", "limit": "many"})
    check(code == -32602 and "limit" in message, "a mistyped parameter", message)
    code, message = await rpc_error(session, "mempalace_search", {"query": "x", "limit": 101})
    check(code == -32602 and "limit" in message and "100" in message, "an out-of-range parameter", message)
    code, message = await rpc_error(session, "mempalace_add_drawer", {"wing": "w", "room": "r", "content": ""})
    check(code == -32602 and "content" in message, "empty content", message)
    code, message = await rpc_error(session, "mempalace_kg_add", {"subject": "a", "predicate": "b", "object": "c", "valid_from": "2025-13-40"})
    check(code == -32602 and "valid_from" in message, "a bad date", message)
    code, message = await rpc_error(session, "mempalace_kg_add", {"subject": "a", "predicate": "b", "object": "c",
                                                                  "valid_from": "2025-02-01", "valid_to": "2025-01-01"})
    check(code == -32602, "an inverted interval", message)
    code, message = await rpc_error(session, "no_such_tool", {})
    check(code == -32602 and "no_such_tool" in message, "an unknown tool", message)
    status = await call(session, "mempalace_status")
    check("total_drawers" in status, "the server still answers after errors")


async def operations(session, home):
    """MemPalace 3.11's upkeep tools: supersede, bulk reads and deletes,
    delete by source, mine and sync, checkpoint, hallways, hooks, mesh."""
    # kg_supersede: one boundary; the old value ends just before it.
    await call(session, "mempalace_kg_add", {"subject": "Rover", "predicate": "uses_model", "object": "MiniLM",
                                             "valid_from": "2025-01-01"})
    sup = await call(session, "mempalace_kg_supersede", {"subject": "Rover", "predicate": "uses_model",
                                                        "old_object": "MiniLM", "new_object": "BGE", "at": "2026-03-01"})
    check(sup["success"] and sup["superseded"] == "MiniLM" and sup["ended"] == 1, "kg_supersede", sup)
    at = await call(session, "mempalace_kg_query", {"entity": "Rover", "as_of": "2026-03-01T00:00:00Z"})
    check([f["object"] for f in at["facts"]] == ["BGE"], "at the boundary only the successor holds", at)
    before = await call(session, "mempalace_kg_query", {"entity": "Rover", "as_of": "2026-02-28"})
    check([f["object"] for f in before["facts"]] == ["MiniLM"], "before it the old value", before)
    inverted = await call_error(session, "mempalace_kg_supersede", {"subject": "Rover", "predicate": "uses_model",
                                                                   "old_object": "BGE", "new_object": "X", "at": "2020-01-01"})
    check(inverted["success"] is False and "start" in inverted["error"], "an inverted boundary is refused", inverted)

    # Bulk reads and deletes.
    ids = []
    for n in range(3):
        added = await call(session, "mempalace_add_drawer", {"wing": "bulk", "room": "items",
                                                             "content": f"Bulk item number {n}: crate {700 + n} shipped to Oslo."})
        ids.append(added["drawer_id"])
    got = await call(session, "mempalace_get_drawers", {"drawer_ids": ids + ["drawer_missing_x_1"]})
    check(got["count"] == 4 and got["errors"] == 1 and got["results"][0]["drawer_id"] == ids[0]
          and got["results"][3]["error"].startswith("Drawer not found"), "get_drawers in input order", got)
    too_many = await call_error(session, "mempalace_get_drawers", {"drawer_ids": [f"d{i}" for i in range(501)]})
    check("at most 500" in too_many["error"], "the bulk limit", too_many)
    gone = await call(session, "mempalace_delete_drawers", {"drawer_ids": ids[:2]})
    check(gone["deleted"] == 2 and gone["errors"] == 0, "delete_drawers", gone)

    # Mine a project, preview and apply sync, delete a source.
    project = os.path.join(home, "project")
    os.makedirs(os.path.join(project, "docs"), exist_ok=True)
    with open(os.path.join(project, "README.md"), "w") as f:
        f.write("# Project\n\nThe greenhouse controller waters the tomatoes at dawn.\n")
    with open(os.path.join(project, "docs", "pumps.md"), "w") as f:
        f.write("The pump schedule runs every four hours from the solar battery.\n")
    with open(os.path.join(project, ".gitignore"), "w") as f:
        f.write("")
    dry = await call(session, "mempalace_mine", {"source": project, "dry_run": True})
    check(dry["success"] and dry["dry_run"] and dry["report"]["drawers_added"] == 2, "mine dry run", dry)
    mined = await call(session, "mempalace_mine", {"source": project, "wing": "greenhouse"})
    check(mined["report"]["drawers_added"] == 2 and "files" in mined["output"], "mine", mined)
    again = await call(session, "mempalace_mine", {"source": project, "wing": "greenhouse"})
    check(again["report"]["drawers_added"] == 0, "mining again files nothing", again)
    bad_mode = await call_error(session, "mempalace_mine", {"source": project, "mode": "extract"})
    check(bad_mode["success"] is False, "mode extract is refused", bad_mode)
    os.remove(os.path.join(project, "docs", "pumps.md"))
    preview = await call(session, "mempalace_sync", {"wing": "greenhouse"})
    check(preview["success"] and preview["dry_run"] and preview["missing"] == 1 and preview["removed_drawers"] == 0,
          "sync previews by default", preview)
    unscoped = await call_error(session, "mempalace_sync", {"apply": True})
    check(unscoped["success"] is False and "wing" in unscoped["error"], "apply needs a scope", unscoped)
    applied = await call(session, "mempalace_sync", {"wing": "greenhouse", "apply": True})
    check(applied["removed_drawers"] == 1, "sync applies", applied)
    readme = os.path.realpath(os.path.join(project, "README.md"))
    source_preview = await call(session, "mempalace_delete_by_source", {"source_file": readme})
    check(source_preview["dry_run"] and source_preview["match_count"] == 1, "delete_by_source previews", source_preview)
    removed = await call(session, "mempalace_delete_by_source", {"source_file": readme, "dry_run": False})
    check(removed["deleted"] == 1, "delete_by_source deletes", removed)

    # One-call checkpoint: a duplicate is skipped, a new fact filed, a diary written.
    saved = await call(session, "mempalace_checkpoint", {
        "items": [{"wing": "bulk", "room": "items", "content": "Bulk item number 2: crate 702 shipped to Oslo."},
                  {"wing": "bulk", "room": "items", "content": "Bulk item number 3: crate 703 shipped to Bergen."},
                  {"wing": "bulk"}, "junk"],
        "diary": {"agent_name": "Tester", "entry": "SESSION:checkpoint|filed crates"}})
    check(len(saved["duplicates"]) == 1 and len(saved["added"]) == 1 and len(saved["errors"]) == 2
          and saved["diary"]["success"], "checkpoint files, skips and reports", saved)

    # Hallways: two entities named together in two drawers of a wing.
    for text in ["Alice Moreau calibrated the Kestrel arm before the demo.",
                 "Alice Moreau and the Kestrel arm team met on Tuesday about torque limits."]:
        await call(session, "mempalace_add_drawer", {"wing": "lab", "room": "arm", "content": text})
    hallways = await call(session, "mempalace_list_hallways", {"wing": "lab"})
    check(hallways["total"] >= 1 and hallways["hallways"][0]["co_occurrence_count"] >= 2, "list_hallways", hallways)
    first = hallways["hallways"][0]["id"]
    check((await call(session, "mempalace_delete_hallway", {"hallway_id": first}))["deleted"], "delete_hallway")
    check(not (await call(session, "mempalace_delete_hallway", {"hallway_id": first}))["deleted"], "deleted once")
    after = await call(session, "mempalace_list_hallways", {"wing": "lab"})
    check(all(h["id"] != first for h in after["hallways"]), "a deleted hallway stays hidden", after)

    # Hooks: settings in config.json, and the checkpoint notice.
    settings = await call(session, "mempalace_hook_settings")
    check(settings["settings"] == {"silent_save": True, "desktop_toast": False}, "hook defaults", settings)
    changed = await call(session, "mempalace_hook_settings", {"silent_save": False})
    check(changed["updated"] == ["silent_save → False"] and changed["settings"]["silent_save"] is False, "hook_settings set", changed)
    with open(os.path.join(home, ".mempalace", "config.json")) as f:
        check(json.load(f)["hooks"]["silent_save"] is False, "stored in config.json")
    quiet = await call(session, "mempalace_memories_filed_away")
    check(quiet["status"] == "quiet" and quiet["count"] == 0, "no checkpoint yet", quiet)
    os.makedirs(os.path.join(home, ".mempalace", "hook_state"), exist_ok=True)
    with open(os.path.join(home, ".mempalace", "hook_state", "last_checkpoint"), "w") as f:
        json.dump({"msgs": 7, "ts": "2026-11-26T17:00:00"}, f)
    filed = await call(session, "mempalace_memories_filed_away")
    check(filed["status"] == "ok" and filed["count"] == 7 and "7 messages" in filed["message"], "a checkpoint is reported", filed)
    check((await call(session, "mempalace_memories_filed_away"))["status"] == "quiet", "once")

    mesh = await call(session, "mempalace_mesh_peers")
    check(mesh["peers"] == [] and mesh["self"]["replica_id"].startswith("rep_"), "mesh_peers", mesh)


# Where our tools differ from the Python MemPalace 3.11's schemas on
# purpose (docs/mcp.md, "Differences"). Anything else fails the diff.
PENDING_TOOLS = set()  # Every MemPalace 3.11 tool is offered.
EXTRA_PROPERTIES = {
    # Our kg_add records where a fact came from, as MemPalace's add does internally.
}


def schema_type(prop):
    """A property's JSON type without "null" (optional parameters)."""
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = [k for k in kind if k != "null"]
        kind = kind[0] if len(kind) == 1 else sorted(kind)
    if kind is None and "enum" in prop:
        kind = "string"
    if kind is None and ("$ref" in prop or "anyOf" in prop or "oneOf" in prop):
        kind = "ref"
    return kind


def compare_tool_lists(reference, ours):
    """The differences between the Python MemPalace's tools and ours."""
    problems = []
    ours_by_name = {tool["name"]: tool for tool in ours}
    for tool in reference:
        name = tool["name"]
        mine = ours_by_name.get(name)
        if mine is None:
            if name not in PENDING_TOOLS:
                problems.append(f"{name}: missing")
            continue
        theirs_props = tool["inputSchema"].get("properties", {})
        my_props = mine["inputSchema"].get("properties", {})
        for prop, spec in theirs_props.items():
            if prop not in my_props:
                problems.append(f"{name}: parameter {prop!r} missing")
                continue
            theirs_type, my_type = schema_type(spec), schema_type(my_props[prop])
            if my_type != "ref" and theirs_type != my_type:
                problems.append(f"{name}.{prop}: type {my_type!r}, MemPalace has {theirs_type!r}")
        for prop in my_props:
            if prop not in theirs_props and prop not in EXTRA_PROPERTIES.get(name, ()):
                problems.append(f"{name}: extra parameter {prop!r}")
        theirs_required = set(tool["inputSchema"].get("required", []))
        my_required = set(mine["inputSchema"].get("required", []))
        if my_required - theirs_required:
            problems.append(f"{name}: requires {sorted(my_required - theirs_required)} that MemPalace does not")
        if (tool.get("annotations") or {}).get("readOnlyHint") and not (mine.get("annotations") or {}).get("readOnlyHint"):
            problems.append(f"{name}: not marked readOnlyHint")
    return problems


async def reference_tools(reference_python, home):
    """tools/list of the Python MemPalace itself, run from its virtualenv."""
    env = {"HOME": home, "PATH": os.environ.get("PATH", ""), "MEMPALACE_HUB_FORWARD": "0"}
    params = StdioServerParameters(command=reference_python, args=["-m", "mempalace.mcp_server"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]


async def schema_diff(args):
    fixture = os.path.join(args.fixtures, "mempalace-3.11", "tools-list.json")
    with open(fixture) as f:
        recorded = json.load(f)["tools"]
    if args.reference_python:
        live = await reference_tools(args.reference_python, os.environ["TEST_HOME"])
        key = lambda tools: sorted((t["name"], json.dumps(t["inputSchema"], sort_keys=True)) for t in tools)
        check(key(live) == key(recorded), "the recorded tools/list is the installed MemPalace 3.11's",
              [t["name"] for t in live])
    async with stdio_session(args, "mempalace") as session:
        ours = [tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                for tool in (await session.list_tools()).tools]
    problems = compare_tool_lists(recorded, ours)
    for problem in problems:
        print(f"DIFF {problem}", flush=True)
    check(not problems, "every MemPalace 3.11 tool has our tool with its parameters, types and read-only hints",
          len(problems))


async def profiles(args):
    for profile, expected in (("memory", MEMORY_TOOLS), ("robotmem", ROBOTMEM_TOOLS),
                              ("all", MEMPALACE_TOOLS + MEMORY_TOOLS + ROBOTMEM_TOOLS)):
        async with stdio_session(args, profile) as session:
            names = [tool.name for tool in (await session.list_tools()).tools]
            check(names == expected, f"the {profile} profile lists exactly its tools", names)
            code, _ = await rpc_error(session, "mempalace_status" if profile != "all" else "nope", {})
            check(code == -32602, f"the {profile} profile refuses tools outside it")


async def two_servers(args):
    async with stdio_session(args) as first, stdio_session(args) as second:
        added = await call(first, "mempalace_add_drawer", {
            "wing": "shared", "room": "notes", "content": "The staging cluster moved to the Frankfurt region in March."})
        found = await call(second, "mempalace_search", {"query": "Frankfurt staging cluster"})
        check(found["results"] and found["results"][0]["drawer_id"] == added["drawer_id"], "the other server finds it", found)
        await call(second, "mempalace_kg_add", {"subject": "Staging", "predicate": "runs_in", "object": "Frankfurt"})
        facts = await call(first, "mempalace_kg_query", {"entity": "Staging"})
        check(facts["count"] == 1, "the first server sees the other's fact", facts)
        # Both answer while the other is mid-work.
        results = await asyncio.gather(
            call(first, "mempalace_add_drawer", {"wing": "shared", "room": "a", "content": "Invoices are generated on the first business day of each month."}),
            call(second, "mempalace_add_drawer", {"wing": "shared", "room": "b", "content": "The gripper firmware was flashed to version 4.2 after the torque bug."}),
        )
        check(all(r["success"] and "reason" not in r for r in results), "concurrent writes from two servers", results)
        status = await call(first, "mempalace_status")
        check(status["wings"]["shared"] == 3, "both writes counted", status)


async def memory_family(session):
    names = [tool.name for tool in (await session.list_tools()).tools]
    check(names == MEMORY_TOOLS, "the memory profile", names)
    added = await call(session, "memory_add_drawer", {"wing": "team", "room": "decisions",
                                                     "content": "We decided to deploy on Fridays only after the load test passes."})
    check(added["info"] == "drawer added" and added["drawer_id"], "memory_add_drawer", added)
    found = await call(session, "memory_search", {"query": "when do we deploy", "limit": 2})
    check(found["results"][0]["id"] == added["drawer_id"], "memory_search", found)
    status = await call(session, "memory_status")
    check(status["wings"] == [{"wing": "team", "count": 1}], "memory_status", status)
    queue = status["ingest_queue"]
    check(queue["workers"] >= 1 and queue["capacity"] >= 1 and queue["dropped"] == 0, "the ingestion queue in status", queue)
    queued = await call(session, "memory_ingest_turn", {"wing": "team", "user": "Which port does the staging API use?",
                                                        "assistant": "Staging listens on port 8443 behind the VPN."})
    check(queued["queued"] is True and queued["success"] is True, "memory_ingest_turn answers at once", queued)
    background = await call(session, "memory_add_drawer", {"wing": "team", "room": "decisions", "background": True,
                                                         "content": "Release trains leave every second Tuesday at 10:00."})
    check(background["queued"] is True, "memory_add_drawer in the background", background)
    for _ in range(600):  # up to 30 s on a loaded machine
        queue = (await call(session, "memory_status"))["ingest_queue"]
        if queue["pending"] == 0:
            break
        await asyncio.sleep(0.05)
    check(queue["submitted"] == 2 and queue["processed"] == 2 and queue["failed"] == 0, "both filed", queue)
    found = await call(session, "memory_search", {"query": "staging API port", "limit": 1})
    check("8443" in found["results"][0]["content"], "the queued turn is searchable once filed", found)
    await call(session, "memory_delete_drawer", {"drawer_id": found["results"][0]["id"]})
    await call(session, "memory_set_identity", {"content": "Alex, backend lead at Crawbl."})
    await call(session, "memory_kg_add", {"subject": "Alex", "predicate": "works_at", "object": "Crawbl"})
    facts = await call(session, "memory_kg_query", {"entity": "Alex"})
    check(facts["results"][0]["object"] == "Crawbl", "memory_kg_query", facts)
    await call(session, "memory_diary_write", {"agent_name": "codex", "entry": "reviewed the deploy policy", "topic": "reviews"})
    diary = await call(session, "memory_diary_read", {"agent_name": "codex"})
    check(diary["count"] == 1 and diary["entries"][0]["hall"] == "codex", "memory diary in wing diary, hall = agent", diary)
    wings = await call(session, "memory_list_wings")
    check({"wing": "diary", "count": 1} in wings["wings"], "the diary wing", wings)
    deleted = await call(session, "memory_delete_drawer", {"drawer_id": added["drawer_id"], "reason": "policy changed"})
    check(deleted["deleted"], "memory_delete_drawer (soft)", deleted)
    code, message = await rpc_error(session, "memory_search", {"query": "x", "limit": 101})
    check(code == -32602 and "100" in message, "memory_search limit is 1–100, as every surface's", message)
    # Extracted memories, scoped: alex's own and the workspace's.
    extracted = await call(session, "memory_extract", {"user_id": "alex", "turns": [
        {"role": "user", "text": "I live in Oslo and I always use pnpm."}, {"role": "assistant", "text": "Noted."},
        {"role": "user", "text": "In this repo we use Vitest for tests."}]})
    check(extracted["path"] == "rules" and [d["scope"] for d in extracted["decisions"]] == ["user", "user", "workspace"],
          "memory_extract files scoped memories", extracted)
    mine = await call(session, "memory_list_memories", {"user_id": "alex"})
    theirs = await call(session, "memory_list_memories", {"user_id": "sam"})
    check(mine["count"] == 3 and mine["memories"][0]["owner"] == "alex" and theirs["count"] == 1,
          "each user sees their own memories and the workspace's", [mine, theirs])
    found = await call(session, "memory_search", {"query": "pnpm package manager", "user_id": "alex"})
    check(any("pnpm" in r["content"] for r in found["results"]), "memory_search as the user finds their memory", found)
    hidden = await call(session, "memory_search", {"query": "pnpm package manager", "user_id": "sam"})
    check(not any("pnpm" in r["content"] for r in hidden["results"]), "another user does not", hidden)
    injected = await call(session, "memory_inject", {"message": "Which package manager do I use for my projects?",
                                                     "user_id": "alex"})
    check(injected["section"] and "pnpm" in injected["section"], "memory_inject offers the user's memory", injected)
    code, message = await rpc_error(session, "memory_extract", {"turns": [{"role": "robot", "text": "beep"}]})
    check(code == -32602 and "robot" in message, "a turn of no known role is refused", message)
    # Consolidation: nothing has ended yet; the archive; a deleted drawer restored.
    episodes = await call(session, "memory_episodes", {"query": "package manager"})
    check(episodes["count"] == 0 and episodes["episodes"] == [], "no session has ended yet", episodes)
    preview = await call(session, "memory_prune", {})
    check(preview["dry_run"] is True and preview["count"] == 0, "a fresh palace has nothing to prune", preview)
    restored = await call(session, "memory_restore", {"drawer_id": added["drawer_id"]})
    check(restored["success"] and restored["status"] == "active", "memory_restore brings a deleted drawer back", restored)
    found = await call(session, "memory_search", {"query": "deploy on Fridays after the load test", "include_episodes": True})
    check(any(r["id"] == added["drawer_id"] for r in found["results"]) and found["episodes"] == [],
          "the restored drawer is found again; include_episodes adds the (empty) episodes", found)
    code, message = await rpc_error(session, "memory_episodes", {"limit": 500})
    check(code == -32602 and "limit" in message, "memory_episodes limit is checked", message)
    # Duplicate entities, reversibly.
    await call(session, "memory_kg_add", {"subject": "Acme Corp", "predicate": "hosts", "object": "the tile index"})
    await call(session, "memory_kg_add", {"subject": "Acme Inc", "predicate": "bills", "object": "the lab"})
    preview = await call(session, "memory_kg_dedup", {})
    check(preview["applied"] is False and preview["groups"][0]["aliases"][0]["name"] == "Acme Inc",
          "memory_kg_dedup previews the merge", preview)
    merged = await call(session, "memory_kg_dedup", {"dry_run": False})
    check(merged["merged"] == 1 and merged["moved_triples"] == 1, "memory_kg_dedup merges", merged)
    facts = await call(session, "memory_kg_query", {"entity": "Acme Inc"})
    check({f["subject"] for f in facts["results"]} == {"Acme Corp"} and facts["count"] == 2,
          "the alias name finds the canonical entity's facts", facts)
    back = await call(session, "memory_kg_unmerge", {"alias": "Acme Inc"})
    check(back["moved_triples"] == 1, "memory_kg_unmerge moves the fact back", back)
    aliases = await call(session, "memory_kg_aliases", {})
    check(aliases["count"] == 0, "no alias left", aliases)


async def memory_files(session, args):
    """Issue 18: GoClaw's memory files over MCP, with a hand edit and the CLI's sync in between."""
    root = os.environ["MEMPALACE_MEMORY_DIR"]
    main = os.path.join(root, "MEMORY.md")
    added = await call(session, "memory_append", {"content": "The release branch is cut on Thursdays."})
    check(added["path"] == "MEMORY.md" and len(added["drawer_ids"]) == 1, "memory_append to MEMORY.md", added)
    drawer = added["drawer_ids"][0]
    await call(session, "memory_append", {"content": "Staging runs on port 8443."})
    found = await call(session, "memory_search", {"query": "when is the release branch cut", "limit": 1})
    check(found["results"][0]["id"] == drawer, "an appended memory is searchable at once", found)
    read = await call(session, "memory_get", {"path": "MEMORY.md"})
    check(read["text"] == "The release branch is cut on Thursdays.\n\nStaging runs on port 8443.\n"
          and read["total_lines"] == 3, "memory_get reads the file", read)
    ranged = await call(session, "memory_get", {"path": "MEMORY.md", "from": 3, "lines": 1})
    check(ranged["text"] == "Staging runs on port 8443.\n" and ranged["to"] == 3, "memory_get reads a range", ranged)
    # A palace edit is written back to the file; the drawer keeps its id.
    updated = await call(session, "mempalace_update_drawer", {"drawer_id": drawer,
                                                             "content": "The release branch is cut on Wednesdays."})
    check(updated["drawer_id"] == drawer, "mempalace_update_drawer keeps the id", updated)
    with open(main, encoding="utf-8") as handle:
        check(handle.read().startswith("The release branch is cut on Wednesdays.\n\n"), "the file was rewritten")
    # A hand edit the palace has not seen makes palace edits refuse, and is kept.
    with open(main, "a", encoding="utf-8") as handle:
        handle.write("\nWritten by hand.\n")
    refused = await call_error(session, "mempalace_update_drawer", {"drawer_id": drawer, "content": "Overwrite?"})
    check("changed since the palace last read it" in refused["error"] and refused["success"] is False,
          "an edit over an unsynced hand edit is refused", refused)
    with open(main, encoding="utf-8") as handle:
        check("Written by hand." in handle.read(), "the hand edit survived")
    sync = subprocess.run([args.bin, *palace_args(args), "memory-files", "sync", root, "--json"],
                          env=server_env(), capture_output=True, text=True, check=True)
    check(json.loads(sync.stdout)["drawers_added"] == 1, "the CLI sync files the hand edit", sync.stdout)
    found = await call(session, "memory_search", {"query": "written by hand", "limit": 1})
    check(found["results"][0]["content"] == "Written by hand.", "the hand edit is searchable", found)
    deleted = await call(session, "memory_delete_drawer", {"drawer_id": drawer, "reason": "moved"})
    check(deleted["deleted"], "memory_delete_drawer", deleted)
    with open(main, encoding="utf-8") as handle:
        check(handle.read() == "Staging runs on port 8443.\n\nWritten by hand.\n", "the paragraph left the file")
    # Per-user memory and fallback.
    await call(session, "memory_append", {"content": "Sam prefers short answers.", "user_id": "sam"})
    own = await call(session, "memory_get", {"path": "MEMORY.md", "user_id": "sam"})
    check(own["scope"] == "user" and own["text"] == "Sam prefers short answers.\n", "the user's own file first", own)
    shared = await call(session, "memory_get", {"path": "MEMORY.md", "user_id": "kim"})
    check(shared["scope"] == "shared", "another user falls back to the shared file", shared)
    mine = await call(session, "memory_search", {"query": "Sam prefers short answers", "user_id": "sam", "user_first": True})
    check([r["content"] for r in mine["results"]] == ["Sam prefers short answers."], "user_first: the user's own", mine)
    fallback = await call(session, "memory_search", {"query": "staging port", "user_id": "kim", "user_first": True})
    check(fallback["results"][0]["content"] == "Staging runs on port 8443.", "user_first falls back", fallback)
    daily = await call(session, "memory_append", {"content": "Flushed before compaction.", "daily": True})
    check(daily["path"].startswith("memory/") and daily["path"].endswith(".md"), "a daily file", daily)
    # Errors.
    missing = await call_error(session, "memory_get", {"path": "memory/none.md"})
    check("does not exist" in missing["error"], "a missing file", missing)
    escape = await call_error(session, "memory_get", {"path": "../../etc/passwd"})
    check("leaves the memory root" in escape["error"], "a path escaping the root", escape)
    past = await call_error(session, "memory_get", {"path": "MEMORY.md", "from": 99})
    check("past the end" in past["error"], "a range past the end", past)
    code, message = await rpc_error(session, "memory_get", {"path": "MEMORY.md", "lines": 0})
    check(code == -32602 and "lines" in message, "lines must be positive", message)


async def memory_with_a_model(session):
    # The test's scripted chat server answers the extraction (see mcp.rs).
    extracted = await call(session, "memory_extract", {"user_id": "alex", "turns": [
        {"role": "user", "text": "I just moved to Lisbon, and our team deploys with Kamal now."},
        {"role": "assistant", "text": "Noted, both."}]})
    check(extracted["path"] == "model" and extracted["model"] == "scripted-model", "the model decided", extracted)
    check([(d["decision"], d["scope"], d["outcome"]) for d in extracted["decisions"]]
          == [("add", "user", "filed"), ("add", "workspace", "filed")], "its decisions were filed", extracted)
    check(extracted["rejected"] == 1, "the item that broke a rule was dropped and counted", extracted)
    mine = await call(session, "memory_list_memories", {"user_id": "alex"})
    check([m["observation"] for m in mine["memories"]] == ["Alex lives in Lisbon.", "The team deploys with Kamal."],
          "the user's memory first, then the workspace's", mine)
    again = await call(session, "memory_extract", {"turns": [{"role": "user", "text": "I moved to Porto."}], "user_id": "alex"})
    check(again["path"] == "rules" and "not the JSON" in again["rules_because"], "an unreadable answer: the rules decide", again)


async def memory_with_workers(session):
    # The server's own workers run the cold path (every second here): a
    # turn filed in the background is classified and its memories extracted.
    turn = await call(session, "memory_ingest_turn", {"wing": "chat", "user": "I live in Oslo and I always use pnpm.",
                                                      "assistant": "Noted!", "session_id": "s-1"})
    check(turn["success"], "the turn was accepted", turn)
    found = {"count": 0}
    for _ in range(60):
        found = await call(session, "memory_list_memories", {})
        if found["count"] >= 2:
            break
        await asyncio.sleep(0.5)
    check(sorted(m["entity_name"] for m in found["memories"]) == ["home city", "package manager"],
          "the server's workers extracted the turn's memories", found)
    status = await call(session, "memory_status", {})
    check(status["pipeline"]["by_state"]["raw"] == 0, "nothing left raw", status)


async def robotmem_family(session):
    started = await call(session, "start_session", {"context": json.dumps({"robot_id": "arm-01", "environment": "lab"})})
    sid = started["session_id"]
    check(sid and started["collection"] == "default", "start_session", started)
    ids = []
    for force, success in ((12.5, True), (18.0, False), (11.0, True)):
        learned = await call(session, "learn", {
            "insight": f"grip force {force} N on the red cube {'worked' if success else 'slipped'}",
            "context": json.dumps({"params": {"force": {"value": force}}, "task": {"success": success},
                                   "spatial": {"position": [1.0 + force / 100, 0.5, 0.4]}}),
            "session_id": sid})
        check(learned["status"] == "created", "learn", learned)
        ids.append(learned["memory_id"])
    again = await call(session, "learn", {"insight": "grip force 12.5 N on the red cube worked", "session_id": sid,
                                          "context": json.dumps({"params": {"force": {"value": 12.5}}, "task": {"success": True},
                                                                 "spatial": {"position": [1.125, 0.5, 0.4]}})})
    check(again["status"] == "duplicate", "learning the same insight again", again)
    ok = await call(session, "recall", {"query": "grip force red cube", "context_filter": json.dumps({"task.success": True})})
    check(sorted(m["id"] for m in ok["memories"]) == sorted([ids[0], ids[2]]), "recall with a context filter", ok)
    low = await call(session, "recall", {"query": "grip force", "context_filter": {"params.force.value": {"$lt": 12}}})
    check([m["id"] for m in low["memories"]] == [ids[2]], "recall with an operator", low)
    near = await call(session, "recall", {"query": "grip force red cube",
                                          "spatial_sort": json.dumps({"field": "spatial.position", "target": [1.18, 0.5, 0.4]})})
    check(near["memories"][0]["id"] == ids[1], "recall ordered by distance", near)
    code, message = await rpc_error(session, "recall", {"query": "x", "context_filter": "{not json"})
    check(code == -32602 and "context_filter" in message, "a malformed context filter", message)
    seen = await call(session, "save_perception", {"description": "camera sees the red cube at the left edge",
                                                   "perception_type": "visual", "data": "[0.1, 0.2]", "session_id": sid})
    check(seen["perception_type"] == "visual" and seen["memory_id"], "save_perception", seen)
    fixed = await call(session, "update", {"memory_id": ids[1], "new_content": "grip force 18 N crushed the red cube"})
    check(fixed["status"] == "updated", "update", fixed)
    forgotten = await call(session, "forget", {"memory_id": ids[1], "reason": "sensor was miscalibrated"})
    check(forgotten["status"] == "forgotten", "forget", forgotten)
    twice = await call_error(session, "forget", {"memory_id": ids[1], "reason": "again"})
    check("not active" in twice["error"], "forgetting twice is reported", twice)
    ended = await call(session, "end_session", {"session_id": sid, "outcome_score": 0.8})
    check(ended["status"] == "ended" and ended["summary"]["memory_count"] == 3, "end_session", ended)
    check(ended["episodic_summary"]["l0_abstract"], "an episodic summary is written", ended)
    unknown = await call_error(session, "end_session", {"session_id": "no-such-session"})
    check("not found" in unknown["error"], "ending an unknown session is reported", unknown)


async def coordination(args):
    """MemPalace 3.11's coordination tools between two agents, each with its own server process on one palace:
    a task is created, found in the worker's inbox, acknowledged, answered with a patch while the requester waits
    for it, and the patch is fetched byte for byte; then every refusal, in MemPalace's words and shapes."""
    import hashlib
    async with stdio_session(args) as requester, stdio_session(args) as worker:
        tools = {tool.name: tool for tool in (await requester.list_tools()).tools}
        for name, (properties, required) in COORDINATION_SCHEMAS.items():
            schema = tools[name].input_schema
            check(set(schema["properties"]) == properties, f"{name} takes MemPalace's parameters", schema)
            check(set(schema.get("required", [])) == required, f"{name} requires what MemPalace requires", schema)
        check(tools["mempalace_event_append"].input_schema["properties"]["metadata"]["type"] in ("object", ["object", "null"]),
              "metadata is an object", tools["mempalace_event_append"].input_schema)

        created = await call(requester, "mempalace_task_create", {
            "project": "Demo Project!", "from_agent": "mac-codex", "to_agent": "win-codex",
            "goal": "Fix search echo ranking", "branch": "fix/search", "base_commit": "ABCDEF1234",
            "done": "cargo test passes"})
        task = created["task"]
        corr = task["correlation_id"]
        check(created["success"] and set(task) == EVENT_KEYS, "task_create returns the event", created)
        check(task["type"] == "task.request" and task["stream"] == "project/demo_project" and task["room"] == "delegation"
              and task["status"] == "open" and task["base_commit"] == "abcdef1234", "the task envelope", task)
        check(corr.startswith("task_fix_search_echo_ranking_") and task["id"].startswith("evt_"), "task ids", task)
        check(created["handoff"] == f"Open MemPalace task {corr} as win-codex. Claim it, follow its exact definition of "
              "done, and deliver through the logstream.", "the handoff line", created)
        check(task["body"].startswith("Goal:\nFix search echo ranking\n\nDefinition of done:\ncargo test passes\n"),
              "the task body", task)

        await call(requester, "mempalace_event_append", {"type": "status.update", "stream": "project/demo_project",
                                                         "room": "status", "from_agent": "mac-codex", "to_agent": "*",
                                                         "body": "x" * 300})
        inbox = await call(worker, "mempalace_event_list", {"to_agent": "win-codex", "from_agent": "win-codex"})
        check(inbox["count"] == 2 and inbox["events"][1]["id"] == task["id"], "the inbox, newest first, with broadcasts", inbox)
        check("writer=<agent>" in inbox["note"], "from_agent is not a filter, and the result says so", inbox)
        preview = await call(worker, "mempalace_event_list", {"to_agent": "win-codex", "preview": True, "limit": 1})
        event = preview["events"][0]
        check(len(event["body"]) == 200 and event["body_truncated"] is True and event["body_length"] == 300,
              "preview cuts long bodies", event)
        check("note" not in preview, "no note without from_agent", preview)

        ack = await call(worker, "mempalace_event_ack", {"event_id": task["id"], "from_agent": "win-codex",
                                                         "status": "claimed", "body": "on it"})
        check(ack["success"] and ack["event"]["type"] == "event.ack" and ack["event"]["to_agent"] == "mac-codex"
              and ack["event"]["correlation_id"] == corr and ack["event"]["metadata"] == {"ack_of": task["id"]},
              "event_ack routes back to the requester", ack)
        claimed = await call(requester, "mempalace_event_wait", {"correlation_id": corr, "since_event_id": task["id"],
                                                                 "timeout_ms": 5000})
        check(not claimed["timed_out"] and [e["id"] for e in claimed["events"]] == [ack["event"]["id"]],
              "the requester sees the claim", claimed)

        # The requester waits for the patch; the worker submits it a moment later, from its own process.
        patch = "--- a/search.rs\n+++ b/search.rs\n@@ -1 +1 @@\n-old\n+new\n"

        async def submit_later():
            await asyncio.sleep(1.0)
            return await call(worker, "mempalace_patch_submit", {
                "content": patch, "from_agent": "win-codex", "stream": "project/demo_project", "to_agent": "mac-codex",
                "correlation_id": corr, "branch": "fix/search", "base_commit": "abcdef1234",
                "metadata": {"tests": "green"}})

        started = time.monotonic()
        waited, submitted = await asyncio.gather(
            call(requester, "mempalace_event_wait", {"correlation_id": corr, "type": "patch.ready",
                                                     "since_event_id": ack["event"]["id"], "timeout_ms": 30000,
                                                     "from_agent": "mac-codex"}),
            submit_later())
        elapsed = time.monotonic() - started
        check(submitted["success"] and submitted["event"]["room"] == "patches" and submitted["event"]["status"] == "ready"
              and submitted["event"]["artifact_ids"] == [submitted["artifact"]["id"]], "patch_submit", submitted)
        check("content" not in submitted["artifact"] and "warnings" not in submitted["artifact"], "the artifact record", submitted)
        check(not waited["timed_out"] and [e["id"] for e in waited["events"]] == [submitted["event"]["id"]],
              "the waiting requester wakes with the patch", waited)
        check(0.8 < elapsed < 15, "it woke when the patch arrived, not at its timeout", elapsed)
        check("writer=<agent>" in waited["note"], "event_wait notes from_agent too", waited)

        fetched = await call(requester, "mempalace_artifact_get", {"artifact_id": submitted["artifact"]["id"]})
        artifact = fetched["artifact"]
        check(set(fetched) == {"artifact"} and artifact["content"] == patch and artifact["kind"] == "patch"
              and artifact["sha256"] == hashlib.sha256(patch.encode()).hexdigest()
              and artifact["size_bytes"] == len(patch.encode()) and artifact["metadata"] == {"tests": "green"},
              "artifact_get returns the exact bytes", fetched)
        thread = await call(requester, "mempalace_event_list", {"correlation_id": corr})
        check([e["type"] for e in thread["events"]] == ["patch.ready", "event.ack", "task.request"],
              "the whole conversation by correlation id, newest first", thread)
        forward = await call(requester, "mempalace_event_list", {"correlation_id": corr, "since_event_id": task["id"]})
        check([e["type"] for e in forward["events"]] == ["event.ack", "patch.ready"], "resuming from a cursor is oldest first", forward)
        put = await call(worker, "mempalace_artifact_put", {"kind": "patch", "content": "--- a\r\n+++ b",
                                                            "created_by": "win-codex"})
        check(len(put["artifact"]["warnings"]) == 2 and put["artifact"]["size_bytes"] == 12, "patch warnings", put)
        timed_out = await call(requester, "mempalace_event_wait", {"correlation_id": "nothing", "timeout_ms": 300})
        check(timed_out == {"timed_out": True, "events": [], "count": 0}, "a wait that times out is a normal result", timed_out)
        await coordination_refusals(requester)


async def coordination_refusals(session):
    """Every rule, in MemPalace's words: writers answer {"success": false, "error"}, list/wait/artifact_get {"error"}."""
    append = {"type": "task.request", "stream": "project/x", "room": "delegation", "from_agent": "a"}
    writer_cases = [
        ("mempalace_event_append", {"type": "Task.Request"},
         "type='Task.Request' is not a valid event type (lowercase letters, digits, '.', '_', '-'; max 64 chars)"),
        ("mempalace_event_append", {"type": "  "}, "type must be a non-empty string"),
        ("mempalace_event_append", {"stream": ""}, "stream must be a non-empty string"),
        ("mempalace_event_append", {"room": " "}, "room must be a non-empty string"),
        ("mempalace_event_append", {"topic": " "}, "topic must be a non-empty string"),
        ("mempalace_event_append", {"from_agent": "x" * 257}, "from_agent exceeds maximum length of 256 characters"),
        ("mempalace_event_append", {"to_agent": "a\u0001b"}, "to_agent contains control characters"),
        ("mempalace_event_append", {"correlation_id": "a\nb"}, "correlation_id contains control characters"),
        ("mempalace_event_append", {"branch": "x" * 300}, "branch exceeds maximum length of 256 characters"),
        ("mempalace_event_append", {"base_commit": "\u007f"}, "base_commit contains control characters"),
        ("mempalace_event_append", {"status": "done"},
         "status='done' is not one of: applied, blocked, claimed, failed, open, ready, superseded"),
        ("mempalace_event_append", {"body": "a\u0000b"}, "body contains null bytes"),
        ("mempalace_event_append", {"body": "x" * (256 * 1024 + 1)}, "body is 262145 bytes; maximum is 262144 bytes"),
        ("mempalace_event_append", {"metadata": {"k": "x" * 65530}}, "metadata exceeds maximum size of 65536 bytes"),
        ("mempalace_event_append", {"artifact_ids": ["art_1", ""]}, "artifact_ids must be a list of artifact id strings"),
        ("mempalace_event_append", {"artifact_ids": ["art_missing"]}, "artifact_ids references unknown artifact 'art_missing'"),
        ("mempalace_event_ack", {"event_id": "evt_nope", "from_agent": "b"}, "event 'evt_nope' not found"),
        ("mempalace_event_ack", {"event_id": " ", "from_agent": "b"}, "event_id must be a non-empty string"),
        ("mempalace_artifact_put", {"kind": "binary", "content": "x", "created_by": "a"},
         "kind='binary' is not one of: file, json, log, note, patch"),
        ("mempalace_artifact_put", {"kind": "note", "content": "", "created_by": "a"}, "content must be a non-empty string"),
        ("mempalace_artifact_put", {"kind": "note", "content": "a\u0000", "created_by": "a"}, "content contains null bytes"),
        ("mempalace_artifact_put", {"kind": "log", "content": "x" * (4 * 1024 * 1024 + 1), "created_by": "a"},
         "content is 4194305 bytes; maximum is 4194304 bytes"),
        ("mempalace_artifact_put", {"kind": "note", "content": "x", "created_by": ""}, "created_by must be a non-empty string"),
        ("mempalace_patch_submit", {"content": "x\n", "from_agent": "", "stream": "s"}, "created_by must be a non-empty string"),
        ("mempalace_patch_submit", {"content": "x\n", "from_agent": "a", "stream": "s", "room": ""},
         "room must be a non-empty string"),
    ]
    task = {"project": "p", "from_agent": "a", "to_agent": "b", "goal": "g", "branch": "main", "base_commit": "abcdef1",
            "done": "d"}
    for field, what in (("project", "project"), ("from_agent", "requesting agent"), ("to_agent", "destination agent"),
                        ("branch", "branch"), ("base_commit", "base commit"), ("goal", "goal"), ("done", "definition of done")):
        writer_cases.append(("mempalace_task_create", {**task, field: "  "}, f"task {what} must not be empty"))
    for bad in ("main", "abc123", "v1.2.3-tag"):
        writer_cases.append(("mempalace_task_create", {**task, "base_commit": bad},
                             "task base commit must be a hexadecimal Git object id (at least 7 characters), not a branch or tag"))
    for name, arguments, expected in writer_cases:
        full = {**append, **arguments} if name == "mempalace_event_append" else arguments
        refused = await call_error(session, name, full)
        check(refused == {"success": False, "error": expected}, f"{name} refuses: {expected[:60]}", refused)

    reader_cases = [
        ("mempalace_event_list", {"limit": 0}, "limit must be a positive integer"),
        ("mempalace_event_list", {"order": "sideways"}, "order='sideways' must be 'asc' or 'desc'"),
        ("mempalace_event_list", {"since_event_id": "evt_nope"}, "since_event_id 'evt_nope' not found"),
        ("mempalace_event_list", {"before_event_id": "evt_nope"}, "before_event_id 'evt_nope' not found"),
        ("mempalace_event_list", {"since_created_at": "2026-11-26T17:50:17"},
         "since_created_at='2026-11-26T17:50:17' is not a valid ISO-8601 date or UTC datetime (expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)"),
        ("mempalace_event_list", {"type": "Bad Type"},
         "type='Bad Type' is not a valid event type (lowercase letters, digits, '.', '_', '-'; max 64 chars)"),
        ("mempalace_event_list", {"status": "closed"},
         "status='closed' is not one of: applied, blocked, claimed, failed, open, ready, superseded"),
        ("mempalace_event_list", {"writer": "a\u0002"}, "from_agent contains control characters"),
        ("mempalace_event_wait", {"timeout_ms": -1}, "timeout_ms must be a non-negative number"),
        ("mempalace_event_wait", {"since_event_id": "evt_nope", "timeout_ms": 100}, "since_event_id 'evt_nope' not found"),
        ("mempalace_event_wait", {"limit": 0, "timeout_ms": 100}, "limit must be a positive integer"),
        ("mempalace_artifact_get", {"artifact_id": "art_nope"}, "artifact 'art_nope' not found"),
        ("mempalace_artifact_get", {"artifact_id": ""}, "artifact_id must be a non-empty string"),
    ]
    for name, arguments, expected in reader_cases:
        refused = await call_error(session, name, arguments)
        check(refused == {"error": expected}, f"{name} refuses: {expected[:60]}", refused)

    code, message = await rpc_error(session, "mempalace_event_append", {**append, "priority": "high"})
    check(code == -32602 and "'priority'" in message, "an unknown parameter is a JSON-RPC error", message)
    code, message = await rpc_error(session, "mempalace_event_append", {"type": "x", "stream": "s", "room": "r"})
    check(code == -32602 and "'from_agent'" in message, "a missing parameter is a JSON-RPC error", message)
    code, message = await rpc_error(session, "mempalace_event_list", {"limit": "many"})
    check(code == -32602 and "limit" in message, "a mistyped parameter is a JSON-RPC error", message)
    listed = await call(session, "mempalace_event_list", {"type": "", "limit": 10_000})
    check(listed["count"] >= 4, "type='' is no filter and a large limit is clamped", listed)


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).encode()


def capture_sdk_warnings():
    """Collects the warnings the MCP SDK logs (a list that fills as they come)."""
    import logging

    collected = []

    class Collect(logging.Handler):
        def emit(self, record):
            collected.append(record.getMessage())

    logger = logging.getLogger("mcp")
    logger.addHandler(Collect(level=logging.WARNING))
    logger.setLevel(logging.WARNING)
    return collected


def raw_post(url, headers):
    """POSTs an initialize request; returns (status, headers)."""
    import urllib.error
    import urllib.request
    request = urllib.request.Request(url, data=INITIALIZE, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


async def unauthorized(url):
    status, headers = raw_post(url, {})
    check(status == 401 and headers.get("www-authenticate", headers.get("WWW-Authenticate")) == "Bearer",
          "no token: 401 with WWW-Authenticate", (status, headers))
    status, _ = raw_post(url, {"Authorization": "Bearer wrong"})
    check(status == 401, "a wrong token: 401", status)
    try:
        async with http_session(url) as session:
            await session.list_tools()
    except BaseException as error:  # the SDK raises inside a task group
        check(True, "the SDK cannot open a session without the token", repr(error)[:200])
    else:
        raise AssertionError("a session without the token was accepted")


async def tenancy(args):
    """A team palace over HTTP: each request acts for its token's user in the
    workspace its header names (docs/tenancy.md)."""
    tokens = json.loads(args.tokens)
    url = args.url
    async with http_session(url, tokens["alice"], "team-ws") as alice:
        added = await call(alice, "mempalace_add_drawer", {
            "wing": "launch", "room": "orion", "content": "The Orion launch window opens on June 3 at 14:00 UTC."})
        check(not added.get("reason"), "it is a new drawer", added)
        check(added["success"], "the team leader files in the team workspace", added)
        me = await call(alice, "memory_search", {"query": "Orion launch code", "limit": 3, "user_id": "alice"})
        check(any("4721" in r["content"] for r in me["results"]), "a user may name herself", me)
    async with http_session(url, tokens["bob"], "team-ws") as bob:
        found = await call(bob, "mempalace_search", {"query": "Orion launch code", "limit": 5})
        check(any("4721" in r["text"] for r in found["results"]), "a team member reads the shared drawer", found)
        refused = await call_error(bob, "mempalace_add_drawer", {"wing": "launch", "room": "orion", "content": "bob was here"})
        check("access denied" in json.dumps(refused) and "reader" in json.dumps(refused), "a member cannot write", refused)
        code, message = await rpc_error(bob, "memory_search", {"query": "Orion", "user_id": "alice"})
        check(code == -32602 and "not yours" in message, "a token speaks for its own user only", (code, message))
    async with http_session(url, tokens["bob"], "personal.alice") as forged:
        refused = await call_error(forged, "mempalace_search", {"query": "Orion"})
        check("has no role" in json.dumps(refused), "a forged workspace header is refused", refused)
    async with http_session(url, tokens["mallory"], "team-ws") as mallory:
        refused = await call_error(mallory, "mempalace_status", {})
        check("has no role in workspace team-ws" in json.dumps(refused), "the wrong user is refused", refused)
    for name in ("revoked", "garbage"):
        status, _ = raw_post(url, {"Authorization": f"Bearer {tokens.get(name, 'mpt_nope')}"})
        check(status == 401, f"a {name} token gets 401", status)
    status, _ = raw_post(url, {"Authorization": f"Bearer {tokens['bob']}", "Mempalace-Workspace": "no such id!"})
    check(status == 400, "a malformed workspace header gets 400", status)
    # A loopback request without a token is the palace's local operator.
    async with http_session(url, None, "team-ws") as local:
        found = await call(local, "mempalace_search", {"query": "Orion launch code", "limit": 5})
        check(any("4721" in r["text"] for r in found["results"]), "the local operator reads", found)


def guards(url):
    status, _ = raw_post(url, {})
    check(status == 200, "a plain local request is served", status)
    status, _ = raw_post(url, {"Host": "evil.example"})
    check(status == 403, "a foreign Host is refused (DNS rebinding)", status)
    status, _ = raw_post(url, {"Origin": "http://evil.example"})
    check(status == 403, "a browser Origin is refused", status)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("--bin", required=True)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--palace")
    where.add_argument("--store")
    parser.add_argument("--url")
    parser.add_argument("--token")
    parser.add_argument("--fixtures")
    parser.add_argument("--reference-python")
    parser.add_argument("--tokens")
    args = parser.parse_args()
    if args.scenario == "stdio":
        async with stdio_session(args) as session:
            await round_trips(session)
    elif args.scenario == "http":
        warnings = capture_sdk_warnings()
        async with http_session(args.url, args.token) as session:
            await round_trips(session)
        # Closing the session sends HTTP DELETE; the SDK warns unless the
        # server answers 200 or 204.
        check(not warnings, "the session closes without SDK warnings", warnings)
    elif args.scenario == "http-unauthorized":
        await unauthorized(args.url)
    elif args.scenario == "http-guards":
        guards(args.url)
    elif args.scenario == "tenancy":
        await tenancy(args)
    elif args.scenario == "schema-diff":
        await schema_diff(args)
    elif args.scenario == "operations":
        async with stdio_session(args) as session:
            await operations(session, os.environ["TEST_HOME"])
    elif args.scenario == "profiles":
        await profiles(args)
    elif args.scenario == "two-servers":
        await two_servers(args)
    elif args.scenario == "memory":
        async with stdio_session(args, "memory") as session:
            await memory_family(session)
    elif args.scenario == "memory-files":
        async with stdio_session(args, "all") as session:
            await memory_files(session, args)
    elif args.scenario == "memory-workers":
        async with stdio_session(args, "memory", workers=True) as session:
            await memory_with_workers(session)
    elif args.scenario == "memory-model":
        async with stdio_session(args, "memory") as session:
            await memory_with_a_model(session)
    elif args.scenario == "coordination":
        await coordination(args)
    elif args.scenario == "robotmem":
        async with stdio_session(args, "robotmem") as session:
            await robotmem_family(session)
    else:
        raise SystemExit(f"unknown scenario {args.scenario}")
    print("PASS", flush=True)


asyncio.run(main())
