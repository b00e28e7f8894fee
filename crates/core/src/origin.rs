//! Which project a transcript drawer came from, and which wing that
//! project belongs in — for splitting a machine-level transcript wing into
//! one wing per project (`mempalace wings split`, the Python MemPalace's
//! `wing_split.py`) and for the audit's "mixed wing" finding.
//!
//! The project key is the working directory the session ran in: the `cwd`
//! mined conversations keep in their context, else the encoded project
//! folder of a Claude Code transcript path
//! (`~/.claude/projects/-Users-me-dev-acme-app/<session>.jsonl`). A key
//! resolves to an existing wing whose name it ends with (longest match),
//! else to a wing named after the path below the last root folder (`dev`,
//! `projects`, `src`, `repos`, `code`, `work`, …), as in Python.
//!
//! Pure: the engine reads the drawers, the binary keeps the plan file.

use crate::name::normalize_wing_name;

/// Folders after which a project's own name starts.
const ROOT_MARKERS: &[&str] = &["dev", "projects", "claude-projects", "src", "repos", "code", "work"];

/// How a target wing was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// An existing wing the key ends with.
    Existing,
    /// A name made from the key.
    Derived,
}

impl How {
    /// `existing` or `derived` (the plan file's words).
    pub fn as_str(self) -> &'static str {
        match self {
            How::Existing => "existing",
            How::Derived => "derived",
        }
    }
}

/// The encoded project folder of a Claude Code transcript path
/// (`…/.claude/projects/<key>/…`), if the path has one.
pub fn claude_project_folder(source_file: &str) -> Option<&str> {
    let normalized_at = |marker: &str| source_file.find(marker).map(|at| at + marker.len());
    let start = normalized_at("/.claude/projects/").or_else(|| normalized_at("\\.claude\\projects\\"))?;
    let rest = &source_file[start..];
    let end = rest.find(['/', '\\'])?;
    (end > 0).then(|| &rest[..end])
}

/// The project key of a drawer: its `cwd`, else the Claude Code project
/// folder of its source path; `None` for drawers of no known project.
pub fn project_key(cwd: Option<&str>, source_file: Option<&str>) -> Option<String> {
    if let Some(cwd) = cwd.map(str::trim).filter(|cwd| !cwd.is_empty() && *cwd != "/") {
        return Some(cwd.trim_end_matches(['/', '\\']).to_string());
    }
    source_file.and_then(claude_project_folder).map(str::to_string)
}

/// The name a key stands for: a working directory's own folder (a Claude
/// Code worktree's project), or an encoded folder as it is.
fn key_name(key: &str) -> String {
    if !key.contains(['/', '\\']) {
        return key.to_string();
    }
    let path = key.replace('\\', "/");
    // `<project>/.claude/worktrees/<agent>` belongs to the project.
    let path = path.split("/.claude/worktrees/").next().unwrap_or(&path).to_string();
    path.rsplit('/').find(|part| !part.is_empty()).unwrap_or("").to_string()
}

/// The wing a project key goes to, and how it was found. `existing` lists
/// the palace's wings (without the wing being split).
pub fn resolve_target(key: &str, existing: &[String]) -> (String, How) {
    let name = key_name(key);
    let stripped = name.trim_matches('-');
    let lowered = stripped.to_lowercase();
    // A Claude Code worktree (`<project>--claude-worktrees-<agent>`) is its project.
    if let Some(marker) = lowered.find("-claude-worktrees-").filter(|at| *at > 0) {
        return resolve_target(stripped[..marker].trim_end_matches('-'), existing);
    }
    // A Codex worktree (`…-codex-worktrees-<hex id>-<project>`) names its project last.
    if let Some(at) = lowered.find("-codex-worktrees-") {
        let rest = &lowered[at + "-codex-worktrees-".len()..];
        if let Some(dash) = rest.find('-')
            && dash > 0
            && rest[..dash].bytes().all(|b| b.is_ascii_hexdigit())
            && dash + 1 < rest.len()
        {
            return resolve_target(&stripped[stripped.len() - (rest.len() - dash - 1)..], existing);
        }
    }
    let mut best: Option<&String> = None;
    for wing in existing {
        let normalized = normalize_wing_name(wing);
        for variant in [normalized.clone(), normalized.replace('_', "-")] {
            if variant.is_empty() {
                continue;
            }
            if (lowered == variant || lowered.ends_with(&format!("-{variant}")))
                && best.is_none_or(|b| variant.len() > normalize_wing_name(b).len())
            {
                best = Some(wing);
            }
        }
    }
    if let Some(wing) = best {
        return (wing.clone(), How::Existing);
    }
    // A Windows drive prefix (`C--`) goes; a hyphen inside a folder name
    // cannot be told from the encoder's separator, so the tail after the
    // last root folder is kept whole.
    let body = match stripped.as_bytes() {
        [drive, b'-', b'-', ..] if drive.is_ascii_alphabetic() => &stripped[3..],
        _ => stripped,
    };
    let segments: Vec<&str> = body.split('-').filter(|s| !s.is_empty()).collect();
    let tail: &[&str] = match segments.iter().rposition(|s| ROOT_MARKERS.contains(&s.to_lowercase().as_str())) {
        Some(at) => &segments[at + 1..],
        None if segments.len() > 2 && ["users", "home"].contains(&segments[0].to_lowercase().as_str()) => {
            &segments[2..]
        }
        None => &segments,
    };
    let derived = normalize_wing_name(&tail.join("_"));
    let derived = if derived.is_empty() { normalize_wing_name(body) } else { derived };
    (derived, How::Derived)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wings(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn keys_come_from_cwd_then_the_claude_projects_folder() {
        assert_eq!(project_key(Some("/home/me/dev/acme-app/"), Some("/x")).as_deref(), Some("/home/me/dev/acme-app"));
        assert_eq!(
            project_key(None, Some("/home/me/.claude/projects/-home-me-dev-acme/abc.jsonl")).as_deref(),
            Some("-home-me-dev-acme")
        );
        assert_eq!(project_key(Some(" "), Some("/notes/a.md")), None);
        assert_eq!(claude_project_folder("C:\\Users\\x\\.claude\\projects\\C--x\\s.jsonl"), Some("C--x"));
    }

    #[test]
    fn targets_resolve_like_python() {
        // Examples of wing_split.resolve_target's documentation.
        assert_eq!(resolve_target("p--acme-portal", &wings(&["portal", "crm"])), ("portal".into(), How::Existing));
        assert_eq!(resolve_target("P--org-invoices", &wings(&["invoices"])), ("invoices".into(), How::Existing));
        assert_eq!(resolve_target("-Users-me-dev-acme-app", &[]), ("acme_app".into(), How::Derived));
        assert_eq!(resolve_target("-home-me-notes", &[]), ("notes".into(), How::Derived));
        assert_eq!(resolve_target("-Users-me-dev-acme--claude-worktrees-bot", &[]), ("acme".into(), How::Derived));
        assert_eq!(resolve_target("-Users-x--codex-worktrees-1a2b-billing", &[]), ("billing".into(), How::Derived));
        // The longest existing match wins.
        assert_eq!(resolve_target("-u-dev-acme-app", &wings(&["app", "acme_app"])), ("acme_app".into(), How::Existing));
    }

    #[test]
    fn working_directories_resolve_by_their_folder() {
        assert_eq!(resolve_target("/home/me/dev/acme-app", &wings(&["acme_app"])), ("acme_app".into(), How::Existing));
        assert_eq!(resolve_target("/srv/x/Billing Service", &[]), ("billing_service".into(), How::Derived));
        assert_eq!(resolve_target("/home/me/acme/.claude/worktrees/agent-7", &[]), ("acme".into(), How::Derived));
    }
}
