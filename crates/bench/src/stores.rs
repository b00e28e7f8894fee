//! SQLite against PostgreSQL (issue 9): hybrid search latency, query
//! embedding included, on the same palace in both stores, measured in one
//! run with the two stores' searches interleaved so the machine's noise
//! falls on both alike.
//!
//! The palace is the search benchmark's: `size` drawers of realistic text
//! with random unit vectors tagged with MiniLM's id (the query is embedded
//! for real). PostgreSQL gets a schema of its own in the given database,
//! dropped at the end (kept, for a look with psql, with `--keep-schema`).
//! A third palace opens the same schema with
//! `max_parallel_workers_per_gather = 0` in the URL: PostgreSQL without the
//! parallel workers its restricted searches may use, timed in the same loop.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use mempalace_core::WorkspaceId;
use mempalace_embed::Embedder;
use mempalace_embed::files::minilm_dir;
use mempalace_embed::minilm::MiniLm;
use mempalace_engine::{Palace, SearchRequest};
use mempalace_postgres::testing::TestSchema;
use mempalace_postgres::{PgOptions, PgStore};
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use mempalace_store::DrawerFilter;
use serde_json::{Value, json};

use crate::report::summarize;
use crate::search::{QUERIES, SCOPES, fill_store};

/// One timed search; milliseconds.
fn search(palace: &Palace, query: &str, filter: &DrawerFilter) -> Result<f64> {
    let started = Instant::now();
    let outcome = palace.search(&SearchRequest {
        query: query.into(),
        limit: mempalace_core::layers::ResultLimit::constant(10),
        filter: filter.clone(),
        skip_access_tracking: true,
        ..Default::default()
    })?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    anyhow::ensure!(!outcome.hits.is_empty(), "a benchmark query found nothing");
    Ok(ms)
}

/// Runs the benchmark; returns (summary, samples).
pub fn run(
    models: &std::path::Path,
    database_url: &str,
    size: u64,
    runs: usize,
    keep_schema: bool,
) -> Result<(Value, Value)> {
    let minilm: Arc<dyn Embedder> = Arc::new(MiniLm::load(&minilm_dir(models))?);
    let scratch = tempfile::tempdir()?;
    // A schema of its own on the server, dropped at the end.
    let schema = TestSchema::new(database_url);
    let result = (|| -> Result<(Value, Value)> {
        let sqlite = Arc::new(SqliteStore::open(
            &scratch.path().join("palace.db"),
            SqliteOptions { create: true, ..SqliteOptions::default() },
        )?);
        let postgres = Arc::new(PgStore::open(&schema.url, PgOptions::default())?);
        let serial_url = format!("{}%20-cmax_parallel_workers_per_gather%3D0", schema.url);
        let started = Instant::now();
        fill_store(sqlite.as_ref(), size, minilm.model_id(), minilm.dim())?;
        let sqlite_fill = started.elapsed().as_secs_f64();
        let started = Instant::now();
        fill_store(postgres.as_ref(), size, minilm.model_id(), minilm.dim())?;
        let postgres_fill = started.elapsed().as_secs_f64();
        schema.execute(&format!("VACUUM ANALYZE {}.drawers", schema.name));

        let serial = Arc::new(PgStore::open(&serial_url, PgOptions::default())?);
        let palace = |store: Arc<dyn mempalace_store::Store>| {
            Palace::new(store, WorkspaceId::default_workspace()).with_embedder(Arc::clone(&minilm))
        };
        let palaces = [("sqlite", palace(sqlite)), ("postgres", palace(postgres)), ("postgres_serial", palace(serial))];
        let mut summary = json!({"drawers": size, "runs": runs,
            "fill_seconds": {"sqlite": sqlite_fill, "postgres": postgres_fill}});
        let mut samples = json!({});
        // Warm-up: the SQLite process loads its vector index, PostgreSQL its caches.
        let mut first = json!({});
        for (scenario, filter) in &SCOPES {
            for (name, palace) in &palaces {
                first[*scenario][*name] = json!(search(palace, QUERIES[0], &filter(0))?);
            }
        }
        // Whole-palace, one-wing and one-room searches, interleaved query
        // by query and store by store, so each store's restricted-to-whole
        // ratio is measured in one loop.
        let mut times = vec![vec![Vec::with_capacity(runs); palaces.len()]; SCOPES.len()];
        for i in 0..runs {
            let query = QUERIES[i % QUERIES.len()];
            for (s, (_, filter)) in SCOPES.iter().enumerate() {
                // Rotate which store goes first.
                for k in 0..palaces.len() {
                    let which = (i + k) % palaces.len();
                    times[s][which].push(search(&palaces[which].1, query, &filter(i))?);
                }
            }
        }
        let p50 = |values: &[f64]| summarize(values)["p50_ms"].as_f64().unwrap_or(f64::NAN);
        for (s, (scenario, _)) in SCOPES.iter().enumerate() {
            let mut entry = json!({"first_search_ms": first[*scenario],
                "p50_ratio_postgres_to_sqlite": p50(&times[s][1]) / p50(&times[s][0]),
                "p50_ratio_postgres_to_postgres_serial": p50(&times[s][1]) / p50(&times[s][2])});
            let mut to_whole = json!({});
            for (which, (name, _)) in palaces.iter().enumerate() {
                entry[*name] = summarize(&times[s][which]);
                samples[format!("search_{scenario}")][*name] = json!(times[s][which]);
                to_whole[*name] = json!(p50(&times[s][which]) / p50(&times[0][which]));
            }
            if s > 0 {
                entry["p50_ratio_to_whole"] = to_whole;
            }
            summary[format!("search_{scenario}")] = entry;
        }
        Ok((summary, samples))
    })();
    if keep_schema {
        std::mem::forget(schema);
    }
    result
}
