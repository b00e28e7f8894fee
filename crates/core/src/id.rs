//! Identifiers: workspace ids, drawer ids and content hashes.
//!
//! Drawer ids follow the Python MemPalace recipes exactly, so a palace moved
//! over keeps its ids and agent notes that cite them stay valid:
//!
//! * a drawer filed directly (CLI `add`, MCP `add_drawer`):
//!   `drawer_{wing}_{room}_{sha256(wing + room + content)[:24]}`;
//! * a chunk mined from a file: `drawer_{wing}_{room}_{sha256(source_file + chunk_index)[:24]}`;
//! * an exchange mined from a conversation:
//!   `drawer_{wing}_{room}_{sha256(source_file:extract_mode:chunk_index)[:24]}`;
//! * a message filed by the sweeper (MemPalace `sweep`): `sweep_{session_id}_{message_uuid}`,
//!   independent of place and text, so a message is filed once wherever it goes.
//!
//! Wing and room enter the id as stored. The same text filed twice in the
//! same place therefore gets the same id, which is what makes writes
//! idempotent. These rules are part of the on-disk format: never change them.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::drawer::Content;
use crate::error::ValidationError;
use crate::name::{Room, Wing};

fn sha256_hex(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// The tenant a row belongs to. Letters, digits, `_`, `-` and `.`, 1–64
/// characters; the embedded default is [`WorkspaceId::DEFAULT`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkspaceId(String);

impl WorkspaceId {
    /// The workspace of a single-user palace.
    pub const DEFAULT: &'static str = "default";

    /// Checks and wraps a workspace id.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let ok = !raw.is_empty()
            && raw.len() <= 64
            && raw.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !ok {
            return Err(ValidationError::BadName {
                what: "workspace id",
                value: raw.to_string(),
                reason: "use 1–64 ASCII letters, digits, `_`, `-` or `.`".to_string(),
            });
        }
        Ok(Self(raw.to_string()))
    }

    /// The default workspace.
    pub fn default_workspace() -> Self {
        Self(Self::DEFAULT.to_string())
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A drawer id: 1–512 characters, no control characters, no surrounding
/// whitespace. Ids made by us follow the module's recipes; ids brought from
/// elsewhere (an import, a Python palace) are kept as they are.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DrawerId(String);

impl DrawerId {
    /// Checks and wraps a drawer id.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let ok = !raw.is_empty() && raw.len() <= 512 && raw.trim() == raw && !raw.chars().any(char::is_control);
        if !ok {
            return Err(ValidationError::BadName {
                what: "drawer id",
                value: raw.to_string(),
                reason: "a drawer id is the text `mempalace add` printed, such as drawer_project_notes_0123abcd…"
                    .to_string(),
            });
        }
        Ok(Self(raw.to_string()))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DrawerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Hex SHA-256 of a drawer's text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash(String);

impl ContentHash {
    /// Hashes a text.
    pub fn of(text: &str) -> Self {
        Self(sha256_hex(&[text]))
    }

    /// Wraps a stored hash (64 lowercase hex digits).
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        if raw.len() == 64 && raw.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            Ok(Self(raw.to_string()))
        } else {
            Err(ValidationError::BadName {
                what: "content hash",
                value: raw.to_string(),
                reason: "expected 64 lowercase hex digits (SHA-256)".to_string(),
            })
        }
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn place_id(wing: &Wing, room: &Room, digest: &str) -> DrawerId {
    DrawerId(format!("drawer_{}_{}_{}", wing.as_str(), room.as_str(), &digest[..24]))
}

/// A hallway's id, the Python MemPalace's recipe: `hallway_{wing}_{a}_{b}_`
/// and the first 8 hex digits of SHA-256 of `wing::a::b` (a, b sorted).
pub fn hallway_id(wing: &str, a: &str, b: &str) -> String {
    let digest = Sha256::digest(format!("{wing}::{a}::{b}").as_bytes());
    format!("hallway_{wing}_{a}_{b}_{}", &hex::encode(digest)[..8])
}

/// Id of a drawer filed directly with its text (MemPalace `add_drawer`).
pub fn drawer_id(wing: &Wing, room: &Room, content: &Content) -> DrawerId {
    place_id(wing, room, &sha256_hex(&[wing.as_str(), room.as_str(), content.as_str()]))
}

/// Id of chunk `chunk_index` of a mined file (MemPalace project miner).
pub fn source_drawer_id(wing: &Wing, room: &Room, source_file: &str, chunk_index: u32) -> DrawerId {
    place_id(wing, room, &sha256_hex(&[source_file, &chunk_index.to_string()]))
}

/// Id of a paragraph of a memory file (`MEMORY.md`, `memory/*.md`): the
/// `occurrence`-th paragraph (from 0) with this text in the file at
/// `relative_path` under its memory root. Unchanged paragraphs keep their
/// id when others are added, edited or removed around them.
pub fn memory_file_drawer_id(
    wing: &Wing,
    room: &Room,
    relative_path: &str,
    occurrence: u32,
    content: &Content,
) -> DrawerId {
    let occurrence = occurrence.to_string();
    place_id(wing, room, &sha256_hex(&["memory_file\0", relative_path, "\0", &occurrence, "\0", content.as_str()]))
}

/// Id of exchange `chunk_index` of a mined conversation (MemPalace 3.3.6
/// conversation miner); `extract_mode` is `exchange` or `general`.
pub fn convo_drawer_id(wing: &Wing, room: &Room, source_file: &str, extract_mode: &str, chunk_index: u32) -> DrawerId {
    let key = format!("{source_file}:{extract_mode}:{chunk_index}");
    place_id(wing, room, &sha256_hex(&[&key]))
}

/// Id of one transcript message filed by the sweeper (MemPalace 3.11
/// `sweeper._drawer_id_for_message`). Fails when the parts make no valid
/// id (empty, control characters, over 512 characters).
pub fn sweep_drawer_id(session_id: &str, message_uuid: &str) -> Result<DrawerId, ValidationError> {
    DrawerId::parse(&format!("sweep_{session_id}_{message_uuid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_ids_are_the_python_recipe() {
        assert_eq!(sweep_drawer_id("s-1", "u-2").unwrap().as_str(), "sweep_s-1_u-2");
        assert!(sweep_drawer_id("s\n", "u").is_err());
    }

    fn wing(name: &str) -> Wing {
        Wing::parse(name).unwrap()
    }

    fn room(name: &str) -> Room {
        Room::parse(name).unwrap()
    }

    // Ids copied from the Python palace in shared/fixtures/mempalace-python
    // (MemPalace 3.3.6): the recipes must reproduce them exactly.
    #[test]
    fn direct_ids_reproduce_mempalace() {
        let content =
            Content::parse("The gripper works best at 12.5 N because the force sensor was recalibrated on Tuesday.")
                .unwrap();
        assert_eq!(
            drawer_id(&wing("lab"), &room("gripper"), &content).as_str(),
            "drawer_lab_gripper_858f95377cf37d14ab1d69fa"
        );
    }

    #[test]
    fn mined_ids_reproduce_mempalace() {
        let id = source_drawer_id(
            &wing("lab_notes"),
            &room("general"),
            "/home/alex/projects/lab-notes/4-platypus-memory-extraction-plan.md",
            22,
        );
        assert_eq!(id.as_str(), "drawer_lab_notes_general_691ed0921685e4c855d938c5");
    }

    #[test]
    fn ids_are_deterministic_and_place_sensitive() {
        let content = Content::parse("the same words").unwrap();
        let a = drawer_id(&wing("a"), &room("r"), &content);
        assert_eq!(a, drawer_id(&wing("a"), &room("r"), &content));
        assert_ne!(a, drawer_id(&wing("b"), &room("r"), &content));
        let mined = source_drawer_id(&wing("a"), &room("r"), "/x/notes.md", 3);
        assert_ne!(mined, source_drawer_id(&wing("a"), &room("r"), "/x/notes.md", 4));
        assert!(mined.as_str().starts_with("drawer_a_r_"));
        assert_eq!(mined.as_str().len(), "drawer_a_r_".len() + 24);
    }

    #[test]
    fn id_parsing_refuses_control_characters_and_padding() {
        assert!(DrawerId::parse("drawer_x").is_ok());
        assert!(DrawerId::parse(" drawer_x").is_err());
        assert!(DrawerId::parse("a\nb").is_err());
        assert!(DrawerId::parse("").is_err());
        assert!(WorkspaceId::parse("team-a.prod").is_ok());
        assert!(WorkspaceId::parse("team a").is_err());
        assert!(ContentHash::parse(ContentHash::of("x").as_str()).is_ok());
        assert!(ContentHash::parse("XYZ").is_err());
    }
}
