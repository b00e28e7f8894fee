//! Reading the files of a Python MemPalace (3.x) home folder.
//!
//! ChromaDB keeps each drawer in `chroma.sqlite3`: a row of `embeddings`
//! (the drawer id is `embedding_id`) in the metadata segment of the
//! `mempalace_drawers` collection, with one `embedding_metadata` row per
//! key (the text is the key `chroma:document`). Writes go first to
//! `embeddings_queue` and are applied to the segment later; operations
//! after the segment's `max_seq_id` are replayed here, so a palace whose
//! writer stopped early loses nothing. The vector index (the segment
//! folders) is not read at all: drawers are re-embedded.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::{Map, Value};

/// The drawers collection MemPalace writes.
pub const DRAWERS_COLLECTION: &str = "mempalace_drawers";

/// Why the source could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No palace where we looked.
    #[error(
        "no Python MemPalace palace at {0}: expected palace/chroma.sqlite3 inside it; pass --source with the folder \
         that holds it (usually ~/.mempalace)"
    )]
    NotFound(PathBuf),
    /// The Chroma file cannot be read.
    #[error("cannot read {path}: {detail}; the file may be damaged (copy it aside and run `sqlite3 .recover` on it)")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        detail: String,
    },
}

/// Something that was read only in part, or not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where (file, drawer id, row).
    pub place: String,
    /// What and what was done about it.
    pub detail: String,
}

/// A drawer as MemPalace stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceDrawer {
    /// MemPalace's id (`drawer_…`, `diary_…`).
    pub id: String,
    /// The text.
    pub document: String,
    /// Every metadata key except the document, with its value.
    pub metadata: Map<String, Value>,
}

/// A knowledge-graph entity.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceEntity {
    /// MemPalace's id (lowercase, `_` for spaces).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Type.
    pub kind: String,
    /// Properties JSON.
    pub properties: Map<String, Value>,
    /// Creation time as stored.
    pub created_at: Option<String>,
}

/// A knowledge-graph fact.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceTriple {
    /// MemPalace's id.
    pub id: String,
    /// Subject entity id.
    pub subject: String,
    /// Predicate.
    pub predicate: String,
    /// Object entity id.
    pub object: String,
    /// Start, as stored.
    pub valid_from: Option<String>,
    /// End, as stored.
    pub valid_to: Option<String>,
    /// Confidence.
    pub confidence: f64,
    /// Provenance: closet, file, drawer, adapter.
    pub source_closet: Option<String>,
    /// Source file.
    pub source_file: Option<String>,
    /// Source drawer id.
    pub source_drawer_id: Option<String>,
    /// When it was recorded.
    pub extracted_at: Option<String>,
}

/// Everything read from a MemPalace home folder.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// The folder read.
    pub root: PathBuf,
    /// Drawers, in Chroma's row order.
    pub drawers: Vec<SourceDrawer>,
    /// KG entities.
    pub entities: Vec<SourceEntity>,
    /// KG facts.
    pub triples: Vec<SourceTriple>,
    /// `identity.txt`.
    pub identity: Option<String>,
    /// `tunnels.json` entries.
    pub tunnels: Vec<Value>,
    /// `config.json`, when present.
    pub config: Option<Map<String, Value>>,
    /// Closets skipped (derived data).
    pub closets_skipped: usize,
    /// What could not be read, and what was done.
    pub problems: Vec<Problem>,
}

impl Source {
    /// Drawers per wing and room, as the source holds them.
    pub fn counts(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        let mut counts: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for drawer in &self.drawers {
            let text = |key: &str| drawer.metadata.get(key).and_then(Value::as_str).unwrap_or("unknown").to_string();
            *counts.entry(text("wing")).or_default().entry(text("room")).or_default() += 1;
        }
        counts
    }
}

fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    // `immutable=1`: no locks, no -wal/-shm files, works in read-only folders
    // and on a copy whose writer is gone.
    let uri = format!("file:{}?immutable=1", path.display());
    Connection::open_with_flags(uri, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI)
}

/// Where the palace folder is: `config.json`'s `palace_path` when it
/// exists, else `ROOT/palace`.
fn palace_dir(root: &Path, config: Option<&Map<String, Value>>) -> PathBuf {
    if let Some(path) = config.and_then(|c| c.get("palace_path")).and_then(Value::as_str) {
        let path = PathBuf::from(path);
        if path.join("chroma.sqlite3").is_file() {
            return path;
        }
    }
    root.join("palace")
}

/// Reads a MemPalace home folder (e.g. `~/.mempalace`).
pub fn read(root: &Path) -> Result<Source, ReadError> {
    let mut source = Source { root: root.to_path_buf(), ..Source::default() };
    let config_path = root.join("config.json");
    if config_path.is_file() {
        match std::fs::read_to_string(&config_path).map(|t| serde_json::from_str::<Value>(&t)) {
            Ok(Ok(Value::Object(map))) => source.config = Some(map),
            Ok(_) | Err(_) => source.problems.push(Problem {
                place: config_path.display().to_string(),
                detail: "not a readable JSON object; its settings were not considered".into(),
            }),
        }
    }
    let palace = palace_dir(root, source.config.as_ref());
    let chroma = palace.join("chroma.sqlite3");
    if !chroma.is_file() {
        return Err(ReadError::NotFound(root.to_path_buf()));
    }
    let unreadable = |error: rusqlite::Error| ReadError::Unreadable { path: chroma.clone(), detail: error.to_string() };
    let conn = open_read_only(&chroma).map_err(unreadable)?;
    read_drawers(&conn, &palace, &mut source).map_err(unreadable)?;

    let kg_path = [palace.join("knowledge_graph.sqlite3"), root.join("knowledge_graph.sqlite3")]
        .into_iter()
        .find(|p| p.is_file());
    if let Some(kg_path) = kg_path
        && let Err(error) = open_read_only(&kg_path).and_then(|kg| read_kg(&kg, &mut source))
    {
        source.problems.push(Problem {
            place: kg_path.display().to_string(),
            detail: format!("the knowledge graph could not be read ({error}); no facts were brought over"),
        });
    }
    let identity_path = root.join("identity.txt");
    if let Ok(text) = std::fs::read_to_string(&identity_path) {
        let text = text.trim();
        if !text.is_empty() {
            source.identity = Some(text.to_string());
        }
    }
    let tunnels_path = palace.parent().unwrap_or(root).join("tunnels.json");
    if tunnels_path.is_file() {
        match std::fs::read_to_string(&tunnels_path).map(|t| serde_json::from_str::<Value>(&t)) {
            Ok(Ok(Value::Array(items))) => source.tunnels = items,
            _ => source.problems.push(Problem {
                place: tunnels_path.display().to_string(),
                detail: "not a JSON array of tunnels; no explicit tunnels were brought over".into(),
            }),
        }
    }
    Ok(source)
}

fn read_drawers(conn: &Connection, palace: &Path, source: &mut Source) -> rusqlite::Result<()> {
    let collections: Vec<(String, String)> = conn
        .prepare("SELECT id, name FROM collections")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let Some((collection, _)) = collections.iter().find(|(_, name)| name == DRAWERS_COLLECTION).cloned() else {
        source.problems.push(Problem {
            place: "chroma.sqlite3".into(),
            detail: format!("no `{DRAWERS_COLLECTION}` collection; the palace holds no drawers"),
        });
        return Ok(());
    };
    for (id, name) in &collections {
        if name != DRAWERS_COLLECTION {
            let closets: i64 = conn.query_row(
                "SELECT count(*) FROM embeddings e JOIN segments s ON s.id = e.segment_id \
                 WHERE s.collection = ?1 AND s.scope = 'METADATA'",
                [id],
                |r| r.get(0),
            )?;
            source.closets_skipped += usize::try_from(closets).unwrap_or(0);
        }
    }
    let segments: Vec<(String, String)> = conn
        .prepare("SELECT id, scope FROM segments WHERE collection = ?1")?
        .query_map([&collection], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (segment, scope) in &segments {
        if scope == "VECTOR" && !palace.join(segment).is_dir() {
            source.problems.push(Problem {
                place: palace.join(segment).display().to_string(),
                detail: "ChromaDB's vector index folder is missing; not needed: every drawer is read from \
                         chroma.sqlite3 and embedded again"
                    .into(),
            });
        }
    }
    let metadata_segment = segments.iter().find(|(_, scope)| scope == "METADATA").map(|(id, _)| id.clone());

    let mut drawers: Vec<SourceDrawer> = Vec::new();
    let mut position: HashMap<String, usize> = HashMap::new();
    if let Some(segment) = &metadata_segment {
        let mut rows = conn.prepare(
            "SELECT e.embedding_id, m.key, m.string_value, m.int_value, m.float_value, m.bool_value \
             FROM embeddings e LEFT JOIN embedding_metadata m ON m.id = e.id \
             WHERE e.segment_id = ?1 ORDER BY e.id",
        )?;
        let mut cursor = rows.query([segment])?;
        while let Some(row) = cursor.next()? {
            let id: String = row.get(0)?;
            let slot = *position.entry(id.clone()).or_insert_with(|| {
                drawers.push(SourceDrawer { id: id.clone(), document: String::new(), metadata: Map::new() });
                drawers.len() - 1
            });
            let Some(key) = row.get::<_, Option<String>>(1)? else { continue };
            let value = if let Some(text) = row.get::<_, Option<String>>(2)? {
                Value::String(text)
            } else if let Some(int) = row.get::<_, Option<i64>>(3)? {
                Value::from(int)
            } else if let Some(float) = row.get::<_, Option<f64>>(4)? {
                Value::from(float)
            } else if let Some(flag) = row.get::<_, Option<bool>>(5)? {
                Value::Bool(flag)
            } else {
                Value::Null
            };
            match (key.as_str(), value) {
                ("chroma:document", Value::String(text)) => drawers[slot].document = text,
                (_, Value::Null) => {}
                (_, value) => {
                    drawers[slot].metadata.insert(key, value);
                }
            }
        }
    } else {
        source.problems.push(Problem {
            place: "chroma.sqlite3".into(),
            detail: "the drawers collection has no metadata segment; drawers are read from the write queue only".into(),
        });
    }
    replay_queue(conn, &collection, metadata_segment.as_deref(), &mut drawers, &mut position, source)?;
    for drawer in drawers {
        if drawer.document.is_empty() {
            source.problems.push(Problem {
                place: drawer.id.clone(),
                detail: "the drawer has no text in chroma.sqlite3; it was left out".into(),
            });
        } else {
            source.drawers.push(drawer);
        }
    }
    Ok(())
}

/// Applies queued operations the metadata segment has not applied yet.
fn replay_queue(
    conn: &Connection,
    collection: &str,
    segment: Option<&str>,
    drawers: &mut Vec<SourceDrawer>,
    position: &mut HashMap<String, usize>,
    source: &mut Source,
) -> rusqlite::Result<()> {
    let has_queue: bool = conn
        .query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embeddings_queue'", [], |_| Ok(true))
        .optional()?
        .unwrap_or(false);
    if !has_queue {
        return Ok(());
    }
    let applied: i64 = match segment {
        Some(segment) => conn
            .query_row("SELECT seq_id FROM max_seq_id WHERE segment_id = ?1", [segment], |r| r.get(0))
            .optional()?
            .unwrap_or(0),
        None => 0,
    };
    let topic = format!("%{collection}");
    let mut statement = conn.prepare(
        "SELECT seq_id, operation, id, metadata FROM embeddings_queue WHERE seq_id > ?1 AND topic LIKE ?2 \
         ORDER BY seq_id",
    )?;
    let mut rows = statement.query(rusqlite::params![applied, topic])?;
    let mut replayed = 0_usize;
    while let Some(row) = rows.next()? {
        let operation: i64 = row.get(1)?;
        let id: String = row.get(2)?;
        let metadata: Option<String> = row.get(3)?;
        replayed += 1;
        // ChromaDB operations: 0 add, 1 update, 2 upsert, 3 delete.
        if operation == 3 {
            if let Some(slot) = position.remove(&id) {
                drawers[slot].document.clear();
                drawers[slot].metadata.clear();
                drawers[slot].id.clear();
            }
            continue;
        }
        let parsed = metadata.as_deref().map(serde_json::from_str::<Map<String, Value>>).transpose();
        let Ok(mut fields) = parsed.map(Option::unwrap_or_default) else {
            source.problems.push(Problem {
                place: id.clone(),
                detail: "a queued write has unreadable metadata; that write was skipped".into(),
            });
            continue;
        };
        let existing = position.get(&id).copied();
        let slot = match (operation, existing) {
            // An add of an id already present is refused by ChromaDB.
            (0, Some(_)) => continue,
            // An update of an absent id does nothing.
            (1, None) => continue,
            (_, Some(slot)) => slot,
            (_, None) => {
                drawers.push(SourceDrawer { id: id.clone(), document: String::new(), metadata: Map::new() });
                position.insert(id.clone(), drawers.len() - 1);
                drawers.len() - 1
            }
        };
        if let Some(Value::String(text)) = fields.remove("chroma:document") {
            drawers[slot].document = text;
        }
        for (key, value) in fields {
            if value.is_null() {
                drawers[slot].metadata.remove(&key);
            } else {
                drawers[slot].metadata.insert(key, value);
            }
        }
    }
    drawers.retain(|d| !d.id.is_empty());
    position.clear();
    for (slot, drawer) in drawers.iter().enumerate() {
        position.insert(drawer.id.clone(), slot);
    }
    if replayed > 0 {
        source.problems.push(Problem {
            place: "chroma.sqlite3".into(),
            detail: format!("{replayed} queued writes had not reached the metadata segment; they were replayed"),
        });
    }
    Ok(())
}

fn read_kg(conn: &Connection, source: &mut Source) -> rusqlite::Result<()> {
    let mut entities = conn.prepare("SELECT id, name, type, properties, created_at FROM entities ORDER BY rowid")?;
    let rows = entities.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, Option<String>>(3)?,
            r.get::<_, Option<String>>(4)?,
        ))
    })?;
    for row in rows {
        let (id, name, kind, properties, created_at) = row?;
        let properties = match properties.as_deref().map(serde_json::from_str::<Value>) {
            None => Map::new(),
            Some(Ok(Value::Object(map))) => map,
            Some(_) => {
                source.problems.push(Problem {
                    place: format!("entity {id}"),
                    detail: "its properties are not a JSON object; they were dropped".into(),
                });
                Map::new()
            }
        };
        source.entities.push(SourceEntity {
            id,
            name,
            kind: kind.unwrap_or_else(|| "unknown".into()),
            properties,
            created_at,
        });
    }
    let columns: Vec<String> =
        conn.prepare("PRAGMA table_info(triples)")?.query_map([], |r| r.get(1))?.collect::<Result<_, _>>()?;
    let optional = |name: &str| if columns.iter().any(|c| c == name) { name.to_string() } else { "NULL".to_string() };
    let sql = format!(
        "SELECT id, subject, predicate, object, valid_from, valid_to, confidence, {}, {}, {}, {} FROM triples \
         ORDER BY rowid",
        optional("source_closet"),
        optional("source_file"),
        optional("source_drawer_id"),
        optional("extracted_at"),
    );
    let mut triples = conn.prepare(&sql)?;
    let rows = triples.query_map([], |r| {
        Ok(SourceTriple {
            id: r.get(0)?,
            subject: r.get(1)?,
            predicate: r.get(2)?,
            object: r.get(3)?,
            valid_from: r.get(4)?,
            valid_to: r.get(5)?,
            confidence: r.get::<_, Option<f64>>(6)?.unwrap_or(1.0),
            source_closet: r.get(7)?,
            source_file: r.get(8)?,
            source_drawer_id: r.get(9)?,
            extracted_at: r.get(10)?,
        })
    })?;
    for row in rows {
        source.triples.push(row?);
    }
    Ok(())
}
