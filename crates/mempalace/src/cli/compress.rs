//! `compress`: AAAK summaries of drawers (the Python MemPalace's AAAK
//! dialect, `mempalace_core::aaak`), with the token estimate before and
//! after. A run keeps each summary in its drawer's context under `aaak`
//! (the engine's `compress_drawers`: text, id and place never change); a
//! dry run prints every summary and stores nothing. Entity codes come from
//! `--config`, else `./entities.json`, else `entities.json` beside the
//! palace (`{"entities": {"Alice": "ALC"}}`).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Args;
use mempalace_core::aaak::{Dialect, tokens_from_chars};
use mempalace_engine::Palace;
use serde_json::Value;

use super::UserError;
use crate::output;
use crate::settings::Settings;

/// `compress`.
#[derive(Debug, Args)]
pub struct CompressArgs {
    /// Wing to compress (default: all wings).
    #[arg(long)]
    wing: Option<String>,
    /// Print each summary; store nothing.
    #[arg(long)]
    dry_run: bool,
    /// Entity config JSON (e.g. entities.json): {"entities": {"Full Name": "CODE"}}.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// Reads an entity config into (name, code) pairs.
fn load_entities(path: &Path) -> Result<Vec<(String, String)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading the entity config {}", path.display()))?;
    let value: Value = serde_json::from_str(&text).map_err(|error| {
        UserError(format!(
            "{} is not valid JSON ({error}); expected {{\"entities\": {{\"Alice\": \"ALC\"}}}}",
            path.display()
        ))
    })?;
    let Some(entities) = value.get("entities") else { return Ok(Vec::new()) };
    let Some(map) = entities.as_object() else {
        return Err(UserError(format!("{}: \"entities\" must map full names to codes", path.display())).into());
    };
    map.iter()
        .map(|(name, code)| match code.as_str() {
            Some(code) => Ok((name.clone(), code.to_string())),
            None => Err(UserError(format!("{}: the code of {name:?} must be a string", path.display())).into()),
        })
        .collect()
}

/// `1234567` → `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Runs the command.
pub fn run(palace: &Palace, settings: &Settings, args: CompressArgs) -> Result<()> {
    let config = match &args.config {
        Some(path) if !path.is_file() => {
            return Err(UserError(format!("--config {} is not a file; give an entities.json", path.display())).into());
        }
        Some(path) => Some(path.clone()),
        None => {
            let beside_palace =
                settings.database_url.is_none().then(|| settings.palace_file.parent().map(|d| d.join("entities.json")));
            [Some(PathBuf::from("entities.json")), beside_palace.flatten()].into_iter().flatten().find(|p| p.is_file())
        }
    };
    let dialect = match &config {
        Some(path) => {
            let dialect = Dialect::new(load_entities(path)?);
            output::line(format!("  Loaded entity config: {}", path.display()))?;
            dialect
        }
        None => Dialect::default(),
    };
    let in_wing = args.wing.as_ref().map(|w| format!(" in wing '{w}'")).unwrap_or_default();
    let summaries = palace.compress_drawers(args.wing.as_deref(), &dialect, !args.dry_run)?;
    if summaries.is_empty() {
        output::line(format!("\n  No drawers found{in_wing}."))?;
        return Ok(());
    }
    output::line(format!("\n  Compressing {} drawers{in_wing}...\n", summaries.len()))?;
    let (mut original, mut compressed) = (0_u64, 0_u64);
    for summary in &summaries {
        original += summary.stats.original_chars;
        compressed += summary.stats.summary_chars;
        if args.dry_run {
            let source = summary
                .source_file
                .as_deref()
                .map(|s| Path::new(s).file_name().map_or(s.to_string(), |n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "?".into());
            output::line(format!("  [{}/{}] {source}", summary.wing, summary.room))?;
            output::line(format!(
                "    {}t -> {}t ({:.1}x)",
                summary.stats.original_tokens, summary.stats.summary_tokens, summary.stats.ratio
            ))?;
            output::line(format!("    {}\n", summary.aaak))?;
        }
    }
    if !args.dry_run {
        let written = summaries.iter().filter(|s| s.stored).count();
        output::line(format!(
            "  Stored {} AAAK summaries in the drawers' context (key `aaak`; {} were already current); drawer texts are unchanged.",
            written,
            summaries.len() - written
        ))?;
    }
    let ratio = original as f64 / compressed.max(1) as f64;
    output::line(format!(
        "  Total: {}t -> {}t ({ratio:.1}x compression)",
        thousands(tokens_from_chars(original)),
        thousands(tokens_from_chars(compressed))
    ))?;
    if args.dry_run {
        output::line("  (dry run -- nothing stored)")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped_like_python() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
