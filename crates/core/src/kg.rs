//! Knowledge-graph records: entities and temporal triples (SPEC §2, seed 0 §6).
//!
//! Facts expire by `valid_to`, never by deletion. Only the record types, the
//! entity-name normalisation and the interval rules live here; storage and
//! queries belong to the store and the engine.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::drawer::{Confidence, Embedding};
use crate::error::ValidationError;
use crate::id::{DrawerId, WorkspaceId};
use crate::time::Timestamp;

/// Normalises an entity name for identity: case-folded, trimmed, inner
/// whitespace, `-` and `_` runs collapsed to one `_`. "Crawbl Backend",
/// "crawbl-backend" and "crawbl_backend" are one entity.
pub fn normalize_entity_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut pending_separator = false;
    for c in name.trim().chars() {
        if c.is_whitespace() || c == '_' || c == '-' {
            pending_separator = !out.is_empty();
            continue;
        }
        if pending_separator {
            out.push('_');
            pending_separator = false;
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Entity id: hex SHA-256 of the normalised name (seed 0 §6).
pub fn entity_id(name: &str) -> String {
    hex::encode(Sha256::digest(normalize_entity_name(name).as_bytes()))
}

/// A named thing: person, service, technology, project, concept.
#[derive(Debug, Clone, PartialEq)]
pub struct Entity {
    /// Tenant.
    pub workspace_id: WorkspaceId,
    /// [`entity_id`] of the name.
    pub id: String,
    /// Display name as first seen.
    pub name: String,
    /// Classification, e.g. "person", "technology"; "unknown" when not known.
    pub entity_type: String,
    /// Free-form JSON object.
    pub properties: Map<String, Value>,
    /// Optional vector of the name.
    pub embedding: Option<Embedding>,
    /// First time the entity was recorded.
    pub created_at: Timestamp,
}

/// An entity merged into another (issue 18, entity dedup): the alias's
/// own record as it was, kept so the merge can be undone, and the
/// canonical entity that now stands for it. Facts and mentions naming the
/// alias resolve to the canonical entity while the alias exists.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityAlias {
    /// The merged entity, as it was before the merge (its id is the
    /// alias id every lookup resolves).
    pub alias: Entity,
    /// The entity it was merged into; never itself an alias.
    pub canonical_id: String,
    /// Why they were merged ("abbreviation", "manual", …).
    pub reason: String,
    /// When.
    pub merged_at: Timestamp,
    /// Facts whose subject or object moved to the canonical entity.
    pub moved_triples: u64,
    /// Drawers whose mention moved to the canonical entity.
    pub moved_mentions: u64,
}

/// A directed, time-bounded relationship between two entities.
#[derive(Debug, Clone, PartialEq)]
pub struct Triple {
    /// Tenant.
    pub workspace_id: WorkspaceId,
    /// Stable id of this fact.
    pub id: String,
    /// Subject entity id.
    pub subject: String,
    /// Relationship, normalised like entity names ("works_at").
    pub predicate: String,
    /// Object entity id.
    pub object: String,
    /// Start of validity; `None` means "always was, as far as we know".
    pub valid_from: Option<Timestamp>,
    /// End of validity; `None` means current.
    pub valid_to: Option<Timestamp>,
    /// 0–1.
    pub confidence: Confidence,
    /// Drawer the fact was extracted from, for review.
    pub source_drawer_id: Option<DrawerId>,
    /// Free-text provenance (file, tool) when there is no drawer.
    pub source: Option<String>,
    /// When the fact was recorded.
    pub created_at: Timestamp,
}

impl Triple {
    /// Checks that a validity window is not inverted.
    pub fn check_interval(valid_from: Option<Timestamp>, valid_to: Option<Timestamp>) -> Result<(), ValidationError> {
        if let (Some(from), Some(to)) = (valid_from, valid_to)
            && to < from
        {
            return Err(ValidationError::BadTime {
                what: "validity window",
                reason: format!(
                    "valid_to {} is before valid_from {}; swap them or drop valid_to",
                    crate::time::format_timestamp(&to),
                    crate::time::format_timestamp(&from)
                ),
            });
        }
        Ok(())
    }

    /// Whether the fact held at `at`.
    pub fn holds_at(&self, at: &Timestamp) -> bool {
        self.valid_from.is_none_or(|from| from <= *at) && self.valid_to.is_none_or(|to| *at <= to)
    }

    /// Deterministic id of a fact: the same subject, predicate, object and
    /// start always yield the same id.
    pub fn make_id(subject: &str, predicate: &str, object: &str, valid_from: Option<&Timestamp>) -> String {
        let mut hasher = Sha256::new();
        for part in [subject, predicate, object] {
            hasher.update(part.as_bytes());
            hasher.update([0u8]);
        }
        if let Some(from) = valid_from {
            hasher.update(crate::time::format_timestamp(from).as_bytes());
        }
        format!("t_{}", &hex::encode(hasher.finalize())[..32])
    }

    /// The id for a fact whose deterministic id is already taken by a
    /// different (ended) fact, as when a fact without a start is ended and
    /// stated again: the recording time makes it unique.
    pub fn reissued_id(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(self.id.as_bytes());
        hasher.update([0u8]);
        hasher.update(crate::time::format_timestamp(&self.created_at).as_bytes());
        format!("t_{}", &hex::encode(hasher.finalize())[..32])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{DayEdge, parse_timestamp};

    #[test]
    fn entity_names_normalise_case_and_separators() {
        assert_eq!(normalize_entity_name("  Crawbl   Backend "), "crawbl_backend");
        assert_eq!(normalize_entity_name("crawbl-backend"), "crawbl_backend");
        assert_eq!(normalize_entity_name("Crawbl__Backend"), "crawbl_backend");
        assert_eq!(normalize_entity_name("PostgreSQL"), "postgresql");
        assert_eq!(entity_id("Crawbl Backend"), entity_id("crawbl_backend"));
        assert_eq!(entity_id("x").len(), 64);
    }

    #[test]
    fn inverted_intervals_are_rejected() {
        let from = parse_timestamp("2025-01-15", "f", DayEdge::Start).unwrap();
        let to = parse_timestamp("2025-01-14", "t", DayEdge::End).unwrap();
        assert!(Triple::check_interval(Some(from), Some(to)).is_err());
        assert!(Triple::check_interval(Some(to), Some(from)).is_ok());
        assert!(Triple::check_interval(None, Some(to)).is_ok());
    }

    #[test]
    fn triple_ids_are_deterministic_and_start_sensitive() {
        let from = parse_timestamp("2025-01-15", "f", DayEdge::Start).unwrap();
        let a = Triple::make_id("s", "uses", "o", Some(&from));
        assert_eq!(a, Triple::make_id("s", "uses", "o", Some(&from)));
        assert_ne!(a, Triple::make_id("s", "uses", "o", None));
        assert_ne!(Triple::make_id("ab", "c", "d", None), Triple::make_id("a", "bc", "d", None));
    }
}
