//! Entity dedup with aliases (seed 2 `dedup_worker`, issue 18): finding
//! entities that are one thing by name (core's `alias` rules, no model),
//! merging each group into its most used entity, undoing a merge, listing
//! aliases, and resolving an alias name wherever the graph is read.
//!
//! The merge itself is the store's (`StoreWrite::merge_entity`, one
//! transaction, recorded so `unmerge_entity` moves exactly that back);
//! here the engine decides which entity is kept: the one named by the most
//! facts and mentions, ties to the oldest, then the smallest id. Ambiguous
//! pairs ("Crawbl" and "Crawbl Backend") are reported, never merged. Every
//! call is idempotent, so any number of workers may run
//! [`Palace::dedup_entities_all`] at once.
//!
//! Not here: scheduling and the kill switch (the consolidation job that
//! calls it), transports.

use std::collections::HashMap;

use mempalace_core::alias::find_duplicates;
use mempalace_core::kg::{EntityAlias, entity_id};
use mempalace_store::{MergeOutcome, Unmerged};

use crate::error::{EngineError, EngineResult};
use crate::palace::Palace;

/// One group of entities that are one thing.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeGroup {
    /// The entity kept: its name.
    pub canonical: String,
    /// Its id.
    pub canonical_id: String,
    /// The entities merged into it (names), each with the rule that matched.
    pub aliases: Vec<(String, &'static str)>,
}

/// Two entities that may be one thing: reported for review, not merged.
#[derive(Debug, Clone, PartialEq)]
pub struct FlaggedPair {
    /// One name.
    pub a: String,
    /// The other.
    pub b: String,
    /// Why they look alike.
    pub reason: &'static str,
}

/// What [`Palace::dedup_entities`] found and did in one workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct DedupReport {
    /// The workspace.
    pub workspace: String,
    /// Whether anything was written (false for a dry run).
    pub applied: bool,
    /// Entities looked at.
    pub entities: usize,
    /// Groups merged (or, in a dry run, that would be).
    pub groups: Vec<MergeGroup>,
    /// Aliases merged by this run (0 in a dry run; an alias another worker
    /// merged first is not counted).
    pub merged: usize,
    /// Facts moved to canonical entities by this run.
    pub moved_triples: u64,
    /// Drawers whose mention moved by this run.
    pub moved_mentions: u64,
    /// Pairs that may be duplicates.
    pub flagged: Vec<FlaggedPair>,
}

impl Palace {
    /// Finds the workspace's duplicate entities by name and, unless
    /// `dry_run`, merges each group into its most used entity (see the
    /// module doc). Idempotent: a second run finds nothing to merge.
    pub fn dedup_entities(&self, dry_run: bool) -> EngineResult<DedupReport> {
        let entities = self.store().entities(self.workspace())?;
        let usage: HashMap<String, u64> =
            self.store().entity_usage(self.workspace())?.into_iter().map(|u| (u.id, u.triples + u.mentions)).collect();
        let names: Vec<&str> = entities.iter().map(|e| e.name.as_str()).collect();
        let found = find_duplicates(&names);
        let mut report = DedupReport {
            workspace: self.workspace().to_string(),
            applied: !dry_run,
            entities: entities.len(),
            groups: Vec::new(),
            merged: 0,
            moved_triples: 0,
            moved_mentions: 0,
            flagged: found
                .ambiguous
                .iter()
                .map(|&(a, b, reason)| FlaggedPair { a: names[a].to_string(), b: names[b].to_string(), reason })
                .collect(),
        };
        for members in &found.groups {
            let keep = *members
                .iter()
                .max_by(|&&a, &&b| {
                    let (ea, eb) = (&entities[a], &entities[b]);
                    let (ua, ub) = (usage.get(&ea.id).copied().unwrap_or(0), usage.get(&eb.id).copied().unwrap_or(0));
                    // Most used wins; then the oldest; then the smallest id
                    // (max_by keeps the greater, so older and smaller compare greater).
                    ua.cmp(&ub).then(eb.created_at.cmp(&ea.created_at)).then(eb.id.cmp(&ea.id))
                })
                .expect("a group has members");
            let canonical = &entities[keep];
            let mut group = MergeGroup {
                canonical: canonical.name.clone(),
                canonical_id: canonical.id.clone(),
                aliases: Vec::new(),
            };
            for &member in members.iter().filter(|&&m| m != keep) {
                let alias = &entities[member];
                let reason = match mempalace_core::alias::compare_names(&alias.name, &canonical.name) {
                    mempalace_core::alias::NameMatch::Same(reason) => reason,
                    // Joined through a third name of the group.
                    _ => "same group",
                };
                group.aliases.push((alias.name.clone(), reason));
                if dry_run {
                    continue;
                }
                match self.store().merge_entity(self.workspace(), &alias.id, &canonical.id, reason, self.now())? {
                    MergeOutcome::Merged { triples, mentions } => {
                        report.merged += 1;
                        report.moved_triples += triples;
                        report.moved_mentions += mentions;
                    }
                    // Another worker got there first, or an entity went away meanwhile.
                    MergeOutcome::AlreadyMerged
                    | MergeOutcome::MergedElsewhere { .. }
                    | MergeOutcome::Missing { .. } => {}
                }
            }
            report.groups.push(group);
        }
        tracing::info!(
            workspace = %self.workspace(),
            entities = report.entities,
            groups = report.groups.len(),
            merged = report.merged,
            flagged = report.flagged.len(),
            dry_run,
            "entity dedup"
        );
        Ok(report)
    }

    /// [`Palace::dedup_entities`] over every workspace of the palace: the
    /// job function (idempotent, safe to run from many workers at once).
    pub fn dedup_entities_all(&self) -> EngineResult<Vec<DedupReport>> {
        let mut reports = Vec::new();
        for workspace in self.store().workspaces()? {
            reports.push(self.for_workspace(workspace).dedup_entities(false)?);
        }
        Ok(reports)
    }

    /// Merges the entity named `alias` into the one named `canonical` by
    /// hand (when the rules did not, e.g. a pair flagged as ambiguous). An
    /// alias name given as `canonical` stands for its own canonical entity.
    /// Idempotent: merging again answers [`MergeOutcome::AlreadyMerged`].
    pub fn merge_entities(&self, alias: &str, canonical: &str) -> EngineResult<MergeOutcome> {
        let canonical_id = self.canonical_entity_id(canonical)?;
        match self.store().merge_entity(self.workspace(), &entity_id(alias), &canonical_id, "manual", self.now())? {
            MergeOutcome::Missing { id } => {
                let name = if id == canonical_id { canonical } else { alias };
                if entity_id(alias) == canonical_id {
                    return Err(EngineError::Conflict(format!(
                        "{alias} and {canonical} are already one entity; nothing to merge"
                    )));
                }
                Err(EngineError::NotFound { what: "entity", id: name.to_string() })
            }
            MergeOutcome::MergedElsewhere { canonical_id: elsewhere } => {
                let name = self
                    .store()
                    .entities_by_id(self.workspace(), std::slice::from_ref(&elsewhere))?
                    .pop()
                    .map_or(elsewhere, |e| e.name);
                Err(EngineError::Conflict(format!(
                    "{alias} is an alias of {name}; unmerge it first (`unmerge_entity {alias}`)"
                )))
            }
            outcome => Ok(outcome),
        }
    }

    /// Undoes the merge of the entity named `alias`: it becomes an entity
    /// of its own again with exactly the facts the merge moved; mentions
    /// are derived again from drawer names.
    pub fn unmerge_entity(&self, alias: &str) -> EngineResult<Unmerged> {
        self.store()
            .unmerge_entity(self.workspace(), &entity_id(alias))?
            .ok_or_else(|| EngineError::NotFound { what: "entity alias", id: alias.to_string() })
    }

    /// The workspace's aliases; with `entity`, only those of that entity
    /// (named by itself or by any of its aliases).
    pub fn entity_aliases(&self, entity: Option<&str>) -> EngineResult<Vec<EntityAlias>> {
        let mut aliases = self.store().entity_aliases(self.workspace())?;
        if let Some(name) = entity {
            let canonical = self.canonical_entity_id(name)?;
            aliases.retain(|a| a.canonical_id == canonical);
        }
        Ok(aliases)
    }

    /// The id of the entity a name stands for: its own, or its canonical
    /// entity's when it is an alias.
    pub fn canonical_entity_id(&self, name: &str) -> EngineResult<String> {
        let id = entity_id(name);
        Ok(self.store().resolve_entities(self.workspace(), std::slice::from_ref(&id))?.remove(&id).unwrap_or(id))
    }

    /// Entity ids with every alias replaced by its canonical entity, in
    /// order (duplicates left for the caller).
    pub(crate) fn canonical_entity_ids(&self, ids: Vec<String>) -> EngineResult<Vec<String>> {
        let resolved = self.store().resolve_entities(self.workspace(), &ids)?;
        Ok(ids.into_iter().map(|id| resolved.get(&id).cloned().unwrap_or(id)).collect())
    }
}
