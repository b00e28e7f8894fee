//! `migrate-from-python`: bring a Python MemPalace palace over.
//!
//! Reads the source files directly (see `mempalace-migrate`), writes the
//! records in batches that each commit on their own (an interrupted run is
//! finished by running it again: records already present are kept), gives
//! every drawer a vector of our embedder, and ends with a table comparing
//! source and destination counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;
use mempalace_engine::Palace;
use mempalace_migrate::python::ReadError;
use mempalace_migrate::{Converted, Source, convert, read};
use mempalace_store::PalaceRecord;
use serde_json::{Value, json};

use super::{Access, UserError, open_palace, with_embedder};
use crate::output;
use crate::settings::Settings;

/// Records written per transaction.
const BATCH: usize = 500;

/// `migrate-from-python`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The Python MemPalace folder (default ~/.mempalace): it holds palace/chroma.sqlite3,
    /// knowledge_graph.sqlite3, identity.txt and tunnels.json.
    #[arg(long, value_name = "DIR")]
    source: Option<PathBuf>,
    /// Print what would be brought over (counts per wing and room, facts, problems) and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn source_dir(args: &MigrateArgs, home: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = &args.source {
        return Ok(dir.clone());
    }
    match home {
        Some(home) => Ok(home.join(".mempalace")),
        None => Err(UserError("HOME is not set; pass --source DIR".into()).into()),
    }
}

fn report(source: &Source, converted: &Converted) -> Value {
    json!({
        "source": source.root.display().to_string(),
        "drawers": converted.drawers.len(),
        "drawers_read": source.drawers.len(),
        "wings": converted.counts,
        "closets_skipped": source.closets_skipped,
        "entities": converted.entities,
        "triples": converted.triples,
        "tunnels": converted.tunnels,
        "identity": converted.identity,
        "config_keys": source.config.as_ref().map(|c| c.keys().cloned().collect::<Vec<_>>()).unwrap_or_default(),
        "problems": source.problems.iter().chain(&converted.problems)
            .map(|p| json!({"place": p.place, "detail": p.detail})).collect::<Vec<_>>(),
    })
}

fn print_plan(value: &Value) -> Result<()> {
    output::line(format!("source: {}", value["source"].as_str().unwrap_or_default()))?;
    output::line(format!("drawers: {}", value["drawers"]))?;
    if let Some(wings) = value["wings"].as_object() {
        for (wing, rooms) in wings {
            let rooms = rooms.as_object().cloned().unwrap_or_default();
            let total: u64 = rooms.values().filter_map(Value::as_u64).sum();
            output::line(format!("  WING {wing}: {total}"))?;
            for (room, count) in rooms {
                output::line(format!("    {room:<28} {count}"))?;
            }
        }
    }
    output::line(format!(
        "knowledge graph: {} entities, {} facts; {} explicit tunnels; identity: {}; closets skipped (derived): {}",
        value["entities"],
        value["triples"],
        value["tunnels"],
        if value["identity"] == true { "yes" } else { "no" },
        value["closets_skipped"]
    ))?;
    let problems = value["problems"].as_array().cloned().unwrap_or_default();
    if problems.is_empty() {
        output::line("problems: none")?;
    } else {
        output::line(format!("problems: {}", problems.len()))?;
        for p in problems {
            output::line(format!("  {}: {}", p["place"].as_str().unwrap_or(""), p["detail"].as_str().unwrap_or("")))?;
        }
    }
    Ok(())
}

fn write(palace: &Palace, records: &[PalaceRecord], what: &str) -> Result<(u64, u64)> {
    let (mut inserted, mut existing) = (0, 0);
    for (index, batch) in records.chunks(BATCH).enumerate() {
        let counts = palace.import_batch(batch)?;
        inserted += counts.inserted;
        existing += counts.existing;
        let done = (index * BATCH + batch.len()).min(records.len());
        tracing::info!(what, done, total = records.len(), "migration batch committed");
        output::note(format!("{what}: {done}/{}", records.len()));
    }
    Ok((inserted, existing))
}

/// Runs the command.
pub fn run(settings: &Settings, args: MigrateArgs) -> Result<()> {
    let dir = source_dir(&args, settings.home.as_deref())?;
    let source = match read(&dir) {
        Ok(source) => source,
        Err(error @ ReadError::NotFound(_)) => {
            return Err(mempalace_engine::EngineError::NotFound {
                what: "Python MemPalace palace",
                id: format!("{} ({error})", dir.display()),
            }
            .into());
        }
        Err(error) => bail!(UserError(error.to_string())),
    };
    let converted = convert(&source, &settings.workspace, chrono::Utc::now());
    let mut value = report(&source, &converted);
    if args.dry_run {
        value["dry_run"] = json!(true);
        return if args.json { Ok(output::json(&value)?) } else { print_plan(&value) };
    }

    let palace = with_embedder(open_palace(settings, Access::Create)?, settings)?;
    let (others_new, others_present) = write(&palace, &converted.others, "facts, tunnels, identity")?;
    let (drawers_new, drawers_present) = write(&palace, &converted.drawers, "drawers")?;
    let embedded = match palace.embedder() {
        Some(_) => {
            let report = palace.reembed(256, &mut |progress| {
                output::note(format!("embedding: {} done ({} reused)", progress.done, progress.reused));
            })?;
            Some(
                json!({"model": report.model, "embedded": report.embedded, "reused": report.reused, "remaining": report.remaining}),
            )
        }
        None => {
            output::note(
                "no embedding model: drawers were filed without vectors (keyword search works); run \
                 `mempalace model fetch` and `mempalace reembed`",
            );
            None
        }
    };

    let taxonomy = palace.taxonomy()?;
    let kg = palace.kg_stats()?;
    let mut comparison: BTreeMap<String, Value> = BTreeMap::new();
    let mut short = Vec::new();
    for (wing, rooms) in &converted.counts {
        let expected: u64 = rooms.values().sum();
        let found = taxonomy.wings.get(wing).map_or(0, |w| w.drawers);
        if found < expected {
            short.push(wing.clone());
        }
        comparison.insert(wing.clone(), json!({"source": expected, "palace": found}));
    }
    value["written"] = json!({
        "drawers_new": drawers_new, "drawers_already_present": drawers_present,
        "other_records_new": others_new, "other_records_already_present": others_present,
    });
    value["comparison"] = json!({
        "wings": comparison,
        "entities": {"source": converted.entities, "palace": kg.entities},
        "triples": {"source": converted.triples, "palace": kg.triples},
    });
    value["embedding"] = embedded.unwrap_or(Value::Null);
    if args.json {
        output::json(&value)?;
    } else {
        print_plan(&value)?;
        output::line(format!("{:<32} {:>8} {:>8}", "wing", "source", "palace"))?;
        for (wing, counts) in &comparison {
            let (source, palace) = (counts["source"].as_u64().unwrap_or(0), counts["palace"].as_u64().unwrap_or(0));
            output::line(format!("{wing:<32} {source:>8} {palace:>8}"))?;
        }
        output::line(format!("{:<32} {:>8} {:>8}", "entities", converted.entities, kg.entities))?;
        output::line(format!("{:<32} {:>8} {:>8}", "facts", converted.triples, kg.triples))?;
        output::line(format!("written: {drawers_new} new drawers ({drawers_present} were already there)"))?;
    }
    if !short.is_empty() {
        bail!("the palace holds fewer drawers than the source in {}; run the migration again", short.join(", "));
    }
    Ok(())
}
