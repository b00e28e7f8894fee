//! Centroids: prototype vectors per memory type (seed 0 §3 Phase 2,
//! "memory_centroid_recompute") and per room (issue 18), and the pure rules
//! around them — what a prototype is (the mean of its samples' vectors),
//! the hash that makes a recompute of the same samples a no-op, when a
//! room is trained again, and which prototype is nearest to a vector.
//!
//! Reading samples, the schedule and the writes are the engine's and the
//! store's.

use sha2::{Digest, Sha256};

use crate::drawer::{Embedding, MemoryType};
use crate::id::{DrawerId, WorkspaceId};
use crate::time::Timestamp;

/// The mean vector of LLM-labelled drawers of one memory type.
#[derive(Debug, Clone, PartialEq)]
pub struct Centroid {
    /// Tenant.
    pub workspace_id: WorkspaceId,
    /// Which type this prototype stands for.
    pub memory_type: MemoryType,
    /// The mean vector and the model whose vectors were averaged.
    pub embedding: Embedding,
    /// Drawers averaged; below [`Centroid::MIN_SAMPLES`] the centroid is ignored.
    pub sample_count: u32,
    /// When it was computed.
    pub computed_at: Timestamp,
    /// Hash of the input set; a recompute with the same hash is a no-op.
    pub source_hash: String,
}

impl Centroid {
    /// Sample floor (seed 0 §10 `MemoryCentroidMinSamples`).
    pub const MIN_SAMPLES: u32 = 50;
    /// Most drawers averaged per type (seed 0 §3: "up to 500 LLM-labelled
    /// drawers per type").
    pub const MAX_SAMPLES: usize = 500;
    /// Only drawers filed this recently are averaged (seed 0 §3: "from the
    /// last 90 days").
    pub const WINDOW_DAYS: i64 = 90;
}

/// The mean vector of a room's active drawers (issue 18): what the room is
/// about, for suggesting a room to a drawer filed without one.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomCentroid {
    /// Tenant.
    pub workspace_id: WorkspaceId,
    /// The room's wing.
    pub wing: String,
    /// The room.
    pub room: String,
    /// The mean vector and the model whose vectors were averaged.
    pub embedding: Embedding,
    /// Drawers averaged (at most [`RoomCentroid::MAX_SAMPLES`], newest first).
    pub sample_count: u32,
    /// Active drawers the room held when trained: the base of the
    /// [`RoomCentroid::RETRAIN_FRACTION`] rule.
    pub room_drawers: u64,
    /// When it was computed.
    pub computed_at: Timestamp,
    /// Hash of the input set; a recompute with the same hash changes no vector.
    pub source_hash: String,
}

impl RoomCentroid {
    /// Fewest drawers with vectors a room needs for a prototype: fewer say
    /// more about their own wording than about the room.
    pub const MIN_SAMPLES: u32 = 10;
    /// Most drawers averaged per room (the newest), as for memory types.
    pub const MAX_SAMPLES: usize = 500;
    /// A room is trained again when it grew or shrank by this fraction of
    /// its size at the last training (or when the model changed).
    pub const RETRAIN_FRACTION: f64 = 0.2;
    /// Least cosine between a drawer and a room's prototype for the room to
    /// be suggested. Measured with MiniLM on the engine test's palace
    /// (`crates/engine/tests/entities.rs`): texts on a room's topic scored
    /// 0.47 and 0.69 against their room, 0.11–0.15 against the other room,
    /// unrelated texts below 0.06.
    pub const SUGGEST_COSINE: f32 = 0.45;
    /// Lead the best room needs over the second: a near tie is no suggestion.
    pub const SUGGEST_MARGIN: f32 = 0.05;
}

/// The mean of vectors of one length (others are skipped); `None` when
/// there are none.
pub fn mean(vectors: &[&[f32]]) -> Option<Vec<f32>> {
    crate::roomset::centroid(vectors)
}

/// The source hash of a sample set: the model and the drawer ids, sorted,
/// so the same drawers in any order give the same hash.
pub fn source_hash(model: &str, ids: &[DrawerId]) -> String {
    let mut sorted: Vec<&str> = ids.iter().map(DrawerId::as_str).collect();
    sorted.sort_unstable();
    let mut hasher = Sha256::new();
    hasher.update(model.as_bytes());
    for id in sorted {
        hasher.update([0u8]);
        hasher.update(id.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// Whether a room is due for training: it has no prototype, its prototype
/// is of another model, or it grew or shrank by at least
/// [`RoomCentroid::RETRAIN_FRACTION`] since.
pub fn room_needs_training(previous: Option<&RoomCentroid>, room_drawers: u64, model: &str) -> bool {
    let Some(previous) = previous else { return true };
    if previous.embedding.model != model {
        return true;
    }
    let base = previous.room_drawers.max(1) as f64;
    (room_drawers as f64 - previous.room_drawers as f64).abs() >= RoomCentroid::RETRAIN_FRACTION * base
}

/// The usable memory-type centroid nearest to `vector` (same model and
/// length, at least [`Centroid::MIN_SAMPLES`] samples), with its cosine.
pub fn nearest_type(vector: &[f32], model: &str, centroids: &[Centroid]) -> Option<(MemoryType, f32)> {
    centroids
        .iter()
        .filter(|c| {
            c.embedding.model == model
                && c.embedding.vector.len() == vector.len()
                && c.sample_count >= Centroid::MIN_SAMPLES
        })
        .map(|c| (c.memory_type, crate::vector::cosine(vector, &c.embedding.vector)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The room of `wing` to suggest for `vector`: the nearest usable room
/// prototype (same model and length, at least [`RoomCentroid::MIN_SAMPLES`])
/// when its cosine reaches [`RoomCentroid::SUGGEST_COSINE`] and leads the
/// next room by [`RoomCentroid::SUGGEST_MARGIN`]. Returns the room and cosine.
pub fn suggest_room<'a>(
    vector: &[f32],
    model: &str,
    wing: &str,
    centroids: &'a [RoomCentroid],
) -> Option<(&'a str, f32)> {
    let mut scored: Vec<(&str, f32)> = centroids
        .iter()
        .filter(|c| {
            c.wing == wing
                && c.embedding.model == model
                && c.embedding.vector.len() == vector.len()
                && c.sample_count >= RoomCentroid::MIN_SAMPLES
        })
        .map(|c| (c.room.as_str(), crate::vector::cosine(vector, &c.embedding.vector)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let (room, best) = *scored.first()?;
    let runner_up = scored.get(1).map_or(f32::MIN, |s| s.1);
    (best >= RoomCentroid::SUGGEST_COSINE && best - runner_up >= RoomCentroid::SUGGEST_MARGIN).then_some((room, best))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts() -> Timestamp {
        crate::time::parse_timestamp("2025-01-01", "t", crate::time::DayEdge::Start).unwrap()
    }

    fn room(name: &str, vector: Vec<f32>, samples: u32, drawers: u64) -> RoomCentroid {
        RoomCentroid {
            workspace_id: WorkspaceId::parse("default").unwrap(),
            wing: "lab".into(),
            room: name.into(),
            embedding: Embedding { model: "m".into(), vector },
            sample_count: samples,
            room_drawers: drawers,
            computed_at: ts(),
            source_hash: String::new(),
        }
    }

    #[test]
    fn source_hash_ignores_order_and_sees_the_model() {
        let a = DrawerId::parse("drawer_a").unwrap();
        let b = DrawerId::parse("drawer_b").unwrap();
        assert_eq!(source_hash("m", &[a.clone(), b.clone()]), source_hash("m", &[b.clone(), a.clone()]));
        assert_ne!(source_hash("m", std::slice::from_ref(&a)), source_hash("n", std::slice::from_ref(&a)));
        assert_ne!(source_hash("m", std::slice::from_ref(&a)), source_hash("m", &[a, b]));
    }

    #[test]
    fn rooms_are_retrained_after_a_fifth_of_growth_or_shrinkage() {
        let trained = room("db", vec![1.0, 0.0], 100, 100);
        assert!(room_needs_training(None, 3, "m"));
        assert!(!room_needs_training(Some(&trained), 119, "m"));
        assert!(room_needs_training(Some(&trained), 120, "m"));
        assert!(room_needs_training(Some(&trained), 80, "m"));
        assert!(!room_needs_training(Some(&trained), 81, "m"));
        assert!(room_needs_training(Some(&trained), 100, "other-model"));
    }

    #[test]
    fn a_room_is_suggested_only_when_near_and_clearly_ahead() {
        let rooms = vec![room("db", vec![1.0, 0.0], 20, 20), room("ui", vec![0.0, 1.0], 20, 20)];
        assert_eq!(suggest_room(&[1.0, 0.1], "m", "lab", &rooms).map(|s| s.0), Some("db"));
        assert_eq!(suggest_room(&[1.0, 1.0], "m", "lab", &rooms), None, "a tie suggests nothing");
        assert_eq!(suggest_room(&[1.0, 0.1], "other", "lab", &rooms), None, "another model's vectors");
        assert_eq!(suggest_room(&[1.0, 0.1], "m", "home", &rooms), None, "another wing's rooms");
        let thin = vec![room("db", vec![1.0, 0.0], 3, 3)];
        assert_eq!(suggest_room(&[1.0, 0.0], "m", "lab", &thin), None, "too few samples");
    }

    #[test]
    fn the_nearest_type_needs_enough_samples() {
        let centroid = |memory_type, vector: Vec<f32>, samples| Centroid {
            workspace_id: WorkspaceId::parse("default").unwrap(),
            memory_type,
            embedding: Embedding { model: "m".into(), vector },
            sample_count: samples,
            computed_at: ts(),
            source_hash: String::new(),
        };
        let centroids =
            vec![centroid(MemoryType::Decision, vec![1.0, 0.0], 60), centroid(MemoryType::Problem, vec![0.0, 1.0], 10)];
        assert_eq!(nearest_type(&[0.1, 1.0], "m", &centroids).map(|n| n.0), Some(MemoryType::Decision));
        assert_eq!(nearest_type(&[0.1, 1.0], "x", &centroids), None);
    }
}
