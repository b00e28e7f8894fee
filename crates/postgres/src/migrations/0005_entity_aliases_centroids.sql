-- Schema version 5: entity aliases (issue 18's entity dedup) and room
-- centroids, as SQLite's migration 10.
--
-- `entity_aliases` holds each entity merged into another: its own record
-- as it was (so `unmerge_entity` restores it), the canonical entity and
-- why. While the row exists the store resolves the alias on every write.
-- `entity_alias_moves` records what a merge moved (facts by role, drawers
-- whose mention moved), so an unmerge moves exactly that back.
-- `room_centroids` is derived: the mean vector of each room's newest
-- active drawers, with the room's size when trained.

CREATE TABLE entity_aliases (
    workspace_id    text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    alias_id        text COLLATE "C" NOT NULL,
    canonical_id    text COLLATE "C" NOT NULL,
    name            text COLLATE "C" NOT NULL,
    entity_type     text COLLATE "C" NOT NULL,
    properties      jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(properties) = 'object'),
    embedding_model text COLLATE "C",
    embedding       vector,
    created_at      timestamptz NOT NULL,
    reason          text COLLATE "C" NOT NULL,
    merged_at       timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, alias_id),
    FOREIGN KEY (workspace_id, canonical_id) REFERENCES entities (workspace_id, id)
);
CREATE INDEX entity_aliases_canonical ON entity_aliases (workspace_id, canonical_id);

CREATE TABLE entity_alias_moves (
    workspace_id text COLLATE "C" NOT NULL,
    alias_id     text COLLATE "C" NOT NULL,
    kind         text COLLATE "C" NOT NULL CHECK (kind IN ('subject', 'object', 'mention')),
    ref_id       text COLLATE "C" NOT NULL,
    PRIMARY KEY (workspace_id, alias_id, kind, ref_id),
    FOREIGN KEY (workspace_id, alias_id) REFERENCES entity_aliases (workspace_id, alias_id) ON DELETE CASCADE
);

CREATE TABLE room_centroids (
    workspace_id    text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    wing            text COLLATE "C" NOT NULL,
    room            text COLLATE "C" NOT NULL,
    embedding_model text COLLATE "C" NOT NULL,
    vector          vector NOT NULL,
    sample_count    integer NOT NULL,
    room_drawers    bigint NOT NULL,
    computed_at     timestamptz NOT NULL,
    source_hash     text COLLATE "C" NOT NULL,
    PRIMARY KEY (workspace_id, wing, room)
);
