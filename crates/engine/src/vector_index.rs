//! The in-memory vector index: derived from the store, loaded lazily,
//! updated incrementally from the store's change feed.
//!
//! Vectors are kept quantised to int8 with one scale per vector (384 bytes
//! for MiniLM instead of 1,536), so a server process stays small. A search
//! scans every live vector exactly (no approximate graph: at 100,000
//! drawers the scan takes about a millisecond) and returns candidates by
//! approximate similarity; callers compute exact similarities from the
//! stored f32 vectors of the few they keep. Before each search the index
//! asks the store for changes after its revision, so writes by other
//! processes are seen on the next query.

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

use mempalace_core::{DrawerId, WorkspaceId};
use mempalace_store::{Store, StoreResult};
use multiversion::multiversion;

/// Changes fetched per page while catching up.
const CHANGE_PAGE: usize = 10_000;

#[derive(Default)]
struct State {
    rev: i64,
    dim: usize,
    ids: Vec<DrawerId>,
    alive: Vec<bool>,
    quantized: Vec<i8>,
    scales: Vec<f32>,
    slot_of: HashMap<DrawerId, usize>,
    free: Vec<usize>,
    live: usize,
}

impl State {
    fn remove(&mut self, id: &DrawerId) {
        if let Some(slot) = self.slot_of.remove(id) {
            self.alive[slot] = false;
            self.free.push(slot);
            self.live -= 1;
        }
    }

    fn upsert(&mut self, id: DrawerId, vector: &[f32]) {
        if self.dim == 0 {
            self.dim = vector.len();
        }
        if vector.len() != self.dim {
            tracing::warn!(%id, got = vector.len(), expected = self.dim, "vector of another dimension skipped");
            return;
        }
        let slot = match self.slot_of.get(&id) {
            Some(&slot) => slot,
            None => {
                let slot = self.free.pop().unwrap_or_else(|| {
                    self.ids.push(id.clone());
                    self.alive.push(false);
                    self.scales.push(0.0);
                    self.quantized.resize(self.quantized.len() + self.dim, 0);
                    self.ids.len() - 1
                });
                self.ids[slot] = id.clone();
                self.alive[slot] = true;
                self.slot_of.insert(id, slot);
                self.live += 1;
                slot
            }
        };
        let max = vector.iter().fold(0.0_f32, |m, v| m.max(v.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        for (q, v) in self.quantized[slot * self.dim..(slot + 1) * self.dim].iter_mut().zip(vector) {
            *q = (v / scale).round().clamp(-127.0, 127.0) as i8;
        }
        self.scales[slot] = scale;
    }
}

/// Dot product of an int8 row with an f32 query.
#[cfg(test)]
fn dot_i8(row: &[i8], query: &[f32]) -> f32 {
    row.iter().zip(query).map(|(&q, v)| f32::from(q) * v).sum()
}

/// Scores every row of `quantized` (rows of `query.len()` values) against
/// the query: `scores[r] = scales[r] · Σ quantized[r][i] · query[i]`. One
/// call for the whole matrix, so the loop is compiled for the CPU's widest
/// vectors and never leaves it.
#[multiversion(targets("x86_64+avx512f+avx512bw+avx512vl", "x86_64+avx2+fma"))]
fn score_all(quantized: &[i8], scales: &[f32], query: &[f32], scores: &mut [f32]) {
    const LANES: usize = 16;
    let dim = query.len();
    for ((row, scale), score) in quantized.chunks_exact(dim).zip(scales).zip(scores.iter_mut()) {
        let mut lanes = [0.0_f32; LANES];
        let chunks = row.chunks_exact(LANES);
        let mut tail = 0.0_f32;
        for (&q, v) in chunks.remainder().iter().zip(&query[dim - dim % LANES..]) {
            tail += f32::from(q) * v;
        }
        for (chunk, query_chunk) in chunks.zip(query.chunks_exact(LANES)) {
            for ((lane, &q), v) in lanes.iter_mut().zip(chunk).zip(query_chunk) {
                *lane += f32::from(q) * v;
            }
        }
        *score = (lanes.iter().sum::<f32>() + tail) * scale;
    }
}

/// One model's vectors of one workspace.
pub struct VectorIndex {
    workspace: WorkspaceId,
    model: String,
    state: RwLock<State>,
    loaded: std::sync::atomic::AtomicBool,
}

impl VectorIndex {
    /// An empty index; the first [`VectorIndex::refresh`] loads it.
    pub fn new(workspace: WorkspaceId, model: impl Into<String>) -> Self {
        Self {
            workspace,
            model: model.into(),
            state: RwLock::new(State::default()),
            loaded: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Applies every change after the index's revision.
    pub fn refresh(&self, store: &dyn Store) -> StoreResult<()> {
        let started = std::time::Instant::now();
        let mut applied = 0_usize;
        loop {
            let after = self.state.read().expect("index lock poisoned").rev;
            let changes = store.vector_changes(&self.workspace, &self.model, after, CHANGE_PAGE)?;
            if changes.is_empty() {
                break;
            }
            let mut state = self.state.write().expect("index lock poisoned");
            if state.rev != after {
                // Another thread applied this page meanwhile; ask again.
                continue;
            }
            for change in &changes {
                match &change.vector {
                    Some(vector) => state.upsert(change.id.clone(), vector),
                    None => state.remove(&change.id),
                }
                state.rev = state.rev.max(change.rev);
            }
            applied += changes.len();
            if changes.len() < CHANGE_PAGE {
                break;
            }
        }
        if !self.loaded.swap(true, std::sync::atomic::Ordering::SeqCst) || applied > 1_000 {
            tracing::debug!(
                model = self.model,
                applied,
                live = self.len(),
                ms = started.elapsed().as_millis() as u64,
                "vector index refreshed"
            );
        }
        Ok(())
    }

    /// Vectors in the index.
    pub fn len(&self) -> usize {
        self.state.read().expect("index lock poisoned").live
    }

    /// Whether the index holds no vectors.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `k` most similar vectors to `query` (approximate cosine, best
    /// first), among `allowed` ids when given.
    pub fn search(&self, query: &[f32], k: usize, allowed: Option<&HashSet<DrawerId>>) -> Vec<(DrawerId, f32)> {
        let state = self.state.read().expect("index lock poisoned");
        if state.dim == 0 || query.len() != state.dim || k == 0 {
            return Vec::new();
        }
        let mut scores = vec![0.0_f32; state.ids.len()];
        score_all(&state.quantized, &state.scales, query, &mut scores);
        let mut scored: Vec<(f32, usize)> = scores
            .into_iter()
            .enumerate()
            .filter(|&(slot, _)| state.alive[slot] && allowed.is_none_or(|allowed| allowed.contains(&state.ids[slot])))
            .map(|(slot, score)| (score, slot))
            .collect();
        let k = k.min(scored.len());
        if k == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
        scored.truncate(k);
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().map(|(score, slot)| (state.ids[slot].clone(), score)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mempalace_core::{Content, Drawer, Embedding, Room, Wing};
    use mempalace_sqlite::{SqliteOptions, SqliteStore};
    use mempalace_store::StoreWrite;

    fn drawer(text: &str, vector: Vec<f32>) -> Drawer {
        let mut drawer = Drawer::new(
            WorkspaceId::default_workspace(),
            Wing::parse("w").unwrap(),
            Room::parse("r").unwrap(),
            Content::parse(text).unwrap(),
            "test",
            chrono::Utc::now(),
        );
        drawer.embedding = Some(Embedding { model: "m".into(), vector });
        drawer
    }

    #[test]
    fn follows_inserts_hides_and_deletes_from_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            SqliteStore::open(&dir.path().join("p.db"), SqliteOptions { create: true, ..Default::default() }).unwrap();
        let ws = WorkspaceId::default_workspace();
        let index = VectorIndex::new(ws.clone(), "m");
        let a = drawer("a", vec![1.0, 0.0, 0.0]);
        let b = drawer("b", vec![0.0, 1.0, 0.0]);
        let c = drawer("c", vec![0.7, 0.7, 0.0]);
        store.put_drawers(&[a.clone(), b.clone(), c.clone()]).unwrap();
        index.refresh(&store).unwrap();
        assert_eq!(index.len(), 3);
        let hits = index.search(&[1.0, 0.0, 0.0], 2, None);
        assert_eq!(hits[0].0, a.id);
        assert!((hits[0].1 - 1.0).abs() < 0.02, "{}", hits[0].1);
        assert_eq!(hits[1].0, c.id);

        store.delete_drawer(&ws, &a.id).unwrap();
        store
            .set_drawer_status(&ws, &c.id, mempalace_core::DrawerStatus::Invalidated, None, chrono::Utc::now())
            .unwrap();
        index.refresh(&store).unwrap();
        assert_eq!(index.len(), 1);
        assert_eq!(index.search(&[1.0, 0.0, 0.0], 5, None)[0].0, b.id);
        let d = drawer("d", vec![0.9, 0.1, 0.0]);
        store.put_drawers(std::slice::from_ref(&d)).unwrap();
        index.refresh(&store).unwrap();
        assert_eq!(index.search(&[1.0, 0.0, 0.0], 1, None)[0].0, d.id, "a freed slot is reused");
        let allowed: HashSet<DrawerId> = [b.id.clone()].into_iter().collect();
        let hits = index.search(&[1.0, 0.0, 0.0], 5, Some(&allowed));
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, b.id);
    }

    #[test]
    fn int8_dot_matches_f32() {
        let row: Vec<i8> = (0..50).map(|i| (i * 5 - 120) as i8).collect();
        let query: Vec<f32> = (0..50).map(|i| i as f32 / 50.0).collect();
        let exact: f32 = row.iter().zip(&query).map(|(&r, q)| f32::from(r) * q).sum();
        assert!((dot_i8(&row, &query) - exact).abs() < 1e-3);
    }
}
