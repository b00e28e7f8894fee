-- Schema version 3: change tracking for derived in-memory indexes, and the
-- index that serves the essential story (L1) without sorting.
--
-- Every change to a drawer that an index cares about (insert; content,
-- place, status or vector change; delete) takes the next value of the
-- palace-wide revision counter. Deleted drawers leave a tombstone with the
-- revision of their deletion. A process holding a vector index asks for
-- "everything after revision r" and stays in step with other processes
-- without rescanning. Access tracking does not move the revision.

ALTER TABLE drawers ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
CREATE INDEX drawers_rev ON drawers (workspace_id, rev);

CREATE TABLE drawer_tombstones (
    workspace_id TEXT NOT NULL,
    id           TEXT NOT NULL,
    rev          INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, id)
) WITHOUT ROWID;
CREATE INDEX drawer_tombstones_rev ON drawer_tombstones (workspace_id, rev);

INSERT INTO palace_meta (key, value) VALUES ('rev', '0') ON CONFLICT (key) DO NOTHING;

-- Existing drawers get revisions in insertion order.
UPDATE palace_meta SET value = CAST((SELECT count(*) FROM drawers) AS TEXT) WHERE key = 'rev';
UPDATE drawers SET rev = (SELECT count(*) FROM drawers AS earlier WHERE earlier.seq <= drawers.seq);

CREATE TRIGGER drawers_rev_insert AFTER INSERT ON drawers
BEGIN
    UPDATE palace_meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'rev';
    UPDATE drawers SET rev = (SELECT CAST(value AS INTEGER) FROM palace_meta WHERE key = 'rev') WHERE seq = NEW.seq;
    DELETE FROM drawer_tombstones WHERE workspace_id = NEW.workspace_id AND id = NEW.id;
END;

CREATE TRIGGER drawers_rev_update AFTER UPDATE OF content, wing, room, hall, status, embedding, embedding_model,
    importance, memory_type, confidence, owner_user_id, superseded_by ON drawers
BEGIN
    UPDATE palace_meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'rev';
    UPDATE drawers SET rev = (SELECT CAST(value AS INTEGER) FROM palace_meta WHERE key = 'rev') WHERE seq = NEW.seq;
END;

CREATE TRIGGER drawers_rev_delete AFTER DELETE ON drawers
BEGIN
    UPDATE palace_meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'rev';
    INSERT INTO drawer_tombstones (workspace_id, id, rev)
        VALUES (OLD.workspace_id, OLD.id, (SELECT CAST(value AS INTEGER) FROM palace_meta WHERE key = 'rev'))
        ON CONFLICT (workspace_id, id) DO UPDATE SET rev = excluded.rev;
END;

-- L1 reads the most important visible drawers, newest first on ties: this
-- index answers `ORDER BY importance DESC, filed_at DESC LIMIT 15` by
-- reading fifteen entries, whatever the palace size.
DROP INDEX drawers_importance;
CREATE INDEX drawers_importance ON drawers (workspace_id, importance DESC, filed_at DESC)
    WHERE status = 'active' AND owner_user_id IS NULL;
