//! The tools, by family, and the helpers they share for reading
//! parameters and shaping results.

use mempalace_core::time::DayEdge;
use mempalace_core::{Content, DrawerId, Room, Timestamp, Wing};
use serde::Serialize;
use serde_json::{Value, json};

use crate::registry::{ToolError, ToolResult, ToolSpec};

pub mod coordination;
pub mod memories;
pub mod memory;
pub mod memory_files;
pub mod mempalace;
pub mod operations;
pub mod robotmem;

/// The Python MemPalace 3.11's `tools/list` order (its TOOLS table); our
/// `mempalace_*` tools are listed in it, ours alone (`wake_up`) after.
const MEMPALACE_ORDER: &[&str] = &[
    "status",
    "list_wings",
    "list_rooms",
    "get_taxonomy",
    "get_aaak_spec",
    "kg_query",
    "kg_add",
    "kg_invalidate",
    "kg_supersede",
    "kg_timeline",
    "kg_stats",
    "traverse",
    "find_tunnels",
    "graph_stats",
    "mesh_peers",
    "create_tunnel",
    "list_tunnels",
    "delete_tunnel",
    "list_hallways",
    "delete_hallway",
    "follow_tunnels",
    "search",
    "check_duplicate",
    "add_drawer",
    "checkpoint",
    "delete_drawer",
    "delete_drawers",
    "mine",
    "delete_by_source",
    "sync",
    "get_drawer",
    "get_drawers",
    "list_drawers",
    "update_drawer",
    "diary_write",
    "diary_read",
    "hook_settings",
    "memories_filed_away",
    "reconnect",
    "event_append",
    "task_create",
    "event_list",
    "event_wait",
    "event_ack",
    "artifact_put",
    "artifact_get",
    "patch_submit",
];

/// Every tool, in the order `tools/list` shows them.
pub fn all() -> Vec<ToolSpec> {
    let mut family = mempalace::tools();
    family.extend(operations::tools());
    family.extend(coordination::tools());
    let rank = |name: &str| {
        let short = name.strip_prefix("mempalace_").unwrap_or(name);
        MEMPALACE_ORDER.iter().position(|n| *n == short).unwrap_or(MEMPALACE_ORDER.len())
    };
    family.sort_by_key(|tool| rank(tool.name));
    let mut tools = family;
    tools.extend(memory::tools());
    tools.extend(memories::tools());
    tools.extend(memory_files::tools());
    tools.extend(robotmem::tools());
    tools
}

/// A required wing parameter.
pub(crate) fn wing(field: &str, text: &str) -> Result<Wing, ToolError> {
    Wing::parse(text.trim()).map_err(|error| ToolError::param(field, error))
}

/// A required room parameter.
pub(crate) fn room(field: &str, text: &str) -> Result<Room, ToolError> {
    Room::parse(text.trim()).map_err(|error| ToolError::param(field, error))
}

/// An optional wing filter: absent or blank means none.
pub(crate) fn opt_wing(field: &str, text: Option<&str>) -> Result<Option<Wing>, ToolError> {
    text.map(str::trim).filter(|t| !t.is_empty()).map(|t| wing(field, t)).transpose()
}

/// An optional room filter: absent or blank means none.
pub(crate) fn opt_room(field: &str, text: Option<&str>) -> Result<Option<Room>, ToolError> {
    text.map(str::trim).filter(|t| !t.is_empty()).map(|t| room(field, t)).transpose()
}

/// Drawer text (verbatim, not trimmed).
pub(crate) fn content(field: &str, text: &str) -> Result<Content, ToolError> {
    Content::parse(text).map_err(|error| ToolError::param(field, error))
}

/// A drawer id.
pub(crate) fn drawer_id(field: &str, text: &str) -> Result<DrawerId, ToolError> {
    DrawerId::parse(text).map_err(|error| ToolError::param(field, error))
}

/// An optional date (`YYYY-MM-DD` or RFC 3339); blank means none.
pub(crate) fn date(field: &'static str, text: Option<&str>, edge: DayEdge) -> Result<Option<Timestamp>, ToolError> {
    let text = text.map(str::trim).filter(|t| !t.is_empty());
    mempalace_engine::kg::parse_date(text, field, edge).map_err(|error| ToolError::param(field, error))
}

/// A number within `min..=max`.
pub(crate) fn within<T: PartialOrd + std::fmt::Display + Copy>(
    field: &str,
    value: T,
    min: T,
    max: T,
) -> Result<T, ToolError> {
    if value < min || value > max {
        return Err(ToolError::param(field, format!("{value} is out of range; use {min} to {max}")));
    }
    Ok(value)
}

/// A non-blank string.
pub(crate) fn required_text<'a>(field: &str, text: &'a str) -> Result<&'a str, ToolError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ToolError::param(field, "must not be empty"));
    }
    Ok(trimmed)
}

/// A JSON object given as a JSON string (robotmem style) or as an object.
pub(crate) fn json_object(field: &str, value: Option<&Value>) -> Result<serde_json::Map<String, Value>, ToolError> {
    match value {
        None | Some(Value::Null) => Ok(serde_json::Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(serde_json::Map::new()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(ToolError::param(field, "must be a JSON object")),
            Err(error) => Err(ToolError::param(field, format!("is not valid JSON: {error}"))),
        },
        Some(_) => Err(ToolError::param(field, "must be a JSON object or a string holding one")),
    }
}

/// A timestamp as text.
pub(crate) fn ts(at: &Timestamp) -> String {
    mempalace_core::time::format_timestamp(at)
}

/// The first `n` characters, with "..." when cut.
pub(crate) fn preview(text: &str, n: usize) -> String {
    if text.chars().count() > n { format!("{}...", text.chars().take(n).collect::<String>()) } else { text.to_string() }
}

/// The last path component.
pub(crate) fn basename(path: &str) -> String {
    path.rsplit(['/', '\\']).next().unwrap_or(path).to_string()
}

/// A tool's typed result as the JSON the client reads.
pub(crate) fn reply(result: impl Serialize) -> ToolResult {
    serde_json::to_value(result).map_err(|error| ToolError::Internal(format!("shaping a result: {error}")))
}

/// A failure result `{"error": …}` (read tools).
pub(crate) fn failure(message: impl std::fmt::Display) -> ToolError {
    ToolError::Failed(json!({"error": message.to_string()}))
}

/// Turns a read-style failure into the write-style `{"success": false,
/// "error": …}`.
pub(crate) fn as_write_failure(error: ToolError) -> ToolError {
    match error {
        ToolError::Failed(Value::Object(mut map)) if !map.contains_key("success") => {
            let mut shaped = serde_json::Map::new();
            shaped.insert("success".into(), Value::Bool(false));
            shaped.append(&mut map);
            ToolError::Failed(Value::Object(shaped))
        }
        other => other,
    }
}
