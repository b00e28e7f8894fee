//! A project's `mempalace.yaml`: its wing and its rooms.
//!
//! The file format is the Python MemPalace's, so projects set up with it
//! keep working: a `wing` and a list of `rooms`, each with a `name`, a
//! `description` and `keywords`. This module proposes rooms from folder
//! names and renders the file; reading it (and assigning files to rooms) is
//! the miner's job.

/// One room of a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomRule {
    /// Room name.
    pub name: String,
    /// What goes there.
    pub description: String,
    /// Words that route a file to this room.
    pub keywords: Vec<String>,
}

/// The content of `mempalace.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectConfig {
    /// Default wing for the project's drawers.
    pub wing: String,
    /// Rooms; the last is normally `general`.
    pub rooms: Vec<RoomRule>,
}

/// Folder names that never become rooms (dependencies, build output, VCS).
pub const SKIPPED_FOLDERS: &[&str] = &[
    "node_modules",
    "target",
    "build",
    "dist",
    "out",
    "vendor",
    "venv",
    "env",
    "__pycache__",
    "coverage",
    "bin",
    "obj",
    "tmp",
    "temp",
    "logs",
];

/// Well-known folder names and the room they stand for.
const FOLDER_ROOMS: &[(&str, &str)] = &[
    ("docs", "documentation"),
    ("doc", "documentation"),
    ("documentation", "documentation"),
    ("wiki", "documentation"),
    ("client", "frontend"),
    ("frontend", "frontend"),
    ("web", "frontend"),
    ("ui", "frontend"),
    ("app", "frontend"),
    ("server", "backend"),
    ("backend", "backend"),
    ("api", "backend"),
    ("src", "source"),
    ("lib", "source"),
    ("test", "testing"),
    ("tests", "testing"),
    ("spec", "testing"),
    ("scripts", "scripts"),
    ("tools", "scripts"),
    ("config", "configuration"),
    ("conf", "configuration"),
    ("deploy", "deployment"),
    ("infra", "deployment"),
    ("ops", "deployment"),
    ("notes", "notes"),
    ("design", "design"),
    ("research", "research"),
];

/// The room a top-level folder proposes, or `None` for folders that hold
/// no memories (hidden, dependencies, build output).
pub fn room_for_folder(folder: &str) -> Option<String> {
    let lower = folder.trim().to_lowercase();
    if lower.is_empty() || lower.starts_with('.') || SKIPPED_FOLDERS.contains(&lower.as_str()) {
        return None;
    }
    if let Some((_, room)) = FOLDER_ROOMS.iter().find(|(name, _)| *name == lower) {
        return Some((*room).to_string());
    }
    let room: String = lower
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .collect::<String>()
        .split('_')
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    (!room.is_empty()).then_some(room)
}

impl ProjectConfig {
    /// Proposes a config from the project's wing and its top-level folder
    /// names: one room per distinct room name, then `general`.
    pub fn propose(wing: &str, folders: &[String]) -> Self {
        let mut rooms: Vec<RoomRule> = Vec::new();
        let mut sorted: Vec<&String> = folders.iter().collect();
        sorted.sort();
        for folder in sorted {
            let Some(name) = room_for_folder(folder) else { continue };
            if let Some(room) = rooms.iter_mut().find(|room| room.name == name) {
                let keyword = folder.to_lowercase();
                if !room.keywords.contains(&keyword) {
                    room.keywords.push(keyword);
                }
                continue;
            }
            let mut keywords = vec![name.clone()];
            let folder_keyword = folder.to_lowercase();
            if folder_keyword != name {
                keywords.push(folder_keyword);
            }
            rooms.push(RoomRule { description: format!("Files from {folder}/"), name, keywords });
        }
        rooms.retain(|room| room.name != "general");
        rooms.push(RoomRule {
            name: "general".to_string(),
            description: "Files that don't fit other rooms".to_string(),
            keywords: Vec::new(),
        });
        Self { wing: wing.to_string(), rooms }
    }

    /// Renders the YAML text. Strings are written as JSON strings, which
    /// YAML reads verbatim whatever they contain.
    pub fn to_yaml(&self) -> String {
        let quote = |text: &str| serde_json::Value::String(text.to_string()).to_string();
        let mut out = format!("wing: {}\nrooms:\n", quote(&self.wing));
        for room in &self.rooms {
            let keywords: Vec<String> = room.keywords.iter().map(|k| quote(k)).collect();
            out.push_str(&format!(
                "- name: {}\n  description: {}\n  keywords: [{}]\n",
                quote(&room.name),
                quote(&room.description),
                keywords.join(", ")
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_map_to_rooms_and_noise_is_skipped() {
        assert_eq!(room_for_folder("docs").as_deref(), Some("documentation"));
        assert_eq!(room_for_folder("Client").as_deref(), Some("frontend"));
        assert_eq!(room_for_folder("Lab Notes-2024").as_deref(), Some("lab_notes_2024"));
        assert_eq!(room_for_folder(".git"), None);
        assert_eq!(room_for_folder("node_modules"), None);
    }

    #[test]
    fn proposals_merge_synonyms_and_end_with_general() {
        let folders = vec!["docs".to_string(), "doc".into(), "target".into(), "general".into(), "api".into()];
        let config = ProjectConfig::propose("my_project", &folders);
        let names: Vec<&str> = config.rooms.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, vec!["backend", "documentation", "general"]);
        assert_eq!(config.rooms[1].keywords, vec!["documentation", "doc", "docs"]);
    }

    #[test]
    fn yaml_quotes_every_string() {
        let config = ProjectConfig::propose("we: \"odd\"", &["docs".to_string()]);
        let yaml = config.to_yaml();
        assert!(yaml.starts_with("wing: \"we: \\\"odd\\\"\"\nrooms:\n"), "{yaml}");
        assert!(
            yaml.contains("- name: \"general\"\n  description: \"Files that don't fit other rooms\"\n  keywords: []\n")
        );
    }
}
