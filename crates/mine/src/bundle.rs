//! The other files of chat-export bundles: what an unpacked Claude.ai,
//! ChatGPT or Google Takeout export holds beside its conversations.
//!
//! * Claude.ai `projects.json` — projects with their description, custom
//!   instructions (`prompt_template`) and knowledge documents (`docs`):
//!   [`claude_projects`].
//! * Claude.ai `memories.json` — what Claude remembers about the user
//!   (`conversations_memory`) and per project (`project_memories`, keyed by
//!   project uuid): [`claude_memories`].
//! * Account files (`users.json`, ChatGPT's `user.json`, feedback and
//!   sharing records) hold no conversation: [`companion`] names them so
//!   the miner reports why they are not filed.
//!
//! Pure: the caller reads the files.

use serde_json::Value;

/// A bundle file that is not a conversation export, by what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Companion {
    /// Claude.ai `projects.json`.
    ClaudeProjects,
    /// Claude.ai `memories.json`.
    ClaudeMemories,
    /// A file that holds no conversation; why it is not filed.
    NotConversations(&'static str),
}

/// Names a bundle's companion file from its name and shape; `None` for
/// anything else (a conversation export, or a file of unknown kind).
pub fn companion(file_name: &str, document: &Value) -> Option<Companion> {
    let first = match document {
        Value::Array(items) => items.first(),
        other => Some(other),
    };
    let has = |key: &str| first.is_some_and(|item| item.get(key).is_some());
    match file_name {
        "projects.json" if has("prompt_template") || has("docs") => Some(Companion::ClaudeProjects),
        "memories.json" if has("conversations_memory") || has("project_memories") => Some(Companion::ClaudeMemories),
        "users.json" if has("email_address") || has("full_name") => {
            Some(Companion::NotConversations("account details (name, email): not filed"))
        }
        "user.json" if has("email") || has("chatgpt_plus_user") => {
            Some(Companion::NotConversations("account details (email, plan): not filed"))
        }
        "message_feedback.json" => Some(Companion::NotConversations("ratings of answers, no conversation: not filed")),
        "shared_conversations.json" => {
            Some(Companion::NotConversations("links to shared conversations (their text is in conversations.json)"))
        }
        "model_comparisons.json" => {
            Some(Companion::NotConversations("side-by-side answer comparisons, no conversation: not filed"))
        }
        _ => None,
    }
}

/// A Claude.ai project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Project {
    /// Its uuid.
    pub uuid: String,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// Its custom instructions.
    pub prompt_template: Option<String>,
    /// When it was made.
    pub created_at: Option<String>,
    /// Its knowledge documents.
    pub docs: Vec<ProjectDoc>,
}

/// A document of a project's knowledge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectDoc {
    /// Its uuid (else its position).
    pub uuid: String,
    /// Its file name.
    pub filename: String,
    /// Its text.
    pub content: String,
    /// When it was added.
    pub created_at: Option<String>,
}

fn text_of(value: &Value) -> Option<String> {
    value.as_str().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string)
}

/// The projects of a Claude.ai `projects.json` and the number of records
/// left out (not an object, or neither a name nor any text).
pub fn claude_projects(document: &Value) -> (Vec<Project>, usize) {
    let items: Vec<&Value> = match document {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let (mut projects, mut skipped) = (Vec::new(), 0);
    for (index, item) in items.into_iter().enumerate() {
        if !item.is_object() {
            skipped += 1;
            continue;
        }
        let uuid = text_of(&item["uuid"]).unwrap_or_else(|| format!("project-{}", index + 1));
        let docs: Vec<ProjectDoc> = item["docs"]
            .as_array()
            .map(|docs| {
                docs.iter()
                    .enumerate()
                    .filter_map(|(n, doc)| {
                        let content = text_of(&doc["content"])?;
                        Some(ProjectDoc {
                            uuid: text_of(&doc["uuid"]).unwrap_or_else(|| format!("{uuid}-doc-{}", n + 1)),
                            filename: text_of(&doc["filename"]).unwrap_or_else(|| format!("document {}", n + 1)),
                            content,
                            created_at: text_of(&doc["created_at"]),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let project = Project {
            name: text_of(&item["name"]).unwrap_or_else(|| uuid.clone()),
            uuid,
            description: text_of(&item["description"]),
            prompt_template: text_of(&item["prompt_template"]),
            created_at: text_of(&item["created_at"]),
            docs,
        };
        if project.description.is_none() && project.prompt_template.is_none() && project.docs.is_empty() {
            // A project that holds nothing to remember (Claude.ai lists
            // empty starter projects too).
            skipped += 1;
            continue;
        }
        projects.push(project);
    }
    (projects, skipped)
}

/// Where a Claude.ai memory applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryScope {
    /// Every conversation (`conversations_memory`).
    Account,
    /// One project (`project_memories`), by uuid.
    Project(String),
}

/// One memory of a Claude.ai `memories.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountMemory {
    /// Where it applies.
    pub scope: MemoryScope,
    /// Its text, as Claude wrote it.
    pub text: String,
}

/// The memories of a Claude.ai `memories.json` (an array of records, or
/// one record), account memory first, then project memories by uuid; and
/// the number of records left out.
pub fn claude_memories(document: &Value) -> (Vec<AccountMemory>, usize) {
    let items: Vec<&Value> = match document {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let (mut memories, mut skipped) = (Vec::new(), 0);
    for item in items {
        let before = memories.len();
        if let Some(text) = text_of(&item["conversations_memory"]) {
            memories.push(AccountMemory { scope: MemoryScope::Account, text });
        }
        if let Some(projects) = item["project_memories"].as_object() {
            let mut keys: Vec<&String> = projects.keys().collect();
            keys.sort();
            for key in keys {
                if let Some(text) = text_of(&projects[key]) {
                    memories.push(AccountMemory { scope: MemoryScope::Project(key.clone()), text });
                }
            }
        }
        if memories.len() == before {
            skipped += 1;
        }
    }
    (memories, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn companions_are_recognised_by_name_and_shape() {
        let projects = json!([{"uuid": "p1", "name": "Kestrel", "prompt_template": "", "docs": []}]);
        assert_eq!(companion("projects.json", &projects), Some(Companion::ClaudeProjects));
        let memories = json!([{"conversations_memory": "likes tea", "project_memories": {}}]);
        assert_eq!(companion("memories.json", &memories), Some(Companion::ClaudeMemories));
        let users = json!([{"uuid": "u", "full_name": "A", "email_address": "a@example.com"}]);
        assert!(matches!(companion("users.json", &users), Some(Companion::NotConversations(_))));
        // A Slack users.json (id, name, profile) is not Claude.ai's.
        assert_eq!(companion("users.json", &json!([{"id": "U1", "name": "ana"}])), None);
        assert_eq!(companion("conversations.json", &json!([{"chat_messages": []}])), None);
        assert_eq!(companion("projects.json", &json!({"name": "x"})), None);
    }

    #[test]
    fn projects_keep_instructions_and_documents() {
        let document = json!([
            {"uuid": "p1", "name": "Kestrel arm", "description": "Robot arm work",
             "prompt_template": "Answer in metric units.", "created_at": "2025-03-01T10:00:00Z",
             "docs": [{"uuid": "d1", "filename": "torque.md", "content": "Max torque 40 Nm.", "created_at": "2025-03-02T10:00:00Z"},
                      {"filename": "empty.md", "content": "  "}]},
            {"uuid": "p2", "name": "How to use Claude", "description": "", "prompt_template": "", "docs": []},
            "garbage"
        ]);
        let (projects, skipped) = claude_projects(&document);
        assert_eq!(skipped, 2);
        assert_eq!(projects.len(), 1);
        let project = &projects[0];
        assert_eq!(project.name, "Kestrel arm");
        assert_eq!(project.prompt_template.as_deref(), Some("Answer in metric units."));
        assert_eq!(project.docs.len(), 1, "an empty document is left out");
        assert_eq!(project.docs[0].filename, "torque.md");
    }

    #[test]
    fn memories_account_then_projects() {
        let document = json!([{"conversations_memory": "Ana works on robot arms.",
            "project_memories": {"p2": "Uses ROS 2.", "p1": "Prefers metric.", "p3": ""},
            "account_uuid": "a"}, {"unrelated": true}]);
        let (memories, skipped) = claude_memories(&document);
        assert_eq!(skipped, 1);
        let scopes: Vec<&MemoryScope> = memories.iter().map(|m| &m.scope).collect();
        assert_eq!(
            scopes,
            vec![&MemoryScope::Account, &MemoryScope::Project("p1".into()), &MemoryScope::Project("p2".into())]
        );
    }
}
