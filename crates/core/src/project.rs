//! A project's `mempalace.yaml`: its wing and its rooms.
//!
//! The file format is the Python MemPalace's, so projects set up with it
//! keep working: a `wing`, a list of `rooms`, each with a `name`, a
//! `description` and `keywords`, and `exclude_patterns`. This module
//! proposes rooms from folder names, renders the file, reads it back with a
//! YAML parser into strict structs (an unknown key is an error that names
//! it), and routes a file to a room.

/// One room of a project.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoomRule {
    /// Room name.
    pub name: String,
    /// What goes there.
    #[serde(default)]
    pub description: String,
    /// Words that route a file to this room.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub keywords: Vec<String>,
}

/// The content of `mempalace.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// Default wing for the project's drawers.
    pub wing: String,
    /// Rooms; the last is normally `general`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub rooms: Vec<RoomRule>,
    /// Paths the miner leaves out (gitignore syntax, relative to the
    /// project), on top of the `.gitignore` files.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub exclude_patterns: Vec<String>,
}

/// A list key written with no value (`rooms:`) reads as an empty list.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    use serde::Deserialize as _;
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

/// The names a project's config file may have, in the order they are
/// looked for (the Python MemPalace's, legacy `mempal` names included).
pub const CONFIG_FILE_NAMES: &[&str] = &["mempalace.yaml", "mempalace.yml", "mempal.yaml", "mempal.yml"];

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
        Self { wing: wing.to_string(), rooms, exclude_patterns: Vec::new() }
    }

    /// Reads a `mempalace.yaml` with a YAML parser: `wing` (required),
    /// `rooms` (each a `name`, with an optional `description` and
    /// `keywords`) and `exclude_patterns` (gitignore-style patterns, as the
    /// Python MemPalace reads them). Any other key is an error naming it
    /// and the keys accepted, with the line and column, so a typo never
    /// goes unnoticed.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut config: ProjectConfig = serde_saphyr::from_str(text).map_err(|error| error.to_string())?;
        if config.wing.trim().is_empty() {
            return Err("`wing` is empty; name the project's wing, e.g. `wing: lab_notes`".to_string());
        }
        config.rooms.retain(|room| !room.name.trim().is_empty());
        Ok(config)
    }

    /// The room for a file: a folder of its path named like a room or one
    /// of its keywords, else its file name containing one, else the room
    /// whose keywords occur most in its text, else `general`.
    pub fn room_for(&self, relative_path: &str, text: &str) -> String {
        let lower = relative_path.to_lowercase();
        let parts: Vec<&str> = lower.split(['/', '\\']).collect();
        let (folders, file) = parts.split_at(parts.len().saturating_sub(1));
        let names = |room: &RoomRule| -> Vec<String> {
            std::iter::once(room.name.to_lowercase()).chain(room.keywords.iter().map(|k| k.to_lowercase())).collect()
        };
        let candidates = self.rooms.iter().filter(|room| room.name != "general");
        for room in candidates.clone() {
            if folders.iter().any(|folder| names(room).iter().any(|n| n == folder)) {
                return room.name.clone();
            }
        }
        let file = file.first().copied().unwrap_or("");
        for room in candidates.clone() {
            if names(room).iter().any(|n| n.len() >= 3 && file.contains(n.as_str())) {
                return room.name.clone();
            }
        }
        let text = text.to_lowercase();
        let best = candidates
            .map(|room| {
                (
                    names(room)
                        .iter()
                        .filter(|n| n.len() >= 3)
                        .map(|n| text.matches(n.as_str()).count())
                        .sum::<usize>(),
                    room,
                )
            })
            .filter(|(score, _)| *score > 0)
            .max_by_key(|(score, _)| *score);
        best.map_or_else(|| "general".to_string(), |(_, room)| room.name.clone())
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
        if !self.exclude_patterns.is_empty() {
            let patterns: Vec<String> = self.exclude_patterns.iter().map(|p| quote(p)).collect();
            out.push_str(&format!("exclude_patterns: [{}]\n", patterns.join(", ")));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_round_trips_and_reads_mempalace_style() {
        let config = ProjectConfig::propose("lab_notes", &["docs".into(), "src".into()]);
        assert_eq!(ProjectConfig::parse(&config.to_yaml()).unwrap(), config);
        let handwritten = "# project\nwing: lab\nrooms:\n  - name: hardware\n    description: Robot parts # the arm\n    keywords:\n      - gripper\n      - 'servo, arm'\n      - servo\n  - name: general\n    keywords: []\nexclude_patterns: [\"*.log\"]\n";
        let parsed = ProjectConfig::parse(handwritten).unwrap();
        assert_eq!(parsed.wing, "lab");
        assert_eq!(parsed.rooms[0].description, "Robot parts", "an inline comment is not part of the value");
        assert_eq!(
            parsed.rooms[0].keywords,
            vec!["gripper", "servo, arm", "servo"],
            "a quoted comma is not a separator"
        );
        assert_eq!(parsed.exclude_patterns, vec!["*.log"]);
        assert_eq!(ProjectConfig::parse(&parsed.to_yaml()).unwrap(), parsed);
        let missing = ProjectConfig::parse("rooms:\n").unwrap_err();
        assert!(missing.contains("wing"), "{missing}");
        let unknown = ProjectConfig::parse("wing: lab\nroms: []\n").unwrap_err();
        assert!(unknown.contains("roms") && unknown.contains("rooms") && unknown.contains("line 2"), "{unknown}");
        assert!(ProjectConfig::parse("wing: [unclosed\n").is_err());
        assert_eq!(parsed.room_for("hardware/arm.md", ""), "hardware");
        assert_eq!(parsed.room_for("notes/gripper-test.md", ""), "hardware");
        assert_eq!(parsed.room_for("notes/x.md", "the servo and the servo"), "hardware");
        assert_eq!(parsed.room_for("notes/x.md", "nothing relevant"), "general");
    }

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
