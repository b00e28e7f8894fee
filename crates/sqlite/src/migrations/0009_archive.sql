-- Schema version 9: the archive.
--
-- `prune` moves drawers whose importance has decayed below the floor to
-- the archive: status 'archived', kept with their vectors, hidden from
-- searches and counts like any inactive drawer, restorable. The status
-- CHECK constraint gains the value; SQLite cannot alter a constraint, so
-- the stored table definition is rewritten in place (the procedure of
-- SQLite's "Making Other Kinds Of Table Schema Changes": a CHECK that
-- accepts more values changes no stored row). The code that applies this
-- migration bumps `schema_version` so open connections re-read the schema.

PRAGMA writable_schema = ON;
UPDATE sqlite_schema
    SET sql = replace(sql, 'CHECK (status IN (''active'', ''superseded'', ''invalidated''))',
                           'CHECK (status IN (''active'', ''superseded'', ''invalidated'', ''archived''))')
    WHERE type = 'table' AND name = 'drawers';
PRAGMA writable_schema = OFF;
