-- Schema version 6: tenancy (docs/tenancy.md), as SQLite's migration 11.
--
-- principals, tokens, teams and team_members are the palace's directory;
-- workspace_grants gives members a role in a workspace; workspace_limits
-- overrides the configured limits of one workspace; audit_log records
-- every write and delete with its actor. A palace with no principals is a
-- single-user palace: nothing here is consulted and no token is needed.
--
-- Grants and limits name a workspace without referring to `workspaces`:
-- a workspace may be granted before its first drawer, as on SQLite.
--
-- workspace_bytes is derived: the bytes of each workspace's active
-- drawers' text (octet_length, UTF-8 in a UTF8 database), kept by triggers
-- in the writing transaction (the `bytes` limit and `status` read it
-- instead of summing every drawer), verified and rebuilt by `doctor`.

CREATE TABLE principals (
    id           text COLLATE "C" PRIMARY KEY,
    kind         text COLLATE "C" NOT NULL CHECK (kind IN ('user', 'agent')),
    display_name text COLLATE "C",
    admin        boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL,
    disabled_at  timestamptz
);

CREATE TABLE tokens (
    id           text COLLATE "C" PRIMARY KEY,
    principal_id text COLLATE "C" NOT NULL REFERENCES principals (id),
    label        text COLLATE "C" NOT NULL,
    hash         text COLLATE "C" NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz
);
CREATE INDEX tokens_principal ON tokens (principal_id, created_at);

CREATE TABLE teams (
    id         text COLLATE "C" PRIMARY KEY,
    leader_id  text COLLATE "C" NOT NULL REFERENCES principals (id),
    created_at timestamptz NOT NULL
);

CREATE TABLE team_members (
    team_id      text COLLATE "C" NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    principal_id text COLLATE "C" NOT NULL REFERENCES principals (id),
    PRIMARY KEY (team_id, principal_id)
);

CREATE TABLE workspace_grants (
    workspace_id text COLLATE "C" NOT NULL,
    member_kind  text COLLATE "C" NOT NULL CHECK (member_kind IN ('principal', 'team')),
    member_id    text COLLATE "C" NOT NULL,
    role         text COLLATE "C" NOT NULL CHECK (role IN ('reader', 'writer', 'owner')),
    granted_at   timestamptz NOT NULL,
    granted_by   text COLLATE "C" NOT NULL,
    PRIMARY KEY (workspace_id, member_kind, member_id)
);
CREATE INDEX workspace_grants_member ON workspace_grants (member_kind, member_id);

CREATE TABLE workspace_limits (
    workspace_id        text COLLATE "C" PRIMARY KEY,
    drawers             bigint,
    entities            bigint,
    triples             bigint,
    requests_per_minute bigint,
    bytes               bigint
);

-- `seq` is the entry's position. Entries appended concurrently may commit
-- out of `seq` order; the trail is listed newest first and paged backwards
-- (`before_seq`), never followed as a cursor, so no append lock is taken.
CREATE TABLE audit_log (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL,
    workspace_id text COLLATE "C" NOT NULL,
    actor        text COLLATE "C" NOT NULL,
    action       text COLLATE "C" NOT NULL,
    target       text COLLATE "C" NOT NULL,
    count        bigint NOT NULL
);
CREATE INDEX audit_log_workspace ON audit_log (workspace_id, seq);
CREATE INDEX audit_log_actor ON audit_log (actor, seq);

CREATE TABLE workspace_bytes (
    workspace_id text COLLATE "C" PRIMARY KEY,
    bytes        bigint NOT NULL
);

INSERT INTO workspace_bytes (workspace_id, bytes)
    SELECT workspace_id, sum(octet_length(content))::bigint FROM drawers WHERE status = 'active'
    GROUP BY workspace_id;

CREATE FUNCTION mempalace_count_bytes(ws text, delta bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF delta <> 0 THEN
        INSERT INTO workspace_bytes AS b (workspace_id, bytes) VALUES (ws, delta)
            ON CONFLICT (workspace_id) DO UPDATE SET bytes = b.bytes + delta;
    END IF;
END $$;

-- Fires after `drawers_after` (triggers of one event fire in name order),
-- so the palace counter row is locked first, as by every drawer write.
CREATE FUNCTION mempalace_drawers_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'active' THEN
        IF TG_OP = 'UPDATE' AND NEW.status = 'active' AND NEW.workspace_id = OLD.workspace_id THEN
            PERFORM mempalace_count_bytes(NEW.workspace_id,
                                          octet_length(NEW.content)::bigint - octet_length(OLD.content));
            RETURN NULL;
        END IF;
        PERFORM mempalace_count_bytes(OLD.workspace_id, -octet_length(OLD.content)::bigint);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'active' THEN
        PERFORM mempalace_count_bytes(NEW.workspace_id, octet_length(NEW.content)::bigint);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER drawers_bytes_insert AFTER INSERT ON drawers
    FOR EACH ROW WHEN (NEW.status = 'active') EXECUTE FUNCTION mempalace_drawers_bytes();
CREATE TRIGGER drawers_bytes_delete AFTER DELETE ON drawers
    FOR EACH ROW WHEN (OLD.status = 'active') EXECUTE FUNCTION mempalace_drawers_bytes();
CREATE TRIGGER drawers_bytes_update AFTER UPDATE OF workspace_id, content, status ON drawers
    FOR EACH ROW WHEN ((OLD.status = 'active' OR NEW.status = 'active')
                       AND (NEW.content IS DISTINCT FROM OLD.content OR NEW.status IS DISTINCT FROM OLD.status
                            OR NEW.workspace_id IS DISTINCT FROM OLD.workspace_id))
    EXECUTE FUNCTION mempalace_drawers_bytes();
