//! Extracted memories (seed 4): decisions about what a conversation teaches,
//! made against the memories the palace already holds, then applied.
//!
//! A memory is a drawer in wing [`MEMORY_WING`], room = its entity type,
//! holding its observation verbatim, with `context.memory` = `{entity_type,
//! entity_name, scope, extracted_by, source}`. A **user** memory is owned by
//! its user (`owner_user_id`: only they see it) when the conversation names
//! one; a **workspace** memory is owned by no one. An update files the new
//! observation and marks the old drawer superseded by it; a deletion marks
//! the old drawer invalidated with the reason. Nothing is ever removed.
//!
//! The model path asks the palace's LLM ([`mempalace_core::prompts`]); when
//! there is none, or it fails, [`mempalace_core::memory::extract_by_rules`]
//! decides, and the report says which path ran and why.

use mempalace_core::llm::{Llm, Task, read_json};
use mempalace_core::memory::{Decision, EntityType, ExistingMemory, MemoryScope, NewMemory, Turn, extract_by_rules};
use mempalace_core::prompts::{check_extraction, extract_request};
use mempalace_core::{Drawer, DrawerId, DrawerStatus, MemoryType, Room, Wing};
use mempalace_store::DrawerFilter;
use serde_json::{Map, Value, json};

use crate::error::EngineResult;
use crate::ingest::{ChunkOutcome, IngestRequest};
use crate::palace::Palace;

/// The wing extracted memories are filed in.
pub const MEMORY_WING: &str = "memories";
/// Who files extracted memories (`added_by`).
pub const EXTRACTOR: &str = "extraction";
/// At most this many existing memories are shown to the model (the most
/// recent; seed 4 injects all of a user's memories, tens to hundreds).
pub const MAX_EXISTING: usize = 300;

/// A memory as stored: its drawer and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMemory {
    /// The drawer.
    pub drawer: Drawer,
    /// Type, name, observation, scope (id = the drawer id).
    pub memory: ExistingMemory,
}

/// Which extractor decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractPath {
    /// The language model (its model name).
    Model(String),
    /// The rules, and why the model was not used.
    Rules(String),
}

/// One applied decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// What was decided.
    pub decision: Decision,
    /// The drawer filed (add, update), when one was.
    pub filed: Option<DrawerId>,
    /// What happened, in a few words ("filed", "already known", "superseded m…").
    pub outcome: String,
}

/// What one extraction did.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractReport {
    /// Which extractor decided.
    pub path: ExtractPath,
    /// Decisions, applied unless this was a dry run.
    pub applied: Vec<Applied>,
    /// Items of the model's answer that broke a rule and were dropped.
    pub rejected: usize,
    /// Whether anything was written.
    pub dry_run: bool,
}

/// Options of one extraction.
#[derive(Debug, Clone, Default)]
pub struct ExtractOptions {
    /// The user the conversation is with (owner of user-scope memories).
    pub user: Option<String>,
    /// Where the conversation came from (a source file, a session id).
    pub source: Option<String>,
    /// The session it belongs to.
    pub session: Option<String>,
    /// Decide but write nothing.
    pub dry_run: bool,
    /// Use the rules even when a model is configured.
    pub rules_only: bool,
}

impl Palace {
    /// The memories `user` sees: their own and the workspace's (all
    /// unowned ones when `user` is `None`), active only, personal first,
    /// then the most recently filed.
    pub fn memories(&self, user: Option<&str>) -> EngineResult<Vec<StoredMemory>> {
        let filter = DrawerFilter {
            wings: vec![MEMORY_WING.into()],
            viewer: user.map(str::to_string),
            ..DrawerFilter::default()
        };
        let ids = self.store().filtered_ids(self.workspace(), &filter)?;
        let mut drawers = self.store().drawers(self.workspace(), &ids)?;
        drawers.retain(|d| {
            d.status == DrawerStatus::Active && (d.owner_user_id.is_none() || d.owner_user_id.as_deref() == user)
        });
        drawers.sort_by(|a, b| {
            let personal = |d: &Drawer| d.owner_user_id.is_some();
            personal(b).cmp(&personal(a)).then(b.filed_at.cmp(&a.filed_at)).then(a.id.cmp(&b.id))
        });
        Ok(drawers.into_iter().map(|drawer| StoredMemory { memory: memory_of(&drawer), drawer }).collect())
    }

    /// Extracts memories from a conversation and applies the decisions
    /// (see the module doc).
    pub fn extract_memories(&self, conversation: &[Turn], options: &ExtractOptions) -> EngineResult<ExtractReport> {
        let stored = self.memories(options.user.as_deref())?;
        let existing: Vec<ExistingMemory> = stored.iter().take(MAX_EXISTING).map(|m| m.memory.clone()).collect();
        let (path, decisions, rejected) = self.decide(conversation, &existing, options.rules_only);
        let mut report = ExtractReport { path, applied: Vec::new(), rejected, dry_run: options.dry_run };
        for decision in decisions {
            let applied = if options.dry_run {
                Applied { decision, filed: None, outcome: "not applied (dry run)".into() }
            } else {
                self.apply(decision, &stored, options, &report.path)?
            };
            report.applied.push(applied);
        }
        Ok(report)
    }

    fn decide(
        &self,
        conversation: &[Turn],
        existing: &[ExistingMemory],
        rules_only: bool,
    ) -> (ExtractPath, Vec<Decision>, usize) {
        if rules_only {
            return (ExtractPath::Rules("asked for the rules".into()), extract_by_rules(conversation, existing), 0);
        }
        decide(self.llm().map(|l| l.as_ref() as &dyn Llm), conversation, existing)
    }

    fn apply(
        &self,
        decision: Decision,
        stored: &[StoredMemory],
        options: &ExtractOptions,
        path: &ExtractPath,
    ) -> EngineResult<Applied> {
        let by_id = |id: &str| stored.iter().find(|m| m.drawer.id.as_str() == id);
        match &decision {
            Decision::Add(memory) => {
                let (filed, outcome) = self.file_memory(memory, options, path, None)?;
                Ok(Applied { decision, filed, outcome })
            }
            Decision::Update { id, observation } => {
                let Some(old) = by_id(id) else {
                    return Ok(Applied { decision, filed: None, outcome: "no such memory".into() });
                };
                let memory = NewMemory {
                    entity_type: old.memory.entity_type,
                    entity_name: old.memory.entity_name.clone(),
                    observation: observation.clone(),
                    scope: old.memory.scope,
                };
                let (filed, mut outcome) = self.file_memory(&memory, options, path, Some(&old.drawer.id))?;
                if let Some(new_id) = &filed {
                    self.supersede(&old.drawer.id, new_id, "updated by memory extraction")?;
                    outcome = format!("supersedes {}", old.drawer.id);
                }
                Ok(Applied { decision, filed, outcome })
            }
            Decision::Delete { id, reason } => {
                let Some(old) = by_id(id) else {
                    return Ok(Applied { decision, filed: None, outcome: "no such memory".into() });
                };
                let reason = format!("retracted: {reason}");
                self.store().set_drawer_status(
                    self.workspace(),
                    &old.drawer.id,
                    DrawerStatus::Invalidated,
                    Some(&reason),
                    self.now(),
                )?;
                Ok(Applied { decision, filed: None, outcome: "invalidated".into() })
            }
        }
    }

    fn file_memory(
        &self,
        memory: &NewMemory,
        options: &ExtractOptions,
        path: &ExtractPath,
        replaces: Option<&DrawerId>,
    ) -> EngineResult<(Option<DrawerId>, String)> {
        let mut request = IngestRequest::new(
            Wing::parse(MEMORY_WING)?,
            Room::parse(memory.entity_type.as_str())?,
            memory.observation.as_str(),
            EXTRACTOR,
        );
        request.memory_type = Some(memory_type_of(memory.entity_type));
        // Filed as decided: the decision already weighed the user's other
        // memories, and the near-duplicate check would find the very
        // conversation the memory was read from.
        request.raw = true;
        request.owner_user_id = match memory.scope {
            MemoryScope::User => options.user.clone(),
            MemoryScope::Workspace => None,
        };
        request.session_id = options.session.clone();
        request.source_file = options.source.clone();
        let mut context = Map::new();
        context.insert("entity_type".into(), json!(memory.entity_type.as_str()));
        context.insert("entity_name".into(), json!(memory.entity_name));
        context.insert("scope".into(), json!(memory.scope.as_str()));
        context.insert(
            "extracted_by".into(),
            json!(match path {
                ExtractPath::Model(model) => format!("llm:{model}"),
                ExtractPath::Rules(_) => "rules".to_string(),
            }),
        );
        if let Some(old) = replaces {
            context.insert("replaces".into(), json!(old.as_str()));
        }
        request.context.insert("memory".into(), Value::Object(context));
        let report = self.ingest(request)?;
        Ok(match report.chunks.first() {
            Some(ChunkOutcome::Filed(id)) | Some(ChunkOutcome::FiledNear { id, .. }) => {
                (Some(id.clone()), "filed".into())
            }
            Some(ChunkOutcome::AlreadyFiled(id)) => (None, format!("already known as {id}")),
            Some(ChunkOutcome::Duplicate { existing, .. }) => (None, format!("already known as {existing}")),
            None => (None, "nothing to file".into()),
        })
    }

    /// Marks `old` superseded by `new` with `reason` (kept, hidden from
    /// searches by default).
    pub fn supersede(&self, old: &DrawerId, new: &DrawerId, reason: &str) -> EngineResult<bool> {
        let Some(mut drawer) = self.store().drawer(self.workspace(), old)? else {
            return Ok(false);
        };
        drawer.status = DrawerStatus::Superseded;
        drawer.superseded_by = Some(new.clone());
        drawer.status_reason = Some(reason.to_string());
        drawer.updated_at = self.now();
        Ok(self.store().replace_drawer(&drawer)?)
    }
}

/// The decisions about `conversation` against `existing`: the model's
/// (checked) when `llm` is given and answers, else the rules'; with the
/// path taken and how many of the model's items were dropped.
pub fn decide(
    llm: Option<&dyn Llm>,
    conversation: &[Turn],
    existing: &[ExistingMemory],
) -> (ExtractPath, Vec<Decision>, usize) {
    let rules = |why: String| (ExtractPath::Rules(why), extract_by_rules(conversation, existing), 0);
    let Some(llm) = llm else {
        return rules("no language model is configured".into());
    };
    let request = extract_request(conversation, existing);
    let answer = llm.chat(&request).and_then(|response| {
        let value = read_json(&response.text)?;
        Ok((response.model, check_extraction(&value, existing)?))
    });
    match answer {
        Ok((model, checked)) => {
            let model = if model.is_empty() { llm.model_for(Task::Extract) } else { model };
            (ExtractPath::Model(model), checked.items.into_iter().flatten().collect(), checked.rejected)
        }
        Err(error) => {
            tracing::warn!(%error, "memory extraction fell back to the rules");
            rules(error.to_string())
        }
    }
}

/// What a memory drawer says, read back from its context (a drawer filed
/// by hand in the memories wing counts as a workspace fact named by its
/// room).
pub fn memory_of(drawer: &Drawer) -> ExistingMemory {
    let context = drawer.context.get("memory").and_then(Value::as_object);
    let text = |key: &str| context.and_then(|c| c.get(key)).and_then(Value::as_str);
    let entity_type = text("entity_type")
        .and_then(|t| t.parse::<EntityType>().ok())
        .or_else(|| drawer.room.as_str().parse().ok())
        .unwrap_or(EntityType::Fact);
    let scope = text("scope")
        .and_then(|s| s.parse::<MemoryScope>().ok())
        .unwrap_or(if drawer.owner_user_id.is_some() { MemoryScope::User } else { MemoryScope::Workspace });
    ExistingMemory {
        id: drawer.id.as_str().to_string(),
        entity_type,
        entity_name: text("entity_name").unwrap_or(drawer.room.as_str()).to_string(),
        observation: drawer.content.as_str().to_string(),
        scope,
    }
}

/// The drawer memory type an entity type is filed with.
pub fn memory_type_of(entity_type: EntityType) -> MemoryType {
    match entity_type {
        EntityType::Preference | EntityType::Style => MemoryType::Preference,
        EntityType::Goal => MemoryType::Task,
        EntityType::Fact | EntityType::Constraint | EntityType::Person => MemoryType::Fact,
    }
}
