//! Versioned migrations, applied on connect.
//!
//! Each migration runs in one transaction holding an advisory lock on the
//! schema, so processes starting together apply it once; the others wait,
//! then find the version already reached. A database whose version is
//! newer than this build is refused, never downgraded.

use deadpool_postgres::GenericClient;
use mempalace_core::Timestamp;
use mempalace_store::{StoreError, StoreResult};

use crate::error::Context;

/// The highest schema version this build knows.
pub const SCHEMA_VERSION: u32 = 8;

/// Migrations, oldest first: (version reached, SQL).
const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("migrations/0001_palace.sql")),
    (2, include_str!("migrations/0002_coordination.sql")),
    (3, include_str!("migrations/0003_pipeline_counts.sql")),
    (4, include_str!("migrations/0004_archive.sql")),
    (5, include_str!("migrations/0005_entity_aliases_centroids.sql")),
    (6, include_str!("migrations/0006_tenancy.sql")),
    (7, include_str!("migrations/0007_vectors_in_row.sql")),
    (8, include_str!("migrations/0008_place_keys.sql")),
];

/// The schema version of the connected schema (0 before the first migration).
pub(crate) async fn current_version(client: &impl GenericClient) -> StoreResult<u32> {
    let exists: bool = client
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
        .await
        .ctx("looking for the schema")?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let version: Option<i32> = client
        .query_one("SELECT max(version) FROM schema_migrations", &[])
        .await
        .ctx("reading the schema version")?
        .get(0);
    Ok(u32::try_from(version.unwrap_or(0)).unwrap_or(0))
}

/// Applies every migration the schema has not had yet.
pub(crate) async fn migrate(client: &mut deadpool_postgres::Object) -> StoreResult<()> {
    if current_version(&*client).await? == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = client.transaction().await.ctx("starting a migration")?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '/mempalace/migrate'))", &[])
        .await
        .ctx("locking the schema for migration")?;
    let version = current_version(&tx).await?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew { found: version, supported: SCHEMA_VERSION });
    }
    for (target, sql) in MIGRATIONS.iter().filter(|(target, _)| *target > version) {
        tracing::info!(version = target, "migrating the palace database");
        tx.batch_execute(sql).await.ctx(&format!("applying migration {target}"))?;
        let now: Timestamp = chrono::Utc::now();
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
            &[&i32::try_from(*target).unwrap_or(i32::MAX), &now],
        )
        .await
        .ctx("recording a migration")?;
    }
    // Indexes of the stored models that the migrations call for (schema 8's
    // place indexes), made by the code that makes them for new models.
    crate::vectors::create_missing_indexes(&tx).await?;
    tx.commit().await.ctx("committing the migration")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_ordered_and_end_at_the_schema_version() {
        let versions: Vec<u32> = MIGRATIONS.iter().map(|(version, _)| *version).collect();
        let mut sorted = versions.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(versions, sorted);
        assert_eq!(versions.last().copied(), Some(SCHEMA_VERSION));
    }
}
