-- Schema version 7: agent coordination (MemPalace 3.11's logstream,
-- RFC 003) as tables of the palace itself, keyed by workspace like every
-- other table.
--
-- `events` are immutable messages between agents; nothing updates or
-- deletes them. `seq` is the order they were appended in, the cursor a
-- reader resumes from (`since_event_id` resolves to a `seq`): SQLite has
-- one writer at a time, so `seq` order is commit order. AUTOINCREMENT keeps
-- a `seq` from ever being handed out twice, even if a row were removed by
-- hand. The logical key is (workspace_id, id).
--
-- `artifacts` hold verbatim text (a patch, a file) an event can reference
-- through `event_artifacts`; `sha256` and `size_bytes` describe `content`
-- (its UTF-8 bytes) and are written with it.

CREATE TABLE events (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id   TEXT NOT NULL REFERENCES workspaces (id),
    id             TEXT NOT NULL,
    type           TEXT NOT NULL,
    stream         TEXT NOT NULL,
    room           TEXT NOT NULL,
    topic          TEXT,
    from_agent     TEXT NOT NULL,
    to_agent       TEXT,
    correlation_id TEXT,
    branch         TEXT,
    base_commit    TEXT,
    status         TEXT CHECK (status IN ('open', 'claimed', 'ready', 'applied', 'blocked', 'failed', 'superseded')),
    body           TEXT NOT NULL DEFAULT '',
    metadata       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    created_at     TEXT NOT NULL,
    UNIQUE (workspace_id, id)
);

-- Listings filter by equality and read in `seq` order, so each index ends
-- with `seq`.
CREATE INDEX events_order ON events (workspace_id, seq);
CREATE INDEX events_stream ON events (workspace_id, stream, seq);
CREATE INDEX events_to_agent ON events (workspace_id, to_agent, seq);
CREATE INDEX events_type ON events (workspace_id, type, seq);
CREATE INDEX events_correlation ON events (workspace_id, correlation_id, seq) WHERE correlation_id IS NOT NULL;
CREATE INDEX events_topic ON events (workspace_id, topic, seq) WHERE topic IS NOT NULL;

CREATE TABLE artifacts (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    id           TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('patch', 'file', 'log', 'json', 'note')),
    sha256       TEXT NOT NULL,
    size_bytes   INTEGER NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    metadata     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    -- Last: up to 4 MiB, read only when asked for.
    content      TEXT NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE INDEX artifacts_sha256 ON artifacts (workspace_id, sha256);

CREATE TABLE event_artifacts (
    workspace_id TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    artifact_id  TEXT NOT NULL,
    PRIMARY KEY (workspace_id, event_id, artifact_id),
    FOREIGN KEY (workspace_id, event_id) REFERENCES events (workspace_id, id),
    FOREIGN KEY (workspace_id, artifact_id) REFERENCES artifacts (workspace_id, id)
) WITHOUT ROWID;
