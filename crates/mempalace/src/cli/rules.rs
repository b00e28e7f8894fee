//! `rules`: the shared-brain block for an agent instruction file
//! (CLAUDE.md, AGENTS.md, GEMINI.md, …), rendered for one agent identity
//! `host:harness:project` between the Python MemPalace's start and end
//! markers, so a later render can replace the block in place. Identity
//! components follow the Python rule (`^[a-z0-9][a-z0-9._-]*$`). The text
//! (`instructions/shared_brain_rules.md`) names our tools; there is no
//! light MCP server here, so `--mcp light` renders the full names and says
//! so in the block.

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::UserError;
use crate::output;

/// Tool names in the rules block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum McpShape {
    /// The full tool names (`mempalace_search`, …).
    Full,
    /// The Python MemPalace's light server (`palace_query`, …): not served here; the full names are used.
    Light,
}

/// `rules`.
#[derive(Debug, Args)]
pub struct RulesArgs {
    /// Stable machine label (lowercase), e.g. windows, mac, blade.
    #[arg(long)]
    host: String,
    /// Runtime family (lowercase), e.g. claude, codex, grok.
    #[arg(long)]
    harness: String,
    /// Example workspace/repo name (lowercase); the block tells the agent to compose host:harness:<project>.
    #[arg(long)]
    project: String,
    /// Tool names in the block: full (default) or light (not served here; renders the full names).
    #[arg(long, value_enum, default_value = "full")]
    mcp: McpShape,
}

const RULES: &str = include_str!("instructions/shared_brain_rules.md");
const MARKER_END: &str = "<!-- mempalace-shared-brain:end -->";

/// Checks one identity component (the Python rule `^[a-z0-9][a-z0-9._-]*$`
/// after trimming); returns it trimmed.
fn component<'a>(flag: &str, value: &'a str) -> Result<&'a str, UserError> {
    let value = value.trim();
    let mut chars = value.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(value)
    } else {
        Err(UserError(format!(
            "--{flag} must be a stable lowercase token like windows, grok, or mempalace (letters, digits, '.', '_', \
             '-'; no colons, no uppercase), not {value:?}"
        )))
    }
}

/// The rules block for one identity.
pub fn render_rules(host: &str, harness: &str, project: &str, mcp: McpShape) -> Result<String, UserError> {
    let (host, harness, project) =
        (component("host", host)?, component("harness", harness)?, component("project", project)?);
    let body = RULES.replace("<HOST>", host).replace("<HARNESS>", harness).replace("<PROJECT>", project);
    let start = format!(
        "<!-- mempalace-shared-brain:start (canonical source: mempalace repo integrations/shared/coordination-protocol.md \
         — edit there, re-render with `mempalace rules --host {host} --harness {harness} --project {project}`) -->"
    );
    let mut lines = vec![start, String::new()];
    if mcp == McpShape::Light {
        lines.push(
            "<!-- --mcp light: mempalace-rs has no light MCP server (palace_query / palace_exec / palace_coordinate); \
             this block uses the full tool names of `mempalace mcp serve` -->"
                .to_string(),
        );
        lines.push(String::new());
    }
    lines.push(body.trim_end_matches('\n').to_string());
    lines.push(String::new());
    lines.push(MARKER_END.to_string());
    Ok(lines.join("\n"))
}

/// Prints the rules block.
pub fn rules(args: RulesArgs) -> Result<()> {
    let block = render_rules(&args.host, &args.harness, &args.project, args.mcp)?;
    if args.mcp == McpShape::Light {
        output::note("--mcp light: mempalace-rs serves no light MCP server; the block uses the full tool names");
    }
    output::line(block)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_follow_the_python_rule() {
        assert_eq!(component("host", " mac-1.local_x ").unwrap(), "mac-1.local_x");
        for bad in ["", "Mac", "a:b", "-x", ".x", "a b"] {
            let error = component("host", bad).unwrap_err().to_string();
            assert!(error.starts_with("--host must be a stable lowercase token"), "{error}");
        }
    }

    #[test]
    fn the_block_is_wrapped_in_the_python_markers_and_names_our_tools() {
        let block = render_rules("mac", "claude", "mempalace", McpShape::Full).unwrap();
        assert!(block.starts_with("<!-- mempalace-shared-brain:start (canonical source:"), "{block}");
        assert!(block.contains("`mempalace rules --host mac --harness claude --project mempalace`) -->\n\n## "));
        assert!(block.ends_with("\n\n<!-- mempalace-shared-brain:end -->"));
        assert!(block.contains("mac:claude:<project>") && block.contains("mac:claude:mempalace"));
        assert!(!block.contains("<HOST>") && !block.contains("<PROJECT>"));
        let light = render_rules("mac", "claude", "mempalace", McpShape::Light).unwrap();
        assert!(light.contains("no light MCP server") && light.contains("mempalace_search"));
    }
}
