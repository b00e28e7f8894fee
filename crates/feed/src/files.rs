//! Reading source files: size and time, byte ranges, the check digest of a
//! transcript read up to a point, and the source name a file is filed under.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use mempalace_mine::cursor::{check_digest, check_ranges};

/// A file's size and modification time (nanoseconds since the epoch).
pub fn stat(file: &Path) -> std::io::Result<(u64, Option<i64>)> {
    let meta = std::fs::metadata(file)?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_nanos()).ok());
    Ok((meta.len(), mtime))
}

/// Bytes `from..to` of a file (fewer when it is shorter); `to = u64::MAX`
/// reads to the end.
pub fn read_range(file: &Path, from: u64, to: u64) -> std::io::Result<Vec<u8>> {
    let mut handle = std::fs::File::open(file)?;
    handle.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    handle.take(to.saturating_sub(from)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The check digest of a file read up to `size`, resuming at `resume_at`.
pub fn tail_check(file: &Path, resume_at: u64, size: u64) -> std::io::Result<String> {
    let [head, before, region] = check_ranges(resume_at, size);
    Ok(check_digest(
        &read_range(file, head.0, head.1)?,
        &read_range(file, before.0, before.1)?,
        &read_range(file, region.0, region.1)?,
    ))
}

/// The text of bytes read from a line start; an incomplete character at
/// the end (a writer caught mid-line) is left for the next read.
pub fn text_prefix(bytes: &[u8]) -> Option<&str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(text),
        Err(error) if error.error_len().is_none() => std::str::from_utf8(&bytes[..error.valid_up_to()]).ok(),
        Err(_) => None,
    }
}

/// The name a file's drawers carry as their source: its absolute path.
pub fn source_name(file: &Path) -> String {
    file.canonicalize().unwrap_or_else(|_| file.to_path_buf()).display().to_string()
}

/// The file's modification time as a timestamp.
pub fn modified(file: &Path) -> Option<mempalace_core::Timestamp> {
    std::fs::metadata(file).and_then(|m| m.modified()).ok().map(mempalace_core::Timestamp::from)
}
