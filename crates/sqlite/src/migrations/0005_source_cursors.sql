-- Schema version 5: the miners' bookkeeping per source (a transcript file,
-- a project file, an opencode session): what was read last time (size,
-- modification time, content hash, the byte offset a growing transcript
-- resumes from). The store keeps the text and never interprets it. It is a
-- cache of mining progress: dropping it costs one full re-read of each
-- source, nothing else (drawer ids are content-derived, so a re-read files
-- nothing twice).

CREATE TABLE source_cursors (
    workspace_id TEXT NOT NULL,
    source       TEXT NOT NULL,
    cursor       TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (workspace_id, source)
) WITHOUT ROWID;
