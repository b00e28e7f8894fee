//! Vector search with pgvector: one HNSW index (cosine) per embedding
//! model.
//!
//! The `embedding` column has no fixed dimension (models differ), so each
//! model gets a partial expression index,
//! `USING hnsw ((embedding::vector(DIM)) vector_cosine_ops) WHERE
//! embedding_model = 'MODEL'`, created when the model's first vector is
//! stored. A search repeats that expression and condition literally, so
//! the planner can use the index, and lets pgvector's iterative scan
//! (0.8) continue past filtered-out rows. A search restricted to a few
//! places (at most 20,000 drawers, counted from the room aggregate) scans
//! those drawers exactly instead: the place index finds them, and walking
//! the graph past the other places' vectors would cost more.

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
    format!("drawers_hnsw_{}", &hex::encode(Sha256::digest(model.as_bytes()))[..16])
}

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
    Ok(())
}

/// Makes sure the model's index exists (one creator at a time).
pub(crate) async fn ensure_index(client: &mut deadpool_postgres::Object, model: &str, dim: usize) -> StoreResult<()> {
    let exists: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1)",
            &[&index_name(model)],
        )
        .await
        .ctx("looking for a vector index")?
        .get(0);
    if exists {
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

/// Visible drawers in the places a filter names (wings and rooms), from
/// the aggregate; `None` when it names none.
async fn places_in_filter(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    filter: &DrawerFilter,
) -> StoreResult<Option<i64>> {
    if filter.wings.is_empty() && filter.rooms.is_empty() {
        return Ok(None);
    }
    let stmt = tx
        .prepare_cached(
            "SELECT coalesce(sum(drawers), 0)::bigint FROM room_counts WHERE workspace_id = $1 \
             AND (cardinality($2::text[]) = 0 OR wing = ANY($2)) AND (cardinality($3::text[]) = 0 OR room = ANY($3))",
        )
        .await
        .ctx("sizing a filtered vector search")?;
    let row = tx
        .query_one(&stmt, &[&workspace.as_str(), &filter.wings, &filter.rooms])
        .await
        .ctx("sizing a filtered vector search")?;
    Ok(Some(row.get(0)))
}

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
    if places_in_filter(tx, workspace, filter).await?.is_some_and(|n| n <= EXACT_SCAN_LIMIT) {
        // A few places' drawers: an exact scan of them (found through the
        // place index) beats walking the graph past everything else.
        tx.batch_execute("SET LOCAL enable_indexscan = off").await.ctx("configuring a vector search")?;
    } else {
        tx.batch_execute(&format!(
            "SET LOCAL hnsw.ef_search = {}; SET LOCAL hnsw.iterative_scan = relaxed_order",
            EF_SEARCH.max(count)
        ))
        .await
        .ctx("configuring a vector search")?;
    }
    let mut binds = Binds::default();
    let query_param = binds.bind(pgvector::Vector::from(query.to_vec()));
    let clauses = filter_sql(workspace, filter, &mut binds);
    let limit_param = binds.bind(limit(count));
    let distance = format!("d.embedding::vector({dim}) <=> {query_param}::vector({dim})");
    let sql = format!(
        "SELECT d.id, 1 - ({distance}) AS similarity FROM drawers d \
         WHERE d.embedding_model = {} AND {clauses} ORDER BY {distance} LIMIT {limit_param}",
        literal(model)
    );
    let rows = tx.query(&sql, &refs(&binds.params)).await.ctx("searching vectors")?;
    let mut hits: Vec<(DrawerId, f32)> = rows
        .iter()
        .map(|row| Ok((drawer_id(&row.get::<_, String>(0))?, row.get::<_, f64>(1) as f32)))
        .collect::<StoreResult<_>>()?;
    // The relaxed iterative scan may return neighbours slightly out of order.
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(hits)
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
