//! Hallways (the Python MemPalace's within-wing links): two entities that
//! drawers of one wing mention together, at least [`HALLWAY_MIN_COUNT`]
//! times, strongest first.
//!
//! A hallway is derived from the drawers' entity lists (filled by the
//! extractor at filing, and by the `process` job for mined drawers), computed
//! on demand and cached until the palace changes; it is never stored.
//! Deleting one records a suppression (the workspace's key `hallway:<id>` in
//! the store's per-source bookkeeping), so the pair stays hidden while its
//! drawers stay as they are.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use mempalace_core::DrawerStatus;
use mempalace_core::id::hallway_id;

use crate::error::EngineResult;
use crate::palace::Palace;

/// Co-occurrences a pair needs to be a hallway (the Python MemPalace's
/// `hallway_min_count` default).
pub const HALLWAY_MIN_COUNT: usize = 2;

/// The bookkeeping key namespace of deleted hallways.
const SUPPRESSED_PREFIX: &str = "hallway:";

/// Two entities that drawers of one wing mention together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hallway {
    /// `hallway_{wing}_{a}_{b}_{hash}` (the Python MemPalace's recipe).
    pub id: String,
    /// The wing.
    pub wing: String,
    /// The entity that sorts first.
    pub entity_a: String,
    /// The other.
    pub entity_b: String,
    /// Drawers mentioning both.
    pub co_occurrence_count: usize,
    /// The rooms of those drawers, sorted.
    pub rooms: Vec<String>,
}

impl Hallway {
    /// `A ↔ B (co-occur in N drawers across K rooms: r1, r2, r3, +2 more)`.
    pub fn label(&self) -> String {
        let shown: Vec<&str> = self.rooms.iter().take(3).map(String::as_str).collect();
        let more = if self.rooms.len() > 3 { format!(", +{} more", self.rooms.len() - 3) } else { String::new() };
        format!(
            "{} ↔ {} (co-occur in {} drawers across {} room{}: {}{more})",
            self.entity_a,
            self.entity_b,
            self.co_occurrence_count,
            self.rooms.len(),
            if self.rooms.len() == 1 { "" } else { "s" },
            shown.join(", ")
        )
    }
}

/// Hallways computed at one palace revision.
#[derive(Default)]
pub(crate) struct HallwayCache(Mutex<Option<(i64, Arc<Vec<Hallway>>)>>);

impl Palace {
    /// The hallways of one wing (or all), strongest first, deleted ones
    /// left out.
    pub fn hallways(&self, wing: Option<&str>) -> EngineResult<Vec<Hallway>> {
        let all = self.all_hallways()?;
        let mut out = Vec::new();
        for hallway in all.iter().filter(|h| wing.is_none_or(|w| h.wing == w)) {
            if self.store().source_cursor(self.workspace(), &format!("{SUPPRESSED_PREFIX}{}", hallway.id))?.is_none() {
                out.push(hallway.clone());
            }
        }
        Ok(out)
    }

    /// Hides a hallway; false when there is no such (visible) hallway.
    pub fn delete_hallway(&self, id: &str) -> EngineResult<bool> {
        let key = format!("{SUPPRESSED_PREFIX}{id}");
        let exists = self.all_hallways()?.iter().any(|h| h.id == id);
        if !exists || self.store().source_cursor(self.workspace(), &key)?.is_some() {
            return Ok(false);
        }
        let note = serde_json::json!({"deleted_at": mempalace_core::time::format_timestamp(&self.now())}).to_string();
        self.store().set_source_cursor(self.workspace(), &key, Some(&note), self.now())?;
        Ok(true)
    }

    fn all_hallways(&self) -> EngineResult<Arc<Vec<Hallway>>> {
        let revision = self.store().revision()?;
        let cache = self.hallway_cache();
        if let Some((at, hallways)) = lock(&cache.0).as_ref()
            && *at == revision
        {
            return Ok(Arc::clone(hallways));
        }
        let computed = Arc::new(self.compute_hallways()?);
        *lock(&cache.0) = Some((revision, Arc::clone(&computed)));
        Ok(computed)
    }

    /// Reads every visible drawer's entities once.
    fn compute_hallways(&self) -> EngineResult<Vec<Hallway>> {
        type Pair = (String, String, String);
        let mut pairs: HashMap<Pair, (usize, BTreeSet<String>)> = HashMap::new();
        let mut after = None;
        loop {
            let page = self.store().scan_drawers(self.workspace(), after.as_ref(), 1_000)?;
            let Some(last) = page.last() else { break };
            after = Some(last.id.clone());
            for drawer in page {
                if drawer.status != DrawerStatus::Active || drawer.entities.len() < 2 {
                    continue;
                }
                let names: BTreeSet<&String> = drawer.entities.iter().collect();
                let names: Vec<&String> = names.into_iter().collect();
                for (i, a) in names.iter().enumerate() {
                    for b in &names[i + 1..] {
                        let entry = pairs
                            .entry((drawer.wing.to_string(), (*a).clone(), (*b).clone()))
                            .or_insert_with(|| (0, BTreeSet::new()));
                        entry.0 += 1;
                        entry.1.insert(drawer.room.to_string());
                    }
                }
            }
        }
        let mut hallways: Vec<Hallway> = pairs
            .into_iter()
            .filter(|(_, (count, _))| *count >= HALLWAY_MIN_COUNT)
            .map(|((wing, a, b), (count, rooms))| Hallway {
                id: hallway_id(&wing, &a, &b),
                wing,
                entity_a: a,
                entity_b: b,
                co_occurrence_count: count,
                rooms: rooms.into_iter().collect(),
            })
            .collect();
        hallways.sort_by(|x, y| y.co_occurrence_count.cmp(&x.co_occurrence_count).then_with(|| x.id.cmp(&y.id)));
        Ok(hallways)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_labels_follow_the_python_recipe() {
        assert_eq!(hallway_id("lab", "Alice", "Bob"), hallway_id("lab", "Alice", "Bob"));
        assert!(hallway_id("lab", "Alice", "Bob").starts_with("hallway_lab_Alice_Bob_"));
        let hallway = Hallway {
            id: "h".into(),
            wing: "lab".into(),
            entity_a: "Alice".into(),
            entity_b: "Bob".into(),
            co_occurrence_count: 4,
            rooms: vec!["a".into(), "b".into(), "c".into(), "d".into(), "e".into()],
        };
        assert_eq!(hallway.label(), "Alice ↔ Bob (co-occur in 4 drawers across 5 rooms: a, b, c, +2 more)");
    }
}
