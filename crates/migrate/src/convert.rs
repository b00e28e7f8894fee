//! Turning what was read from a Python MemPalace into our records.
//!
//! Kept as they are: drawer ids, fact ids, tunnel ids, texts, places,
//! provenance and dates. Metadata keys we have no column for are kept in
//! the drawer's context JSON. What does not fit our rules is repaired and
//! reported, never dropped: a name with characters MemPalace never wrote is
//! cleaned, a text longer than a drawer holds is split into parts (the
//! first keeps the id, the others get `_part_NNN`), a bad date is left out.

use std::collections::{BTreeMap, HashMap};

use mempalace_core::kg::{Entity, Triple, entity_id};
use mempalace_core::time::{DayEdge, Timestamp, parse_timestamp};
use mempalace_core::tunnel::{Place, Tunnel};
use mempalace_core::{Confidence, Content, Drawer, DrawerId, Hall, Identity, Room, Wing, WorkspaceId};
use mempalace_store::{IdentityRecord, PalaceRecord};
use serde_json::{Map, Value};

use crate::python::{Problem, Source, SourceDrawer};

/// Metadata keys that have their own drawer field.
const MAPPED_KEYS: &[&str] = &[
    "wing",
    "room",
    "hall",
    "source_file",
    "chunk_index",
    "added_by",
    "filed_at",
    "source_mtime",
    "line_start",
    "line_end",
    "content_date",
    "entities",
];

/// The records to import, in dependency order (entities before facts).
#[derive(Debug, Default)]
pub struct Converted {
    /// Drawers.
    pub drawers: Vec<PalaceRecord>,
    /// Entities, facts, identity and tunnels.
    pub others: Vec<PalaceRecord>,
    /// Drawers per wing and room, as they will be stored.
    pub counts: BTreeMap<String, BTreeMap<String, u64>>,
    /// Entities, facts, tunnels.
    pub entities: usize,
    /// Facts.
    pub triples: usize,
    /// Tunnels.
    pub tunnels: usize,
    /// Whether an identity text comes along.
    pub identity: bool,
    /// What had to be repaired.
    pub problems: Vec<Problem>,
}

/// Converts `source` into records of `workspace`; `now` dates what has no
/// date of its own.
pub fn convert(source: &Source, workspace: &WorkspaceId, now: Timestamp) -> Converted {
    let mut out = Converted::default();
    for drawer in &source.drawers {
        for record in convert_drawer(drawer, workspace, now, &mut out.problems) {
            *out.counts
                .entry(record.wing.as_str().to_string())
                .or_default()
                .entry(record.room.as_str().to_string())
                .or_default() += 1;
            out.drawers.push(PalaceRecord::Drawer(Box::new(record)));
        }
    }
    convert_kg(source, workspace, now, &mut out);
    if let Some(text) = &source.identity {
        let text = if text.chars().count() > Identity::MAX_CHARS {
            out.problems.push(Problem {
                place: "identity.txt".into(),
                detail: format!("longer than {} characters; the first {0} were kept", Identity::MAX_CHARS),
            });
            text.chars().take(Identity::MAX_CHARS).collect()
        } else {
            text.clone()
        };
        if let Ok(identity) = Identity::parse(text) {
            out.others.push(PalaceRecord::Identity(IdentityRecord {
                workspace_id: workspace.clone(),
                identity,
                updated_at: now,
            }));
            out.identity = true;
        }
    }
    for (index, value) in source.tunnels.iter().enumerate() {
        match convert_tunnel(value, workspace, now) {
            Ok(tunnel) => {
                out.others.push(PalaceRecord::Tunnel(tunnel));
                out.tunnels += 1;
            }
            Err(reason) => out.problems.push(Problem {
                place: format!("tunnels.json entry {}", index + 1),
                detail: format!("{reason}; it was left out"),
            }),
        }
    }
    out
}

/// A name MemPalace wrote, or the closest name our rule accepts.
fn place_name<T>(
    raw: Option<&str>,
    what: &str,
    id: &str,
    parse: fn(&str) -> Result<T, mempalace_core::ValidationError>,
    problems: &mut Vec<Problem>,
) -> T {
    let raw = raw.map(str::trim).filter(|r| !r.is_empty()).unwrap_or("unknown");
    if let Ok(name) = parse(raw) {
        return name;
    }
    let cleaned: String = raw
        .chars()
        .map(|c| if c.is_alphanumeric() || matches!(c, '_' | ' ' | '.' | '\'' | '-') { c } else { '_' })
        .collect::<String>()
        .replace("..", "_")
        .trim_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .take(mempalace_core::name::MAX_NAME_CHARS)
        .collect();
    let name = parse(&cleaned).unwrap_or_else(|_| parse("unknown").expect("\"unknown\" is a valid name"));
    problems.push(Problem {
        place: id.to_string(),
        detail: format!("{what} {raw:?} is not a valid name; filed as a cleaned name"),
    });
    name
}

fn text<'a>(meta: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    meta.get(key).and_then(Value::as_str)
}

fn whole(meta: &Map<String, Value>, key: &str) -> Option<u32> {
    meta.get(key).and_then(Value::as_i64).and_then(|v| u32::try_from(v).ok())
}

fn convert_drawer(
    source: &SourceDrawer,
    workspace: &WorkspaceId,
    now: Timestamp,
    problems: &mut Vec<Problem>,
) -> Vec<Drawer> {
    let meta = &source.metadata;
    let wing = place_name(text(meta, "wing"), "wing", &source.id, Wing::parse, problems);
    let room = place_name(text(meta, "room"), "room", &source.id, Room::parse, problems);
    let hall = text(meta, "hall")
        .filter(|h| !h.trim().is_empty())
        .map(|h| place_name(Some(h), "hall", &source.id, Hall::parse, problems));
    let filed_at = match text(meta, "filed_at").map(|t| parse_timestamp(t, "filed_at", DayEdge::Start)) {
        Some(Ok(at)) => at,
        Some(Err(_)) | None => {
            problems.push(Problem {
                place: source.id.clone(),
                detail: "no readable filed_at; dated to the migration".into(),
            });
            now
        }
    };
    let agent = text(meta, "agent").filter(|a| !a.trim().is_empty());
    let added_by = text(meta, "added_by").filter(|a| !a.trim().is_empty()).or(agent).unwrap_or("mempalace").to_string();
    let mut context: Map<String, Value> =
        meta.iter().filter(|(k, _)| !MAPPED_KEYS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    let parts = split_text(&source.document);
    if parts.len() > 1 {
        problems.push(Problem {
            place: source.id.clone(),
            detail: format!(
                "{} characters is more than a drawer holds ({}); split into {} drawers ({}, {}_part_002, …)",
                source.document.chars().count(),
                Content::MAX_CHARS,
                parts.len(),
                source.id,
                source.id
            ),
        });
        context.insert("parts".into(), Value::from(parts.len()));
    }
    let mut out = Vec::new();
    for (index, part) in parts.into_iter().enumerate() {
        let Ok(content) = Content::parse(part) else { continue };
        let id = if index == 0 { source.id.clone() } else { format!("{}_part_{:03}", source.id, index + 1) };
        let Ok(id) = DrawerId::parse(&id) else {
            problems.push(Problem {
                place: source.id.clone(),
                detail: "the id is not usable; the drawer was left out".into(),
            });
            return out;
        };
        let mut drawer =
            Drawer::new(workspace.clone(), wing.clone(), room.clone(), content, added_by.clone(), filed_at);
        drawer.id = id;
        drawer.hall = hall.clone();
        drawer.added_by_agent = agent.map(str::to_string);
        drawer.updated_at = filed_at;
        drawer.source_file = text(meta, "source_file").filter(|s| !s.is_empty()).map(str::to_string);
        drawer.chunk_index = whole(meta, "chunk_index");
        drawer.source_mtime = meta.get("source_mtime").and_then(Value::as_f64);
        drawer.line_start = whole(meta, "line_start");
        drawer.line_end = whole(meta, "line_end");
        drawer.content_date = text(meta, "content_date").map(str::to_string);
        drawer.entities = text(meta, "entities")
            .map(|e| e.split([';', ',']).map(str::trim).filter(|e| !e.is_empty()).map(str::to_string).collect())
            .unwrap_or_default();
        let mut context = context.clone();
        if index > 0 {
            context.insert("part_of".into(), Value::from(source.id.clone()));
            context.insert("part".into(), Value::from(index + 1));
        }
        drawer.context = context;
        out.push(drawer);
    }
    out
}

/// Splits a text into pieces a drawer can hold, preferring paragraph and
/// line breaks near the limit.
fn split_text(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.chars().count() > Content::MAX_CHARS {
        let limit = rest.char_indices().nth(Content::MAX_CHARS).map_or(rest.len(), |(i, _)| i);
        let window = &rest[..limit];
        let cut =
            window.rfind("\n\n").or_else(|| window.rfind('\n')).filter(|&i| i > limit / 2).map_or(limit, |i| i + 1);
        parts.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.trim().is_empty() || parts.is_empty() {
        parts.push(rest);
    }
    parts
}

fn date(
    value: Option<&str>,
    what: &'static str,
    edge: DayEdge,
    place: &str,
    problems: &mut Vec<Problem>,
) -> Option<Timestamp> {
    let value = value.map(str::trim).filter(|v| !v.is_empty())?;
    match parse_timestamp(value, what, edge) {
        Ok(at) => Some(at),
        Err(_) => {
            problems.push(Problem {
                place: place.to_string(),
                detail: format!("{what} {value:?} is not a date; left open"),
            });
            None
        }
    }
}

fn convert_kg(source: &Source, workspace: &WorkspaceId, now: Timestamp, out: &mut Converted) {
    let mut ids: HashMap<&str, String> = HashMap::new();
    let mut seen: HashMap<String, ()> = HashMap::new();
    let mut entity =
        |name: &str, kind: &str, properties: Map<String, Value>, created: Option<&str>, out: &mut Converted| {
            let id = entity_id(name);
            if seen.insert(id.clone(), ()).is_none() {
                let created_at =
                    created.and_then(|c| parse_timestamp(c, "created_at", DayEdge::Start).ok()).unwrap_or(now);
                out.others.push(PalaceRecord::Entity(Entity {
                    workspace_id: workspace.clone(),
                    id: id.clone(),
                    name: name.to_string(),
                    entity_type: kind.to_string(),
                    properties,
                    embedding: None,
                    created_at,
                }));
                out.entities += 1;
            }
            id
        };
    for e in &source.entities {
        let id = entity(&e.name, &e.kind, e.properties.clone(), e.created_at.as_deref(), out);
        ids.insert(e.id.as_str(), id);
    }
    for t in &source.triples {
        let place = format!("fact {}", t.id);
        let mut endpoint = |python_id: &str, out: &mut Converted| match ids.get(python_id) {
            Some(id) => id.clone(),
            None => {
                out.problems.push(Problem {
                    place: place.clone(),
                    detail: format!("entity {python_id:?} is missing from the entities table; created from its id"),
                });
                entity(python_id, "unknown", Map::new(), None, out)
            }
        };
        let subject = endpoint(&t.subject, out);
        let object = endpoint(&t.object, out);
        let valid_from = date(t.valid_from.as_deref(), "valid_from", DayEdge::Start, &place, &mut out.problems);
        let mut valid_to = date(t.valid_to.as_deref(), "valid_to", DayEdge::End, &place, &mut out.problems);
        if Triple::check_interval(valid_from, valid_to).is_err() {
            out.problems.push(Problem {
                place: place.clone(),
                detail: "it ends before it starts; the end was left out".into(),
            });
            valid_to = None;
        }
        let confidence = Confidence::new(t.confidence.clamp(0.0, 1.0))
            .unwrap_or_else(|_| Confidence::new(1.0).expect("1 is a confidence"));
        let source_drawer_id =
            t.source_drawer_id.as_deref().filter(|s| !s.is_empty()).and_then(|s| DrawerId::parse(s).ok());
        let source_label = t
            .source_file
            .clone()
            .or_else(|| t.source_closet.clone().map(|c| format!("closet:{c}")))
            .or_else(|| Some("mempalace-python".to_string()));
        let predicate = t.predicate.trim().to_lowercase().replace(' ', "_");
        out.others.push(PalaceRecord::Triple(Triple {
            workspace_id: workspace.clone(),
            id: t.id.clone(),
            subject,
            predicate,
            object,
            valid_from,
            valid_to,
            confidence,
            source_drawer_id,
            source: source_label,
            created_at: t
                .extracted_at
                .as_deref()
                .and_then(|c| parse_timestamp(c, "extracted_at", DayEdge::Start).ok())
                .unwrap_or(now),
        }));
        out.triples += 1;
    }
}

fn convert_tunnel(value: &Value, workspace: &WorkspaceId, now: Timestamp) -> Result<Tunnel, String> {
    let place = |key: &str| -> Result<Place, String> {
        let end = value.get(key).ok_or_else(|| format!("no {key}"))?;
        let wing = end.get("wing").and_then(Value::as_str).ok_or_else(|| format!("no {key}.wing"))?;
        let room = end.get("room").and_then(Value::as_str).ok_or_else(|| format!("no {key}.room"))?;
        Ok(Place {
            wing: Wing::parse(wing).map_err(|e| e.to_string())?,
            room: Room::parse(room).map_err(|e| e.to_string())?,
        })
    };
    let (from, to) = (place("source")?, place("target")?);
    let id = match value.get("id").and_then(Value::as_str) {
        Some(id) if !id.trim().is_empty() => id.to_string(),
        _ => Tunnel::make_id(&from, &to),
    };
    let (a, b) = Tunnel::ordered(from, to);
    Ok(Tunnel {
        workspace_id: workspace.clone(),
        id,
        a,
        b,
        label: value.get("label").and_then(Value::as_str).filter(|l| !l.is_empty()).map(str::to_string),
        created_by: Some("mempalace-python".into()),
        created_at: value
            .get("created_at")
            .and_then(Value::as_str)
            .and_then(|c| parse_timestamp(c, "created_at", DayEdge::Start).ok())
            .unwrap_or(now),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_split_near_breaks_and_lose_nothing() {
        let paragraph = format!("{}\n\n", "word ".repeat(1_500));
        let text = paragraph.repeat(3);
        let parts = split_text(&text);
        assert!(parts.len() >= 2);
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| p.chars().count() <= Content::MAX_CHARS));
        assert_eq!(split_text("short"), vec!["short"]);
    }

    proptest::proptest! {
        #[test]
        fn any_text_splits_losslessly(text in "\\PC{0,30000}") {
            let parts = split_text(&text);
            let joined = parts.concat();
            proptest::prop_assert_eq!(joined.trim(), text.trim());
            proptest::prop_assert!(parts.iter().all(|p| p.chars().count() <= Content::MAX_CHARS));
        }
    }
}
