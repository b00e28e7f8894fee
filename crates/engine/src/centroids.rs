//! Centroids (seed 0 §3 "memory_centroid_recompute", issue 18): training
//! the memory-type prototypes and the room prototypes from stored vectors,
//! and using them — the ingest tier decision's centroid band
//! (`ingest.rs`) and the room suggestion for a drawer filed without a room
//! of its own choosing ([`Palace::suggest_room`]).
//!
//! Memory types: the newest [`Centroid::MAX_SAMPLES`] active drawers of a
//! type labelled by the language model (never by a centroid, so the
//! centroid tier cannot train itself) from the last
//! [`Centroid::WINDOW_DAYS`]; fewer than [`Centroid::MIN_SAMPLES`] leave
//! the type without a (new) centroid; the same samples (source hash) write
//! nothing. Rooms: a room is trained when it has no prototype, its
//! prototype is of another model, or its size moved by
//! [`RoomCentroid::RETRAIN_FRACTION`] since (from the room-count
//! aggregate, so a run that trains nothing reads no vectors); a room that
//! emptied loses its prototype. Only vectors of the configured embedder's
//! model are averaged. Centroids are derived data: dropping them loses
//! nothing, the next run trains them again.
//!
//! Not here: the schedule and the kill switch (the periodic job that
//! calls [`Palace::recompute_centroids_all`]), transports.

use std::collections::HashMap;

use mempalace_core::centroid::{self, Centroid, RoomCentroid};
use mempalace_core::{DrawerId, Embedding, MemoryType, Wing};
use mempalace_store::CentroidSamples;

use crate::error::EngineResult;
use crate::palace::Palace;

/// What [`Palace::recompute_centroids`] did in one workspace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CentroidReport {
    /// The workspace.
    pub workspace: String,
    /// The model whose vectors were averaged (`None`: no embedder, nothing done).
    pub model: Option<String>,
    /// Memory types whose centroid was written, with their sample counts.
    pub types_trained: Vec<(MemoryType, u32)>,
    /// Memory types whose samples were unchanged.
    pub types_unchanged: Vec<MemoryType>,
    /// Memory types with too few samples (their old centroid, if any, stays).
    pub types_too_few: Vec<(MemoryType, u32)>,
    /// Rooms (`wing/room`) whose prototype changed, with their sample counts.
    pub rooms_trained: Vec<(String, u32)>,
    /// Rooms trained again whose samples were unchanged.
    pub rooms_unchanged: Vec<String>,
    /// Rooms not due: their size moved less than the retrain fraction.
    pub rooms_not_due: usize,
    /// Rooms with too few drawers with vectors for a prototype.
    pub rooms_too_few: usize,
    /// Rooms that emptied and lost their prototype.
    pub rooms_forgotten: Vec<String>,
}

/// A room suggested for a text by the room prototypes.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomSuggestion {
    /// The room.
    pub room: String,
    /// Cosine between the text and the room's prototype.
    pub similarity: f32,
}

impl Palace {
    /// Trains the workspace's memory-type and room centroids that are due
    /// (see the module doc). Idempotent; safe to run from many workers.
    pub fn recompute_centroids(&self) -> EngineResult<CentroidReport> {
        let mut report = CentroidReport { workspace: self.workspace().to_string(), ..CentroidReport::default() };
        let Some(model) = self.embedder().map(|e| e.model_id().to_string()) else {
            return Ok(report);
        };
        report.model = Some(model.clone());
        let now = self.now();
        let since = now - chrono::TimeDelta::days(Centroid::WINDOW_DAYS);
        for &memory_type in MemoryType::ALL {
            let samples = self.store().centroid_samples(
                self.workspace(),
                &model,
                &CentroidSamples::MemoryType { memory_type, since },
                Centroid::MAX_SAMPLES,
            )?;
            let count = samples.len() as u32;
            if count < Centroid::MIN_SAMPLES {
                report.types_too_few.push((memory_type, count));
                continue;
            }
            let Some((vector, source_hash)) = average(&model, &samples) else { continue };
            let written = self.store().put_centroid(&Centroid {
                workspace_id: self.workspace().clone(),
                memory_type,
                embedding: Embedding { model: model.clone(), vector },
                sample_count: count,
                computed_at: now,
                source_hash,
            })?;
            if written {
                report.types_trained.push((memory_type, count));
            } else {
                report.types_unchanged.push(memory_type);
            }
        }

        let taxonomy = self.store().taxonomy(self.workspace())?;
        let mut previous: HashMap<(String, String), RoomCentroid> = self
            .store()
            .room_centroids(self.workspace())?
            .into_iter()
            .map(|c| ((c.wing.clone(), c.room.clone()), c))
            .collect();
        for (wing, counts) in &taxonomy.wings {
            for (room, &drawers) in &counts.rooms {
                let key = (wing.clone(), room.clone());
                let old = previous.remove(&key);
                if !centroid::room_needs_training(old.as_ref(), drawers, &model) {
                    report.rooms_not_due += 1;
                    continue;
                }
                let samples = self.store().centroid_samples(
                    self.workspace(),
                    &model,
                    &CentroidSamples::Room { wing: wing.clone(), room: room.clone() },
                    RoomCentroid::MAX_SAMPLES,
                )?;
                let count = samples.len() as u32;
                if count < RoomCentroid::MIN_SAMPLES {
                    report.rooms_too_few += 1;
                    continue;
                }
                let Some((vector, source_hash)) = average(&model, &samples) else { continue };
                let changed = self.store().put_room_centroid(&RoomCentroid {
                    workspace_id: self.workspace().clone(),
                    wing: wing.clone(),
                    room: room.clone(),
                    embedding: Embedding { model: model.clone(), vector },
                    sample_count: count,
                    room_drawers: drawers,
                    computed_at: now,
                    source_hash,
                })?;
                if changed {
                    report.rooms_trained.push((format!("{wing}/{room}"), count));
                } else {
                    report.rooms_unchanged.push(format!("{wing}/{room}"));
                }
            }
        }
        // Prototypes of rooms that no longer hold an active drawer.
        for (wing, room) in previous.into_keys() {
            if self.store().delete_room_centroid(self.workspace(), &wing, &room)? {
                report.rooms_forgotten.push(format!("{wing}/{room}"));
            }
        }
        tracing::info!(
            workspace = %self.workspace(),
            types = report.types_trained.len(),
            rooms = report.rooms_trained.len(),
            not_due = report.rooms_not_due,
            "centroid recompute"
        );
        Ok(report)
    }

    /// [`Palace::recompute_centroids`] over every workspace of the palace:
    /// the job function (seed 0: weekly; idempotent, safe from many workers).
    pub fn recompute_centroids_all(&self) -> EngineResult<Vec<CentroidReport>> {
        let mut reports = Vec::new();
        for workspace in self.store().workspaces()? {
            reports.push(self.for_workspace(workspace).recompute_centroids()?);
        }
        Ok(reports)
    }

    /// The room of `wing` whose prototype is near enough to `text` and
    /// clearly ahead of the others (core's `centroid::suggest_room`), for a
    /// drawer filed without a room of its own choosing. `None` without an
    /// embedder, prototypes or a clear winner. Never used for a room the
    /// caller chose.
    pub fn suggest_room(&self, wing: &Wing, text: &str) -> EngineResult<Option<RoomSuggestion>> {
        let Some(model) = self.embedder().map(|e| e.model_id().to_string()) else { return Ok(None) };
        let prototypes = self.store().room_centroids(self.workspace())?;
        if !prototypes.iter().any(|c| c.wing == wing.as_str()) {
            return Ok(None);
        }
        let head: String = text.chars().take(mempalace_core::chunk::CHUNK_SIZE).collect();
        let Some(vector) = self.embed_texts(&[head.as_str()])?.vectors.pop().flatten() else { return Ok(None) };
        Ok(self.suggest_room_for(&vector, &model, wing, &prototypes))
    }

    pub(crate) fn suggest_room_for(
        &self,
        vector: &[f32],
        model: &str,
        wing: &Wing,
        prototypes: &[RoomCentroid],
    ) -> Option<RoomSuggestion> {
        centroid::suggest_room(vector, model, wing.as_str(), prototypes)
            .map(|(room, similarity)| RoomSuggestion { room: room.to_string(), similarity })
    }
}

/// The mean of the samples' vectors and the samples' source hash.
fn average(model: &str, samples: &[(DrawerId, Vec<f32>)]) -> Option<(Vec<f32>, String)> {
    let vectors: Vec<&[f32]> = samples.iter().map(|(_, v)| v.as_slice()).collect();
    let ids: Vec<DrawerId> = samples.iter().map(|(id, _)| id.clone()).collect();
    Some((centroid::mean(&vectors)?, centroid::source_hash(model, &ids)))
}

impl Palace {
    /// Files requests whose room is a default (`room_is_default`) in the
    /// room [`Palace::suggest_room`] picks, embedding their first chunks in
    /// one call; the drawer's context keeps `room_suggested` (the default
    /// room and the cosine). A failure keeps the default rooms: routing
    /// never fails an ingestion.
    pub(crate) fn route_default_rooms(&self, mut requests: Vec<crate::IngestRequest>) -> Vec<crate::IngestRequest> {
        let routed: Vec<usize> =
            (0..requests.len()).filter(|&i| requests[i].room_is_default && requests[i].id.is_none()).collect();
        if routed.is_empty() {
            return requests;
        }
        let Some(model) = self.embedder().map(|e| e.model_id().to_string()) else { return requests };
        let prototypes = match self.store().room_centroids(self.workspace()) {
            Ok(prototypes) => prototypes,
            Err(error) => {
                tracing::warn!(%error, "room prototypes unreadable; default rooms kept");
                return requests;
            }
        };
        if prototypes.is_empty() {
            return requests;
        }
        let heads: Vec<String> = routed
            .iter()
            .map(|&i| requests[i].text.chars().take(mempalace_core::chunk::CHUNK_SIZE).collect())
            .collect();
        let texts: Vec<&str> = heads.iter().map(String::as_str).collect();
        let vectors = match self.embed_texts(&texts) {
            Ok(embedded) => embedded.vectors,
            Err(error) => {
                tracing::warn!(%error, "embedding for room routing failed; default rooms kept");
                return requests;
            }
        };
        for (&index, vector) in routed.iter().zip(vectors) {
            let request = &mut requests[index];
            let Some(vector) = vector else { continue };
            let Some(suggestion) = self.suggest_room_for(&vector, &model, &request.wing, &prototypes) else { continue };
            let Ok(room) = mempalace_core::Room::parse(&suggestion.room) else { continue };
            if room == request.room {
                continue;
            }
            request.context.insert(
                "room_suggested".into(),
                serde_json::json!({"default": request.room.as_str(), "similarity": suggestion.similarity}),
            );
            request.room = room;
        }
        requests
    }
}
