//! `export` and `import`: the whole palace as JSONL, both ways.
//!
//! Import commits in batches; after each commit it logs
//! `records_committed=N` (at info level), and every record it reported is
//! durable even if the process is killed right after. A file is validated
//! in a first pass before anything is written, so a malformed file writes
//! nothing; from stdin, records are streamed and an error stops the import
//! after the batches already committed (running the import again completes
//! it: present records are kept, absent ones added).

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;
use mempalace_engine::{ExportError, Palace};
use mempalace_store::{PalaceRecord, RecordCounts};

use super::{Access, UserError, open_palace};
use crate::output;
use crate::settings::Settings;
use mempalace_web::wire::{self, HeaderLine, Line};

/// Records per import transaction.
const IMPORT_BATCH: usize = 1_000;

/// Arguments of `export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Write to FILE instead of stdout (written to FILE.partial, then renamed).
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Arguments of `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A JSONL file written by `mempalace export`, or `-` for stdin.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn export(palace: &Palace, args: ExportArgs) -> Result<()> {
    let info = palace.store().info()?;
    let (mut writer, partial): (Box<dyn Write>, Option<(PathBuf, PathBuf)>) = match &args.out {
        Some(path) => {
            let mut partial = path.clone().into_os_string();
            partial.push(".partial");
            let partial = PathBuf::from(partial);
            let file = File::create(&partial).with_context(|| format!("creating {}", partial.display()))?;
            (Box::new(BufWriter::new(file)), Some((partial, path.clone())))
        }
        None => (Box::new(crate::output::stream()), None),
    };
    let header = Line::Header(HeaderLine {
        format: wire::FORMAT.to_string(),
        version: wire::VERSION,
        generator: concat!("mempalace-rs ", env!("CARGO_PKG_VERSION")).to_string(),
        schema_version: info.schema_version,
        exported_at: mempalace_core::time::format_timestamp(&palace.now()),
    });
    write_line(&mut writer, &header)?;
    let written = palace
        .export_all(&mut |record: PalaceRecord| write_line(&mut writer, &wire::to_line(&record)))
        .map_err(|error| match error {
            ExportError::Engine(error) => anyhow::Error::from(error),
            ExportError::Sink(error) => error.context("writing the export"),
        })?;
    writer.flush().context("writing the export")?;
    drop(writer);
    if let Some((partial, path)) = partial {
        std::fs::rename(&partial, &path)
            .with_context(|| format!("renaming {} to {}", partial.display(), path.display()))?;
        output::note(format!("exported {written} records to {}", path.display()));
    }
    Ok(())
}

fn write_line(writer: &mut dyn Write, line: &Line) -> Result<()> {
    serde_json::to_writer(&mut *writer, line).context("encoding a record")?;
    writer.write_all(b"\n").context("writing the export")?;
    Ok(())
}

/// Parses line `number` (1-based) of an export into a record.
fn parse_line(number: usize, text: &str) -> Result<Option<PalaceRecord>> {
    let line: Line = serde_json::from_str(text)
        .map_err(|error| UserError(format!("line {number}: not a record of a mempalace export: {error}")))?;
    if number == 1 {
        let Line::Header(header) = &line else {
            return Err(UserError(
                "line 1: an export starts with a header line ({\"type\":\"header\",...}); is this a `mempalace export` file?"
                    .to_string(),
            )
            .into());
        };
        if header.format != wire::FORMAT || header.version > wire::VERSION {
            return Err(UserError(format!(
                "line 1: format {:?} version {} is not one this mempalace reads ({:?} up to version {}); upgrade mempalace",
                header.format,
                header.version,
                wire::FORMAT,
                wire::VERSION
            ))
            .into());
        }
        return Ok(None);
    }
    if matches!(line, Line::Header(_)) {
        return Err(UserError(format!(
            "line {number}: a second header; concatenated exports must be imported one by one"
        ))
        .into());
    }
    wire::from_line(&line).map_err(|error| UserError(format!("line {number}: {error}")).into())
}

/// Reads lines, skipping blank ones, with 1-based numbers.
fn for_each_line(reader: impl BufRead, mut each: impl FnMut(usize, &str) -> Result<()>) -> Result<()> {
    for (index, line) in reader.lines().enumerate() {
        let line = line.map_err(|error| match error.kind() {
            io::ErrorKind::InvalidData => anyhow::Error::from(UserError(format!(
                "line {}: not valid UTF-8; an export is UTF-8 JSON lines",
                index + 1
            ))),
            _ => anyhow::Error::from(error).context("reading the import"),
        })?;
        if line.trim().is_empty() {
            continue;
        }
        each(index + 1, &line)?;
    }
    Ok(())
}

pub fn import(settings: &Settings, args: ImportArgs) -> Result<()> {
    let from_stdin = args.file.as_os_str() == "-";
    let open = || -> Result<Box<dyn BufRead>> {
        if from_stdin {
            Ok(Box::new(BufReader::new(io::stdin().lock())))
        } else {
            let file = File::open(&args.file).with_context(|| format!("opening {}", args.file.display()))?;
            Ok(Box::new(BufReader::with_capacity(1 << 20, file)))
        }
    };
    if !from_stdin {
        // First pass: validate everything, write nothing.
        let mut n_records = 0_u64;
        for_each_line(open()?, |number, text| {
            n_records += u64::from(parse_line(number, text)?.is_some());
            Ok(())
        })?;
        tracing::info!(n_records, "import file validated");
    }
    let palace = open_palace(settings, Access::Create)?;
    let mut totals = RecordCounts::default();
    let mut committed = 0_u64;
    let mut batch: Vec<PalaceRecord> = Vec::with_capacity(IMPORT_BATCH);
    let mut flush = |batch: &mut Vec<PalaceRecord>, totals: &mut RecordCounts| -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        *totals += palace.import_batch(batch)?;
        committed += batch.len() as u64;
        tracing::info!(records_committed = committed, "import batch committed");
        batch.clear();
        Ok(())
    };
    let mut saw_header = false;
    for_each_line(open()?, |number, text| {
        saw_header |= number == 1;
        if let Some(record) = parse_line(number, text)? {
            batch.push(record);
            if batch.len() == IMPORT_BATCH {
                flush(&mut batch, &mut totals)?;
            }
        }
        Ok(())
    })?;
    flush(&mut batch, &mut totals)?;
    if !saw_header {
        return Err(UserError("the import is empty; expected a `mempalace export` file".to_string()).into());
    }
    if args.json {
        output::json(&serde_json::json!({"inserted": totals.inserted, "already_present": totals.existing}))?;
    } else {
        output::line(format!("imported {} records ({} already present)", totals.inserted, totals.existing))?;
    }
    Ok(())
}
