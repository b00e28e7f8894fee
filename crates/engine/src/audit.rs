//! The read-only reviews of a palace: the organisation audit (scores from
//! [`mempalace_core::audit`] over the taxonomy, the drawers' source
//! projects, the explicit tunnels, the hallways and the knowledge graph) and the vector
//! coverage per embedding model (the `repair-status` counts).
//!
//! Nothing here writes; both read committed data only, so they run while
//! other processes file.

use std::collections::BTreeMap;

use mempalace_core::DrawerStatus;
use mempalace_core::audit::{AuditInput, AuditReport, HallwayInput, KgInput, ProjectMix, TunnelEnds, audit};
use mempalace_core::origin::{project_key, resolve_target};

use crate::error::EngineResult;
use crate::palace::Palace;

impl Palace {
    /// Audits how navigable the workspace is (see [`mempalace_core::audit`]).
    /// Reads every drawer once (for their source projects).
    pub fn audit(&self) -> EngineResult<AuditReport> {
        let taxonomy = self.store().taxonomy(self.workspace())?;
        let wing_rooms: BTreeMap<String, BTreeMap<String, u64>> =
            taxonomy.wings.iter().map(|(wing, counts)| (wing.clone(), counts.rooms.clone())).collect();
        let wings: Vec<String> = wing_rooms.keys().cloned().collect();
        let mut project_mix: BTreeMap<String, ProjectMix> = BTreeMap::new();
        let mut targets: BTreeMap<(String, String), String> = BTreeMap::new();
        self.each_drawer(None, &mut |drawer| {
            if drawer.status != DrawerStatus::Active {
                return Ok(());
            }
            let wing = drawer.wing.to_string();
            let cwd = drawer.context.get("cwd").and_then(serde_json::Value::as_str);
            let key = project_key(cwd, drawer.source_file.as_deref());
            let mix = project_mix.entry(wing.clone()).or_default();
            mix.drawers += 1;
            if let Some(key) = key {
                let target = targets
                    .entry((wing.clone(), key.clone()))
                    .or_insert_with(|| {
                        let others: Vec<String> = wings.iter().filter(|w| **w != wing).cloned().collect();
                        resolve_target(&key, &others).0
                    })
                    .clone();
                *mix.projects.entry(target).or_default() += 1;
            }
            Ok(())
        })?;
        let tunnels = self
            .list_tunnels(None)?
            .into_iter()
            .map(|t| TunnelEnds {
                a: (t.a.wing.to_string(), t.a.room.to_string()),
                b: (t.b.wing.to_string(), t.b.room.to_string()),
            })
            .collect();
        let stats = self.kg_stats()?;
        let mut open_predicates: BTreeMap<String, u64> = BTreeMap::new();
        for fact in self.kg_timeline(None)?.into_iter().filter(|fact| fact.valid_to.is_none()) {
            *open_predicates.entry(fact.predicate).or_default() += 1;
        }
        let hallways = self
            .hallways(None)?
            .into_iter()
            .map(|h| HallwayInput {
                id: h.id,
                wing: h.wing,
                entity_a: h.entity_a,
                entity_b: h.entity_b,
                count: h.co_occurrence_count as u64,
            })
            .collect();
        Ok(audit(&AuditInput {
            wing_rooms,
            project_mix,
            tunnels,
            kg: KgInput { entities: stats.entities, triples: stats.triples, open_predicates },
            hallways,
        }))
    }

    /// Drawers per embedding model (`None`: without a vector), every status.
    pub fn embedding_coverage(&self) -> EngineResult<Vec<(Option<String>, u64)>> {
        Ok(self.store().embedding_models(self.workspace())?)
    }
}
