//! Memory-type centroids: prototype vectors per memory type (seed 0 §3
//! Phase 2, "memory_centroid_recompute").
//!
//! Only the record; recomputing centroids is a cold-path job in the engine.

use crate::drawer::{Embedding, MemoryType};
use crate::id::WorkspaceId;
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
}
