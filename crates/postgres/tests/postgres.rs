//! The PostgreSQL backend against the conformance suite, plus what only a
//! server backend has: several stores (processes) on one schema, schemas as
//! separate palaces, locks that end with their connection, pgvector search.
//!
//! The server comes from `MEMPALACE_TEST_DATABASE_URL` (scripts/test.sh
//! starts a throwaway cluster and sets it). Without it these tests fail —
//! they never pass silently without having run — unless
//! `MEMPALACE_TEST_POSTGRES=skip` says so explicitly.

use std::sync::Arc;
use std::time::Duration;

use mempalace_core::{Embedding, WorkspaceId};
use mempalace_postgres::testing::{self, TestSchema};
use mempalace_postgres::{PgOptions, PgStore};
use mempalace_store::conformance::drawer;
use mempalace_store::{Directory, DrawerFilter, Store, StoreError, StoreRead, StoreWrite};

fn server() -> Option<String> {
    testing::server()
}

fn fresh() -> Option<(TestSchema, Arc<dyn Store>)> {
    let schema = TestSchema::on_test_server()?;
    let store = schema.open();
    Some((schema, Arc::new(store)))
}

mempalace_store::conformance_suite!(fresh);

#[test]
fn a_second_store_sees_writes_on_its_next_read() {
    let Some(admin) = server() else { return };
    let schema = TestSchema::new(&admin);
    let (writer, reader) = (schema.open(), schema.open());
    let ws = WorkspaceId::default_workspace();
    assert_eq!(reader.taxonomy(&ws).unwrap().total_drawers, 0);
    let d = drawer(&ws, "w", "r", "written by the other process");
    writer.put_drawers(std::slice::from_ref(&d)).unwrap();
    assert_eq!(reader.taxonomy(&ws).unwrap().total_drawers, 1);
    assert_eq!(reader.drawer(&ws, &d.id).unwrap(), Some(d));
    assert!(reader.revision().unwrap() > 0);
}

#[test]
fn schemas_are_separate_palaces() {
    let Some(admin) = server() else { return };
    let (one, two) = (TestSchema::new(&admin), TestSchema::new(&admin));
    let ws = WorkspaceId::default_workspace();
    one.open().put_drawers(&[drawer(&ws, "w", "r", "only in the first schema")]).unwrap();
    assert_eq!(one.open().taxonomy(&ws).unwrap().total_drawers, 1);
    assert_eq!(two.open().taxonomy(&ws).unwrap().total_drawers, 0);
}

#[test]
fn a_dead_holder_releases_its_job() {
    let Some(admin) = server() else { return };
    let schema = TestSchema::new(&admin);
    let now = chrono::Utc::now();
    let first = schema.open();
    let second = schema.open();
    assert!(first.try_start_job("maintain", 1, "first", Duration::from_secs(3600), now).unwrap());
    assert!(!second.try_start_job("maintain", 2, "second", Duration::from_secs(3600), now).unwrap());
    drop(first); // the process ends: its connection, and with it the lock, go
    // The server releases the lock once it notices the connection is gone.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !second.try_start_job("maintain", 2, "second", Duration::from_secs(3600), now).unwrap() {
        assert!(std::time::Instant::now() < deadline, "the dead holder's lock was never released");
        std::thread::sleep(Duration::from_millis(20));
    }
    second.finish_job("maintain", "second").unwrap();
}

#[test]
fn vector_search_uses_the_models_hnsw_index_and_the_filter() {
    let Some((schema, store)) = fresh() else { return };
    let ws = WorkspaceId::default_workspace();
    let mut drawers = Vec::new();
    for i in 0..60 {
        let angle = i as f32 / 10.0;
        let mut d = drawer(&ws, if i % 2 == 0 { "even" } else { "odd" }, "r", &format!("vector drawer {i}"));
        d.embedding = Some(Embedding { model: "test-3d".into(), vector: vec![angle.cos(), angle.sin(), 0.5] });
        drawers.push(d);
    }
    store.put_drawers(&drawers).unwrap();
    let query = vec![1.0_f32, 0.0, 0.5];
    let hits = store.vector_search(&ws, "test-3d", &query, &DrawerFilter::default(), 5).unwrap().unwrap();
    assert_eq!(hits.len(), 5);
    assert_eq!(hits[0].0, drawers[0].id, "angle 0 is the query itself");
    assert!((hits[0].1 - 1.0).abs() < 1e-5, "{hits:?}");
    assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1), "best first: {hits:?}");
    let odd = DrawerFilter { wings: vec!["odd".into()], ..DrawerFilter::default() };
    let hits = store.vector_search(&ws, "test-3d", &query, &odd, 5).unwrap().unwrap();
    assert_eq!(hits.len(), 5);
    assert_eq!(hits[0].0, drawers[1].id);
    assert!(hits.iter().all(|(id, _)| id.as_str().contains("odd")), "{hits:?}");
    let other =
        store.vector_search(&WorkspaceId::parse("other").unwrap(), "test-3d", &query, &DrawerFilter::default(), 5);
    assert!(other.unwrap().unwrap().is_empty(), "no other workspace's vectors");
    assert!(
        store.vector_search(&ws, "another-model", &query, &DrawerFilter::default(), 5).unwrap().unwrap().is_empty()
    );
    let checks = store.verify().unwrap();
    let index = checks.iter().find(|c| c.name == "vector_indexes").unwrap();
    assert!(index.ok && index.detail.contains("1 HNSW"), "{index:?}");
    drop(schema);
}

/// Unit vectors of `dim` values that do not compress (a fixed sequence).
fn incompressible(dim: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    let values: Vec<f32> = (0..dim)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    values.into_iter().map(|v| v / norm).collect()
}

/// Runs `sql` with `$toast` replaced by the drawers table's TOAST table
/// and fails the test with `message` unless it returns true.
fn assert_on_toast(schema: &TestSchema, sql: &str, message: &str) {
    let name = &schema.name;
    schema.execute(&format!(
        "DO $check$ DECLARE toast regclass; ok boolean; BEGIN \
             SELECT reltoastrelid::regclass INTO toast FROM pg_class WHERE oid = '{name}.drawers'::regclass; \
             EXECUTE replace($sql${sql}$sql$, '$toast', toast::text) INTO ok; \
             IF NOT ok THEN RAISE EXCEPTION '%', $msg${message}$msg$; END IF; \
         END $check$"
    ));
}

/// A drawer's vector stays in its row (schema version 7), so a search that
/// scans a place's drawers exactly reads one row a drawer instead of
/// fetching each vector through the TOAST table: drawers of ordinary
/// length put nothing there, and a long text goes out of line without its
/// vector.
#[test]
fn vectors_stay_in_their_rows() {
    let Some((schema, store)) = fresh() else { return };
    let ws = WorkspaceId::default_workspace();
    let text = "We moved the ingestion workers to the new cluster after the third outage this month; the old \
                nodes kept dropping their leases under load, and the retry storm filled the queue faster than \
                the consumers could drain it. The decision was to pin each worker to one partition, cap \
                retries at five with jitter, and alert when the queue depth stays above ten thousand for more \
                than two minutes. Alice owns the rollout; Bob checks the dashboards on Friday.";
    let drawers: Vec<_> = (0..20)
        .map(|i| {
            let mut d = drawer(&ws, "ops", &format!("room{}", i % 4), &format!("{text} (note {i})"));
            d.embedding = Some(Embedding { model: "minilm-like".into(), vector: incompressible(384, i) });
            d
        })
        .collect();
    store.put_drawers(&drawers).unwrap();
    assert_on_toast(
        &schema,
        "SELECT count(*) = 0 FROM $toast",
        "drawers of ordinary length with 384-d vectors put chunks in the TOAST table",
    );
    // A long text with a 768-d vector (3,076 bytes of data after the
    // length word, which do not compress): the row must shed something,
    // and it sheds text (words that do not repeat, so it compresses too
    // little to stay); no value of the vector's size is in the TOAST table.
    let long: String =
        incompressible(120, 7).iter().map(|v| format!("w{:x}", v.to_bits() >> 8)).collect::<Vec<_>>().join(" ");
    let mut with_vector = drawer(&ws, "ops", "long", &long);
    with_vector.embedding = Some(Embedding { model: "mpnet-like".into(), vector: incompressible(768, 99) });
    store.put_drawers(&[with_vector.clone()]).unwrap();
    assert_on_toast(&schema, "SELECT count(*) > 0 FROM $toast", "the long text was not moved out of its row");
    assert_on_toast(
        &schema,
        "SELECT NOT EXISTS (SELECT 1 FROM $toast GROUP BY chunk_id HAVING sum(octet_length(chunk_data)) = 768 * 4 + 4)",
        "the 768-d vector was moved out of its row",
    );
    assert_eq!(store.drawer(&ws, &with_vector.id).unwrap(), Some(with_vector), "read back whole");
}

#[test]
fn unreachable_servers_and_newer_schemas_are_refused_clearly() {
    let Some(admin) = server() else { return };
    let error = PgStore::open(
        "postgres://mempalace:secret@127.0.0.1:9/nowhere",
        PgOptions { connect_timeout: Duration::from_secs(2), ..PgOptions::default() },
    )
    .unwrap_err();
    assert!(matches!(error, StoreError::Unreachable { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("127.0.0.1:9") && !message.contains("secret"), "{message}");

    let schema = TestSchema::new(&admin);
    drop(schema.open());
    schema.execute(&format!("INSERT INTO {}.schema_migrations VALUES (99, now())", schema.name));
    let error = PgStore::open(&schema.url, PgOptions::default()).unwrap_err();
    assert!(matches!(error, StoreError::SchemaTooNew { found: 99, .. }), "{error}");
}

#[test]
fn workspace_bytes_are_backfilled_by_the_migration_and_rebuilt_by_doctor() {
    let Some(admin) = server() else { return };
    let schema = TestSchema::new(&admin);
    let ws = WorkspaceId::default_workspace();
    let store = schema.open();
    store.put_drawers(&[drawer(&ws, "w", "r", "héllo"), drawer(&ws, "w", "r2", "twelve bytes")]).unwrap();
    assert_eq!(store.usage(&ws).unwrap().bytes, 6 + 12);
    drop(store);

    // A palace of schema version 5 with drawers: migration 6 counts their bytes.
    let name = &schema.name;
    schema.execute(&format!(
        "SET search_path = {name}; \
         DROP TABLE workspace_bytes, audit_log, workspace_limits, workspace_grants, team_members, teams, tokens, \
             principals; \
         DROP FUNCTION mempalace_drawers_bytes() CASCADE; DROP FUNCTION mempalace_count_bytes(text, bigint); \
         DELETE FROM schema_migrations WHERE version >= 6"
    ));
    let store = schema.open();
    assert_eq!(store.info().unwrap().schema_version, mempalace_postgres::SCHEMA_VERSION);
    assert_eq!(store.usage(&ws).unwrap().bytes, 18);
    assert!(store.verify().unwrap().iter().all(|c| c.ok), "{:?}", store.verify());

    // A wrong count is reported and recomputed from the drawers.
    schema.execute(&format!("UPDATE {name}.workspace_bytes SET bytes = 1"));
    let checks = store.verify().unwrap();
    let bytes = checks.iter().find(|c| c.name == "workspace_bytes").unwrap();
    assert!(!bytes.ok && bytes.derived, "{bytes:?}");
    assert!(store.rebuild_derived().unwrap().iter().all(|c| c.ok));
    assert_eq!(store.usage(&ws).unwrap().bytes, 18);
}

/// The migration files, oldest first (as `schema.rs` lists them).
const MIGRATION_FILES: [&str; 7] = [
    include_str!("../src/migrations/0001_palace.sql"),
    include_str!("../src/migrations/0002_coordination.sql"),
    include_str!("../src/migrations/0003_pipeline_counts.sql"),
    include_str!("../src/migrations/0004_archive.sql"),
    include_str!("../src/migrations/0005_entity_aliases_centroids.sql"),
    include_str!("../src/migrations/0006_tenancy.sql"),
    include_str!("../src/migrations/0007_vectors_in_row.sql"),
];

/// A palace of every earlier schema version — built by the migrations up to
/// that version, with drawers written as the schema-1 store wrote them (the
/// row with its lexemes) —
/// opens with this build, migrates, keeps its data, passes every check and
/// takes new writes.
#[test]
fn a_palace_at_every_earlier_version_opens_migrates_and_keeps_its_data() {
    let Some(admin) = server() else { return };
    assert_eq!(MIGRATION_FILES.len() as u32, mempalace_postgres::SCHEMA_VERSION, "list every migration here");
    let ws = WorkspaceId::default_workspace();
    for version in 1..mempalace_postgres::SCHEMA_VERSION {
        let schema = TestSchema::new(&admin);
        let name = &schema.name;
        let mut script = format!("SET search_path = {name}, public;\n");
        for (index, sql) in MIGRATION_FILES.iter().take(version as usize).enumerate() {
            script.push_str(sql);
            script.push_str(&format!(
                "\nINSERT INTO schema_migrations (version, applied_at) VALUES ({}, now());\n",
                index + 1
            ));
        }
        for (id, room, text) in [
            ("drawer_w_r_000000000000000000000001", "r", "written by schema one"),
            ("drawer_w_s_000000000000000000000002", "s", "another old drawer"),
        ] {
            let hash = mempalace_core::ContentHash::of(text);
            script.push_str(&format!(
                "INSERT INTO workspaces (id, created_at) VALUES ('default', now()) ON CONFLICT DO NOTHING;\n\
                 INSERT INTO drawers (workspace_id, id, wing, room, content, content_hash, added_by, filed_at, updated_at, \
                     lexemes) \
                 VALUES ('default', '{id}', 'w', '{room}', '{text}', '{}', 'v1', now(), now(), \
                     to_tsvector('mempalace', '{text}'));\n",
                hash.as_str()
            ));
        }
        schema.execute(&script);
        let store = schema.open();
        assert_eq!(store.info().unwrap().schema_version, mempalace_postgres::SCHEMA_VERSION, "from version {version}");
        assert_eq!(store.taxonomy(&ws).unwrap().total_drawers, 2, "from version {version}");
        let found = store.lexical_search(&ws, &["schema".into()], &DrawerFilter::default(), 10).unwrap();
        assert_eq!(found.len(), 1, "the lexical index holds the old drawers (from version {version})");
        let checks = store.verify().unwrap();
        assert!(checks.iter().all(|c| c.ok), "from version {version}: {checks:?}");
        store.put_drawers(&[drawer(&ws, "after", "upgrade", "written after the upgrade")]).unwrap();
        assert_eq!(store.taxonomy(&ws).unwrap().total_drawers, 3);
        assert_eq!(store.usage(&ws).unwrap().drawers, 3);
    }
}
