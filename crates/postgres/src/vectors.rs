//! Vector search with pgvector: one HNSW index (cosine) per embedding
//! model, and a place index beside it.
//!
//! The `embedding` column has no fixed dimension (models differ), so each
//! model gets a partial expression index,
//! `USING hnsw ((embedding::vector(DIM)) vector_cosine_ops) WHERE
//! embedding_model = 'MODEL'`, created when the model's first vector is
//! stored. A search repeats that expression and condition literally, so
//! the planner can use the index, and lets pgvector's iterative scan
//! (0.8) continue past filtered-out rows.
//!
//! A search restricted to a few places (at most 20,000 drawers, counted
//! from the room aggregate) scans those drawers exactly instead: walking
//! the graph past the other places' vectors would cost more. When the
//! filter names wings or rooms and nothing else, the scan reads
//! the model's place index, a B-tree of its active drawers keyed by the
//! hashed place (schema 8) that holds their `seq`, owner key and vector:
//! an index-only scan that never visits the heap pages the place's
//! drawers are spread over. The nearest few are then read back by `seq`,
//! with their names checked. Other filters scan through the place's
//! B-tree of names and the heap.

use deadpool_postgres::Transaction;
use mempalace_core::{DrawerId, WorkspaceId};
use mempalace_store::{DrawerFilter, StoreError, StoreResult};
use sha2::{Digest, Sha256};

use crate::error::Context;
use crate::query::{Binds, filter_sql};
use crate::row::{drawer_id, limit, refs};

/// Candidates HNSW keeps while searching (pgvector's default is 40).
const EF_SEARCH: usize = 200;

/// The index name of a model's vectors.
fn index_name(model: &str) -> String {
    format!("drawers_hnsw_{}", model_hash(model))
}

/// The name of a model's place index (schema 8).
fn place_index_name(model: &str) -> String {
    format!("drawers_place_vec_{}", model_hash(model))
}

fn model_hash(model: &str) -> String {
    hex::encode(&Sha256::digest(model.as_bytes())[..8])
}

/// Widest vectors a place index holds: an index entry is at most 2,704
/// bytes, and a vector of `d` dimensions takes `4 d + 8`.
pub(crate) const PLACE_INDEX_MAX_DIM: usize = 600;

/// A SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn dimension(dim: usize) -> StoreResult<usize> {
    if (1..=2000).contains(&dim) {
        Ok(dim)
    } else {
        Err(StoreError::invalid(format!("vectors of {dim} dimensions cannot be indexed (pgvector HNSW: 1 to 2,000)")))
    }
}

/// Creates the model's index in `tx` unless it exists.
pub(crate) async fn create_index(tx: &Transaction<'_>, model: &str, dim: usize) -> StoreResult<()> {
    let dim = dimension(dim)?;
    let sql = format!(
        "CREATE INDEX IF NOT EXISTS {} ON drawers USING hnsw ((embedding::vector({dim})) vector_cosine_ops) \
         WHERE embedding_model = {}",
        index_name(model),
        literal(model)
    );
    tx.batch_execute(&sql).await.ctx("creating a vector index")?;
    if dim <= PLACE_INDEX_MAX_DIM {
        let sql = format!(
            "CREATE INDEX IF NOT EXISTS {} ON drawers (wing_key, room_key) INCLUDE (seq, owner_key, embedding) \
             WHERE embedding_model = {} AND status = 'active'",
            place_index_name(model),
            literal(model)
        );
        tx.batch_execute(&sql).await.ctx("creating a place index of vectors")?;
    }
    Ok(())
}

/// Creates the HNSW and place indexes of every stored model that lacks
/// them: after a migration (schema 8 added the place indexes) and in
/// `doctor`'s rebuild.
pub(crate) async fn create_missing_indexes(tx: &Transaction<'_>) -> StoreResult<()> {
    let models = tx
        .query(
            "SELECT embedding_model, min(vector_dims(embedding)) FROM drawers WHERE embedding IS NOT NULL \
             GROUP BY embedding_model",
            &[],
        )
        .await
        .ctx("listing embedding models")?;
    for row in models {
        let (model, dim): (String, i32) = (row.get(0), row.get(1));
        create_index(tx, &model, usize::try_from(dim).unwrap_or(0)).await?;
    }
    Ok(())
}

/// Makes sure the model's index exists (one creator at a time).
pub(crate) async fn ensure_index(client: &mut deadpool_postgres::Object, model: &str, dim: usize) -> StoreResult<()> {
    let mut names = vec![index_name(model)];
    if dimension(dim)? <= PLACE_INDEX_MAX_DIM {
        names.push(place_index_name(model));
    }
    let found: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ANY($1)",
            &[&names],
        )
        .await
        .ctx("looking for a vector index")?
        .get(0);
    if usize::try_from(found).is_ok_and(|found| found == names.len()) {
        return Ok(());
    }
    let tx = client.transaction().await.ctx("creating a vector index")?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '/mempalace/vector-index'))", &[])
        .await
        .ctx("locking vector index creation")?;
    create_index(&tx, model, dim).await?;
    tx.commit().await.ctx("creating a vector index")?;
    tracing::info!(model, dim, "vector index created");
    Ok(())
}

/// Most drawers a filtered search scans exactly rather than through HNSW.
const EXACT_SCAN_LIMIT: i64 = 20_000;

/// What a filter's places hold: their visible drawers (from the
/// aggregate), whether the model's place index exists, and the keys the
/// index files the places and the viewer under (schema 8).
struct Places {
    drawers: i64,
    place_index: bool,
    wing_keys: Vec<i64>,
    room_keys: Vec<i64>,
    viewer_key: Option<i64>,
}

/// The places a filter names (wings and rooms); `None` when it names none.
/// The keys are computed here, by the server's own hash, so the search
/// binds them as values the planner can estimate. Rooms named without a
/// wing are looked up under every wing that holds them (from the
/// aggregate), so the index is probed at those places only.
async fn places_in_filter(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    model: &str,
    filter: &DrawerFilter,
) -> StoreResult<Option<Places>> {
    if filter.wings.is_empty() && filter.rooms.is_empty() {
        return Ok(None);
    }
    let stmt = tx
        .prepare_cached(
            "SELECT (SELECT coalesce(sum(drawers), 0)::bigint FROM room_counts \
                 WHERE workspace_id = $1 AND (cardinality($2::text[]) = 0 OR wing = ANY($2)) \
                 AND (cardinality($3::text[]) = 0 OR room = ANY($3))), \
             to_regclass($4) IS NOT NULL, \
             ARRAY(SELECT mempalace_wing_key($1, w) FROM unnest(CASE \
                 WHEN cardinality($2::text[]) > 0 THEN $2::text[] \
                 ELSE ARRAY(SELECT DISTINCT wing FROM room_counts WHERE workspace_id = $1 AND room = ANY($3)) \
                 END) w), \
             ARRAY(SELECT hashtextextended(r, 0) FROM unnest($3::text[]) r), \
             hashtextextended($5::text, 0)",
        )
        .await
        .ctx("sizing a filtered vector search")?;
    let row = tx
        .query_one(
            &stmt,
            &[&workspace.as_str(), &filter.wings, &filter.rooms, &place_index_name(model), &filter.viewer],
        )
        .await
        .ctx("sizing a filtered vector search")?;
    Ok(Some(Places {
        drawers: row.get(0),
        place_index: row.get(1),
        wing_keys: row.get(2),
        room_keys: row.get(3),
        viewer_key: row.get(4),
    }))
}

/// Whether a place index answers everything a filter asks besides its
/// places: its other conditions are the defaults, or the viewer, whose
/// own drawers the index keys too.
fn place_index_answers(filter: &DrawerFilter) -> bool {
    DrawerFilter { wings: Vec::new(), rooms: Vec::new(), viewer: None, ..filter.clone() } == DrawerFilter::default()
}

/// Candidates read beyond those asked for from a place index, so that a
/// hash collision (a drawer of another place under the same key, dropped
/// when the names are checked) cannot leave a search short.
const PLACE_COLLISION_SLACK: usize = 16;

/// The nearest drawers to `query` among `model`'s vectors passing `filter`.
pub(crate) async fn search(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    model: &str,
    query: &[f32],
    filter: &DrawerFilter,
    count: usize,
) -> StoreResult<Vec<(DrawerId, f32)>> {
    let dim = dimension(query.len())?;
    let mut binds = Binds::default();
    let query_param = binds.bind(pgvector::Vector::from(query.to_vec()));
    let sql = match places_in_filter(tx, workspace, model, filter).await? {
        Some(places) if places.drawers <= EXACT_SCAN_LIMIT => {
            if places.place_index && dim <= PLACE_INDEX_MAX_DIM && place_index_answers(filter) {
                // An index-only scan of the place index: no plan reads
                // the heap for each of the places' drawers.
                tx.batch_execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
                    .await
                    .ctx("configuring a vector search")?;
                place_scan_sql(workspace, model, &query_param, filter, &places, count, &mut binds)
            } else {
                // A few places' drawers: an exact scan of them (found
                // through the places' B-tree of names) beats walking the
                // graph past everything else.
                tx.batch_execute("SET LOCAL enable_indexscan = off").await.ctx("configuring a vector search")?;
                graph_or_scan_sql(workspace, model, dim, &query_param, filter, count, &mut binds)
            }
        }
        _ => {
            tx.batch_execute(&format!(
                "SET LOCAL hnsw.ef_search = {}; SET LOCAL hnsw.iterative_scan = relaxed_order",
                EF_SEARCH.max(count)
            ))
            .await
            .ctx("configuring a vector search")?;
            graph_or_scan_sql(workspace, model, dim, &query_param, filter, count, &mut binds)
        }
    };
    let rows = tx.query(&sql, &refs(&binds.params)).await.ctx("searching vectors")?;
    let mut hits: Vec<(DrawerId, f32)> = rows
        .iter()
        .map(|row| Ok((drawer_id(&row.get::<_, String>(0))?, row.get::<_, f64>(1) as f32)))
        .collect::<StoreResult<_>>()?;
    // The relaxed iterative scan may return neighbours slightly out of order.
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(hits)
}

/// The search through the HNSW index's expression (the graph, or an exact
/// scan when index scans are off).
fn graph_or_scan_sql(
    workspace: &WorkspaceId,
    model: &str,
    dim: usize,
    query_param: &str,
    filter: &DrawerFilter,
    count: usize,
    binds: &mut Binds,
) -> String {
    let clauses = filter_sql(workspace, filter, binds);
    let limit_param = binds.bind(limit(count));
    let distance = format!("d.embedding::vector({dim}) <=> {query_param}::vector({dim})");
    format!(
        "SELECT d.id, 1 - ({distance}) AS similarity FROM drawers d \
         WHERE d.embedding_model = {} AND {clauses} ORDER BY {distance} LIMIT {limit_param}",
        literal(model)
    )
}

/// The search through the model's place index: the nearest of the
/// places' keys (an index-only scan: every column it names is in the
/// index, and its other conditions are the index's own), then those
/// drawers read back by `seq` with their workspace, places and owner
/// checked by name. The distance is written without the HNSW index's
/// cast, so the planner does not walk the graph instead.
fn place_scan_sql(
    workspace: &WorkspaceId,
    model: &str,
    query_param: &str,
    filter: &DrawerFilter,
    places: &Places,
    count: usize,
    binds: &mut Binds,
) -> String {
    let mut keys = format!("wing_key = ANY({})", binds.bind(places.wing_keys.clone()));
    let mut names = format!("d.workspace_id = {}", binds.bind(workspace.as_str().to_string()));
    if !filter.wings.is_empty() {
        names.push_str(&format!(" AND d.wing = ANY({})", binds.bind(filter.wings.clone())));
    }
    if !filter.rooms.is_empty() {
        keys.push_str(&format!(" AND room_key = ANY({})", binds.bind(places.room_keys.clone())));
        names.push_str(&format!(" AND d.room = ANY({})", binds.bind(filter.rooms.clone())));
    }
    match (&filter.viewer, places.viewer_key) {
        (Some(user), Some(key)) => {
            keys.push_str(&format!(" AND (owner_key IS NULL OR owner_key = {})", binds.bind(key)));
            names
                .push_str(&format!(" AND (d.owner_user_id IS NULL OR d.owner_user_id = {})", binds.bind(user.clone())));
        }
        _ => {
            keys.push_str(" AND owner_key IS NULL");
            names.push_str(" AND d.owner_user_id IS NULL");
        }
    }
    let near_param = binds.bind(limit(count + PLACE_COLLISION_SLACK));
    let limit_param = binds.bind(limit(count));
    format!(
        "WITH near AS MATERIALIZED (SELECT seq, embedding <=> {query_param} AS distance FROM drawers \
         WHERE embedding_model = {} AND status = 'active' AND {keys} ORDER BY distance LIMIT {near_param}) \
         SELECT d.id, 1 - near.distance AS similarity FROM near JOIN drawers d ON d.seq = near.seq \
         WHERE {names} ORDER BY near.distance LIMIT {limit_param}",
        literal(model)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_names_are_stable_identifiers() {
        let name = index_name("all-MiniLM-L6-v2");
        assert_eq!(name, index_name("all-MiniLM-L6-v2"));
        assert_ne!(name, index_name("all-MiniLM-L6-v2-int8"));
        assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'));
        assert_eq!(literal("it's"), "'it''s'");
        assert!(dimension(0).is_err() && dimension(2001).is_err() && dimension(384).is_ok());
    }
}
