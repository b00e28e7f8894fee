//! Texts agents read: the memory protocol returned by `status`, and the
//! description of the AAAK shorthand (MemPalace's compressed note style),
//! which agents that were set up for MemPalace ask for.

/// When to read and write memory; returned by `mempalace_status`.
pub const PALACE_PROTOCOL: &str = "MEMORY PROTOCOL — how to use this palace:
1. AT THE START of a session: call mempalace_status (this overview) and mempalace_wake_up for the identity and the essential story.
2. BEFORE ANSWERING about a person, project, decision or past event: call mempalace_kg_query or mempalace_search first. Do not guess; check.
3. WHEN UNSURE of a fact (a name, a date, who owns what): say you will check, then query the palace. Being wrong is worse than being slow.
4. WHEN SOMETHING IS WORTH KEEPING (a decision, a preference, a fix, a milestone): file it verbatim with mempalace_add_drawer in the right wing and room.
5. AT THE END of a session: call mempalace_diary_write with what happened, what you learned and what matters next.
6. WHEN A FACT CHANGES: call mempalace_kg_invalidate on the old fact and mempalace_kg_add for the new one, so both the past and the present stay answerable.

Stored text is not memory by itself; stored text plus this routine is.";

/// The AAAK shorthand; returned by `mempalace_status` and
/// `mempalace_get_aaak_spec`.
pub const AAAK_SPEC: &str = "AAAK is a compact note style for diary entries and summaries. It stays readable to people and models without decoding.

RULES:
  PEOPLE AND THINGS: short uppercase codes, defined once per note (ALC=Alice, PGS=PostgreSQL).
  FIELDS: separated by |, with a short label (SESSION:, DID:, LEARNED:, NEXT:, ⚠: warnings).
  LINKS: → for leads-to or became, + for together, ♡ for a close relation.
  FEELINGS: *word* markers where tone matters (*proud*, *worried*).
  DATES: ISO 8601 (2026-03-31). COUNTS: Nx means N times.
  IMPORTANCE: ★ to ★★★★★.
  PLACES: wings are domains (wing_code, wing_team), rooms are hyphenated topics (auth-migration).

EXAMPLE:
  SESSION:2026-04-04|DID: PGS→replaced MySQL in wing_code/db-migration|LEARNED: pgvector HNSW needs 0.8|NEXT: load test|★★★

Read it by expanding the codes; write it by keeping one fact per field.";
