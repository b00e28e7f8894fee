-- Schema version 7: a drawer's vector stays in its row.
--
-- pgvector's type is stored EXTERNAL: a row over 2 KB (a 384-d vector is
-- 1,544 bytes, so most drawers with text and lexemes) had its vector moved
-- out of line into the TOAST table, and a search restricted to a wing or
-- room, which scans the place's drawers exactly, fetched every vector
-- through the TOAST index: six buffer visits a row instead of one. MAIN
-- keeps the vector in the row (compression is tried, and moving it out is
-- a last resort for rows that cannot fit a page otherwise), and a tuple
-- target of 4,080 bytes (two rows a page) leaves the rows of ordinary
-- drawers whole: longer ones have their text compressed and moved out
-- first, the vector last.
--
-- Rows written before this version keep their layout until rewritten;
-- `VACUUM FULL drawers` (an exclusive lock for its duration) rewrites them
-- all.

ALTER TABLE drawers ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE drawers SET (toast_tuple_target = 4080);
