-- Schema version 11: tenancy (docs/tenancy.md).
--
-- principals, tokens, teams and team_members are the palace's directory;
-- workspace_grants gives members a role in a workspace; workspace_limits
-- overrides the configured limits of one workspace; audit_log records
-- every write and delete with its actor. A palace with no principals is a
-- single-user palace: nothing here is consulted and no token is needed.
--
-- workspace_bytes is derived: the UTF-8 bytes of each workspace's active
-- drawers, kept by triggers in the writing transaction (the `bytes` limit
-- and `status` read it instead of summing every drawer).

CREATE TABLE principals (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('user', 'agent')),
    display_name TEXT,
    admin        INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1)),
    created_at   TEXT NOT NULL,
    disabled_at  TEXT
) WITHOUT ROWID;

CREATE TABLE tokens (
    id           TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    label        TEXT NOT NULL,
    hash         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT,
    revoked_at   TEXT,
    last_used_at TEXT
) WITHOUT ROWID;
CREATE INDEX tokens_principal ON tokens (principal_id, created_at);

CREATE TABLE teams (
    id         TEXT PRIMARY KEY,
    leader_id  TEXT NOT NULL REFERENCES principals (id),
    created_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE team_members (
    team_id      TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    PRIMARY KEY (team_id, principal_id)
) WITHOUT ROWID;

CREATE TABLE workspace_grants (
    workspace_id TEXT NOT NULL,
    member_kind  TEXT NOT NULL CHECK (member_kind IN ('principal', 'team')),
    member_id    TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('reader', 'writer', 'owner')),
    granted_at   TEXT NOT NULL,
    granted_by   TEXT NOT NULL,
    PRIMARY KEY (workspace_id, member_kind, member_id)
) WITHOUT ROWID;
CREATE INDEX workspace_grants_member ON workspace_grants (member_kind, member_id);

CREATE TABLE workspace_limits (
    workspace_id        TEXT PRIMARY KEY,
    drawers             INTEGER,
    entities            INTEGER,
    triples             INTEGER,
    requests_per_minute INTEGER,
    bytes               INTEGER
) WITHOUT ROWID;

CREATE TABLE audit_log (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    at           TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    actor        TEXT NOT NULL,
    action       TEXT NOT NULL,
    target       TEXT NOT NULL,
    count        INTEGER NOT NULL
);
CREATE INDEX audit_log_workspace ON audit_log (workspace_id, seq);
CREATE INDEX audit_log_actor ON audit_log (actor, seq);

CREATE TABLE workspace_bytes (
    workspace_id TEXT PRIMARY KEY,
    bytes        INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO workspace_bytes (workspace_id, bytes)
    SELECT workspace_id, sum(length(CAST(content AS BLOB))) FROM drawers WHERE status = 'active' GROUP BY workspace_id;

CREATE TRIGGER drawers_bytes_insert AFTER INSERT ON drawers
WHEN NEW.status = 'active'
BEGIN
    INSERT OR IGNORE INTO workspace_bytes (workspace_id, bytes) VALUES (NEW.workspace_id, 0);
    UPDATE workspace_bytes SET bytes = bytes + length(CAST(NEW.content AS BLOB))
        WHERE workspace_id = NEW.workspace_id;
END;

CREATE TRIGGER drawers_bytes_delete AFTER DELETE ON drawers
WHEN OLD.status = 'active'
BEGIN
    UPDATE workspace_bytes SET bytes = bytes - length(CAST(OLD.content AS BLOB))
        WHERE workspace_id = OLD.workspace_id;
END;

CREATE TRIGGER drawers_bytes_update AFTER UPDATE OF content, status ON drawers
WHEN (OLD.status = 'active') OR (NEW.status = 'active')
BEGIN
    UPDATE workspace_bytes SET bytes = bytes - length(CAST(OLD.content AS BLOB))
        WHERE OLD.status = 'active' AND workspace_id = OLD.workspace_id;
    INSERT OR IGNORE INTO workspace_bytes (workspace_id, bytes)
        SELECT NEW.workspace_id, 0 WHERE NEW.status = 'active';
    UPDATE workspace_bytes SET bytes = bytes + length(CAST(NEW.content AS BLOB))
        WHERE NEW.status = 'active' AND workspace_id = NEW.workspace_id;
END;
