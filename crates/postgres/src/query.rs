//! Retrieval queries: BM25 over the tsvector index, filtered id sets,
//! change feeds, the L1/L2 listings and access tracking.
//!
//! Filters become SQL `WHERE` clauses with bound parameters (never
//! interpolated text); every query is bound to one workspace.
//!
//! BM25 is computed the way SQLite's FTS5 `bm25()` computes it (k1 = 1.2,
//! b = 0.75, idf = ln((N − n + 0.5) / (n + 0.5)) floored at 1e-6, document
//! length in tokens), with N and the average length from the palace's
//! lexical statistics and n counted per query lexeme through the GIN
//! index. Terms are turned into lexemes by the same text-search
//! configuration that indexed the drawers (`mempalace`: English stemming,
//! no stop words).

use deadpool_postgres::Transaction;
use mempalace_core::{Drawer, DrawerId, Timestamp, WorkspaceId};
use mempalace_store::{DrawerFilter, StoreResult, VectorChange};
use tokio_postgres::types::ToSql;

use crate::error::Context;
use crate::records::drawers_where;
use crate::row::{DRAWER_COLUMNS, Param, drawer_columns_of, drawer_id, limit, refs};

/// Parameters of a query being built; `bind` returns the placeholder.
#[derive(Default)]
pub(crate) struct Binds {
    pub(crate) params: Vec<Param>,
}

impl Binds {
    pub(crate) fn bind(&mut self, value: impl ToSql + Sync + Send + 'static) -> String {
        self.params.push(Box::new(value));
        format!("${}", self.params.len())
    }
}

/// `WHERE` conditions for a filter on table alias `d`.
pub(crate) fn filter_sql(workspace: &WorkspaceId, filter: &DrawerFilter, binds: &mut Binds) -> String {
    let mut clauses = vec![format!("d.workspace_id = {}", binds.bind(workspace.as_str().to_string()))];
    for (column, items) in [("d.wing", &filter.wings), ("d.room", &filter.rooms), ("d.hall", &filter.halls)] {
        if !items.is_empty() {
            clauses.push(format!("{column} = ANY({})", binds.bind(items.clone())));
        }
    }
    if !filter.memory_types.is_empty() {
        let types: Vec<String> = filter.memory_types.iter().map(|t| t.as_str().to_string()).collect();
        clauses.push(format!("d.memory_type = ANY({})", binds.bind(types)));
    }
    if !filter.tags.is_empty() {
        clauses.push(format!(
            "EXISTS (SELECT 1 FROM drawer_tags t WHERE t.workspace_id = d.workspace_id AND t.drawer_id = d.id \
             AND t.tag = ANY({}))",
            binds.bind(filter.tags.clone())
        ));
    }
    if let Some(after) = filter.filed_after {
        clauses.push(format!("d.filed_at >= {}", binds.bind(after)));
    }
    if let Some(before) = filter.filed_before {
        clauses.push(format!("d.filed_at <= {}", binds.bind(before)));
    }
    if let Some(min) = filter.min_confidence {
        clauses.push(format!("d.confidence >= {}", binds.bind(min)));
    }
    match &filter.viewer {
        Some(user) => {
            clauses.push(format!("(d.owner_user_id IS NULL OR d.owner_user_id = {})", binds.bind(user.clone())))
        }
        None => clauses.push("d.owner_user_id IS NULL".into()),
    }
    for (column, value) in
        [("d.added_by", &filter.added_by), ("d.session_id", &filter.session_id), ("d.source_file", &filter.source_file)]
    {
        if let Some(value) = value {
            clauses.push(format!("{column} = {}", binds.bind(value.clone())));
        }
    }
    if !filter.include_hidden {
        clauses.push("d.status = 'active'".into());
    }
    clauses.join(" AND ")
}

/// A tsquery literal for one lexeme (quotes and backslashes escaped).
fn lexeme_query(lexeme: &str) -> String {
    format!("'{}'", lexeme.replace('\\', "\\\\").replace('\'', "''"))
}

/// The lexemes of each term, as the index would store them.
async fn lexemes_of(tx: &Transaction<'_>, terms: &[String]) -> StoreResult<Vec<Vec<String>>> {
    let stmt = tx
        .prepare_cached(
            "SELECT t.i, coalesce(array_agg(l ORDER BY l) FILTER (WHERE l IS NOT NULL), '{}') \
             FROM unnest($1::text[]) WITH ORDINALITY AS t(term, i) \
             LEFT JOIN LATERAL unnest(tsvector_to_array(to_tsvector('mempalace', t.term))) AS l ON true \
             GROUP BY t.i ORDER BY t.i",
        )
        .await
        .ctx("reading query lexemes")?;
    let rows = tx.query(&stmt, &[&terms]).await.ctx("reading query lexemes")?;
    Ok(rows.iter().map(|row| row.get::<_, Vec<String>>(1)).collect())
}

/// Above this many drawers a term's document frequency is the planner's
/// estimate (from the column statistics ANALYZE keeps of the tsvector's
/// most common lexemes) instead of a count: counting a term that half the
/// palace contains reads half the palace, and such a term only enters the
/// normalisation of BM25 scores, never the search (the engine leaves terms
/// that occur in more than max(2,000, 5 %) of the drawers out).
const EXACT_FREQUENCY_LIMIT: i64 = 2_000;

/// Drawers (any workspace, any status) whose lexical entry holds any of
/// `lexemes`: exact up to `bound` (see [`frequency_bound`]), estimated above it.
async fn document_frequency(tx: &Transaction<'_>, lexemes: &[String], bound: i64) -> StoreResult<u64> {
    if lexemes.is_empty() {
        return Ok(0);
    }
    let c = "counting term frequencies";
    let query = lexemes.iter().map(|l| lexeme_query(l)).collect::<Vec<_>>().join(" | ");
    // The planner's estimate, with the literal inlined so it is planned
    // for this term (a generic plan would know nothing about it).
    let literal = format!("'{}'", query.replace('\'', "''"));
    let plan: serde_json::Value = tx
        .query_one(&format!("EXPLAIN (FORMAT JSON) SELECT 1 FROM drawers WHERE lexemes @@ {literal}::tsquery"), &[])
        .await
        .ctx(c)?
        .get(0);
    let estimate = plan[0]["Plan"]["Plan Rows"].as_f64().unwrap_or(0.0) as i64;
    if estimate > bound {
        return Ok(u64::try_from(estimate).unwrap_or(0));
    }
    let stmt = tx
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM drawers WHERE lexemes @@ $1::text::tsquery LIMIT $2) AS matched",
        )
        .await
        .ctx(c)?;
    let count: i64 = tx.query_one(&stmt, &[&query, &(bound + 1)]).await.ctx(c)?.get(0);
    Ok(u64::try_from(if count > bound { count.max(estimate) } else { count }).unwrap_or(0))
}

/// Above how many drawers a frequency is estimated: max(2,000, 5 % of the
/// lexical index); read once per call, not once per term.
async fn frequency_bound(tx: &Transaction<'_>) -> StoreResult<i64> {
    let stmt =
        tx.prepare_cached("SELECT lexical_docs FROM palace_counters WHERE id = 1").await.ctx("counting documents")?;
    let documents: i64 = tx.query_one(&stmt, &[]).await.ctx("counting documents")?.get(0);
    Ok(EXACT_FREQUENCY_LIMIT.max(documents / 20))
}

pub(crate) async fn term_frequencies(
    tx: &Transaction<'_>,
    terms: &[String],
    bound: fn(u64) -> u64,
) -> StoreResult<(u64, Vec<u64>)> {
    let documents: i64 = tx
        .query_one("SELECT coalesce(sum(drawers), 0)::bigint FROM room_counts", &[])
        .await
        .ctx("counting documents")?
        .get(0);
    let bound = i64::try_from(bound(u64::try_from(documents).unwrap_or(0))).unwrap_or(i64::MAX - 1);
    let mut counts = Vec::with_capacity(terms.len());
    for lexemes in lexemes_of(tx, terms).await? {
        counts.push(document_frequency(tx, &lexemes, bound).await?);
    }
    Ok((u64::try_from(documents).unwrap_or(0), counts))
}

pub(crate) async fn lexical_search(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    terms: &[String],
    filter: &DrawerFilter,
    count: usize,
) -> StoreResult<Vec<(DrawerId, f64)>> {
    let mut lexemes: Vec<String> = lexemes_of(tx, terms).await?.into_iter().flatten().collect();
    lexemes.sort();
    lexemes.dedup();
    if lexemes.is_empty() {
        return Ok(Vec::new());
    }
    let mut frequencies: Vec<i64> = Vec::with_capacity(lexemes.len());
    let bound = frequency_bound(tx).await?;
    for lexeme in &lexemes {
        let frequency = document_frequency(tx, std::slice::from_ref(lexeme), bound).await?;
        frequencies.push(i64::try_from(frequency).unwrap_or(i64::MAX));
    }
    let query = lexemes.iter().map(|l| lexeme_query(l)).collect::<Vec<_>>().join(" | ");
    let mut binds = Binds::default();
    let lexemes_param = binds.bind(lexemes.clone());
    let frequencies_param = binds.bind(frequencies);
    let query_param = binds.bind(query);
    let clauses = filter_sql(workspace, filter, &mut binds);
    let limit_param = binds.bind(limit(count));
    let sql = format!(
        "WITH stats AS ( \
             SELECT greatest(lexical_docs, 1)::float8 AS n, \
                    greatest(lexical_tokens, 1)::float8 / greatest(lexical_docs, 1) AS avgdl \
             FROM palace_counters WHERE id = 1), \
         terms AS (SELECT t.lexeme, t.df::float8 AS df FROM unnest({lexemes_param}::text[], {frequencies_param}::bigint[]) AS t(lexeme, df)), \
         matched AS (SELECT d.id, d.lex_len, d.lexemes FROM drawers d \
                     WHERE d.lexemes @@ {query_param}::text::tsquery AND {clauses}) \
         SELECT m.id, sum(greatest(ln((s.n - t.df + 0.5) / (t.df + 0.5)), 1e-6) \
                          * (u.tf * 2.2) / (u.tf + 1.2 * (0.25 + 0.75 * m.lex_len / s.avgdl))) AS score \
         FROM matched m CROSS JOIN stats s \
         CROSS JOIN LATERAL (SELECT v.lexeme, coalesce(array_length(v.positions, 1), 1)::float8 AS tf \
                             FROM unnest(ts_filter(setweight(m.lexemes, 'A', {lexemes_param}::text[]), '{{a}}')) AS v) AS u \
         JOIN terms t ON t.lexeme = u.lexeme \
         GROUP BY m.id ORDER BY score DESC, m.id LIMIT {limit_param}"
    );
    let stmt = tx.prepare_cached(&sql).await.ctx("preparing a lexical search")?;
    let rows = tx.query(&stmt, &refs(&binds.params)).await.ctx("running a lexical search")?;
    rows.iter().map(|row| Ok((drawer_id(&row.get::<_, String>(0))?, row.get::<_, f64>(1)))).collect()
}

pub(crate) async fn filtered_ids(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    filter: &DrawerFilter,
) -> StoreResult<Vec<DrawerId>> {
    let mut binds = Binds::default();
    let clauses = filter_sql(workspace, filter, &mut binds);
    let sql = format!("SELECT d.id FROM drawers d WHERE {clauses}");
    let stmt = tx.prepare_cached(&sql).await.ctx("filtering drawers")?;
    let rows = tx.query(&stmt, &refs(&binds.params)).await.ctx("filtering drawers")?;
    rows.iter().map(|row| drawer_id(&row.get::<_, String>(0))).collect()
}

pub(crate) async fn vector_changes(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    model: &str,
    after: i64,
    count: usize,
) -> StoreResult<Vec<VectorChange>> {
    let c = "reading vector changes";
    let stmt = tx
        .prepare_cached(
            "SELECT id, rev, CASE WHEN status = 'active' AND embedding_model = $2 THEN embedding END, wing, room \
             FROM drawers WHERE workspace_id = $1 AND rev > $3 \
             UNION ALL \
             SELECT id, rev, NULL, '', '' FROM drawer_tombstones WHERE workspace_id = $1 AND rev > $3 \
             ORDER BY rev LIMIT $4",
        )
        .await
        .ctx(c)?;
    let rows = tx.query(&stmt, &[&workspace.as_str(), &model, &after, &limit(count)]).await.ctx(c)?;
    rows.iter()
        .map(|row| {
            Ok(VectorChange {
                id: drawer_id(&row.get::<_, String>(0))?,
                rev: row.get(1),
                vector: row.get::<_, Option<pgvector::Vector>>(2).map(|v| v.to_vec()),
                wing: row.get(3),
                room: row.get(4),
            })
        })
        .collect()
}

pub(crate) async fn top_drawers(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    wing: Option<&str>,
    count: usize,
) -> StoreResult<Vec<Drawer>> {
    let sql = format!(
        "SELECT {DRAWER_COLUMNS} FROM drawers WHERE workspace_id = $1 AND status = 'active' \
         AND owner_user_id IS NULL AND ($2::text IS NULL OR wing = $2) \
         ORDER BY importance DESC, filed_at DESC LIMIT $3"
    );
    drawers_where(tx, workspace, &sql, &[&workspace.as_str(), &wing, &limit(count)]).await
}

pub(crate) async fn place_drawers(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    wing: &str,
    room: Option<&str>,
    count: usize,
) -> StoreResult<Vec<Drawer>> {
    let sql = format!(
        "SELECT {DRAWER_COLUMNS} FROM drawers WHERE workspace_id = $1 AND wing = $2 \
         AND ($3::text IS NULL OR room = $3) AND status = 'active' AND owner_user_id IS NULL \
         ORDER BY filed_at DESC LIMIT $4"
    );
    drawers_where(tx, workspace, &sql, &[&workspace.as_str(), &wing, &room, &limit(count)]).await
}

pub(crate) async fn page_drawers(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    wing: Option<&str>,
    room: Option<&str>,
    offset: usize,
    count: usize,
) -> StoreResult<Vec<Drawer>> {
    let sql = format!(
        "SELECT {} FROM drawers d WHERE d.workspace_id = $1 AND ($2::text IS NULL OR d.wing = $2) \
         AND ($3::text IS NULL OR d.room = $3) AND d.status = 'active' AND d.owner_user_id IS NULL \
         ORDER BY d.filed_at DESC, d.id LIMIT $4 OFFSET $5",
        drawer_columns_of("d")
    );
    drawers_where(tx, workspace, &sql, &[&workspace.as_str(), &wing, &room, &limit(count), &limit(offset)]).await
}

pub(crate) async fn touch_access(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    ids: &[DrawerId],
    at: &Timestamp,
) -> StoreResult<usize> {
    let texts: Vec<&str> = ids.iter().map(DrawerId::as_str).collect();
    let stmt = tx
        .prepare_cached(
            "UPDATE drawers SET importance = CASE WHEN last_accessed_at IS NULL OR last_accessed_at < $4 \
             THEN least(importance + $5, 5.0) ELSE importance END, \
             last_accessed_at = $1, access_count = access_count + 1 \
             WHERE workspace_id = $2 AND id = ANY($3)",
        )
        .await
        .ctx("tracking access")?;
    let reinforce_before = *at - mempalace_store::REINFORCE_EVERY;
    let touched = tx
        .execute(&stmt, &[at, &workspace.as_str(), &texts, &reinforce_before, &mempalace_store::REINFORCE_STEP])
        .await
        .ctx("tracking access")?;
    Ok(usize::try_from(touched).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexemes_are_quoted_for_tsquery() {
        assert_eq!(lexeme_query("gripper"), "'gripper'");
        assert_eq!(lexeme_query("it's"), "'it''s'");
        assert_eq!(lexeme_query(r"a\b"), r"'a\\b'");
    }
}
