//! Seed 4's extracted memories over MCP, in the `memory_*` family:
//! `memory_extract` (decide and apply what a conversation teaches),
//! `memory_list_memories` (what a user sees) and `memory_inject` (the
//! auto-injector's section for a message); and consolidation's:
//! `memory_episodes` (episodic summaries: list, search, drill down),
//! `memory_prune` and `memory_restore` (the archive).

use mempalace_core::memory::{Speaker, Turn, turns_from_text};
use mempalace_engine::memories::ExtractOptions;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{reply, required_text};
use crate::context::Backend;
use crate::registry::{Family, ToolError, ToolResult, ToolSpec};
use crate::shapes::{
    DedupReportShape, EntityAliasShape, EpisodeShape, ExtractReportShape, MemoryShape, PruneReportShape, WriteFailure,
};

const F: Family = Family::Memory;

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "memory_extract",
            F,
            "Extract lasting memories from a conversation and file them: new facts, preferences, goals, \
             constraints, style and people, each scoped to the user (personal) or the workspace (shared); a \
             changed memory is superseded by its update, a retracted one invalidated. Uses the configured \
             language model, else rules. Give the conversation as turns or as text with user:/assistant: lines.",
            extract,
        ),
        ToolSpec::new(
            "memory_list_memories",
            F,
            "List the extracted memories a user sees: their own first, then the workspace's.",
            list,
        )
        .read_only(),
        ToolSpec::new(
            "memory_inject",
            F,
            "The memory section to put into a prompt for a user message: the user's extracted memories, \
             episode abstracts and matching drawers above a relevance threshold, within 200 tokens; nothing for \
             trivial messages.",
            inject,
        )
        .read_only(),
        ToolSpec::new(
            "memory_episodes",
            F,
            "Episodic summaries of ended sessions (a session ends after 30 idle minutes or when ended): with \
             episode_id, that episode and the drawers it summarises; with query, the most relevant episodes; \
             else the newest.",
            episodes,
        )
        .read_only(),
        ToolSpec::new(
            "memory_prune",
            F,
            "Move faded drawers (importance decayed below 0.5, fewer than 3 accesses, keeping at least 100) to the \
             archive, where they stay whole and restorable. Previews unless dry_run is false.",
            prune,
        ),
        ToolSpec::new(
            "memory_restore",
            F,
            "Bring an archived or deleted drawer back (active again, found by searches).",
            restore,
        ),
        ToolSpec::new(
            "memory_kg_dedup",
            F,
            "Merge knowledge-graph entities whose names are one thing (\"Postgres\", \"PostgreSQL\", \"postgres db\"): \
             the aliases' facts and mentions move to the kept entity, reversibly. Pairs that only may be one thing \
             are flagged, not merged. Previews unless dry_run is false.",
            kg_dedup,
        ),
        ToolSpec::new(
            "memory_kg_merge",
            F,
            "Merge the entity named alias into the entity named canonical (its facts and mentions move; \
             memory_kg_unmerge moves them back).",
            kg_merge,
        ),
        ToolSpec::new(
            "memory_kg_unmerge",
            F,
            "Undo a merge: the alias becomes an entity of its own again, with exactly the facts the merge moved.",
            kg_unmerge,
        ),
        ToolSpec::new(
            "memory_kg_aliases",
            F,
            "The entity aliases of the knowledge graph (of one entity, named by itself or an alias; else all).",
            kg_aliases,
        )
        .read_only(),
    ]
}

/// One turn of a conversation.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TurnParam {
    /// "user" or "assistant"
    role: String,
    /// What was said
    text: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Extract {
    /// The conversation as turns (or use conversation_text)
    #[serde(default)]
    turns: Option<Vec<TurnParam>>,
    /// The conversation as text with user:/assistant: lines (or use turns)
    #[serde(default)]
    conversation_text: Option<String>,
    /// The user the conversation is with (owner of personal memories)
    #[serde(default)]
    user_id: Option<String>,
    /// The conversation's id (kept with the memories)
    #[serde(default)]
    session_id: Option<String>,
    /// Decide and answer, file nothing (default false)
    #[serde(default)]
    dry_run: bool,
}

fn extract(backend: &Backend, p: Extract) -> ToolResult {
    let turns: Vec<Turn> = match (p.turns, p.conversation_text) {
        (Some(turns), None) => turns
            .into_iter()
            .map(|t| {
                let speaker = match t.role.trim().to_ascii_lowercase().as_str() {
                    "user" | "human" => Ok(Speaker::User),
                    "assistant" | "agent" | "ai" => Ok(Speaker::Assistant),
                    other => Err(ToolError::param("turns", format!("role {other:?} is not user or assistant"))),
                }?;
                Ok(Turn { speaker, text: t.text })
            })
            .collect::<Result<_, ToolError>>()?,
        (None, Some(text)) => turns_from_text(required_text("conversation_text", &text)?, &[]),
        _ => return Err(ToolError::param("turns", "give either turns or conversation_text")),
    };
    if !turns.iter().any(|t| t.speaker == Speaker::User && !t.text.trim().is_empty()) {
        return Err(ToolError::param("turns", "the conversation has no user turn: nothing to learn about the user"));
    }
    let options = ExtractOptions {
        user: p.user_id.filter(|u| !u.trim().is_empty()),
        session: p.session_id.filter(|s| !s.trim().is_empty()),
        dry_run: p.dry_run,
        ..ExtractOptions::default()
    };
    let report = backend.palace().extract_memories(&turns, &options)?;
    reply(ExtractReportShape::of(&report))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct List {
    /// Whose memories (their own and the workspace's); without it, the workspace's
    #[serde(default)]
    user_id: Option<String>,
}

fn list(backend: &Backend, p: List) -> ToolResult {
    let memories = backend.palace().memories(p.user_id.as_deref())?;
    reply(MemoryList { count: memories.len(), memories: memories.iter().map(MemoryShape::of).collect() })
}

/// `memory_list_memories`: the user's memories.
#[derive(Serialize)]
struct MemoryList {
    count: usize,
    memories: Vec<MemoryShape>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Inject {
    /// The user's message
    message: String,
    /// Whose memories to offer (their own and the workspace's)
    #[serde(default)]
    user_id: Option<String>,
}

fn inject(backend: &Backend, p: Inject) -> ToolResult {
    let message = required_text("message", &p.message)?;
    let injection = backend.palace().inject_for(message, p.user_id.as_deref())?;
    reply(Injected {
        match_count: injection.match_count,
        section: injection.section,
        top_score: injection.top_score,
        trivial: injection.trivial,
    })
}

/// `memory_inject`: the section to put before the message, if any.
#[derive(Serialize)]
struct Injected {
    match_count: usize,
    /// Null when nothing is worth injecting.
    section: Option<String>,
    top_score: f64,
    /// Whether the message was too trivial to look anything up for.
    trivial: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Episodes {
    /// An episode id or session id: that episode with its drawers
    #[serde(default)]
    episode_id: Option<String>,
    /// What to look for among the episodes
    #[serde(default)]
    query: Option<String>,
    /// Whose episodes (theirs and shared ones); without it, every one
    #[serde(default)]
    user_id: Option<String>,
    /// At most this many (default 10, at most 100)
    #[serde(default)]
    limit: Option<u32>,
}

fn episodes(backend: &Backend, p: Episodes) -> ToolResult {
    let limit = match p.limit {
        None => 10,
        Some(n @ 1..=100) => n as usize,
        Some(n) => return Err(ToolError::param("limit", format!("{n} is not between 1 and 100"))),
    };
    let user = p.user_id.as_deref().filter(|u| !u.trim().is_empty());
    match (p.episode_id, p.query) {
        (Some(_), Some(_)) => Err(ToolError::param("episode_id", "give episode_id or query, not both")),
        (Some(id), None) => {
            let detail = backend.palace().episode(required_text("episode_id", &id)?)?;
            if user.is_some() && detail.episode.user_id.is_some() && detail.episode.user_id.as_deref() != user {
                return Err(ToolError::param("episode_id", format!("no episode {id} for this user")));
            }
            reply(EpisodeShape::detail(&detail))
        }
        (None, Some(query)) => {
            let hits = backend.palace().search_episodes(required_text("query", &query)?, None, user, limit, 0.0)?;
            let episodes: Vec<_> = hits.iter().map(EpisodeShape::hit).collect();
            reply(EpisodeList { count: episodes.len(), episodes, query: Some(query) })
        }
        (None, None) => {
            let mut episodes = backend.palace().episodes(user)?;
            episodes.truncate(limit);
            reply(EpisodeList {
                count: episodes.len(),
                episodes: episodes.iter().map(EpisodeShape::of).collect(),
                query: None,
            })
        }
    }
}

/// `memory_episodes`: episodes, newest first or ranked by a query.
#[derive(Serialize)]
struct EpisodeList {
    count: usize,
    episodes: Vec<EpisodeShape>,
    /// The query, when the episodes were searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    query: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Prune {
    /// Only say which drawers would go (default true)
    #[serde(default)]
    dry_run: Option<bool>,
}

fn prune(backend: &Backend, p: Prune) -> ToolResult {
    reply(PruneReportShape::of(&backend.palace().prune(p.dry_run.unwrap_or(true))?))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Restore {
    /// The drawer to bring back
    drawer_id: String,
}

fn restore(backend: &Backend, p: Restore) -> ToolResult {
    let text = required_text("drawer_id", &p.drawer_id)?;
    let id = mempalace_core::DrawerId::parse(text).map_err(|e| ToolError::param("drawer_id", e.to_string()))?;
    let drawer = backend.palace().restore(&id)?;
    reply(Restored {
        drawer_id: drawer.id.as_str().to_string(),
        importance: drawer.importance.get(),
        room: drawer.room.as_str().to_string(),
        status: drawer.status.as_str(),
        success: true,
        wing: drawer.wing.as_str().to_string(),
    })
}

/// `memory_restore`: the drawer restored.
#[derive(Serialize)]
struct Restored {
    drawer_id: String,
    importance: f64,
    room: String,
    status: &'static str,
    success: bool,
    wing: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgDedup {
    /// Only say what would merge (default true)
    #[serde(default)]
    dry_run: Option<bool>,
}

fn kg_dedup(backend: &Backend, p: KgDedup) -> ToolResult {
    reply(DedupReportShape::of(&backend.palace().dedup_entities(p.dry_run.unwrap_or(true))?))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgMerge {
    /// The entity that becomes an alias
    alias: String,
    /// The entity kept
    canonical: String,
}

fn kg_merge(backend: &Backend, p: KgMerge) -> ToolResult {
    let alias = required_text("alias", &p.alias)?;
    let canonical = required_text("canonical", &p.canonical)?;
    reply(match backend.palace().merge_entities(alias, canonical)? {
        mempalace_store::MergeOutcome::Merged { triples, mentions } => {
            EntityMerged::Merged { merged: true, moved_mentions: mentions, moved_triples: triples, success: true }
        }
        mempalace_store::MergeOutcome::AlreadyMerged => {
            EntityMerged::AlreadyMerged { already: true, merged: false, success: true }
        }
        other => EntityMerged::Refused(WriteFailure::new(format!("{other:?}"))),
    })
}

/// `memory_kg_merge`: what merging an entity into another did.
#[derive(Serialize)]
#[serde(untagged)]
enum EntityMerged {
    /// Merged: the facts and mentions moved.
    Merged { merged: bool, moved_mentions: u64, moved_triples: u64, success: bool },
    /// It was an alias of that entity already.
    AlreadyMerged { already: bool, merged: bool, success: bool },
    /// Not merged, and why.
    Refused(WriteFailure),
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgUnmerge {
    /// The alias to make an entity of its own again
    alias: String,
}

fn kg_unmerge(backend: &Backend, p: KgUnmerge) -> ToolResult {
    let back = backend.palace().unmerge_entity(required_text("alias", &p.alias)?)?;
    reply(Unmerged {
        canonical_id: back.canonical_id,
        mentions: back.mentions,
        moved_triples: back.triples,
        success: true,
    })
}

/// `memory_kg_unmerge`: the alias is its own entity again.
#[derive(Serialize)]
struct Unmerged {
    /// The entity it was merged into.
    canonical_id: String,
    /// Drawers that mention it.
    mentions: u64,
    /// Facts moved back to it.
    moved_triples: u64,
    success: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgAliases {
    /// Only the aliases of this entity (named by itself or an alias)
    #[serde(default)]
    entity: Option<String>,
}

fn kg_aliases(backend: &Backend, p: KgAliases) -> ToolResult {
    let palace = backend.palace();
    let aliases = palace.entity_aliases(p.entity.as_deref().filter(|e| !e.trim().is_empty()))?;
    let mut items = Vec::new();
    for alias in &aliases {
        let name = palace
            .store()
            .entities_by_id(palace.workspace(), std::slice::from_ref(&alias.canonical_id))
            .map_err(mempalace_engine::EngineError::from)?
            .pop();
        items.push(EntityAliasShape::of(alias, name.as_ref().map(|e| e.name.as_str())));
    }
    reply(AliasList { aliases: items, count: aliases.len() })
}

/// `memory_kg_aliases`: merged entities and what they stand for.
#[derive(Serialize)]
struct AliasList {
    aliases: Vec<EntityAliasShape>,
    count: usize,
}
