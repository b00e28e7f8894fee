//! `migrate-store --from A --to B`: copies a whole palace between stores —
//! a SQLite palace and a PostgreSQL database, either way (or between two of
//! the same kind) — losslessly: every record of every workspace, vectors
//! included (`Palace::export_all` into `Palace::import_batch`).
//!
//! The copy commits in batches and keeps records the destination already
//! holds, so an interrupted run is completed by running it again. At the
//! end each record kind is counted on both sides; a difference fails the
//! command. Derived data (indexes, counts) is built by the destination
//! itself; the miners' cursors are not copied (a cursor only saves a
//! re-read).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use mempalace_core::WorkspaceId;
use mempalace_engine::{ExportError, Palace};
use mempalace_store::{PalaceRecord, RecordCounts, Store};
use serde_json::json;

use super::{Access, UserError};
use crate::output;
use crate::settings::Settings;

/// Records per destination transaction.
const BATCH: usize = 500;

/// `migrate-store`.
#[derive(Debug, Args)]
pub struct MigrateStoreArgs {
    /// The palace to copy: a palace directory or file, or a postgres:// URL.
    #[arg(long, value_name = "PALACE|URL")]
    from: String,
    /// Where to copy it: a palace directory or file (created when missing), or a postgres:// URL.
    #[arg(long, value_name = "PALACE|URL")]
    to: String,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

fn kind(record: &PalaceRecord) -> &'static str {
    match record {
        PalaceRecord::Drawer(_) => "drawers",
        PalaceRecord::Identity(_) => "identities",
        PalaceRecord::Entity(_) => "entities",
        PalaceRecord::EntityAlias(_) => "entity aliases",
        PalaceRecord::Triple(_) => "triples",
        PalaceRecord::Session(_) => "sessions",
        PalaceRecord::EpisodicSummary(_) => "episodic_summaries",
        PalaceRecord::Tunnel(_) => "tunnels",
        PalaceRecord::Centroid(_) => "centroids",
        PalaceRecord::Artifact(_) => "artifacts",
        PalaceRecord::Event(_) => "events",
    }
}

/// Opens one side: settings with `--store` set to it.
fn open(settings: &Settings, location: &str, access: Access) -> Result<Arc<dyn Store>> {
    let mut side = settings.clone();
    if mempalace_store::location::is_postgres_url(location) {
        side.database_url = Some(location.to_string());
    } else {
        side.database_url = None;
        side.palace_file = crate::settings::palace_file(std::path::Path::new(location));
    }
    super::open_store(&side, access, super::Connections::Pooled)
}

/// Records per kind in the destination (read by exporting it).
fn census(palace: &Palace) -> Result<BTreeMap<&'static str, u64>> {
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    palace
        .export_all(&mut |record: PalaceRecord| -> Result<(), std::convert::Infallible> {
            *counts.entry(kind(&record)).or_default() += 1;
            Ok(())
        })
        .map_err(|error| match error {
            ExportError::Engine(error) => anyhow::Error::from(error),
            ExportError::Sink(never) => match never {},
        })?;
    Ok(counts)
}

/// Runs the command.
pub fn run(settings: &Settings, args: MigrateStoreArgs) -> Result<()> {
    let started = Instant::now();
    if args.from == args.to {
        bail!(UserError("--from and --to name the same palace; give two different stores".into()));
    }
    let source = Palace::new(open(settings, &args.from, Access::Read)?, WorkspaceId::default_workspace());
    let destination = Palace::new(open(settings, &args.to, Access::Create)?, WorkspaceId::default_workspace());
    let (from_location, to_location) = (source.store().info()?.location, destination.store().info()?.location);

    let mut batch: Vec<PalaceRecord> = Vec::with_capacity(BATCH);
    let mut copied = RecordCounts::default();
    let mut read = 0_u64;
    // The source's records per kind, counted as they are copied.
    let mut before: BTreeMap<&'static str, u64> = BTreeMap::new();
    let flush = |batch: &mut Vec<PalaceRecord>, copied: &mut RecordCounts, read: u64| -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        *copied += destination.import_batch(batch)?;
        batch.clear();
        tracing::info!(records_copied = read, "migrate-store batch committed");
        Ok(())
    };
    source
        .export_all(&mut |record: PalaceRecord| -> Result<()> {
            read += 1;
            *before.entry(kind(&record)).or_default() += 1;
            batch.push(record);
            if batch.len() >= BATCH {
                flush(&mut batch, &mut copied, read)?;
            }
            Ok(())
        })
        .map_err(|error| match error {
            ExportError::Engine(error) => anyhow::Error::from(error),
            ExportError::Sink(error) => error,
        })?;
    flush(&mut batch, &mut copied, read)?;

    let after = census(&destination)?;
    let mut table = Vec::new();
    let mut missing = Vec::new();
    for (kind, count) in &before {
        let there = after.get(kind).copied().unwrap_or(0);
        if there < *count {
            missing.push(format!("{kind}: {count} in the source, {there} in the destination"));
        }
        table.push(json!({"kind": kind, "source": count, "destination": there}));
    }
    let summary = json!({
        "from": from_location, "to": to_location, "records": read,
        "inserted": copied.inserted, "already_present": copied.existing,
        "kinds": table, "seconds": started.elapsed().as_secs_f64(),
    });
    if args.json {
        output::json(&summary)?;
    } else {
        output::line(format!(
            "copied {read} records from {from_location} to {to_location}: {} inserted, {} already there ({:.1} s)",
            copied.inserted,
            copied.existing,
            started.elapsed().as_secs_f64()
        ))?;
        for row in &table {
            output::line(format!(
                "  {:<20} {:>9} → {:>9}",
                row["kind"].as_str().unwrap_or(""),
                row["source"],
                row["destination"]
            ))?;
        }
    }
    if !missing.is_empty() {
        bail!("the destination is missing records: {}", missing.join("; "));
    }
    Ok(())
}
