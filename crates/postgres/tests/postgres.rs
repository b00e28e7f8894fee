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

/// Runs `check` (a boolean SQL expression) on the server until it holds,
/// for up to 30 seconds, and fails the test with `message` if it never
/// does (the statistics views lag behind the backends that did the work).
fn wait_until(schema: &TestSchema, check: &str, message: &str) {
    schema.execute(&format!(
        "DO $wait$ BEGIN \
             FOR i IN 1..300 LOOP \
                 IF ({check}) THEN RETURN; END IF; \
                 PERFORM pg_sleep(0.1); PERFORM pg_stat_clear_snapshot(); \
             END LOOP; \
             RAISE EXCEPTION '%', $msg${message}$msg$; \
         END $wait$"
    ));
}

/// The first column of the first row of `sql`, on its own connection.
fn query_bool(schema: &TestSchema, sql: &str) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("test runtime");
    runtime.block_on(async {
        let (client, connection) =
            tokio_postgres::connect(&schema.url, tokio_postgres::NoTls).await.expect("connect to the test server");
        tokio::spawn(connection);
        client.query_one(sql, &[]).await.expect("query the test server").get(0)
    })
}

/// Vacuums the drawers until every page is marked all-visible (a
/// transaction of another test that was running when the rows were
/// written keeps VACUUM from marking their pages; it ends soon), so the
/// planner costs an index-only scan as one.
fn vacuum_until_all_visible(schema: &TestSchema) {
    let name = &schema.name;
    for _ in 0..300 {
        schema.execute(&format!("VACUUM ANALYZE {name}.drawers"));
        if query_bool(
            schema,
            &format!("SELECT relallvisible >= relpages FROM pg_class WHERE oid = '{name}.drawers'::regclass"),
        ) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("VACUUM never marked the drawers' pages all-visible");
}

/// The nearest of `drawers` to `query` that a search with `filter` may
/// see in `ws`, by brute force (the vectors are unit length).
fn nearest_by_scan(
    drawers: &[mempalace_core::Drawer],
    ws: &WorkspaceId,
    query: &[f32],
    filter: &DrawerFilter,
    count: usize,
) -> Vec<(mempalace_core::DrawerId, f32)> {
    let mut hits: Vec<(mempalace_core::DrawerId, f32)> = drawers
        .iter()
        .filter(|d| {
            d.workspace_id == *ws
                && (filter.wings.is_empty() || filter.wings.iter().any(|w| w == d.wing.as_str()))
                && (filter.rooms.is_empty() || filter.rooms.iter().any(|r| r == d.room.as_str()))
                && d.status == mempalace_core::DrawerStatus::Active
                && (d.owner_user_id.is_none() || d.owner_user_id == filter.viewer)
        })
        .map(|d| {
            let vector = &d.embedding.as_ref().expect("every test drawer has a vector").vector;
            (d.id.clone(), vector.iter().zip(query).map(|(a, b)| a * b).sum::<f32>())
        })
        .collect();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1));
    hits.truncate(count);
    hits
}

/// A search restricted to wings or rooms reads the model's place index
/// (schema 8: hashed place keys, vectors in the entries) and finds exactly
/// what a brute-force scan finds: names of 128 characters, another
/// workspace with the same names, drawers private to a user (seen by that
/// user only) and hidden drawers (seen by nobody). A model too wide for
/// an index entry has no place index and searches the same way as before.
#[test]
fn a_place_search_reads_the_place_index_and_finds_what_a_scan_finds() {
    let Some((schema, store)) = fresh() else { return };
    let (ws, other) = (WorkspaceId::default_workspace(), WorkspaceId::parse("other").unwrap());
    let long_wing = "w".repeat(127) + "1";
    let long_room = "é".repeat(128);
    let wings = ["alpha", "beta", long_wing.as_str()];
    let rooms = ["one", "two", long_room.as_str()];
    let mut drawers = Vec::new();
    for i in 0..240_u64 {
        let workspace = if i % 5 == 4 { &other } else { &ws };
        let (wing, room) = (wings[(i % 3) as usize], rooms[((i / 3) % 3) as usize]);
        let mut d = drawer(workspace, wing, room, &format!("place drawer {i}"));
        d.embedding = Some(Embedding { model: "test-8d".into(), vector: incompressible(8, i) });
        if i % 7 == 0 {
            d.owner_user_id = Some(if i % 2 == 0 { "ada" } else { "bob" }.into());
        }
        if i % 11 == 0 {
            d.status = mempalace_core::DrawerStatus::Superseded;
        }
        drawers.push(d);
    }
    store.put_drawers(&drawers).unwrap();
    let name = &schema.name;
    vacuum_until_all_visible(&schema);
    let filters = [
        DrawerFilter { wings: vec!["alpha".into()], ..DrawerFilter::default() },
        DrawerFilter { wings: vec![long_wing.clone()], rooms: vec![long_room.clone()], ..DrawerFilter::default() },
        DrawerFilter {
            wings: vec!["alpha".into(), "beta".into()],
            rooms: vec!["two".into()],
            ..DrawerFilter::default()
        },
        DrawerFilter { wings: vec!["beta".into()], viewer: Some("ada".into()), ..DrawerFilter::default() },
        DrawerFilter {
            wings: vec![long_wing.clone(), "alpha".into()],
            viewer: Some("bob".into()),
            ..DrawerFilter::default()
        },
        DrawerFilter { wings: vec!["nowhere".into()], ..DrawerFilter::default() },
        DrawerFilter { rooms: vec![long_room.clone()], ..DrawerFilter::default() },
        DrawerFilter { rooms: vec!["one".into(), "two".into()], viewer: Some("ada".into()), ..DrawerFilter::default() },
        DrawerFilter { rooms: vec!["nowhere".into()], ..DrawerFilter::default() },
    ];
    for (q, filter) in filters.iter().enumerate() {
        let query = incompressible(8, 1_000 + q as u64);
        for workspace in [&ws, &other] {
            let found = store.vector_search(workspace, "test-8d", &query, filter, 10).unwrap().unwrap();
            let expected = nearest_by_scan(&drawers, workspace, &query, filter, 10);
            let ids = |hits: &[(mempalace_core::DrawerId, f32)]| hits.iter().map(|h| h.0.clone()).collect::<Vec<_>>();
            assert_eq!(ids(&found), ids(&expected), "{filter:?} in {workspace}");
            for (got, want) in found.iter().zip(&expected) {
                assert!((got.1 - want.1).abs() < 1e-5, "{got:?} against {want:?}");
            }
        }
    }
    wait_until(
        &schema,
        &format!(
            "SELECT coalesce(sum(idx_scan), 0) > 0 FROM pg_stat_user_indexes \
             WHERE schemaname = '{name}' AND indexrelname LIKE 'drawers_place_vec_%'"
        ),
        "the place searches never read the place index",
    );
    // A lost place index is a derived structure: reported, and rebuilt.
    schema.execute(&format!(
        "DO $drop$ DECLARE index text; BEGIN \
             SELECT indexname INTO STRICT index FROM pg_indexes WHERE schemaname = '{name}' \
                 AND indexname LIKE 'drawers_place_vec_%'; \
             EXECUTE format('DROP INDEX {name}.%I', index); \
         END $drop$"
    ));
    let lost = store.verify().unwrap().into_iter().find(|c| c.name == "vector_indexes").unwrap();
    assert!(!lost.ok && lost.derived && lost.detail.contains("0 place indexes (1 needed)"), "{lost:?}");
    assert!(store.rebuild_derived().unwrap().iter().all(|c| c.ok));

    // 601 dimensions do not fit an index entry: no place index, the same results.
    let mut wide = Vec::new();
    for i in 0..12_u64 {
        let mut d = drawer(&ws, wings[(i % 2) as usize], "one", &format!("wide drawer {i}"));
        d.embedding = Some(Embedding { model: "test-601d".into(), vector: incompressible(601, i) });
        wide.push(d);
    }
    store.put_drawers(&wide).unwrap();
    schema.execute(&format!(
        "DO $check$ BEGIN IF (SELECT count(*) FROM pg_indexes WHERE schemaname = '{name}' \
             AND indexname LIKE 'drawers_place_vec_%') <> 1 THEN \
             RAISE EXCEPTION 'a place index for 601 dimensions, or none for 8'; END IF; END $check$"
    ));
    let query = incompressible(601, 99);
    let filter = DrawerFilter { wings: vec!["alpha".into()], ..DrawerFilter::default() };
    let found = store.vector_search(&ws, "test-601d", &query, &filter, 3).unwrap().unwrap();
    let expected = nearest_by_scan(&wide, &ws, &query, &filter, 3);
    assert_eq!(found.iter().map(|h| &h.0).collect::<Vec<_>>(), expected.iter().map(|h| &h.0).collect::<Vec<_>>());
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
const MIGRATION_FILES: [&str; 8] = [
    include_str!("../src/migrations/0001_palace.sql"),
    include_str!("../src/migrations/0002_coordination.sql"),
    include_str!("../src/migrations/0003_pipeline_counts.sql"),
    include_str!("../src/migrations/0004_archive.sql"),
    include_str!("../src/migrations/0005_entity_aliases_centroids.sql"),
    include_str!("../src/migrations/0006_tenancy.sql"),
    include_str!("../src/migrations/0007_vectors_in_row.sql"),
    include_str!("../src/migrations/0008_place_keys.sql"),
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

/// A palace of schema 7 with vectors gets its place keys computed and a
/// place index for each stored model narrow enough (migration 8), and a
/// wing search on it finds what a scan finds.
#[test]
fn the_place_migration_keys_stored_drawers_and_indexes_their_models() {
    let Some(admin) = server() else { return };
    let schema = TestSchema::new(&admin);
    let name = &schema.name;
    let mut script = format!("SET search_path = {name}, public;\n");
    for (index, sql) in MIGRATION_FILES.iter().take(7).enumerate() {
        script.push_str(sql);
        script.push_str(&format!(
            "\nINSERT INTO schema_migrations (version, applied_at) VALUES ({}, now());\n",
            index + 1
        ));
    }
    script.push_str("INSERT INTO workspaces (id, created_at) VALUES ('default', now());\n");
    let ws = WorkspaceId::default_workspace();
    let mut drawers = Vec::new();
    for i in 0..30_u64 {
        let mut d = drawer(&ws, if i % 2 == 0 { "even" } else { "odd" }, "r", &format!("old drawer {i}"));
        let vector = incompressible(4, i);
        let text = format!("old drawer {i}");
        script.push_str(&format!(
            "INSERT INTO drawers (workspace_id, id, wing, room, content, content_hash, added_by, filed_at, updated_at, \
                 lexemes, embedding_model, embedding) \
             VALUES ('default', '{}', '{}', 'r', '{text}', '{}', 'v7', now(), now(), \
                 to_tsvector('mempalace', '{text}'), 'old-4d', '{:?}');\n",
            d.id.as_str(),
            d.wing.as_str(),
            mempalace_core::ContentHash::of(&text).as_str(),
            vector
        ));
        d.embedding = Some(Embedding { model: "old-4d".into(), vector });
        drawers.push(d);
    }
    // Its HNSW index, as the store of schema 7 created it.
    script.push_str(
        "DO $index$ BEGIN EXECUTE format('CREATE INDEX %I ON drawers USING hnsw ((embedding::vector(4)) \
             vector_cosine_ops) WHERE embedding_model = ''old-4d''', \
             'drawers_hnsw_' || substr(encode(sha256(convert_to('old-4d', 'UTF8')), 'hex'), 1, 16)); END $index$;\n",
    );
    schema.execute(&script);
    let store = schema.open();
    assert_eq!(store.info().unwrap().schema_version, mempalace_postgres::SCHEMA_VERSION);
    schema.execute(&format!(
        "DO $check$ BEGIN \
             IF (SELECT count(*) FROM pg_indexes WHERE schemaname = '{name}' AND indexname = 'drawers_place_vec_' \
                 || substr(encode(sha256(convert_to('old-4d', 'UTF8')), 'hex'), 1, 16)) <> 1 \
             THEN RAISE EXCEPTION 'no place index for the stored model'; END IF; \
             IF EXISTS (SELECT 1 FROM {name}.drawers WHERE wing_key IS NULL OR room_key IS NULL \
                 OR owner_key IS NOT NULL) \
             THEN RAISE EXCEPTION 'place keys were not computed for the stored drawers'; END IF; \
         END $check$"
    ));
    let filter = DrawerFilter { wings: vec!["odd".into()], ..DrawerFilter::default() };
    let query = incompressible(4, 77);
    let found = store.vector_search(&ws, "old-4d", &query, &filter, 5).unwrap().unwrap();
    let expected = nearest_by_scan(&drawers, &ws, &query, &filter, 5);
    assert_eq!(found.iter().map(|h| &h.0).collect::<Vec<_>>(), expected.iter().map(|h| &h.0).collect::<Vec<_>>());
    assert!(store.verify().unwrap().iter().all(|c| c.ok), "{:?}", store.verify());
}
