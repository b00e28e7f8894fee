//! opencode sessions, read from opencode's SQLite database (read-only),
//! each session one source (`opencode:<database>#<session>`), filed as a
//! header and its exchanges.

use std::path::Path;

use mempalace_engine::Palace;

use crate::convos::{self, TranscriptOptions};
use crate::error::{FeedError, FeedResult};
use crate::{Extract, MineOptions, MineReport};

/// Mines the sessions of the database at `db`.
pub(crate) fn mine(palace: &Palace, db: &Path, options: &MineOptions) -> FeedResult<MineReport> {
    if !db.is_file() {
        return Err(FeedError::NotFound { what: "opencode database", path: db.to_path_buf() });
    }
    let selection = mempalace_mine::opencode::Selection {
        // opencode's own rule: sessions of fewer than 3 messages are noise.
        min_messages: options.selection.min_messages.unwrap_or(3),
        since_ms: options.selection.since.map(|t| t.timestamp_millis()),
        session: options.selection.session.clone(),
    };
    let read = mempalace_mine::opencode::read_db(db, &selection)
        .map_err(|detail| FeedError::Unreadable { path: db.to_path_buf(), detail })?;
    let db_name = db.canonicalize().unwrap_or(db.to_path_buf()).display().to_string();
    let mut report = MineReport { conversations_skipped: read.skipped_sessions, ..MineReport::default() };
    // Sessions are filed as exchanges whatever `--extract` says.
    let transcript = TranscriptOptions { extract: Extract::Exchange, ..TranscriptOptions::from_mine(options) };
    for conversation in read.conversations.iter().take(options.limit.unwrap_or(usize::MAX)) {
        report.files += 1;
        report.read += 1;
        let wing = convos::wing_for(options.wing.as_ref(), conversation)?;
        let source = format!("opencode:{db_name}#{}", conversation.session_id);
        let place = convos::Place { source: &source, wing: &wing, options: &transcript, format: "opencode" };
        let requests = convos::requests(conversation, &place, true);
        let filing = if options.dry_run {
            palace.plan_source(&source, &requests)?
        } else {
            palace.file_source(&source, requests)?.filing
        };
        report.add_filing(filing);
    }
    Ok(report)
}
