//! Saved copies of the engine's derived vector index, beside the palace
//! file (`palace.db` → `palace.db.vectors/`).
//!
//! Loading a million vectors from their rows takes seconds; a snapshot is
//! memory-mapped in milliseconds, and the index applies only the changes
//! after its revision. The palace file stays the one source of truth: a
//! snapshot is used only when `palace_meta` names it (its token and
//! revision), so a snapshot written for another copy of the palace — a
//! restored backup, a file copied without its folder — is never applied,
//! and a missing or damaged one is simply rebuilt.
//!
//! A snapshot file is a 64-byte header (magic, token, revision, payload
//! length) and the engine's payload. It is written to a temporary file,
//! synced and renamed into place before `palace_meta` names it.

#![allow(unsafe_code)] // One memory map of a snapshot file, see `load`.

use std::io::Write;
use std::path::{Path, PathBuf};

use mempalace_core::WorkspaceId;
use mempalace_store::{StoreError, StoreResult, VectorSnapshot};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use sha2::{Digest, Sha256};

use crate::error::Context;

const MAGIC: &[u8; 8] = b"MPVSNAP1";
const HEADER: usize = 64;

/// The folder of a palace file's snapshots.
pub(crate) fn folder(palace: &Path) -> PathBuf {
    let mut name = palace.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".vectors");
    palace.with_file_name(name)
}

/// The name shared by a snapshot's file and its `palace_meta` key.
fn name(workspace: &WorkspaceId, model: &str) -> String {
    let digest = Sha256::digest(format!("{}\0{model}", workspace.as_str()).as_bytes());
    hex::encode(&digest[..12])
}

fn meta_key(name: &str) -> String {
    format!("vector_snapshot:{name}")
}

/// What `palace_meta` says of the snapshot: its token and revision.
fn named(conn: &Connection, name: &str) -> StoreResult<Option<(u128, i64)>> {
    let value: Option<String> = conn
        .query_row("SELECT value FROM palace_meta WHERE key = ?1", params![meta_key(name)], |row| row.get(0))
        .optional()
        .ctx("reading the vector snapshot's record")?;
    Ok(value.and_then(|value| {
        let (token, rev) = value.split_once(' ')?;
        Some((u128::from_str_radix(token, 16).ok()?, rev.parse().ok()?))
    }))
}

/// The snapshot `palace_meta` names, mapped, if its file is there and
/// matches; `None` otherwise.
pub(crate) fn load(
    conn: &Connection,
    palace: &Path,
    workspace: &WorkspaceId,
    model: &str,
) -> StoreResult<Option<VectorSnapshot>> {
    let name = name(workspace, model);
    let Some((token, rev)) = named(conn, &name)? else { return Ok(None) };
    let path = folder(palace).join(format!("{name}.snapshot"));
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(error) => {
            tracing::debug!(path = %path.display(), %error, "no vector snapshot file; the index is rebuilt");
            return Ok(None);
        }
    };
    // SAFETY: the file is only ever replaced by rename, never written in
    // place, so the mapped bytes do not change under us; a file truncated
    // by hand is refused below before any byte past its length is read.
    let map = match unsafe { memmap2::MmapOptions::new().populate().map(&file) } {
        Ok(map) => map,
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "vector snapshot not mapped; the index is rebuilt");
            return Ok(None);
        }
    };
    let header_matches = map.len() >= HEADER
        && &map[..8] == MAGIC
        && map[8..24] == token.to_le_bytes()
        && map[24..32] == rev.to_le_bytes()
        && u64::from_le_bytes(map[32..40].try_into().expect("8 bytes")) == (map.len() - HEADER) as u64;
    if !header_matches {
        tracing::info!(path = %path.display(), "vector snapshot does not match this palace; the index is rebuilt");
        return Ok(None);
    }
    Ok(Some(VectorSnapshot { rev, bytes: Box::new(Payload(map)) }))
}

/// A mapped snapshot file seen as its payload.
struct Payload(memmap2::Mmap);

impl std::ops::Deref for Payload {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0[HEADER..]
    }
}

/// Writes the snapshot's file (temporary, synced, renamed); the caller
/// then names it in `palace_meta` with [`name_snapshot`].
pub(crate) fn write_file(
    palace: &Path,
    workspace: &WorkspaceId,
    model: &str,
    rev: i64,
    bytes: &[u8],
) -> StoreResult<(String, u128)> {
    let io = |what: &str, error: std::io::Error| StoreError::Io { detail: format!("{what}: {error}") };
    let name = name(workspace, model);
    let dir = folder(palace);
    std::fs::create_dir_all(&dir).map_err(|e| io(&format!("creating {}", dir.display()), e))?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let token = nanos ^ (u128::from(std::process::id()) << 96);
    let temporary = dir.join(format!("{name}.{}.{nanos}.tmp", std::process::id()));
    let path = dir.join(format!("{name}.snapshot"));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&temporary)?);
        let mut header = [0_u8; HEADER];
        header[..8].copy_from_slice(MAGIC);
        header[8..24].copy_from_slice(&token.to_le_bytes());
        header[24..32].copy_from_slice(&rev.to_le_bytes());
        header[32..40].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        file.write_all(&header)?;
        file.write_all(bytes)?;
        file.into_inner().map_err(std::io::IntoInnerError::into_error)?.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        if let Ok(dir) = std::fs::File::open(&dir) {
            // Makes the rename durable where directories can be synced.
            let _ = dir.sync_all();
        }
        Ok(())
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(io(&format!("writing {}", path.display()), error));
    }
    Ok((name, token))
}

/// Names the snapshot file just written in `palace_meta`.
pub(crate) fn name_snapshot(tx: &Transaction<'_>, name: &str, token: u128, rev: i64) -> StoreResult<()> {
    tx.execute(
        "INSERT INTO palace_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![meta_key(name), format!("{token:032x} {rev}")],
    )
    .ctx("recording a vector snapshot")?;
    Ok(())
}
