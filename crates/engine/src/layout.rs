//! The palace's layout: reading drawers in bulk and moving them between
//! wings and rooms — normalising wing names (`migrate-wings`), splitting a
//! transcript wing by project (`wings split`), re-rooming a wing by a room
//! set (`rooms propose|apply`) — and the sweeper's per-session lookup.
//!
//! A move keeps the drawer's id (ids name the place they were filed in and
//! are never rewritten; notes that cite them stay valid), its text, vector
//! and history; the room counts follow in the same transaction
//! ([`Palace::update_drawer`]). Every operation is idempotent: running it
//! again after an interruption moves what is left. Plans are values the
//! caller shows, stores or edits; nothing here touches a file.

use std::collections::{BTreeMap, BTreeSet};

use mempalace_core::name::normalize_wing_name;
use mempalace_core::origin::{How, project_key, resolve_target};
use mempalace_core::roomset::{self, RoomSet, Sample};
use mempalace_core::tunnel::{Place, Tunnel};
use mempalace_core::{Drawer, DrawerId, DrawerStatus, Room, Wing};

use crate::drawers::DrawerUpdate;
use crate::error::{EngineError, EngineResult};
use crate::palace::Palace;

/// Drawers read per page when scanning.
const PAGE: usize = 1_000;

/// One wing whose name is not normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WingRename {
    /// The wing as stored.
    pub from: String,
    /// Its normalised name.
    pub to: Wing,
    /// Its drawers, any status.
    pub drawers: u64,
    /// Whether `to` is a wing already (the two merge).
    pub merge: bool,
}

/// What [`Palace::plan_wing_names`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WingNamePlan {
    /// Wings to rename.
    pub renames: Vec<WingRename>,
    /// Wings whose normalised name is not a valid name (left alone).
    pub unfixable: Vec<String>,
}

/// What renaming a wing moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    /// Drawers moved.
    pub drawers: u64,
    /// Explicit tunnels re-keyed to the new name.
    pub tunnels: u64,
}

/// One source project of a wing to split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitProject {
    /// The project key (a working directory or an encoded Claude Code folder).
    pub key: String,
    /// The wing its drawers go to.
    pub target: String,
    /// How the target was found.
    pub how: How,
    /// Its drawers.
    pub drawers: u64,
}

/// How a wing would split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitPlan {
    /// The wing.
    pub wing: String,
    /// Its projects, most drawers first.
    pub projects: Vec<SplitProject>,
    /// Drawers with no project key (they stay).
    pub unresolved: u64,
}

/// What applying a split did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SplitReport {
    /// Drawers moved.
    pub moved: u64,
    /// Per target wing.
    pub per_target: BTreeMap<String, u64>,
    /// Drawers left where they were (no key, a key not in the plan, or the
    /// same wing as target).
    pub skipped: u64,
}

/// One drawer to move to another room.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomChange {
    /// The drawer.
    pub id: DrawerId,
    /// Its room now.
    pub from: String,
    /// The room it goes to.
    pub to: String,
    /// Cosine to the room's prototype.
    pub similarity: f32,
}

/// What applying a room set would do to a wing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoomPlan {
    /// Visible drawers of the wing.
    pub total: u64,
    /// Moves, in id order.
    pub changes: Vec<RoomChange>,
    /// Drawers that stay: outside the rooms considered, or already in their nearest room.
    pub kept: u64,
    /// Drawers whose nearest room is below the threshold (they stay).
    pub below_threshold: u64,
    /// Drawers without a vector of the embedder's model (they stay).
    pub no_embedding: u64,
    /// Drawers per room after the moves.
    pub per_room: BTreeMap<String, u64>,
    /// Where each room's prototype came from (`centroid of N`, `description`).
    pub prototype_source: Vec<(String, String)>,
}

fn cwd_of(drawer: &Drawer) -> Option<&str> {
    drawer.context.get("cwd").and_then(serde_json::Value::as_str)
}

impl Palace {
    /// Calls `visit` with every drawer of the workspace, any status and
    /// owner, in id order (of one wing, when given). Returns how many it saw.
    pub fn each_drawer(
        &self,
        wing: Option<&str>,
        visit: &mut dyn FnMut(&Drawer) -> EngineResult<()>,
    ) -> EngineResult<u64> {
        let mut after: Option<DrawerId> = None;
        let mut seen = 0;
        loop {
            let page = self.store().scan_drawers(self.workspace(), after.as_ref(), PAGE)?;
            let Some(last) = page.last() else { break };
            after = Some(last.id.clone());
            for drawer in page.iter().filter(|d| wing.is_none_or(|w| d.wing.as_str() == w)) {
                visit(drawer)?;
                seen += 1;
            }
        }
        Ok(seen)
    }

    /// Every drawer (any status) filed from one session.
    pub fn session_drawers(&self, session_id: &str) -> EngineResult<Vec<Drawer>> {
        let filter = mempalace_store::DrawerFilter {
            session_id: Some(session_id.to_string()),
            include_hidden: true,
            ..mempalace_store::DrawerFilter::default()
        };
        let ids = self.store().filtered_ids(self.workspace(), &filter)?;
        Ok(self.store().drawers(self.workspace(), &ids)?)
    }

    /// Moves one drawer to another wing and/or room, keeping its id.
    pub fn move_drawer(&self, id: &DrawerId, wing: Option<Wing>, room: Option<Room>) -> EngineResult<Drawer> {
        self.update_drawer(id, DrawerUpdate { wing, room, ..DrawerUpdate::default() })
    }

    /// Wings whose names the Python MemPalace's `normalize_wing_name` would
    /// change (lowercase; spaces and `-` to `_`; `_` trimmed at the ends).
    pub fn plan_wing_names(&self) -> EngineResult<WingNamePlan> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        self.each_drawer(None, &mut |drawer| {
            *counts.entry(drawer.wing.to_string()).or_default() += 1;
            Ok(())
        })?;
        let mut plan = WingNamePlan::default();
        for (wing, drawers) in &counts {
            let normalized = normalize_wing_name(wing);
            if normalized == *wing {
                continue;
            }
            match Wing::parse(&normalized) {
                Ok(to) => {
                    let merge = counts.contains_key(&normalized);
                    plan.renames.push(WingRename { from: wing.clone(), to, drawers: *drawers, merge });
                }
                Err(_) => plan.unfixable.push(wing.clone()),
            }
        }
        Ok(plan)
    }

    /// Moves every drawer of wing `from` (any status) to `to` and re-keys
    /// the explicit tunnels that end in `from`. Merges into `to` when it
    /// exists.
    pub fn rename_wing(&self, from: &str, to: &Wing) -> EngineResult<Moved> {
        let mut ids = Vec::new();
        self.each_drawer(Some(from), &mut |drawer| {
            ids.push(drawer.id.clone());
            Ok(())
        })?;
        let mut moved = Moved::default();
        for id in &ids {
            self.move_drawer(id, Some(to.clone()), None)?;
            moved.drawers += 1;
        }
        for tunnel in self.list_tunnels(Some(from))? {
            let rekey = |place: &Place| {
                if place.wing.as_str() == from {
                    Place { wing: to.clone(), room: place.room.clone() }
                } else {
                    place.clone()
                }
            };
            let (a, b) = Tunnel::ordered(rekey(&tunnel.a), rekey(&tunnel.b));
            let renamed = Tunnel { id: Tunnel::make_id(&a, &b), a, b, ..tunnel.clone() };
            if renamed.id != tunnel.id {
                self.store().put_tunnel(&renamed)?;
                self.store().delete_tunnel(self.workspace(), &tunnel.id)?;
                moved.tunnels += 1;
            }
        }
        Ok(moved)
    }

    /// Groups a wing's drawers by source project (see
    /// [`mempalace_core::origin`]) and resolves each project's target wing
    /// among the palace's other wings.
    pub fn plan_wing_split(&self, wing: &Wing) -> EngineResult<SplitPlan> {
        let existing: Vec<String> =
            self.store().taxonomy(self.workspace())?.wings.into_keys().filter(|w| w != wing.as_str()).collect();
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        let mut unresolved = 0;
        self.each_drawer(Some(wing.as_str()), &mut |drawer| {
            match project_key(cwd_of(drawer), drawer.source_file.as_deref()) {
                Some(key) => *counts.entry(key).or_default() += 1,
                None => unresolved += 1,
            }
            Ok(())
        })?;
        let mut projects: Vec<SplitProject> = counts
            .into_iter()
            .map(|(key, drawers)| {
                let (target, how) = resolve_target(&key, &existing);
                SplitProject { key, target, how, drawers }
            })
            .collect();
        projects.sort_by(|a, b| b.drawers.cmp(&a.drawers).then(a.key.cmp(&b.key)));
        Ok(SplitPlan { wing: wing.to_string(), projects, unresolved })
    }

    /// Moves each drawer of `wing` whose project key is in `targets` to its
    /// target wing (any status). Running it again moves what is left.
    pub fn apply_wing_split(&self, wing: &Wing, targets: &BTreeMap<String, Wing>) -> EngineResult<SplitReport> {
        let mut moves: Vec<(DrawerId, Wing)> = Vec::new();
        let mut report = SplitReport::default();
        self.each_drawer(Some(wing.as_str()), &mut |drawer| {
            match project_key(cwd_of(drawer), drawer.source_file.as_deref()).and_then(|key| targets.get(&key)) {
                Some(target) if target != wing => moves.push((drawer.id.clone(), target.clone())),
                _ => report.skipped += 1,
            }
            Ok(())
        })?;
        for (id, target) in moves {
            self.move_drawer(&id, Some(target.clone()), None)?;
            report.moved += 1;
            *report.per_target.entry(target.to_string()).or_default() += 1;
        }
        Ok(report)
    }

    /// A closed room set for a wing from its visible drawers, proposed
    /// without an LLM ([`mempalace_core::roomset::propose`]); `sample` > 0
    /// reads that many drawers chosen by `seed` instead of all.
    pub fn propose_rooms(&self, wing: &Wing, sample: usize, seed: u64, max_rooms: usize) -> EngineResult<RoomSet> {
        let mut drawers: Vec<(String, String, String)> = Vec::new();
        self.each_drawer(Some(wing.as_str()), &mut |drawer| {
            if drawer.status == DrawerStatus::Active {
                drawers.push((drawer.id.to_string(), drawer.room.to_string(), drawer.content.as_str().to_string()));
            }
            Ok(())
        })?;
        let ids: Vec<String> = drawers.iter().map(|(id, _, _)| id.clone()).collect();
        let samples: Vec<Sample<'_>> = roomset::sample(&ids, sample, seed)
            .into_iter()
            .map(|index| {
                let (id, room, text) = &drawers[index];
                Sample { id, room, text }
            })
            .collect();
        let now = mempalace_core::time::format_timestamp(&self.now());
        Ok(roomset::propose(wing.as_str(), &samples, max_rooms, &now))
    }

    /// Decides, for every visible drawer of `wing` in one of `from` (all
    /// rooms when `None`), the room of `set` whose prototype is nearest to
    /// its vector. A room's prototype is the centroid of its exemplars'
    /// vectors, else the embedding of its name, description and keywords.
    /// Needs an embedder; changes nothing.
    pub fn plan_rooms(
        &self,
        wing: &Wing,
        set: &RoomSet,
        threshold: f32,
        from: Option<&BTreeSet<String>>,
    ) -> EngineResult<RoomPlan> {
        let model = self
            .embedder()
            .filter(|embedder| embedder.available())
            .map(|embedder| embedder.model_id().to_string())
            .ok_or_else(|| {
                EngineError::Unavailable(
                    "applying a room set compares drawer vectors, and no embedding model is available; \
                     fetch one with `mempalace model fetch` (or choose --embedder) and retry"
                        .into(),
                )
            })?;
        let mut plan = RoomPlan::default();
        let mut prototypes: Vec<(String, Vec<f32>)> = Vec::new();
        let mut missing: Vec<&roomset::RoomSpec> = Vec::new();
        for room in &set.rooms {
            let ids: Vec<DrawerId> = room.exemplars.iter().filter_map(|id| DrawerId::parse(id).ok()).collect();
            let exemplars = self.store().drawers(self.workspace(), &ids)?;
            let vectors: Vec<&[f32]> = exemplars
                .iter()
                .filter_map(|d| d.embedding.as_ref().filter(|e| e.model == model).map(|e| e.vector.as_slice()))
                .collect();
            match roomset::centroid(&vectors) {
                Some(centroid) => {
                    plan.prototype_source.push((room.name.clone(), format!("centroid of {}", vectors.len())));
                    prototypes.push((room.name.clone(), centroid));
                }
                None => missing.push(room),
            }
        }
        if !missing.is_empty() {
            let texts: Vec<String> = missing.iter().map(|room| room.prototype_text()).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let embedded = self.embed_texts(&refs)?;
            if let Some(reason) = embedded.degraded {
                return Err(EngineError::Unavailable(format!("cannot embed the room descriptions: {reason}")));
            }
            for (room, vector) in missing.iter().zip(embedded.vectors) {
                let vector = vector.ok_or_else(|| {
                    EngineError::Unavailable(format!("no vector for the description of room {}", room.name))
                })?;
                plan.prototype_source.push((room.name.clone(), "description".into()));
                prototypes.push((room.name.clone(), vector));
            }
        }
        plan.prototype_source.sort_by_key(|(name, _)| set.rooms.iter().position(|r| &r.name == name));
        self.each_drawer(Some(wing.as_str()), &mut |drawer| {
            if drawer.status != DrawerStatus::Active {
                return Ok(());
            }
            plan.total += 1;
            let old = drawer.room.to_string();
            let stay = |counter: &mut u64, plan_rooms: &mut BTreeMap<String, u64>| {
                *counter += 1;
                *plan_rooms.entry(old.clone()).or_default() += 1;
            };
            if from.is_some_and(|rooms| !rooms.contains(&old)) {
                stay(&mut plan.kept, &mut plan.per_room);
                return Ok(());
            }
            let Some(vector) = drawer.embedding.as_ref().filter(|e| e.model == model) else {
                stay(&mut plan.no_embedding, &mut plan.per_room);
                return Ok(());
            };
            let Some((room, similarity)) = roomset::nearest_room(&vector.vector, &prototypes) else {
                stay(&mut plan.no_embedding, &mut plan.per_room);
                return Ok(());
            };
            if similarity < threshold {
                stay(&mut plan.below_threshold, &mut plan.per_room);
            } else if room == old {
                stay(&mut plan.kept, &mut plan.per_room);
            } else {
                *plan.per_room.entry(room.to_string()).or_default() += 1;
                plan.changes.push(RoomChange {
                    id: drawer.id.clone(),
                    from: old.clone(),
                    to: room.to_string(),
                    similarity,
                });
            }
            Ok(())
        })?;
        Ok(plan)
    }

    /// Moves the drawers of a room plan; a drawer gone since the plan is
    /// skipped. Returns how many moved.
    pub fn apply_room_plan(&self, plan: &RoomPlan) -> EngineResult<u64> {
        let mut moved = 0;
        for change in &plan.changes {
            let room = Room::parse(&change.to)?;
            match self.move_drawer(&change.id, None, Some(room)) {
                Ok(_) => moved += 1,
                Err(EngineError::NotFound { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(moved)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mempalace_core::{Content, WorkspaceId};
    use mempalace_sqlite::{SqliteOptions, SqliteStore};

    use super::*;
    use crate::palace::NewDrawer;

    fn palace() -> (tempfile::TempDir, Palace) {
        let dir = tempfile::tempdir().unwrap();
        let store =
            SqliteStore::open(&dir.path().join("p.db"), SqliteOptions { create: true, ..SqliteOptions::default() })
                .unwrap();
        (dir, Palace::new(Arc::new(store), WorkspaceId::default_workspace()))
    }

    fn add(palace: &Palace, wing: &str, room: &str, text: &str, source: Option<&str>) -> DrawerId {
        let outcome = palace
            .add_drawer(NewDrawer {
                wing: Wing::parse(wing).unwrap(),
                room: Room::parse(room).unwrap(),
                hall: None,
                content: Content::parse(text).unwrap(),
                memory_type: None,
                importance: None,
                confidence: None,
                source_file: source.map(str::to_string),
                added_by: "test".into(),
                tags: vec![],
            })
            .unwrap();
        outcome.id().clone()
    }

    #[test]
    fn renaming_a_wing_keeps_ids_moves_hidden_drawers_and_rekeys_tunnels() {
        let (_dir, palace) = palace();
        let a = add(&palace, "My-Project", "notes", "first note about the parser", None);
        let b = add(&palace, "My-Project", "notes", "second note about the lexer", None);
        add(&palace, "my_project", "notes", "already normalised", None);
        palace.delete_drawer(&b, crate::palace::DeleteMode::Soft { reason: None }).unwrap();
        let place = |w: &str, r: &str| Place { wing: Wing::parse(w).unwrap(), room: Room::parse(r).unwrap() };
        palace.create_tunnel(place("My-Project", "notes"), place("other", "x"), Some("l".into()), None).unwrap();

        let plan = palace.plan_wing_names().unwrap();
        assert_eq!(plan.renames.len(), 1);
        assert_eq!(
            (plan.renames[0].from.as_str(), plan.renames[0].drawers, plan.renames[0].merge),
            ("My-Project", 2, true)
        );
        let moved = palace.rename_wing("My-Project", &plan.renames[0].to).unwrap();
        assert_eq!(moved, Moved { drawers: 2, tunnels: 1 });
        assert_eq!(palace.drawer(&a).unwrap().wing.as_str(), "my_project");
        assert_eq!(palace.drawer(&b).unwrap().wing.as_str(), "my_project", "hidden drawers move too");
        assert_eq!(palace.status().unwrap().taxonomy.wings["my_project"].drawers, 2);
        let tunnels = palace.list_tunnels(None).unwrap();
        assert_eq!(tunnels.len(), 1);
        assert_eq!(tunnels[0].label.as_deref(), Some("l"));
        assert!(tunnels.iter().all(|t| t.a.wing.as_str() != "My-Project" && t.b.wing.as_str() != "My-Project"));
        assert!(palace.plan_wing_names().unwrap().renames.is_empty(), "idempotent");
    }

    #[test]
    fn a_wing_splits_by_the_claude_code_project_of_its_sources() {
        let (_dir, palace) = palace();
        add(&palace, "acme", "general", "existing acme drawer", None);
        let p = "/home/me/.claude/projects/-home-me-dev-acme/s1.jsonl";
        let q = "/home/me/.claude/projects/-home-me-dev-billing-api/s2.jsonl";
        let moved = add(&palace, "claude", "technical", "acme talk", Some(p));
        add(&palace, "claude", "technical", "billing talk", Some(q));
        add(&palace, "claude", "technical", "billing again", Some(q));
        add(&palace, "claude", "general", "no source", None);
        let plan = palace.plan_wing_split(&Wing::parse("claude").unwrap()).unwrap();
        assert_eq!(plan.unresolved, 1);
        let summary: Vec<(&str, &str, How, u64)> =
            plan.projects.iter().map(|p| (p.key.as_str(), p.target.as_str(), p.how, p.drawers)).collect();
        assert_eq!(
            summary,
            vec![
                ("-home-me-dev-billing-api", "billing_api", How::Derived, 2),
                ("-home-me-dev-acme", "acme", How::Existing, 1),
            ]
        );
        let targets: BTreeMap<String, Wing> =
            plan.projects.iter().map(|p| (p.key.clone(), Wing::parse(&p.target).unwrap())).collect();
        let report = palace.apply_wing_split(&Wing::parse("claude").unwrap(), &targets).unwrap();
        assert_eq!((report.moved, report.skipped), (3, 1));
        assert_eq!(palace.drawer(&moved).unwrap().wing.as_str(), "acme");
        let again = palace.apply_wing_split(&Wing::parse("claude").unwrap(), &targets).unwrap();
        assert_eq!(again.moved, 0, "a second run has nothing left to move");
    }
}
