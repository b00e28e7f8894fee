//! The temporal knowledge graph (SPEC §8, seed 0 §6): adding facts (with
//! their entities), querying an entity as of a time, ending facts, the
//! timeline, statistics, and the facts extracted at ingestion.
//!
//! Facts expire by `valid_to`, never by deletion (only a reviewed, wrong
//! extraction is deleted). Dates accept `YYYY-MM-DD` or RFC 3339; a bare
//! date starts at 00:00 and ends at 23:59:59.999999.

use mempalace_core::extract::{Extraction, KnownNames, extract};
use mempalace_core::kg::{Entity, Triple, entity_id, normalize_entity_name};
use mempalace_core::time::{DayEdge, format_timestamp, parse_timestamp};
use mempalace_core::{Confidence, Drawer, DrawerId, Timestamp, ValidationError};
use mempalace_store::{Direction, KgStats, StoreError, TripleOutcome};
use serde_json::Map;

use crate::error::{EngineError, EngineResult};
use crate::palace::Palace;

/// Entities per workspace (seed 0 §6).
pub const DEFAULT_MAX_ENTITIES: u64 = 5_000;
/// Triples per workspace (seed 0 §6).
pub const DEFAULT_MAX_TRIPLES: u64 = 50_000;

/// What [`Palace::kg_supersede`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Superseded {
    /// The successor fact (new or already current).
    pub triple_id: String,
    /// How many old facts ended (0: it was an add).
    pub ended: usize,
    /// The boundary used.
    pub boundary: Timestamp,
}

/// A fact as queries return it: names, not ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// The fact's id.
    pub id: String,
    /// "outgoing" when the queried entity is the subject, "incoming" otherwise.
    pub direction: &'static str,
    /// Subject name.
    pub subject: String,
    /// Relation.
    pub predicate: String,
    /// Object name.
    pub object: String,
    /// Start.
    pub valid_from: Option<Timestamp>,
    /// End (`None`: current).
    pub valid_to: Option<Timestamp>,
    /// Whether it holds now.
    pub current: bool,
    /// Confidence.
    pub confidence: f64,
    /// Drawer it was extracted from.
    pub source_drawer_id: Option<DrawerId>,
}

/// Normalises a predicate: lowercase, spaces to `_` ("works at" → "works_at").
pub fn normalize_predicate(predicate: &str) -> Result<String, ValidationError> {
    let normalized = normalize_entity_name(predicate);
    if normalized.is_empty() || normalized.chars().count() > 128 {
        return Err(ValidationError::BadName {
            what: "predicate",
            value: predicate.to_string(),
            reason: "use a short relation such as uses, owns, works_at (1–128 characters)".into(),
        });
    }
    Ok(normalized)
}

fn check_name(what: &'static str, name: &str) -> Result<String, ValidationError> {
    let trimmed = name.trim();
    if trimmed.is_empty() || trimmed.chars().count() > 128 || trimmed.contains('\0') {
        return Err(ValidationError::BadName {
            what,
            value: name.to_string(),
            reason: "an entity name has 1–128 characters and no NUL".into(),
        });
    }
    Ok(trimmed.to_string())
}

/// Parses an optional date for a validity window.
pub fn parse_date(text: Option<&str>, what: &'static str, edge: DayEdge) -> Result<Option<Timestamp>, ValidationError> {
    text.filter(|t| !t.trim().is_empty()).map(|t| parse_timestamp(t, what, edge)).transpose()
}

impl Palace {
    fn entity_record(&self, name: &str, kind: &str) -> Entity {
        Entity {
            workspace_id: self.workspace().clone(),
            id: entity_id(name),
            name: name.to_string(),
            entity_type: kind.to_string(),
            properties: Map::new(),
            embedding: None,
            created_at: self.now(),
        }
    }

    fn check_kg_limits(&self, new_entities: u64, new_triples: u64) -> EngineResult<()> {
        if new_entities == 0 && new_triples == 0 {
            return Ok(());
        }
        let stats = self.store().kg_stats(self.workspace())?;
        if stats.entities + new_entities > self.kg_limits().0 {
            return Err(StoreError::Limit {
                workspace: self.workspace().to_string(),
                what: "entities",
                limit: self.kg_limits().0,
            }
            .into());
        }
        if stats.triples + new_triples > self.kg_limits().1 {
            return Err(StoreError::Limit {
                workspace: self.workspace().to_string(),
                what: "triples",
                limit: self.kg_limits().1,
            }
            .into());
        }
        Ok(())
    }

    /// Adds a fact, creating its entities. An identical open fact returns
    /// the existing id.
    #[allow(clippy::too_many_arguments)]
    pub fn kg_add(
        &self,
        subject: &str,
        predicate: &str,
        object: &str,
        valid_from: Option<Timestamp>,
        valid_to: Option<Timestamp>,
        confidence: Option<f64>,
        source_drawer_id: Option<DrawerId>,
        source: Option<String>,
    ) -> EngineResult<TripleOutcome> {
        let subject = check_name("subject", subject)?;
        let object = check_name("object", object)?;
        let predicate = normalize_predicate(predicate)?;
        Triple::check_interval(valid_from, valid_to)?;
        let confidence = Confidence::new(confidence.unwrap_or(1.0))?;
        // A start given for a fact that is already current is never dropped
        // in silence: it dates an undated fact, and one that would move a
        // known start earlier is refused with what to do instead.
        let mut undated: Option<Triple> = None;
        if valid_to.is_none()
            && let Some(start) = valid_from
            && let Some(current) = self.current_triple(&subject, &predicate, &object)?
        {
            match current.valid_from {
                None => undated = Some(current),
                Some(known) if start < known => {
                    return Err(EngineError::Conflict(format!(
                        "{subject} → {predicate} → {object} is current since {}; an earlier start would rewrite \
                             it: end it first (`kg invalidate`) and add it again, or delete it (`kg delete {}`)",
                        fact_time(Some(&known)).unwrap_or_default(),
                        current.id
                    )));
                }
                Some(_) => return Ok(TripleOutcome::Existing(current.id)),
            }
        }
        let entities = [self.entity_record(&subject, "unknown"), self.entity_record(&object, "unknown")];
        // An alias name stands for its canonical entity (the store skips
        // adding the alias itself).
        let ids: Vec<String> = self.canonical_entity_ids(entities.iter().map(|e| e.id.clone()).collect())?;
        let known = self.store().entities_by_id(self.workspace(), &ids)?.len() as u64;
        self.check_kg_limits(2 - known.min(2) - u64::from(ids[0] == ids[1] && known == 0), 1)?;
        self.store().add_entities(&entities)?;
        let triple = Triple {
            workspace_id: self.workspace().clone(),
            id: Triple::make_id(&ids[0], &predicate, &ids[1], valid_from.as_ref()),
            subject: ids[0].clone(),
            predicate,
            object: ids[1].clone(),
            valid_from,
            valid_to,
            confidence,
            source_drawer_id: source_drawer_id.or_else(|| undated.as_ref().and_then(|u| u.source_drawer_id.clone())),
            source: source.or_else(|| undated.as_ref().and_then(|u| u.source.clone())),
            created_at: self.now(),
        };
        let Some(old) = undated else { return Ok(self.store().add_triple(&triple)?) };
        // Dating an undated fact: the dated one first, then the undated one
        // goes (a crash between leaves both, never neither).
        let old_id = old.id.clone();
        self.store().invalidate_triples(
            self.workspace(),
            &triple.subject,
            &triple.predicate,
            &triple.object,
            self.now(),
        )?;
        let added = self.store().add_triple(&triple)?;
        self.store().delete_triple(self.workspace(), &old_id)?;
        Ok(TripleOutcome::Dated { id: added.id().to_string(), replaced: old_id })
    }

    /// The current fact `subject predicate object`, if any.
    fn current_triple(&self, subject: &str, predicate: &str, object: &str) -> EngineResult<Option<Triple>> {
        let (subject, object) = (self.canonical_entity_id(subject)?, self.canonical_entity_id(object)?);
        Ok(self
            .store()
            .triples_about(self.workspace(), &subject, Direction::Outgoing)?
            .into_iter()
            .find(|t| t.predicate == predicate && t.object == object && t.valid_to.is_none()))
    }

    /// Ends the current fact `subject predicate object` (default: now).
    /// Returns how many facts ended (0 when none was current).
    pub fn kg_invalidate(
        &self,
        subject: &str,
        predicate: &str,
        object: &str,
        ended: Option<Timestamp>,
    ) -> EngineResult<usize> {
        let predicate = normalize_predicate(predicate)?;
        let ended = ended.unwrap_or_else(|| self.now());
        // An end before the fact began would invert its window: refused
        // with the start, never clamped in silence.
        if let Some(current) = self.current_triple(subject, &predicate, object)?
            && let Some(start) = current.valid_from
            && ended < start
        {
            return Err(EngineError::Conflict(format!(
                "ended: {} is before the fact began ({}); give an end on or after its start",
                fact_time(Some(&ended)).unwrap_or_default(),
                fact_time(Some(&start)).unwrap_or_default()
            )));
        }
        Ok(self.store().invalidate_triples(
            self.workspace(),
            &entity_id(subject),
            &predicate,
            &entity_id(object),
            ended,
        )?)
    }

    /// Replaces the current fact `subject predicate old_object` by
    /// `subject predicate new_object` at one boundary `at` (default now):
    /// the old fact ends just before it and the new one starts at it, so a
    /// point-in-time query at the boundary sees only the new value. Without
    /// a current old fact this is an add. A boundary before the old fact
    /// began is refused (it would invert the old window).
    pub fn kg_supersede(
        &self,
        subject: &str,
        predicate: &str,
        old_object: &str,
        new_object: &str,
        at: Option<Timestamp>,
    ) -> EngineResult<Superseded> {
        let predicate_key = normalize_predicate(predicate)?;
        let old_object = check_name("old_object", old_object)?;
        let boundary = at.unwrap_or_else(|| self.now());
        let old = self.current_triple(subject, &predicate_key, &old_object)?;
        if let Some(old) = &old
            && let Some(start) = old.valid_from
            && boundary <= start
        {
            return Err(EngineError::Conflict(format!(
                "at: {} is not after the old fact's start ({}); an inverted window would hide it from every query",
                fact_time(Some(&boundary)).unwrap_or_default(),
                fact_time(Some(&start)).unwrap_or_default()
            )));
        }
        // The successor first: a crash between the two steps leaves both
        // current (visible, nothing lost), never neither.
        let added =
            self.kg_add(subject, predicate, new_object, Some(boundary), None, None, None, Some("supersede".into()))?;
        let ended = match &old {
            Some(_) if entity_id(&old_object) != entity_id(new_object) => self.store().invalidate_triples(
                self.workspace(),
                &entity_id(subject),
                &predicate_key,
                &entity_id(&old_object),
                mempalace_core::time::just_before(boundary),
            )?,
            _ => 0,
        };
        Ok(Superseded { triple_id: added.id().to_string(), ended, boundary })
    }

    fn facts(&self, triples: Vec<Triple>, about: Option<&str>) -> EngineResult<Vec<Fact>> {
        let mut ids: Vec<String> = triples.iter().flat_map(|t| [t.subject.clone(), t.object.clone()]).collect();
        ids.sort();
        ids.dedup();
        let names: std::collections::HashMap<String, String> =
            self.store().entities_by_id(self.workspace(), &ids)?.into_iter().map(|e| (e.id, e.name)).collect();
        let now = self.now();
        Ok(triples
            .into_iter()
            .map(|t| Fact {
                direction: if Some(t.subject.as_str()) == about || about.is_none() { "outgoing" } else { "incoming" },
                subject: names.get(&t.subject).cloned().unwrap_or_else(|| t.subject.clone()),
                predicate: t.predicate.clone(),
                object: names.get(&t.object).cloned().unwrap_or_else(|| t.object.clone()),
                current: t.valid_to.is_none_or(|to| to >= now) && t.valid_from.is_none_or(|from| from <= now),
                valid_from: t.valid_from,
                valid_to: t.valid_to,
                confidence: t.confidence.get(),
                source_drawer_id: t.source_drawer_id.clone(),
                id: t.id,
            })
            .collect())
    }

    /// Facts about an entity, optionally only those that held at `as_of`.
    /// An alias name finds its canonical entity's facts.
    pub fn kg_query(&self, entity: &str, as_of: Option<Timestamp>, direction: Direction) -> EngineResult<Vec<Fact>> {
        let id = self.canonical_entity_id(entity)?;
        let mut triples = self.store().triples_about(self.workspace(), &id, direction)?;
        if let Some(at) = as_of {
            triples.retain(|t| t.holds_at(&at));
        }
        self.facts(triples, Some(&id))
    }

    /// Every fact about an entity (or the whole graph) in time order; an
    /// alias name finds its canonical entity's facts.
    pub fn kg_timeline(&self, entity: Option<&str>) -> EngineResult<Vec<Fact>> {
        let about = entity.map(|name| self.canonical_entity_id(name)).transpose()?;
        let triples = match &about {
            Some(id) => self.store().triples_about(self.workspace(), id, Direction::Both)?,
            None => {
                let mut all = self.store().triples(self.workspace())?;
                all.sort_by(|a, b| a.valid_from.cmp(&b.valid_from).then(a.created_at.cmp(&b.created_at)));
                all
            }
        };
        self.facts(triples, about.as_deref())
    }

    /// Counts of the graph.
    pub fn kg_stats(&self) -> EngineResult<KgStats> {
        Ok(self.store().kg_stats(self.workspace())?)
    }

    /// Deletes one fact (reviewing a wrong extraction).
    pub fn kg_delete(&self, id: &str) -> EngineResult<()> {
        if self.store().delete_triple(self.workspace(), id)? {
            Ok(())
        } else {
            Err(EngineError::NotFound { what: "fact", id: id.to_string() })
        }
    }

    /// Runs the extractor over a drawer's text: names its entities on the
    /// drawer (before it is stored). Returns the extraction for
    /// [`Palace::record_extraction`] after the drawer is stored.
    pub(crate) fn extract_for(&self, drawer: &mut Drawer, known: &KnownNames) -> Extraction {
        let extraction = extract(drawer.content.as_str(), known, Some(drawer.wing.as_str()));
        drawer.entities = extraction.entities.iter().map(|e| e.name.clone()).collect();
        drawer.entity_count = drawer.entities.len() as u32;
        drawer.triple_count = extraction.triples.len() as u32;
        extraction
    }

    /// Stores what the extractor found in a stored drawer: entities, and
    /// facts dated by the drawer (its content date, else its filing time),
    /// each citing the drawer. A switch ends the old fact first. Limits are
    /// respected: facts over the limit are skipped with a warning, never
    /// failing the ingestion.
    pub(crate) fn record_extraction(&self, drawer: &Drawer, extraction: &Extraction) -> EngineResult<()> {
        let entities: Vec<Entity> =
            extraction.entities.iter().map(|e| self.entity_record(&e.name, e.kind.as_str())).collect();
        let ids: Vec<String> = entities.iter().map(|e| e.id.clone()).collect();
        let known = self.store().entities_by_id(self.workspace(), &ids)?.len() as u64;
        let new_entities = (entities.len() as u64).saturating_sub(known);
        if let Err(error) = self.check_kg_limits(new_entities, extraction.triples.len() as u64) {
            tracing::warn!(%error, drawer = %drawer.id, "knowledge-graph limit reached; extraction skipped");
            return Ok(());
        }
        self.store().add_entities(&entities)?;
        let when = drawer
            .content_date
            .as_deref()
            .and_then(|d| parse_timestamp(d, "content_date", DayEdge::Start).ok())
            .unwrap_or(drawer.filed_at);
        for fact in &extraction.triples {
            if let Some(old) = &fact.replaces {
                let ended = when;
                self.store().invalidate_triples(
                    self.workspace(),
                    &entity_id(&fact.subject),
                    &fact.predicate,
                    &entity_id(old),
                    ended,
                )?;
            }
            let subject = entity_id(&fact.subject);
            let object = entity_id(&fact.object);
            let triple = Triple {
                workspace_id: self.workspace().clone(),
                id: Triple::make_id(&subject, &fact.predicate, &object, Some(&when)),
                subject,
                predicate: fact.predicate.clone(),
                object,
                valid_from: Some(when),
                valid_to: None,
                confidence: Confidence::new(0.7).expect("0.7 is a confidence"),
                source_drawer_id: Some(drawer.id.clone()),
                source: Some("extraction".into()),
                created_at: self.now(),
            };
            self.store().add_triple(&triple)?;
        }
        Ok(())
    }
}

/// Renders a timestamp for facts (RFC 3339), `None` as null.
pub fn fact_time(value: Option<&Timestamp>) -> Option<String> {
    value.map(format_timestamp)
}
