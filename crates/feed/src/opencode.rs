//! opencode sessions, read from opencode's SQLite database (read-only),
//! each session one source (`opencode:<database>#<session>`), filed as a
//! header and its exchanges.

use std::path::Path;

use mempalace_engine::Palace;

use crate::convos::{self, TranscriptOptions, TranscriptOutcome};
use crate::error::{FeedError, FeedResult};
use crate::{Extract, MineOptions, MineReport};

/// opencode's own rule: sessions of fewer messages are noise.
const MIN_MESSAGES: usize = 3;

/// The source a session's drawers carry.
fn source_of(db: &Path, session: &str) -> String {
    format!("opencode:{}#{session}", db.canonicalize().unwrap_or(db.to_path_buf()).display())
}

/// Mines the sessions of the database at `db`.
pub(crate) fn mine(palace: &Palace, db: &Path, options: &MineOptions) -> FeedResult<MineReport> {
    let read = read(
        db,
        mempalace_mine::opencode::Selection {
            min_messages: options.selection.min_messages.unwrap_or(MIN_MESSAGES),
            since_ms: options.selection.since.map(|t| t.timestamp_millis()),
            session: options.selection.session.clone(),
        },
    )?;
    let mut report = MineReport { conversations_skipped: read.skipped_sessions, ..MineReport::default() };
    let transcript = TranscriptOptions::from_mine(options);
    for conversation in read.conversations.iter().take(options.limit.unwrap_or(usize::MAX)) {
        report.files += 1;
        report.read += 1;
        report.add_filing(file_session(palace, db, conversation, &transcript)?.0);
    }
    Ok(report)
}

/// The sessions of the database at `db` that `selection` picks.
fn read(db: &Path, selection: mempalace_mine::opencode::Selection) -> FeedResult<mempalace_mine::opencode::Read> {
    if !db.is_file() {
        return Err(FeedError::NotFound { what: "opencode database", path: db.to_path_buf() });
    }
    mempalace_mine::opencode::read_db(db, &selection)
        .map_err(|detail| FeedError::Unreadable { path: db.to_path_buf(), detail })
}

/// Files (or, in a dry run, plans) one session as its source, always as
/// exchanges whatever `--extract` says; returns the filing and the wing.
fn file_session(
    palace: &Palace,
    db: &Path,
    conversation: &mempalace_mine::Conversation,
    options: &TranscriptOptions,
) -> FeedResult<(mempalace_engine::drawers::SourceFiling, mempalace_core::Wing)> {
    let transcript = TranscriptOptions { extract: Extract::Exchange, ..options.clone() };
    let wing = convos::wing_for(options.wing.as_ref(), conversation)?;
    let source = source_of(db, &conversation.session_id);
    let place = convos::Place { source: &source, wing: &wing, options: &transcript, format: "opencode" };
    let requests = convos::requests(conversation, &place, true);
    let filing = if options.dry_run {
        palace.plan_source(&source, &requests)?
    } else {
        palace.file_source(&source, requests)?.filing
    };
    Ok((filing, wing))
}

/// Mines one session of an opencode database (what its hook calls when
/// the session goes idle): the session's drawers replaced by what it holds
/// now, unchanged exchanges kept. A session that is a sub-agent's, too
/// short or not there is `NotTranscript`, with the reason.
pub fn mine_opencode_session(
    palace: &Palace,
    db: &Path,
    session: &str,
    options: &TranscriptOptions,
) -> FeedResult<TranscriptOutcome> {
    let read = read(
        db,
        mempalace_mine::opencode::Selection {
            min_messages: MIN_MESSAGES,
            since_ms: None,
            session: Some(session.to_string()),
        },
    )?;
    let Some(conversation) = read.conversations.first() else {
        return Ok(TranscriptOutcome::NotTranscript(format!(
            "session {session} is not in {}, is a sub-agent's, or has fewer than {MIN_MESSAGES} messages",
            db.display()
        )));
    };
    let (filing, wing) = file_session(palace, db, conversation, options)?;
    let humans: Vec<&mempalace_mine::Message> =
        conversation.messages.iter().filter(|m| m.role == mempalace_mine::Role::User).collect();
    Ok(TranscriptOutcome::Mined {
        filing,
        records_skipped: 0,
        conversations_skipped: 0,
        human_messages: humans.len(),
        last_human: humans.last().map(|m| m.text.clone()),
        wing,
    })
}
