//! The retrieval benchmark (issue 4): hybrid search latency, query
//! embedding included, on palaces of 10,000 and 100,000 drawers (MiniLM)
//! and 1,000,000 (static model); wake-up latency; end-to-end ingestion
//! rate of 800-character chunks with each model.
//!
//! Filling a palace by embedding 100,000 chunks would take most of an hour,
//! so the stored vectors of the large palaces are random unit vectors
//! tagged with the model's id: the scan, the fusion and the fetches do the
//! same work as on real vectors, and the query is embedded for real. Search
//! quality is measured elsewhere (the LoCoMo benchmark), not here.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use mempalace_core::{Content, Drawer, Embedding, Room, Wing, WorkspaceId};
use mempalace_embed::Embedder;
use mempalace_embed::files::{minilm_dir, static_dir};
use mempalace_embed::minilm::MiniLm;
use mempalace_embed::static_model::StaticModel;
use mempalace_engine::vector_index::Restriction;
use mempalace_engine::{IngestRequest, Palace, SearchRequest};
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use mempalace_store::{DrawerFilter, StoreWrite};
use serde_json::{Value, json};

use crate::corpus::{Rng, drawer_text};
use crate::embed::prose_chunks;
use crate::report::summarize;

pub(crate) const QUERIES: &[&str] = &[
    "what database did we choose for the backend",
    "gripper force calibration",
    "who manages the infrastructure budget",
    "why did the deployment fail",
    "E4471 firmware error",
    "alice prefers dark mode",
    "release schedule for the next version",
    "battery life of the warehouse robot",
];

fn random_unit(rng: &mut Rng, dim: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dim).map(|_| (rng.below(2_000_001) as f32 / 1_000_000.0) - 1.0).collect();
    mempalace_core::vector::normalize(&mut v);
    v
}

/// Fills a palace at `file` with `n` drawers carrying random vectors of `model`.
fn fill(file: &Path, n: u64, model: &str, dim: usize) -> Result<Arc<SqliteStore>> {
    let store = Arc::new(SqliteStore::open(file, SqliteOptions { create: true, ..SqliteOptions::default() })?);
    fill_store(store.as_ref(), n, model, dim)?;
    Ok(store)
}

/// Fills any store with the same `n` drawers (seeded: identical on every store).
pub(crate) fn fill_store(store: &dyn StoreWrite, n: u64, model: &str, dim: usize) -> Result<()> {
    let now = chrono::DateTime::parse_from_rfc3339("2026-11-01T00:00:00Z")?.with_timezone(&chrono::Utc);
    let ws = WorkspaceId::default_workspace();
    let mut rng = Rng::new(42);
    let mut index = 0;
    while index < n {
        let batch: Vec<Drawer> = (index..(index + 5_000).min(n))
            .map(|i| {
                let mut drawer = Drawer::new(
                    ws.clone(),
                    Wing::parse(&format!("wing{}", i % 20)).expect("wing"),
                    Room::parse(&format!("room{}", i % 37)).expect("room"),
                    Content::parse(drawer_text(i)).expect("text"),
                    "bench",
                    now,
                );
                drawer.embedding = Some(Embedding { model: model.to_string(), vector: random_unit(&mut rng, dim) });
                drawer
            })
            .collect();
        store.put_drawers(&batch)?;
        index += batch.len() as u64;
    }
    Ok(())
}

/// The filter of the `i`-th search of a scope.
pub(crate) type Scope = fn(usize) -> DrawerFilter;

/// The whole palace, one wing (1/20 of the drawers `fill_store` files)
/// and one room (1/37), each search in another.
pub(crate) const SCOPES: [(&str, Scope); 3] = [
    ("whole", |_| DrawerFilter::default()),
    ("wing", |i| DrawerFilter { wings: vec![format!("wing{}", i % 20)], ..DrawerFilter::default() }),
    ("room", |i| DrawerFilter { rooms: vec![format!("room{}", i % 37)], ..DrawerFilter::default() }),
];

pub(crate) fn time_searches(palace: &Palace, runs: usize) -> Result<(Value, Vec<f64>)> {
    // The first search loads the vector index; it is reported apart.
    let first = Instant::now();
    palace.search(&SearchRequest { query: QUERIES[0].into(), skip_access_tracking: true, ..Default::default() })?;
    let first_ms = first.elapsed().as_secs_f64() * 1e3;
    // Whole-palace, one-wing and one-room searches, interleaved query by
    // query (the first of the three rotates), so noise falls on all alike.
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(runs); SCOPES.len()];
    let mut vector_stage = Vec::with_capacity(runs);
    let mut vector_scan = Vec::with_capacity(runs);
    // The other stages of a whole-palace search, each timed alone after
    // it, so a tail can be traced to the stage that has it.
    let mut lexical_stage = Vec::with_capacity(runs);
    let mut fetch_stage = Vec::with_capacity(runs);
    let mut access_stage = Vec::with_capacity(runs);
    for i in 0..runs {
        for turn in 0..SCOPES.len() {
            let scope = (i + turn) % SCOPES.len();
            let started = Instant::now();
            let outcome = palace.search(&SearchRequest {
                query: QUERIES[i % QUERIES.len()].into(),
                limit: mempalace_core::layers::ResultLimit::constant(10),
                filter: (SCOPES[scope].1)(i),
                ..Default::default()
            })?;
            samples[scope].push(started.elapsed().as_secs_f64() * 1e3);
            anyhow::ensure!(!outcome.hits.is_empty(), "a benchmark query found nothing ({})", SCOPES[scope].0);
            if scope == 0 {
                // The vector stage alone, with the query vector of that search.
                let (model, query) = outcome.query_vector.clone().expect("a hybrid search has a query vector");
                let started = Instant::now();
                palace.nearest(&model, &query, &DrawerFilter::default(), mempalace_engine::search::CANDIDATES)?;
                vector_stage.push(started.elapsed().as_secs_f64() * 1e3);
                // The scan alone, without the store's change feed.
                let index = palace.vector_index(&model);
                let started = Instant::now();
                let nearest = index.search(&query, mempalace_engine::search::CANDIDATES, Restriction::None);
                vector_scan.push(started.elapsed().as_secs_f64() * 1e3);
                // The lexical stage alone: frequencies, choice of terms, BM25.
                let started = Instant::now();
                palace.lexical_candidates(QUERIES[i % QUERIES.len()], &DrawerFilter::default())?;
                lexical_stage.push(started.elapsed().as_secs_f64() * 1e3);
                // The fetch of a head of 50 candidates, vectors included.
                let head: Vec<_> = nearest.iter().take(50).map(|(id, _)| id.clone()).collect();
                let started = Instant::now();
                palace.store().drawers(palace.workspace(), &head)?;
                fetch_stage.push(started.elapsed().as_secs_f64() * 1e3);
                // What access tracking writes after a search of ten hits.
                let hits: Vec<_> = outcome.hits.iter().map(|hit| hit.drawer.id.clone()).collect();
                let started = Instant::now();
                palace.store().touch_access(palace.workspace(), &hits, chrono::Utc::now())?;
                access_stage.push(started.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let mut summary = summarize(&samples[0]);
    summary["first_search_ms"] = json!(first_ms);
    summary["vector_stage"] = summarize(&vector_stage);
    summary["vector_scan"] = summarize(&vector_scan);
    summary["lexical_stage"] = summarize(&lexical_stage);
    summary["fetch_stage"] = summarize(&fetch_stage);
    summary["access_tracking"] = summarize(&access_stage);
    for (scope, scope_samples) in SCOPES.iter().zip(&samples).skip(1) {
        let scoped = summarize(scope_samples);
        summary[format!("{}_p50_ratio_to_whole", scope.0)] =
            json!(scoped["p50_ms"].as_f64().unwrap_or(f64::NAN) / summary["p50_ms"].as_f64().unwrap_or(f64::NAN));
        summary[scope.0] = scoped;
    }
    Ok((summary, samples.swap_remove(0)))
}

/// Recall@`k` of the index's int8 scan against an exact f32 scan of every
/// stored vector, averaged over the benchmark queries: what the vector
/// stage loses to quantisation (random vectors, the worst case: their
/// similarities crowd together).
fn vector_recall(palace: &Palace, embedder: &Arc<dyn Embedder>, k: usize) -> Result<f64> {
    let model = embedder.model_id();
    let ws = WorkspaceId::default_workspace();
    let mut stored: Vec<(mempalace_core::DrawerId, Vec<f32>)> = Vec::new();
    let mut after: Option<mempalace_core::DrawerId> = None;
    loop {
        let page = palace.store().scan_drawers(&ws, after.as_ref(), 10_000)?;
        let Some(last) = page.last() else { break };
        after = Some(last.id.clone());
        stored.extend(page.into_iter().filter_map(|d| {
            let embedding = d.embedding?;
            (embedding.model == model).then_some((d.id, embedding.vector))
        }));
    }
    let index = palace.vector_index(model);
    let mut total = 0.0;
    for query in QUERIES {
        let q = embedder.embed_one(query)?;
        let mut exact: Vec<(f32, &mempalace_core::DrawerId)> =
            stored.iter().map(|(id, v)| (mempalace_core::vector::cosine(&q, v), id)).collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let truth: std::collections::HashSet<&mempalace_core::DrawerId> =
            exact.iter().take(k).map(|(_, id)| *id).collect();
        let found = index.search(&q, k, Restriction::None).iter().filter(|(id, _)| truth.contains(id)).count();
        total += found as f64 / truth.len().max(1) as f64;
    }
    Ok(total / QUERIES.len() as f64)
}

/// The first search of a new process on the same palace file: the store
/// is opened afresh, so the vector index starts from its saved snapshot
/// (the earlier searches saved one) instead of the store's rows.
fn first_search_reopened(palace: &Palace, embedder: &Arc<dyn Embedder>) -> Result<f64> {
    let file = palace.store().info()?.location;
    let started = Instant::now();
    let store = Arc::new(SqliteStore::open(Path::new(&file), SqliteOptions::default())?);
    let reopened = Palace::new(store, WorkspaceId::default_workspace()).with_embedder(Arc::clone(embedder));
    reopened.search(&SearchRequest { query: QUERIES[1].into(), skip_access_tracking: true, ..Default::default() })?;
    Ok(started.elapsed().as_secs_f64() * 1e3)
}

/// [`time_searches`], then a new process's first search and the recall
/// of the vector stage.
fn time_palace(palace: &Palace, embedder: &Arc<dyn Embedder>, runs: usize) -> Result<(Value, Vec<f64>)> {
    let (mut latency, raw) = time_searches(palace, runs)?;
    latency["first_search_reopened_ms"] = json!(first_search_reopened(palace, embedder)?);
    latency["vector_recall_at_100"] = json!(vector_recall(palace, embedder, mempalace_engine::search::CANDIDATES)?);
    Ok((latency, raw))
}

fn time_wake_up(palace: &Palace, runs: usize) -> Result<Value> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        palace.wake_up(None)?;
        samples.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(summarize(&samples))
}

fn ingest_rate(embedder: Arc<dyn Embedder>, chunks: &[String], scratch: &Path, name: &str) -> Result<f64> {
    let store = SqliteStore::open(
        &scratch.join(format!("ingest-{name}.db")),
        SqliteOptions { create: true, ..Default::default() },
    )?;
    let palace = Palace::new(Arc::new(store), WorkspaceId::default_workspace()).with_embedder(embedder);
    let started = Instant::now();
    let mut filed = 0;
    for batch in chunks.chunks(64) {
        let requests: Vec<IngestRequest> = batch
            .iter()
            .map(|text| {
                IngestRequest::new(
                    Wing::parse("bench").expect("wing"),
                    Room::parse("prose").expect("room"),
                    text.clone(),
                    "bench",
                )
            })
            .collect();
        for report in palace.ingest_batch(requests) {
            filed += report?.chunks.len();
        }
    }
    Ok(filed as f64 / started.elapsed().as_secs_f64())
}

/// Runs the benchmark; returns (summary, samples).
pub fn run(
    models: &Path,
    shared: &Path,
    sizes: &[u64],
    static_size: u64,
    runs: usize,
    ingest_chunks: usize,
) -> Result<(Value, Value)> {
    let scratch = tempfile::tempdir()?;
    let minilm: Arc<dyn Embedder> = Arc::new(MiniLm::load(&minilm_dir(models))?);
    let static_model: Arc<dyn Embedder> = Arc::new(StaticModel::load(&static_dir(models))?);
    let mut summary = json!({});
    let mut samples = json!({});
    for &size in sizes {
        let store = fill(&scratch.path().join(format!("minilm-{size}.db")), size, minilm.model_id(), minilm.dim())?;
        let palace = Palace::new(store, WorkspaceId::default_workspace()).with_embedder(Arc::clone(&minilm));
        let (latency, raw) = time_palace(&palace, &minilm, runs)?;
        summary[format!("search_minilm_{size}")] = latency;
        summary[format!("wake_up_{size}")] = time_wake_up(&palace, 200)?;
        samples[format!("search_minilm_{size}")] = json!(raw);
    }
    if static_size > 0 {
        let store = fill(&scratch.path().join("static.db"), static_size, static_model.model_id(), static_model.dim())?;
        let palace = Palace::new(store, WorkspaceId::default_workspace()).with_embedder(Arc::clone(&static_model));
        let (latency, raw) = time_palace(&palace, &static_model, runs)?;
        summary[format!("search_static_{static_size}")] = latency;
        samples[format!("search_static_{static_size}")] = json!(raw);
    }
    let chunks = prose_chunks(shared, ingest_chunks)?;
    summary["ingest_minilm_drawers_per_s"] =
        json!(ingest_rate(Arc::clone(&minilm), &chunks, scratch.path(), "minilm")?);
    let many = prose_chunks(shared, ingest_chunks * 20)?;
    summary["ingest_static_drawers_per_s"] = json!(ingest_rate(static_model, &many, scratch.path(), "static")?);
    summary["ingest_chunks_minilm"] = json!(chunks.len());
    summary["ingest_chunks_static"] = json!(many.len());
    Ok((summary, samples))
}
