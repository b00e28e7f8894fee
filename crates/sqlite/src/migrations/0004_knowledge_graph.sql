-- Schema version 4: which drawers mention which entities (written by the
-- extractor at ingestion, used by KG-boosted search), and lookups the
-- knowledge-graph queries need.

CREATE TABLE entity_mentions (
    workspace_id TEXT NOT NULL,
    entity_id    TEXT NOT NULL,
    drawer_id    TEXT NOT NULL,
    PRIMARY KEY (workspace_id, entity_id, drawer_id),
    FOREIGN KEY (workspace_id, drawer_id) REFERENCES drawers (workspace_id, id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX entity_mentions_drawer ON entity_mentions (workspace_id, drawer_id);

CREATE INDEX triples_open ON triples (workspace_id, subject, predicate, object) WHERE valid_to IS NULL;

-- Derived: visible drawers per (workspace, wing, room, hall), for the
-- palace graph's halls, kept by triggers like room_counts.
CREATE TABLE hall_counts (
    workspace_id TEXT NOT NULL,
    wing         TEXT NOT NULL,
    room         TEXT NOT NULL,
    hall         TEXT NOT NULL,
    drawers      INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, wing, room, hall)
) WITHOUT ROWID;

INSERT INTO hall_counts (workspace_id, wing, room, hall, drawers)
    SELECT workspace_id, wing, room, hall, count(*) FROM drawers
    WHERE status = 'active' AND hall IS NOT NULL GROUP BY workspace_id, wing, room, hall;

CREATE TRIGGER drawers_hall_count_insert AFTER INSERT ON drawers
WHEN NEW.status = 'active' AND NEW.hall IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO hall_counts (workspace_id, wing, room, hall, drawers)
        VALUES (NEW.workspace_id, NEW.wing, NEW.room, NEW.hall, 0);
    UPDATE hall_counts SET drawers = drawers + 1
        WHERE workspace_id = NEW.workspace_id AND wing = NEW.wing AND room = NEW.room AND hall = NEW.hall;
END;

CREATE TRIGGER drawers_hall_count_delete AFTER DELETE ON drawers
WHEN OLD.status = 'active' AND OLD.hall IS NOT NULL
BEGIN
    UPDATE hall_counts SET drawers = drawers - 1
        WHERE workspace_id = OLD.workspace_id AND wing = OLD.wing AND room = OLD.room AND hall = OLD.hall;
    DELETE FROM hall_counts
        WHERE workspace_id = OLD.workspace_id AND wing = OLD.wing AND room = OLD.room AND hall = OLD.hall
          AND drawers <= 0;
END;

CREATE TRIGGER drawers_hall_count_update AFTER UPDATE OF wing, room, hall, status ON drawers
WHEN (OLD.status = 'active' AND OLD.hall IS NOT NULL) OR (NEW.status = 'active' AND NEW.hall IS NOT NULL)
BEGIN
    UPDATE hall_counts SET drawers = drawers - 1
        WHERE OLD.status = 'active' AND OLD.hall IS NOT NULL
          AND workspace_id = OLD.workspace_id AND wing = OLD.wing AND room = OLD.room AND hall = OLD.hall;
    DELETE FROM hall_counts
        WHERE OLD.status = 'active' AND OLD.hall IS NOT NULL
          AND workspace_id = OLD.workspace_id AND wing = OLD.wing AND room = OLD.room AND hall = OLD.hall
          AND drawers <= 0;
    INSERT OR IGNORE INTO hall_counts (workspace_id, wing, room, hall, drawers)
        SELECT NEW.workspace_id, NEW.wing, NEW.room, NEW.hall, 0 WHERE NEW.status = 'active' AND NEW.hall IS NOT NULL;
    UPDATE hall_counts SET drawers = drawers + 1
        WHERE NEW.status = 'active' AND NEW.hall IS NOT NULL
          AND workspace_id = NEW.workspace_id AND wing = NEW.wing AND room = NEW.room AND hall = NEW.hall;
END;

-- Existing drawers' mentions are filled in by the Rust side of this
-- migration (entity ids are SHA-256 of normalised names).
