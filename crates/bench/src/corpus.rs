//! Synthetic but realistic drawer text for storage benchmarks: sentences of
//! ordinary English words, 200–800 characters, deterministic per index.
//!
//! Retrieval-quality benchmarks use real data from `../shared/bench`; this
//! generator only needs text of the right size and variety.

const WORDS: &[&str] = &[
    "the",
    "gripper",
    "force",
    "sensor",
    "calibration",
    "database",
    "migration",
    "postgres",
    "latency",
    "deploy",
    "service",
    "config",
    "decided",
    "because",
    "team",
    "alice",
    "bob",
    "review",
    "release",
    "bug",
    "fixed",
    "memory",
    "palace",
    "search",
    "index",
    "vector",
    "embedding",
    "robot",
    "arm",
    "camera",
    "lidar",
    "battery",
    "schedule",
    "meeting",
    "monday",
    "friday",
    "budget",
    "customer",
    "feedback",
    "design",
    "prototype",
    "test",
    "failure",
    "timeout",
    "retry",
    "cache",
    "queue",
    "worker",
    "thread",
    "lock",
    "file",
    "backup",
    "restore",
    "network",
    "packet",
    "router",
    "firmware",
    "update",
    "version",
    "rollback",
    "metric",
    "dashboard",
    "alert",
    "we",
    "should",
    "will",
    "never",
    "always",
    "prefer",
    "use",
    "switch",
    "from",
    "to",
    "after",
    "before",
    "and",
    "but",
    "so",
    "with",
    "without",
    "into",
    "over",
    "under",
    "about",
    "project",
    "plan",
    "milestone",
];

/// A small deterministic generator (SplitMix64), so runs are comparable.
pub struct Rng(u64);

impl Rng {
    /// Seeds the generator.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
}

/// Size of the synthetic vocabulary: the listed words take the first
/// ranks, invented words the rest.
const VOCABULARY: u64 = 50_000;

/// A word drawn with a Zipf-like (log-uniform rank) distribution, so that
/// document frequencies look like those of real text: a few words in most
/// drawers, most words in very few.
fn zipf_word(rng: &mut Rng) -> String {
    let u = rng.below(1_000_000) as f64 / 1_000_000.0;
    let rank = ((u * (VOCABULARY as f64).ln()).exp() as u64).saturating_sub(1).min(VOCABULARY - 1);
    if (rank as usize) < WORDS.len() {
        return WORDS[rank as usize].to_string();
    }
    const SYLLABLES: &[&str] =
        &["ka", "lo", "mi", "ner", "ta", "vo", "shi", "ru", "den", "pa", "qui", "zo", "bel", "tor"];
    let mut n = rank;
    let mut word = String::new();
    while n > 0 {
        word.push_str(SYLLABLES[(n % SYLLABLES.len() as u64) as usize]);
        n /= SYLLABLES.len() as u64;
    }
    word
}

/// Text of drawer `index`: unique (it names its index) and 200–800
/// characters of sentences with a Zipf-like word distribution.
pub fn drawer_text(index: u64) -> String {
    let mut rng = Rng::new(index.wrapping_mul(31).wrapping_add(7));
    let target = 200 + rng.below(600) as usize;
    let mut text = format!("Note {index}: ");
    while text.len() < target {
        let n_words = 6 + rng.below(12);
        for position in 0..n_words {
            let word = zipf_word(&mut rng);
            let word = word.as_str();
            if position == 0 {
                let mut chars = word.chars();
                if let Some(first) = chars.next() {
                    text.extend(first.to_uppercase());
                    text.push_str(chars.as_str());
                }
            } else {
                text.push(' ');
                text.push_str(word);
            }
        }
        text.push_str(". ");
    }
    text.truncate(text.trim_end().len());
    text
}
