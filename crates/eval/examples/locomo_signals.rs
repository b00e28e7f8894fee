//! Dumps the ranking signals of every drawer for every LoCoMo question, so
//! ranking formulas can be compared offline in seconds instead of one
//! engine change and one benchmark run each (`scripts/bench/levers.py`
//! reads the file; BENCHMARKS.md, "Retrieval levers measured offline").
//!
//! ```sh
//! cargo run --release -p mempalace-eval --example locomo_signals -- \
//!     ../shared/bench/locomo/locomo-dev.json signals.jsonl "$MEMPALACE_MODEL_DIR"
//! ```
//!
//! Each conversation is filed as `bench locomo` files it (exchanges, raw,
//! dated by session) into a fresh SQLite palace with MiniLM, but with plain
//! vectors (no `IngestRequest::preceding`): the engine's top 10 is the
//! baseline, and the vector in context is one of the variants. One line per
//! conversation (each drawer's turn ids, session and length), then one per
//! question: the cosine of the question with each drawer's vector and with
//! variants of its text (previous exchange + exchange, exchange + next,
//! the best single turn, the session date in front), each drawer's BM25
//! as the engine's lexical search scores it, per-term BM25, and the
//! engine's own top 10.
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use mempalace_core::embedder::Embedder;
use mempalace_core::exchange::exchanges;
use mempalace_core::vector::cosine;
use mempalace_core::{Room, Wing, WorkspaceId};
use mempalace_embed::minilm::MiniLm;
use mempalace_engine::search::{max_term_frequency, query_terms, selective_terms};
use mempalace_engine::{IngestRequest, Palace, SearchRequest};
use mempalace_eval::locomo;
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use mempalace_store::DrawerFilter;
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(data), Some(out), Some(model)) = (args.get(1), args.get(2), args.get(3)) else {
        note("usage: locomo_signals LOCOMO.json OUT.jsonl MODEL_DIR (the folder holding all-MiniLM-L6-v2)");
        std::process::exit(2);
    };
    let (data, out) = (PathBuf::from(data), PathBuf::from(out));
    let embedder: Arc<dyn Embedder> = Arc::new(MiniLm::load(&PathBuf::from(model).join("all-MiniLM-L6-v2")).unwrap());
    let samples = locomo::load(&data).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut file = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    let embed = |texts: &[String]| -> Vec<Vec<f32>> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        refs.chunks(32).flat_map(|c| embedder.embed_batch(c).unwrap()).collect()
    };
    for (n, sample) in samples.iter().enumerate() {
        let store = SqliteStore::open(
            &dir.path().join(format!("p{n}.db")),
            SqliteOptions { create: true, ..Default::default() },
        )
        .unwrap();
        let palace =
            Palace::new(Arc::new(store), WorkspaceId::parse("default").unwrap()).with_embedder(Arc::clone(&embedder));
        let wing = Wing::parse(&sample.id).unwrap();
        let room = Room::parse("conversations").unwrap();
        // Per drawer: text, turn ids, session, date, variants.
        let mut texts = Vec::new();
        let mut ids: Vec<Vec<String>> = Vec::new();
        let mut sessions = Vec::new();
        let mut prev_ctx = Vec::new();
        let mut next_ctx = Vec::new();
        let mut dated = Vec::new();
        let mut turn_lines: Vec<(usize, String)> = Vec::new();
        let mut drawer_ids = Vec::new();
        for session in &sample.sessions {
            let units = exchanges(&session.turns);
            let date = session.date.map(|d| d.format("%-d %B %Y").to_string()).unwrap_or_default();
            for (i, unit) in units.iter().enumerate() {
                let mut request = IngestRequest::new(wing.clone(), room.clone(), unit.text.clone(), "locomo");
                request.raw = true;
                request.session_id = Some(format!("{}:S{}", sample.id, session.number));
                request.filed_at = session.date;
                let report = palace.ingest_batch(vec![request]).remove(0).unwrap();
                let d = report.drawer_ids();
                assert_eq!(d.len(), 1);
                drawer_ids.push(d[0].clone());
                let index = texts.len();
                texts.push(unit.text.clone());
                ids.push(unit.turn_ids.clone());
                sessions.push(session.number);
                let prev = if i > 0 { format!("{}\n{}", units[i - 1].text, unit.text) } else { unit.text.clone() };
                let next = match units.get(i + 1) {
                    Some(next) => format!("{}\n{}", unit.text, next.text),
                    None => unit.text.clone(),
                };
                prev_ctx.push(prev);
                next_ctx.push(next);
                dated.push(format!("{date}\n{}", unit.text));
                for line in unit.text.lines() {
                    turn_lines.push((index, line.to_string()));
                }
            }
        }
        note(&format!("{}: {} drawers; embedding the variants", sample.id, texts.len()));
        let v0 = embed(&texts);
        let vp = embed(&prev_ctx);
        let vn = embed(&next_ctx);
        let vd = embed(&dated);
        let lines: Vec<String> = turn_lines.iter().map(|(_, l)| l.clone()).collect();
        let vt = embed(&lines);
        let index: std::collections::HashMap<String, usize> =
            drawer_ids.iter().enumerate().map(|(i, d)| (d.to_string(), i)).collect();
        writeln!(file, "{}", json!({"sample": sample.id, "ids": ids, "sessions": sessions, "chars": texts.iter().map(|t| t.chars().count()).collect::<Vec<_>>()})).unwrap();
        for question in &sample.questions {
            if question.evidence.is_empty() {
                continue;
            }
            let q = embedder.embed_one(&question.question).unwrap();
            let cos =
                |vs: &[Vec<f32>]| vs.iter().map(|v| (cosine(&q, v) * 10000.0).round() / 10000.0).collect::<Vec<f32>>();
            let mut turn_max = vec![0f32; texts.len()];
            for ((i, _), v) in turn_lines.iter().zip(&vt) {
                turn_max[*i] = turn_max[*i].max(cosine(&q, v));
            }
            let all_terms = query_terms(&question.question);
            let (docs, freqs) = palace.store().term_frequencies(&all_terms, max_term_frequency).unwrap();
            let terms = selective_terms(&all_terms, &freqs, docs);
            let lexical =
                palace.store().lexical_search(palace.workspace(), &terms, &DrawerFilter::default(), 100_000).unwrap();
            let mut bm25 = vec![0f64; texts.len()];
            for (id, s) in lexical {
                bm25[index[&id.to_string()]] = (s * 1000.0).round() / 1000.0;
            }
            // Per-term BM25, for formulas over term coverage.
            let mut per_term = Vec::new();
            for term in &terms {
                let hits = palace
                    .store()
                    .lexical_search(palace.workspace(), std::slice::from_ref(term), &DrawerFilter::default(), 100_000)
                    .unwrap();
                let sparse: Vec<(usize, f64)> =
                    hits.into_iter().map(|(id, s)| (index[&id.to_string()], (s * 1000.0).round() / 1000.0)).collect();
                per_term.push(json!({"term": term, "hits": sparse}));
            }
            let outcome = palace
                .search(&SearchRequest {
                    query: question.question.clone(),
                    limit: mempalace_core::layers::ResultLimit::new(10).unwrap(),
                    skip_access_tracking: true,
                    ..SearchRequest::default()
                })
                .unwrap();
            let top: Vec<usize> = outcome.hits.iter().map(|h| index[&h.drawer.id.to_string()]).collect();
            writeln!(
                file,
                "{}",
                json!({
                    "q": question.question, "cat": question.category, "ev": question.evidence,
                    "cos": cos(&v0), "cos_prev": cos(&vp), "cos_next": cos(&vn), "cos_date": cos(&vd),
                    "cos_turn": turn_max.iter().map(|c| (c * 10000.0).round() / 10000.0).collect::<Vec<_>>(),
                    "bm25": bm25, "terms": per_term, "engine_top": top,
                })
            )
            .unwrap();
        }
    }
}

/// Progress on stderr (stdout stays free).
#[allow(clippy::print_stderr)]
fn note(line: &str) {
    eprintln!("{line}");
}
