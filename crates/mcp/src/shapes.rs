//! JSON shapes of the Python MemPalace's results, defined once and used by
//! the MCP tools and by the CLI's `--json` output (which mirrors them so
//! scripts and agents read both alike).

use mempalace_core::Drawer;
use mempalace_core::tunnel::Tunnel;
use mempalace_engine::graph::{GraphStats, Reached, TunnelRoom};
use mempalace_engine::kg::{Fact, fact_time};
use mempalace_store::{KgStats, PipelineCounts, Taxonomy};
use serde_json::{Map, Value, json};

/// `{"wing": count}` and `{"room": count}` (a room summed over wings).
pub fn wing_and_room_counts(taxonomy: &Taxonomy) -> (Map<String, Value>, Map<String, Value>) {
    let wings = taxonomy.wings.iter().map(|(name, wing)| (name.clone(), json!(wing.drawers))).collect();
    let mut rooms = Map::new();
    for wing in taxonomy.wings.values() {
        for (room, count) in &wing.rooms {
            let total = rooms.get(room).and_then(Value::as_u64).unwrap_or(0) + count;
            rooms.insert(room.clone(), json!(total));
        }
    }
    (wings, rooms)
}

/// `{"wing": {"room": count}}`.
pub fn taxonomy(taxonomy: &Taxonomy) -> Value {
    Value::Object(taxonomy.wings.iter().map(|(name, wing)| (name.clone(), json!(wing.rooms))).collect())
}

/// The cold path's counts (our own shape, not MemPalace's): `status --json`
/// and `memory_status` carry it as `pipeline`. Every state, tier and status
/// is present, zeros included; `last_runs` lists the latest run of each
/// periodic job that ever ran, by job name.
pub fn pipeline(counts: &PipelineCounts) -> Value {
    let by = |pairs: Vec<(&'static str, u64)>| -> Value {
        Value::Object(pairs.into_iter().map(|(name, count)| (name.to_string(), json!(count))).collect())
    };
    json!({
        "by_state": by(counts.by_state.iter().map(|(state, n)| (state.as_str(), *n)).collect()),
        "claimed": counts.claimed,
        "by_tier": by(counts.by_tier.iter().map(|(tier, n)| (tier.as_str(), *n)).collect()),
        "by_status": by(counts.by_status.iter().map(|(status, n)| (status.as_str(), *n)).collect()),
        "memories": counts.memories,
        "last_runs": counts.last_runs.iter().map(|run| json!({
            "job": run.job,
            "tick": run.tick,
            "holder": run.holder,
            "started_at": mempalace_core::time::format_timestamp(&run.started_at),
            "finished": run.finished,
        })).collect::<Vec<_>>(),
    })
}

/// A fact (MemPalace `kg_query` item, plus its id and source drawer).
pub fn fact(fact: &Fact) -> Value {
    json!({
        "id": fact.id,
        "direction": fact.direction,
        "subject": fact.subject,
        "predicate": fact.predicate,
        "object": fact.object,
        "valid_from": fact_time(fact.valid_from.as_ref()),
        "valid_to": fact_time(fact.valid_to.as_ref()),
        "current": fact.current,
        "confidence": fact.confidence,
        "source_drawer_id": fact.source_drawer_id.as_ref().map(|id| id.as_str()),
    })
}

/// Knowledge-graph statistics (MemPalace `kg_stats`, plus counts per
/// relation).
pub fn kg_stats(stats: &KgStats) -> Value {
    json!({
        "entities": stats.entities,
        "triples": stats.triples,
        "current_facts": stats.current,
        "expired_facts": stats.expired,
        "relationship_types": stats.predicates.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        "relationship_counts": stats.predicates.iter().map(|(p, n)| (p.clone(), json!(n))).collect::<Map<_, _>>(),
    })
}

/// A traversal step (MemPalace `traverse` item).
pub fn reached(reached: &Reached) -> Value {
    let mut value = json!({
        "room": reached.room, "wings": reached.wings, "halls": reached.halls, "count": reached.count, "hop": reached.hop,
    });
    if reached.hop > 0 {
        value["connected_via"] = json!(reached.connected_via);
    }
    value
}

/// A room bridging wings (MemPalace `find_tunnels` item).
pub fn tunnel_room(room: &TunnelRoom) -> Value {
    json!({"room": room.room, "wings": room.wings, "halls": room.halls, "count": room.count, "recent": ""})
}

/// Palace-graph statistics (MemPalace `graph_stats`, plus explicit tunnels).
pub fn graph_stats(stats: &GraphStats) -> Value {
    json!({
        "total_rooms": stats.total_rooms,
        "total_room_instances": stats.total_room_instances,
        "tunnel_rooms": stats.tunnel_rooms,
        "passive_tunnel_rooms": stats.tunnel_rooms,
        "explicit_tunnels": stats.explicit_tunnels,
        "total_edges": stats.total_edges,
        "total_connections": stats.total_edges + stats.explicit_tunnels,
        "rooms_per_wing": stats.rooms_per_wing.iter().map(|(w, n)| (w.clone(), json!(n))).collect::<Map<_, _>>(),
        "top_tunnels": stats
            .top_tunnels
            .iter()
            .map(|t| json!({"room": t.room, "wings": t.wings, "count": t.count}))
            .collect::<Vec<_>>(),
    })
}

/// An explicit tunnel (MemPalace `create_tunnel` / `list_tunnels` item).
pub fn tunnel(tunnel: &Tunnel) -> Value {
    json!({
        "id": tunnel.id,
        "source": {"wing": tunnel.a.wing.as_str(), "room": tunnel.a.room.as_str()},
        "target": {"wing": tunnel.b.wing.as_str(), "room": tunnel.b.room.as_str()},
        "label": tunnel.label.clone().unwrap_or_default(),
        "kind": "explicit",
        "created_by": tunnel.created_by,
        "created_at": mempalace_core::time::format_timestamp(&tunnel.created_at),
    })
}

/// A drawer's metadata (MemPalace `get_drawer` `metadata`): the place,
/// provenance and classification, plus the drawer's context keys.
pub fn drawer_metadata(d: &Drawer) -> Value {
    let ts = |t: &mempalace_core::Timestamp| mempalace_core::time::format_timestamp(t);
    let mut meta = Map::new();
    for (key, value) in &d.context {
        meta.insert(key.clone(), value.clone());
    }
    let mut put = |key: &str, value: Value| {
        if !value.is_null() {
            meta.insert(key.to_string(), value);
        }
    };
    put("wing", json!(d.wing.as_str()));
    put("room", json!(d.room.as_str()));
    put("hall", json!(d.hall.as_ref().map(|h| h.as_str())));
    put("source_file", json!(d.source_file.as_deref().map(|s| s.rsplit(['/', '\\']).next().unwrap_or(s))));
    put("added_by", json!(d.added_by));
    put("filed_at", json!(ts(&d.filed_at)));
    put("updated_at", json!(ts(&d.updated_at)));
    put("chunk_index", json!(d.chunk_index));
    put("line_start", json!(d.line_start));
    put("line_end", json!(d.line_end));
    put("content_date", json!(d.content_date));
    put("memory_type", json!(d.memory_type.map(|t| t.as_str())));
    put("importance", json!(d.importance.get()));
    put("confidence", json!(d.confidence.get()));
    put("status", json!(d.status.as_str()));
    put("session_id", json!(d.session_id));
    put("tags", json!(d.tags.iter().map(|t| t.tag.as_str()).collect::<Vec<_>>()));
    put("access_count", json!(d.access_count));
    meta.into()
}

/// A memory-extraction report (the `memory_extract` tool and `mempalace
/// extract --json`): which extractor decided and why, and each decision
/// with what became of it.
pub fn extract_report(report: &mempalace_engine::memories::ExtractReport) -> Value {
    use mempalace_core::memory::Decision;
    use mempalace_engine::memories::ExtractPath;
    let (path, model, reason) = match &report.path {
        ExtractPath::Model(model) => ("model", Some(model.as_str()), None),
        ExtractPath::Rules(why) => ("rules", None, Some(why.as_str())),
    };
    let decisions: Vec<Value> = report
        .applied
        .iter()
        .map(|applied| {
            let mut value = match &applied.decision {
                Decision::Add(m) => json!({"decision": "add", "entity_type": m.entity_type.as_str(),
                    "entity_name": m.entity_name, "observation": m.observation, "scope": m.scope.as_str()}),
                Decision::Update { id, observation } => {
                    json!({"decision": "update", "id": id, "observation": observation})
                }
                Decision::Delete { id, reason } => json!({"decision": "delete", "id": id, "reason": reason}),
            };
            value["filed"] = json!(applied.filed.as_ref().map(|id| id.as_str()));
            value["outcome"] = json!(applied.outcome);
            value
        })
        .collect();
    json!({"path": path, "model": model, "rules_because": reason, "dry_run": report.dry_run,
        "rejected": report.rejected, "decisions": decisions})
}

/// One stored memory (`memory_list_memories`, `mempalace memories --json`).
pub fn memory(memory: &mempalace_engine::memories::StoredMemory) -> Value {
    json!({"id": memory.drawer.id.as_str(), "scope": memory.memory.scope.as_str(), "owner": memory.drawer.owner_user_id,
        "entity_type": memory.memory.entity_type.as_str(), "entity_name": memory.memory.entity_name,
        "observation": memory.memory.observation,
        "filed_at": mempalace_core::time::format_timestamp(&memory.drawer.filed_at),
        // extracted (from one conversation), semantic (promoted: said in
        // several episodes) or dream; with the episodes and sessions it
        // came from.
        "tier": memory.drawer.context["memory"]["tier"].as_str().unwrap_or("extracted"),
        "episodes": memory.drawer.context["memory"].get("episodes"),
        "sessions": memory.drawer.context["memory"].get("sessions")})
}

/// An episodic summary (the `memory_episodes` tool and `mempalace episodes
/// --json`).
pub fn episode(e: &mempalace_core::session::EpisodicSummary) -> Value {
    let ts = |t: &mempalace_core::Timestamp| mempalace_core::time::format_timestamp(t);
    json!({
        "id": e.id,
        "session_id": e.session_id,
        "agent": e.agent,
        "user_id": e.user_id,
        "summary": e.summary,
        "l0_abstract": e.l0_abstract,
        "key_topics": e.key_topics,
        "created_at": ts(&e.created_at),
        "expires_at": e.expires_at.as_ref().map(ts),
        "promoted_at": e.promoted_at.as_ref().map(ts),
    })
}

/// An episode found by a search, with its relevance (`score`).
pub fn episode_hit(hit: &mempalace_engine::consolidate::EpisodeHit) -> Value {
    let mut value = episode(&hit.episode);
    value["score"] = json!(hit.score);
    value
}

/// An episode with its drawers (drill-down).
pub fn episode_detail(detail: &mempalace_engine::consolidate::EpisodeDetail) -> Value {
    let mut value = episode(&detail.episode);
    value["drawers"] = detail
        .drawers
        .iter()
        .map(|d| json!({"id": d.id.as_str(), "content": d.content.as_str(), "metadata": drawer_metadata(d)}))
        .collect();
    value
}

/// What `prune` archived or would archive.
pub fn prune_report(report: &mempalace_engine::consolidate::PruneReport) -> Value {
    json!({
        "dry_run": report.dry_run,
        "count": report.drawers.len(),
        "drawers": report.drawers.iter().map(|c| json!({
            "id": c.id.as_str(), "importance": c.importance, "access_count": c.access_count,
        })).collect::<Vec<_>>(),
    })
}

/// What an entity dedup found and did (`memory_kg_dedup`, `mempalace
/// entities dedup --json`).
pub fn dedup_report(report: &mempalace_engine::entities::DedupReport) -> Value {
    json!({
        "applied": report.applied,
        "entities": report.entities,
        "merged": report.merged,
        "moved_triples": report.moved_triples,
        "moved_mentions": report.moved_mentions,
        "groups": report.groups.iter().map(|g| json!({
            "canonical": g.canonical,
            "canonical_id": g.canonical_id,
            "aliases": g.aliases.iter().map(|(name, why)| json!({"name": name, "reason": why})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "flagged": report.flagged.iter().map(|f| json!({"a": f.a, "b": f.b, "reason": f.reason})).collect::<Vec<_>>(),
    })
}

/// One entity alias, with its canonical entity's name when known.
pub fn entity_alias(alias: &mempalace_core::kg::EntityAlias, canonical: Option<&str>) -> Value {
    json!({
        "alias": alias.alias.name,
        "alias_id": alias.alias.id,
        "canonical": canonical,
        "canonical_id": alias.canonical_id,
        "reason": alias.reason,
        "merged_at": mempalace_core::time::format_timestamp(&alias.merged_at),
        "moved_triples": alias.moved_triples,
        "moved_mentions": alias.moved_mentions,
    })
}

/// What a centroid recompute did (`mempalace centroids recompute --json`).
pub fn centroid_report(report: &mempalace_engine::centroids::CentroidReport) -> Value {
    json!({
        "workspace": report.workspace,
        "model": report.model,
        "types_trained": report.types_trained.iter().map(|(t, n)| json!({"memory_type": t.as_str(), "samples": n})).collect::<Vec<_>>(),
        "types_unchanged": report.types_unchanged.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
        "types_too_few": report.types_too_few.iter().map(|(t, n)| json!({"memory_type": t.as_str(), "samples": n})).collect::<Vec<_>>(),
        "rooms_trained": report.rooms_trained.iter().map(|(r, n)| json!({"room": r, "samples": n})).collect::<Vec<_>>(),
        "rooms_unchanged": report.rooms_unchanged,
        "rooms_not_due": report.rooms_not_due,
        "rooms_too_few": report.rooms_too_few,
        "rooms_forgotten": report.rooms_forgotten,
    })
}
