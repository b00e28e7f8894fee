-- Schema version 10: entity aliases (issue 18's entity dedup) and room
-- centroids.
--
-- `entity_aliases` holds each entity merged into another: its own record
-- as it was (so `unmerge_entity` restores it), the canonical entity and
-- why. While the row exists the store resolves the alias on every write:
-- adding the alias entity is a no-op, facts and mentions naming it land
-- on the canonical entity. `entity_alias_moves` records what a merge
-- moved — facts by role, drawers whose mention moved — and nothing else,
-- so an unmerge moves exactly that back.
--
-- `room_centroids` holds the mean vector of each room's newest active
-- drawers (derived data: recomputed by the centroid job, never exported),
-- with the room's size when trained, for the retrain-after-growth rule.

CREATE TABLE entity_aliases (
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    alias_id        TEXT NOT NULL,
    canonical_id    TEXT NOT NULL,
    name            TEXT NOT NULL,
    entity_type     TEXT NOT NULL,
    properties      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(properties)),
    embedding_model TEXT,
    embedding       BLOB,
    created_at      TEXT NOT NULL,
    reason          TEXT NOT NULL,
    merged_at       TEXT NOT NULL,
    PRIMARY KEY (workspace_id, alias_id),
    FOREIGN KEY (workspace_id, canonical_id) REFERENCES entities (workspace_id, id)
) WITHOUT ROWID;
CREATE INDEX entity_aliases_canonical ON entity_aliases (workspace_id, canonical_id);

CREATE TABLE entity_alias_moves (
    workspace_id TEXT NOT NULL,
    alias_id     TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('subject', 'object', 'mention')),
    ref_id       TEXT NOT NULL,
    PRIMARY KEY (workspace_id, alias_id, kind, ref_id),
    FOREIGN KEY (workspace_id, alias_id) REFERENCES entity_aliases (workspace_id, alias_id) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE room_centroids (
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    wing            TEXT NOT NULL,
    room            TEXT NOT NULL,
    embedding_model TEXT NOT NULL,
    vector          BLOB NOT NULL,
    sample_count    INTEGER NOT NULL,
    room_drawers    INTEGER NOT NULL,
    computed_at     TEXT NOT NULL,
    source_hash     TEXT NOT NULL,
    PRIMARY KEY (workspace_id, wing, room)
) WITHOUT ROWID;
