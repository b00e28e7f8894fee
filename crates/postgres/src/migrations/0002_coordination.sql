-- Schema version 2 of the PostgreSQL backend: agent coordination
-- (MemPalace 3.11's logstream, RFC 003), the same tables and semantics as
-- the SQLite backend's schema version 7.
--
-- `events` are immutable messages between agents; nothing updates or
-- deletes them. `seq` is the append order a reader resumes from. An
-- identity value is drawn when a row is inserted, not when its transaction
-- commits, so two concurrent appends could commit in the other order and a
-- reader that had already moved its cursor past the later `seq` would skip
-- the earlier one. Appends (and imports of events) therefore take a
-- transaction-scoped advisory lock per workspace before inserting (see
-- `coordination.rs`): within a workspace, `seq` order is commit order, and
-- concurrent appenders queue for the length of one short insert.
--
-- `artifacts` hold verbatim text (a patch, a file) an event can reference
-- through `event_artifacts`; `sha256` and `size_bytes` describe `content`.

CREATE TABLE events (
    seq            bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    workspace_id   text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id             text COLLATE "C" NOT NULL,
    type           text COLLATE "C" NOT NULL,
    stream         text COLLATE "C" NOT NULL,
    room           text COLLATE "C" NOT NULL,
    topic          text COLLATE "C",
    from_agent     text COLLATE "C" NOT NULL,
    to_agent       text COLLATE "C",
    correlation_id text COLLATE "C",
    branch         text COLLATE "C",
    base_commit    text COLLATE "C",
    status         text COLLATE "C"
                   CHECK (status IN ('open', 'claimed', 'ready', 'applied', 'blocked', 'failed', 'superseded')),
    body           text COLLATE "C" NOT NULL DEFAULT '',
    metadata       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id)
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
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id           text COLLATE "C" NOT NULL,
    kind         text COLLATE "C" NOT NULL CHECK (kind IN ('patch', 'file', 'log', 'json', 'note')),
    sha256       text COLLATE "C" NOT NULL,
    size_bytes   bigint NOT NULL,
    created_by   text COLLATE "C" NOT NULL,
    created_at   timestamptz NOT NULL,
    metadata     jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    content      text COLLATE "C" NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

CREATE INDEX artifacts_sha256 ON artifacts (workspace_id, sha256);

CREATE TABLE event_artifacts (
    workspace_id text COLLATE "C" NOT NULL,
    event_id     text COLLATE "C" NOT NULL,
    artifact_id  text COLLATE "C" NOT NULL,
    PRIMARY KEY (workspace_id, event_id, artifact_id),
    FOREIGN KEY (workspace_id, event_id) REFERENCES events (workspace_id, id),
    FOREIGN KEY (workspace_id, artifact_id) REFERENCES artifacts (workspace_id, id)
);
