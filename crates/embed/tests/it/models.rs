//! The real models: MiniLM against the reference vectors made by the
//! Python stack (ChromaDB's ONNX function), paraphrase ranking for MiniLM
//! and the distilled static model; the reference vectors and WordPiece
//! parity on the repository's data, and on the shared real data in the
//! real-data layer.
//!
//! These tests need the weights. `scripts/test.sh` fetches them (and
//! distills the static model) and sets `MEMPALACE_MODEL_DIR`; without it the
//! tests fail with instructions rather than skip.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use mempalace_embed::Embedder;
use mempalace_embed::files::{minilm_dir, mpnet_dir, static_dir};
use mempalace_embed::minilm::MiniLm;
use mempalace_embed::minilm::Precision;
use mempalace_embed::mpnet::Mpnet;
use mempalace_embed::static_model::StaticModel;
use serde_json::Value;

fn model_root() -> PathBuf {
    let root = std::env::var_os("MEMPALACE_MODEL_DIR").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "MEMPALACE_MODEL_DIR is not set; run ./scripts/test.sh (it fetches the model) or `mempalace model fetch`"
        )
    });
    assert!(
        minilm_dir(&root).join("model.safetensors").is_file(),
        "no MiniLM weights under {}; run `mempalace model fetch --model-dir {}`",
        root.display(),
        root.display()
    );
    root
}

/// MiniLM as loaded by default: bf16 on the AMX unit where the CPU has one
/// (the project's machines do), f32 elsewhere.
fn minilm() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| MiniLm::load(&minilm_dir(&model_root())).expect("load MiniLM"))
}

/// MiniLM forced onto the portable f32 path (the fallback without AMX).
fn minilm_f32() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| {
        MiniLm::load_with(&minilm_dir(&model_root()), mempalace_embed::minilm::Precision::F32).expect("load MiniLM")
    })
}

fn minilm_int8() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| {
        MiniLm::load_with(&minilm_dir(&model_root()), mempalace_embed::minilm::Precision::Int8)
            .expect("load int8 MiniLM")
    })
}

fn static_model() -> &'static StaticModel {
    static MODEL: OnceLock<StaticModel> = OnceLock::new();
    MODEL.get_or_init(|| {
        let folder = static_dir(&model_root());
        StaticModel::load(&folder).unwrap_or_else(|error| {
            panic!("{error}; `mempalace model distill --model-dir {}` makes it", model_root().display())
        })
    })
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    mempalace_core::vector::cosine(a, b)
}

/// MiniLM (the default and the f32 path) against reference vectors in
/// `path` (cosine ≥ 0.999 each), and one text at a time equal to a batch.
/// MiniLM as one-text processes load it where the CPU has AVX-512: f32
/// arithmetic on the f16 panels kept next to the model.
fn minilm_f16() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| MiniLm::load_with(&minilm_dir(&model_root()), Precision::F16).expect("load f16 MiniLM"))
}

fn matches_reference_vectors(path: &Path, expected_items: usize) {
    for model in [minilm(), minilm_f32(), minilm_f16()] {
        model_matches_reference_vectors(model, path, expected_items);
    }
}

fn model_matches_reference_vectors(model: &MiniLm, path: &Path, expected_items: usize) {
    let reference: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("reference file")).unwrap();
    let items = reference["items"].as_array().expect("items");
    assert_eq!(items.len(), expected_items);
    let texts: Vec<&str> = items.iter().map(|item| item["text"].as_str().unwrap()).collect();
    let vectors = model.embed_batch(&texts).unwrap();
    for (item, vector) in items.iter().zip(&vectors) {
        let expected: Vec<f32> =
            item["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        assert_eq!(vector.len(), 384);
        let similarity = cosine(vector, &expected);
        assert!(
            similarity >= 0.999,
            "cosine {similarity} for {:?}",
            item["text"].as_str().unwrap().chars().take(40).collect::<String>()
        );
    }
    // One at a time gives the same vectors as a batch (padding is masked).
    for (text, batched) in texts.iter().zip(&vectors) {
        let single = model.embed_one(text).unwrap();
        assert!(cosine(&single, batched) > 0.99999);
    }
}

/// Five of the reference vectors made by the Python stack (short English,
/// Chinese, accented Latin, the empty string, a text truncated at 256
/// tokens), kept in the repository.
#[test]
fn minilm_matches_the_reference_vectors() {
    matches_reference_vectors(&mempalace_testdata::fixture("embeddings/minilm-reference.json"), 5);
}

/// Pairs of paraphrases; each sentence's nearest neighbour among all should
/// be its partner.
const PARAPHRASES: &[(&str, &str)] = &[
    ("We decided to use PostgreSQL for the backend database.", "The team chose Postgres as the server's database."),
    (
        "The gripper works best at 12.5 newtons of force.",
        "A grip force of 12.5 N gives the best results for the gripper.",
    ),
    ("Alice prefers dark mode in her code editor.", "In the editor, Alice likes a dark color theme."),
    ("The deployment failed because the disk was full.", "Running out of disk space caused the release to fail."),
    (
        "Remember to renew the TLS certificate before Friday.",
        "The HTTPS certificate must be renewed by the end of the week.",
    ),
    (
        "I am really frustrated with the flaky integration tests.",
        "These unreliable integration tests are making me so annoyed.",
    ),
    (
        "The robot arm lost calibration after the firmware update.",
        "After updating the firmware, the arm was no longer calibrated.",
    ),
    ("Our monthly cloud bill doubled in March.", "In March we paid twice as much for cloud hosting."),
    ("Bob is the manager of the infrastructure team.", "The infrastructure group reports to Bob."),
    ("We finally shipped version 2.0 to all customers.", "Release 2.0 is now live for every customer."),
    (
        "The cache keeps search latency under 50 milliseconds.",
        "Thanks to caching, queries return in less than fifty ms.",
    ),
    ("Please write unit tests for every new parser.", "Each new parser needs its own unit tests."),
    ("The meeting with the investors moved to Tuesday morning.", "We rescheduled the investor meeting to Tuesday AM."),
    ("Lidar readings are noisy when it rains.", "Rain makes the lidar sensor data unreliable."),
    ("My daughter starts school next September.", "Next autumn my girl begins going to school."),
    ("The memory leak came from an unclosed file handle.", "A file descriptor that was never closed caused the leak."),
    ("Switch the logging level to debug for this service.", "Turn on debug logs for this service."),
    ("The battery lasts about six hours on a full charge.", "A fully charged battery runs for roughly six hours."),
    ("We migrated the authentication module to OAuth.", "Login now uses OAuth after we moved the auth code."),
    (
        "The customer asked for a refund because the order arrived late.",
        "Since the delivery was delayed, the client wants their money back.",
    ),
    ("Use exponential backoff when the API returns 429.", "On HTTP 429 responses, retry with increasing delays."),
    ("The new office has a great view of the river.", "From our new workplace you can see the river beautifully."),
];

fn paraphrase_accuracy(embedder: &dyn Embedder) -> f64 {
    let texts: Vec<&str> = PARAPHRASES.iter().flat_map(|(a, b)| [*a, *b]).collect();
    let vectors = embedder.embed_batch(&texts).unwrap();
    let mut correct = 0;
    for (index, vector) in vectors.iter().enumerate() {
        let partner = index ^ 1;
        let nearest = (0..vectors.len())
            .filter(|&other| other != index)
            .max_by(|&a, &b| cosine(vector, &vectors[a]).total_cmp(&cosine(vector, &vectors[b])))
            .unwrap();
        correct += usize::from(nearest == partner);
    }
    correct as f64 / vectors.len() as f64
}

/// A context goes before a text only as far as the model reads both: the
/// text's tokens are all read, and as many whole words of the context's end
/// as fit the 256-token window beside them.
#[test]
fn a_context_never_pushes_the_text_out_of_the_window() {
    use mempalace_core::exchange::in_context;
    let model = minilm();
    // Untruncated, with the two tokens around every input.
    let count = |text: &str| model.tokenizer().encode(text, usize::MAX).len() + 2;
    let tokens = |text: &str| model.tokenize(&[text])[0].clone();
    // Short: all of it.
    let (context, text) = ("Ann: Where are we going?\nBob: Lisbon, in May.", "Ann: Which week?\nBob: The second.");
    assert_eq!(model.context_that_fits(context, text), context);
    // Long: a suffix, from a word, which fills the window and no more.
    let context = format!(
        "Ann: {}\nBob: so we will leave on the ninth of May",
        "the retry storm filled the queue faster than consumers could drain it; ".repeat(20)
    );
    let text = format!("Ann: {}\nBob: agreed, pin the workers.", "partition leases jitter alerts ".repeat(30));
    let kept = model.context_that_fits(&context, &text);
    assert!(context.ends_with(kept) && kept.len() < context.len() && !kept.is_empty(), "{kept:?}");
    assert!(kept.ends_with("the ninth of May"), "{kept:?}");
    let boundary = context.len() - kept.len();
    assert!(context[..boundary].ends_with(char::is_whitespace), "cut inside a word: {kept:?}");
    let read = tokens(&in_context(kept, &text));
    let text_tokens = tokens(&text);
    assert!(count(&in_context(kept, &text)) <= 256, "{}", read.len());
    assert_eq!(read[read.len() - text_tokens.len() + 1..], text_tokens[1..], "every token of the text is read");
    let before = context[..boundary].trim_end();
    let longer = &context[before.rfind(' ').map_or(0, |space| space + 1)..];
    assert!(count(&in_context(longer, &text)) > 256, "one more word would have fit: {longer:?}");
    // Before, the context came whole and the window cut the text.
    assert!(count(&in_context(&context, &text)) > 256);
    // A text that fills the window alone leaves no room.
    let long_text = "word ".repeat(400);
    assert_eq!(model.context_that_fits(&context, &long_text), "");
    // MPNet reads 384 tokens and the static model 512 (no special tokens),
    // so they keep more of the same context, and whole contexts that fit.
    let mpnet_kept = mpnet().context_that_fits(&context, &text);
    assert!(mpnet_kept.len() > kept.len() && mpnet_kept.ends_with(kept), "{mpnet_kept:?}");
    let static_kept = static_model().context_that_fits(&context, &long_text);
    assert!(!static_kept.is_empty() && context.ends_with(static_kept), "{static_kept:?}");
    assert_eq!(static_model().context_that_fits(&context, &text), context);
}

/// The int8 path stays within cosine 0.99 of the f32 vectors (issue 3).
#[test]
fn int8_minilm_stays_close_to_f32() {
    let texts: Vec<&str> = PARAPHRASES.iter().flat_map(|(a, b)| [*a, *b]).collect();
    let exact = minilm().embed_batch(&texts).unwrap();
    let quantized = minilm_int8().embed_batch(&texts).unwrap();
    for ((text, a), b) in texts.iter().zip(&exact).zip(&quantized) {
        assert!(cosine(a, b) >= 0.99, "cosine {} for {text:?}", cosine(a, b));
    }
    assert_eq!(minilm_int8().model_id(), "all-MiniLM-L6-v2-int8", "its vectors are never mixed with f32 ones");
    assert!(paraphrase_accuracy(minilm_int8()) >= 0.95);
}

/// Where the CPU has AMX, the default MiniLM runs its products in bf16 on
/// the tile unit; elsewhere (machines of this kind come with and without
/// it) in f32, and a bf16 load is refused with a message that names the
/// way out. The default's vectors stay within cosine 0.999 of the f32 ones
/// on real text, the same vector space, so both carry one model id and a
/// palace filed by either is searched by the other (issue 16).
#[test]
fn default_minilm_matches_f32_and_shares_its_model_id() {
    if mempalace_embed::amx::available() {
        assert_eq!(Precision::for_this_cpu(), Precision::Bf16);
    } else {
        assert_eq!(Precision::for_this_cpu(), Precision::F32);
        let Err(refused) = MiniLm::load_with(&minilm_dir(&model_root()), Precision::Bf16) else {
            panic!("a bf16 load without AMX must be refused");
        };
        let message = refused.to_string();
        assert!(message.contains("AMX") && message.contains("--embedder minilm"), "{message}");
    }
    let mut texts: Vec<String> = PARAPHRASES.iter().flat_map(|(a, b)| [a.to_string(), b.to_string()]).collect();
    let lines = repository_texts();
    let joined: Vec<char> = lines.join(" ").chars().collect();
    // Lines, and 800-character chunks as mining files them.
    texts.extend(joined.chunks(800).take(60).map(|chunk| chunk.iter().collect::<String>()));
    texts.extend(lines.into_iter().take(300));
    // A text of 256 tokens and one of a single word: both ends of the padding.
    texts.push("memory ".repeat(400));
    texts.push("x".to_string());
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let exact = minilm_f32().embed_batch(&refs).unwrap();
    let fast = minilm().embed_batch(&refs).unwrap();
    let worst = exact.iter().zip(&fast).map(|(a, b)| cosine(a, b)).fold(f32::INFINITY, f32::min);
    assert!(worst >= 0.999, "lowest cosine {worst} over {} texts", texts.len());
    assert_eq!(minilm().model_id(), minilm_f32().model_id());
    assert!(paraphrase_accuracy(minilm()) >= 0.95);
}

/// The one-text MiniLM (f32 with the weights read in place, what `add`,
/// `search` and `inject` load) computes what the f32 path computes: dot
/// products along the weights' rows for a few tokens, a transposed read of
/// them for more; same model id.
#[test]
fn minilm_with_weights_in_place_matches_f32() {
    use mempalace_embed::minilm::Precision;
    let in_place = MiniLm::load_with(&minilm_dir(&model_root()), Precision::F32InPlace).unwrap();
    let lines = repository_texts();
    let joined: Vec<char> = lines.join(" ").chars().collect();
    let mut texts: Vec<String> = vec!["x".to_string(), "which database did we pick".to_string(), "memory ".repeat(400)];
    texts.extend(lines.into_iter().take(20));
    texts.extend(joined.chunks(800).take(5).map(|chunk| chunk.iter().collect::<String>()));
    let exact = minilm_f32();
    for text in &texts {
        let cos = cosine(&exact.embed_one(text).unwrap(), &in_place.embed_one(text).unwrap());
        assert!(cos >= 0.99999, "cosine {cos} for {text:?}");
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batched = in_place.embed_batch(&refs).unwrap();
    for (text, vector) in texts.iter().zip(&batched) {
        assert!(cosine(&exact.embed_one(text).unwrap(), vector) >= 0.99999, "batched {text:?}");
    }
    assert_eq!(in_place.model_id(), exact.model_id());
}

/// The one-text MiniLM where the CPU has AVX-512 (f32 arithmetic on the
/// weights rounded to f16): within cosine 0.9999 of f32 on short, long and
/// truncated texts, one at a time and batched, under f32's model id; it
/// ranks paraphrases as f32 does.
#[test]
fn minilm_with_f16_weights_stays_within_f32s_model() {
    let lines = repository_texts();
    let joined: Vec<char> = lines.join(" ").chars().collect();
    let mut texts: Vec<String> = vec!["x".to_string(), "which database did we pick".to_string(), "memory ".repeat(400)];
    texts.extend(lines.into_iter().step_by(7).take(40));
    texts.extend(joined.chunks(800).take(10).map(|chunk| chunk.iter().collect::<String>()));
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let exact = minilm_f32().embed_batch(&refs).unwrap();
    let half = minilm_f16();
    for ((text, a), b) in texts.iter().zip(&exact).zip(half.embed_batch(&refs).unwrap()) {
        let similarity = cosine(a, &b);
        assert!(similarity >= 0.9999, "cosine {similarity} for {text:?}");
        assert!(cosine(&half.embed_one(text).unwrap(), &b) > 0.99999, "one at a time: {text:?}");
    }
    assert_eq!(half.model_id(), minilm_f32().model_id());
    assert!(paraphrase_accuracy(half) >= 0.95);
}

/// What a one-text process loads: f16 panels where the CPU has AVX-512
/// and the panels are kept or can be; else the kept transposed weights,
/// else the weights in place.
#[test]
fn one_text_processes_load_the_layout_they_can_keep() {
    use mempalace_embed::kept::{Layout, path};
    let folder = tempfile::tempdir().unwrap();
    for name in ["model.safetensors", "tokenizer.json", "config.json"] {
        std::os::unix::fs::symlink(minilm_dir(&model_root()).join(name), folder.path().join(name)).unwrap();
    }
    let avx512 = mempalace_embed::kernels::has_avx512();
    let expected = if avx512 { Precision::F16 } else { Precision::F32InPlace };
    assert_eq!(Precision::for_one_text(folder.path()), expected);
    let leftovers = std::fs::read_dir(folder.path()).unwrap().count();
    assert_eq!(leftovers, 3, "the writability probe leaves nothing behind");
    std::fs::copy(
        path(&minilm_dir(&model_root()), Layout::TransposedF32).unwrap(),
        path(folder.path(), Layout::TransposedF32).unwrap(),
    )
    .expect("`mempalace model fetch` kept the transposed weights in the model directory");
    let expected = if avx512 { Precision::F16 } else { Precision::F32 };
    assert_eq!(Precision::for_one_text(folder.path()), expected);
    let model = MiniLm::load_with(folder.path(), Precision::for_one_text(folder.path())).unwrap();
    assert!(
        cosine(&model.embed_one("the gripper force").unwrap(), &minilm_f32().embed_one("the gripper force").unwrap())
            >= 0.9999
    );
    assert_eq!(path(folder.path(), Layout::PanelsF16).unwrap().is_file(), avx512, "panels kept where they are used");
}

/// all-mpnet-base-v2 as loaded by default (bf16 products on the AMX unit
/// where the CPU has one, else f32), from the model directory
/// (`mempalace model fetch --model mpnet`; `./scripts/test.sh` fetches it).
fn mpnet() -> &'static Mpnet {
    static MODEL: OnceLock<Mpnet> = OnceLock::new();
    MODEL.get_or_init(|| load_mpnet(Precision::for_this_cpu()))
}

/// MPNet in f32 (the reference path).
fn mpnet_f32() -> &'static Mpnet {
    static MODEL: OnceLock<Mpnet> = OnceLock::new();
    MODEL.get_or_init(|| load_mpnet(Precision::F32))
}

fn load_mpnet(precision: Precision) -> Mpnet {
    Mpnet::load_with(&mpnet_dir(&model_root()), precision).unwrap_or_else(|error| {
        panic!("{error}; `mempalace model fetch --model mpnet --model-dir {}` fetches it", model_root().display())
    })
}

/// MPNet against reference vectors made by an independent numpy
/// implementation of Hugging Face's MPNet (tokenized by the `tokenizers`
/// library): short English, accented Latin, Chinese, the empty string, a
/// 103-token exchange (relative positions in the logarithmic buckets) and
/// a text truncated at 384 tokens. Batched and one at a time.
#[test]
fn mpnet_matches_the_reference_vectors() {
    for model in [mpnet(), mpnet_f32()] {
        mpnet_model_matches_the_reference_vectors(model);
    }
}

/// The AMX path (bf16 products, f32 attention with the relative bias), the
/// weights read in place and the f16 panels give f32's vectors under f32's
/// model id; int8 stays close under its own.
#[test]
fn mpnet_precisions_agree_with_f32() {
    let texts: Vec<String> = repository_texts().into_iter().step_by(97).take(24).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let exact = mpnet_f32().embed_batch(&refs).unwrap();
    let mut variants = vec![(load_mpnet(Precision::F32InPlace), 0.99999), (load_mpnet(Precision::F16), 0.9999)];
    if mempalace_embed::amx::available() {
        variants.push((load_mpnet(Precision::Bf16), 0.9995));
    }
    for (model, floor) in &variants {
        assert_eq!(model.model_id(), "all-mpnet-base-v2");
        for ((text, a), b) in texts.iter().zip(&exact).zip(model.embed_batch(&refs).unwrap()) {
            let similarity = cosine(a, &b);
            assert!(similarity >= *floor, "cosine {similarity} for {text:?}");
        }
    }
    if mempalace_embed::kernels::has_vnni() {
        let int8 = load_mpnet(Precision::Int8);
        assert_eq!(int8.model_id(), "all-mpnet-base-v2-int8");
        for (a, b) in exact.iter().zip(int8.embed_batch(&refs).unwrap()) {
            assert!(cosine(a, &b) >= 0.98, "int8 cosine {}", cosine(a, &b));
        }
    }
}

fn mpnet_model_matches_the_reference_vectors(model: &Mpnet) {
    assert_eq!((model.model_id(), model.dim()), ("all-mpnet-base-v2", 768));
    let path = mempalace_testdata::fixture("embeddings/mpnet-reference.json");
    let reference: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("reference file")).unwrap();
    let items = reference["items"].as_array().expect("items");
    assert_eq!(items.len(), 7);
    let texts: Vec<&str> = items.iter().map(|item| item["text"].as_str().unwrap()).collect();
    let rows = model.tokenize(&texts);
    let vectors = model.embed_batch(&texts).unwrap();
    for ((item, vector), row) in items.iter().zip(&vectors).zip(&rows) {
        let name: String = item["text"].as_str().unwrap().chars().take(40).collect();
        assert_eq!(row.len() as u64, item["tokens"].as_u64().unwrap(), "tokens of {name:?}");
        let expected: Vec<f32> =
            item["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        let similarity = cosine(vector, &expected);
        assert!(similarity >= 0.9999, "cosine {similarity} for {name:?}");
        assert!(cosine(&model.embed_one(item["text"].as_str().unwrap()).unwrap(), vector) > 0.99999);
    }
}

#[test]
fn mpnet_finds_paraphrases() {
    let accuracy = paraphrase_accuracy(mpnet());
    assert!(accuracy >= 0.95, "MPNet paraphrase accuracy {accuracy}");
}

/// The layouts a load computes (transposed f32 weights, f16 panels) are
/// kept next to the model and mapped by the next load: the same vectors,
/// bit for bit; a damaged copy is recomputed and replaced, and copies made
/// for other weights go.
#[test]
fn computed_weight_layouts_are_kept_next_to_the_model() {
    use mempalace_embed::kept::{Layout, path, present};
    for (precision, layout, least) in
        [(Precision::F32, Layout::TransposedF32, 40_000_000), (Precision::F16, Layout::PanelsF16, 20_000_000)]
    {
        let folder = tempfile::tempdir().unwrap();
        for name in ["model.safetensors", "tokenizer.json", "config.json"] {
            std::os::unix::fs::symlink(minilm_dir(&model_root()).join(name), folder.path().join(name)).unwrap();
        }
        let stale = path(folder.path(), layout).unwrap().with_file_name(match layout {
            Layout::TransposedF32 => ".transposed-f32-1-2.safetensors",
            Layout::PanelsF16 => ".panels-f16-1-2.safetensors",
        });
        std::fs::write(&stale, b"weights of another day").unwrap();
        let kept = path(folder.path(), layout).unwrap();
        assert!(!present(folder.path(), layout));
        let texts = ["the gripper force is 12.5 newtons", &"a longer text about calibration and firmware ".repeat(6)];

        let first = MiniLm::load_with(folder.path(), precision).unwrap().embed_batch(&texts).unwrap();
        assert!(kept.is_file(), "the first {precision:?} load writes the {layout:?} weights");
        assert!(!stale.exists(), "a copy for other weights is removed");
        let size = std::fs::metadata(&kept).unwrap().len();
        assert!(size > least, "{size} bytes");
        let mapped = MiniLm::load_with(folder.path(), precision).unwrap().embed_batch(&texts).unwrap();
        assert_eq!(first, mapped, "mapped {layout:?} weights give the same vectors");
        let reference = match precision {
            Precision::F32 => minilm_f32(),
            _ => minilm_f16(),
        };
        assert_eq!(first, reference.embed_batch(&texts).unwrap());

        // A damaged copy is not used; the load recomputes and rewrites it.
        std::fs::write(&kept, b"not safetensors").unwrap();
        let recomputed = MiniLm::load_with(folder.path(), precision).unwrap().embed_batch(&texts).unwrap();
        assert_eq!(first, recomputed);
        assert_eq!(std::fs::metadata(&kept).unwrap().len(), size, "rewritten whole");
        let leftovers: Vec<String> = std::fs::read_dir(folder.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".partial"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

#[test]
fn minilm_finds_paraphrases() {
    let accuracy = paraphrase_accuracy(minilm());
    assert!(accuracy >= 0.95, "MiniLM paraphrase accuracy {accuracy}");
}

#[test]
fn static_model_finds_paraphrases() {
    let model = static_model();
    assert_eq!(model.dim(), 256);
    let accuracy = paraphrase_accuracy(model);
    assert!(accuracy >= 0.85, "static paraphrase accuracy {accuracy}");
}

#[test]
fn static_model_handles_empty_and_unknown_text() {
    let vectors = static_model().embed_batch(&["", "   ", "ok"]).unwrap();
    assert!(vectors[0].iter().all(|x| *x == 0.0));
    assert!((mempalace_core::vector::norm(&vectors[2]) - 1.0).abs() < 1e-5);
}

fn hf_tokenizer() -> tokenizers::Tokenizer {
    hf_tokenizer_of(&minilm_dir(&model_root()))
}

fn hf_tokenizer_of(folder: &Path) -> tokenizers::Tokenizer {
    let mut tokenizer = tokenizers::Tokenizer::from_file(folder.join("tokenizer.json")).unwrap();
    tokenizer.with_truncation(None).unwrap();
    tokenizer.with_padding(None);
    tokenizer
}

fn our_tokenizer() -> mempalace_embed::wordpiece::WordPiece {
    our_tokenizer_of(&minilm_dir(&model_root()))
}

fn our_tokenizer_of(folder: &Path) -> mempalace_embed::wordpiece::WordPiece {
    mempalace_embed::wordpiece::WordPiece::from_tokenizer_json(&folder.join("tokenizer.json")).unwrap()
}

/// Every non-empty line of the repository's prose (README, ARCHITECTURE,
/// docs) and of the plain-text transcript fixtures.
fn repository_texts() -> Vec<String> {
    let root = mempalace_testdata::repo_root();
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for dir in [root.join("docs"), mempalace_testdata::fixture("transcripts/text")] {
        // Prose only: docs/ also holds the UI's screenshots (docs/img/).
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md" || x == "txt"))
            .collect();
        entries.sort();
        files.extend(entries);
    }
    let mut texts = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        texts.extend(text.lines().filter(|l| !l.trim().is_empty()).map(str::to_string));
    }
    texts
}

/// Our WordPiece tokenizer against the Hugging Face tokenizer on `texts`,
/// the paraphrases and a few hard cases, then with special tokens and
/// truncation as MiniLM sees text.
fn wordpiece_matches_hugging_face_on(texts: Vec<String>) {
    wordpiece_of_matches_hugging_face_on(&minilm_dir(&model_root()), 256, texts);
}

/// The same for the tokenizer in `folder`, truncating at `max` tokens.
fn wordpiece_of_matches_hugging_face_on(folder: &Path, max: usize, mut texts: Vec<String>) {
    let (hf, ours) = (hf_tokenizer_of(folder), our_tokenizer_of(folder));
    texts.extend(PARAPHRASES.iter().flat_map(|(a, b)| [a.to_string(), b.to_string()]));
    texts.extend(
        [
            "用户喜欢深色模式和向量搜索",
            "Café déjà vu: naïve résumé coördination",
            "",
            "İstanbul ﬁle Ǆ ᾨ",
            "a [CLS] b [SEP]c [MASK] [PAD]x [UNK] <s> </s>y <mask> <pad> <unk> <UNK> [cls] <S>",
        ]
        .map(String::from),
    );
    assert!(texts.len() > 1_000, "{}", texts.len());
    for text in &texts {
        let expected = hf.encode(text.as_str(), false).unwrap().get_ids().to_vec();
        assert_eq!(ours.encode(text, usize::MAX), expected, "{text:?}");
    }
    let long = "memory palace drawer wing room hall ".repeat(80);
    let mut truncating = hf_tokenizer_of(folder);
    truncating.with_truncation(Some(tokenizers::TruncationParams { max_length: max, ..Default::default() })).unwrap();
    assert_eq!(
        ours.encode_with_special(&long, max),
        truncating.encode(long.as_str(), true).unwrap().get_ids().to_vec()
    );
}

/// Our WordPiece implementation reproduces the Hugging Face tokenizer on
/// every line of the repository's prose (Markdown, code, tables, arrows).
#[test]
fn wordpiece_matches_hugging_face_on_repository_text() {
    wordpiece_matches_hugging_face_on(repository_texts());
}

/// MPNet's tokenizer (`<s>` … `</s>` around the text, `[UNK]` inside)
/// through the same reader, against the Hugging Face tokenizer.
#[test]
fn mpnet_wordpiece_matches_hugging_face_on_repository_text() {
    mpnet();
    wordpiece_of_matches_hugging_face_on(&mpnet_dir(&model_root()), 384, repository_texts());
}

/// The same on the shared real data: all eight reference vectors, and every
/// line of the seeds and of LoCoMo.
mod real_data {
    use serde_json::Value;

    #[test]
    fn minilm_matches_the_reference_vectors() {
        super::matches_reference_vectors(&mempalace_testdata::shared("fixtures/embeddings/minilm-reference.json"), 8);
    }

    fn shared_texts() -> Vec<String> {
        let mut texts = Vec::new();
        for entry in std::fs::read_dir(mempalace_testdata::shared("spec/seeds")).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            texts.extend(text.lines().filter(|l| !l.trim().is_empty()).map(str::to_string));
        }
        let locomo: Value = serde_json::from_str(
            &std::fs::read_to_string(mempalace_testdata::shared("bench/locomo/locomo-dev.json")).unwrap(),
        )
        .unwrap();
        for conversation in locomo.as_array().unwrap() {
            for (key, turns) in conversation["conversation"].as_object().unwrap() {
                if key.starts_with("session_") && !key.ends_with("date_time") {
                    for turn in turns.as_array().into_iter().flatten() {
                        texts.extend(turn["text"].as_str().map(str::to_string));
                    }
                }
            }
        }
        texts
    }

    /// …and on every line of real text in the shared data (seeds, LoCoMo).
    #[test]
    fn wordpiece_matches_hugging_face_on_real_text() {
        super::wordpiece_matches_hugging_face_on(shared_texts());
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]
    /// …and on random text mixing scripts, accents, punctuation, controls and emoji.
    #[test]
    fn wordpiece_matches_hugging_face_on_random_text(
        text in "[a-zA-Z0-9 .,;:!?'\"()\\-_/\\\\@#$%^&*\t\n\r\u{0}-\u{1f}\u{7f}-\u{a0}àéîõüÿçñÀÉÎØßæœ\u{300}-\u{36f}İıﬁǄᾨ中文日本語한국어ひらがなカタカナ\u{200b}\u{fffd}\u{feff}😀👍🏽\u{10ffff}\u{f900}\u{2f800}]{0,80}"
    ) {
        static TOKENIZERS: OnceLock<(tokenizers::Tokenizer, mempalace_embed::wordpiece::WordPiece)> = OnceLock::new();
        let (hf, ours) = TOKENIZERS.get_or_init(|| (hf_tokenizer(), our_tokenizer()));
        let expected = hf.encode(text.as_str(), false).unwrap().get_ids().to_vec();
        proptest::prop_assert_eq!(ours.encode(&text, usize::MAX), expected, "{:?}", text);
    }
}
