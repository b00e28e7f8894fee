-- Schema version 4: the archive. `prune` moves drawers whose importance
-- has decayed below the floor to status 'archived': kept with their
-- vectors, hidden like any inactive drawer, restorable.
ALTER TABLE drawers DROP CONSTRAINT drawers_status_check;
ALTER TABLE drawers ADD CONSTRAINT drawers_status_check
    CHECK (status IN ('active', 'superseded', 'invalidated', 'archived'));
