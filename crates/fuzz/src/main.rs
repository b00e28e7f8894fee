//! `mempalace-fuzz`: an in-tree mutation fuzzer for every parser of data
//! users hand us — transcript formats, chat-export bundles, Slack exports,
//! opencode databases, Python MemPalace palaces, `mempalace.yaml`, export
//! JSONL, query strings and texts, MCP tool arguments and REST requests.
//!
//! The toolchain here is stable Rust, so libFuzzer (`cargo fuzz`, nightly)
//! is out; this harness needs nothing else. Each target starts from seeds
//! (the repository's fixtures and hand-written edge cases, `crates/fuzz/corpus/`),
//! applies stacked random mutations (bit flips, interesting bytes, inserted
//! JSON and YAML tokens, deletions, duplications, splices between seeds,
//! truncation, deep nesting) and runs the parser under `catch_unwind`. A
//! panic, or a run longer than the hang limit, is a finding: its input is
//! written to the findings folder and the run fails. Runs are deterministic
//! for a seed (`--seed`).
//!
//! `mempalace-fuzz [--seconds N] [--seed S] [--target NAME]… [--findings DIR] [--json]`
//! prints executions, executions per second and findings per target.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

mod targets;

/// A run longer than this is a hang (inputs are at most [`MAX_INPUT`]).
const HANG: Duration = Duration::from_secs(2);

/// Largest input a mutation makes (1 MiB): the hang limit is meant for
/// inputs of a transcript's size.
const MAX_INPUT: usize = 1 << 20;

/// xorshift64*: fast, deterministic for a seed.
pub struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.bits() % n as u64) as usize }
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// Tokens that make parsers take unusual paths.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    ":",
    ",",
    "null",
    "true",
    "-1",
    "0",
    "1e999",
    "-0.0",
    "18446744073709551616",
    "\"\\u0000\"",
    "\"\\ud800\"",
    "\u{feff}",
    "\u{10ffff}",
    "\r\n",
    "\n",
    "\t",
    "> ",
    "---\n",
    "- ",
    "&a",
    "*a",
    "!!binary",
    "\"role\":",
    "\"content\":",
    "\"type\":\"message\"",
    "\"text\":",
    "\"messages\":[",
    "\"mapping\":{",
    "user:",
    "assistant:",
    "wing:",
    "rooms:",
    "name:",
    "2025-13-45T25:61:61Z",
    "9999-12-31",
    "0000-00-00",
    "drawer_",
    "personal.",
    "../",
    "%00",
    "%ZZ",
    "\u{200b}",
    "😀",
    "ＡＢＣ",
    "中文字符",
    "'",
    "';--",
    "*",
    "OR",
    "NEAR(",
    "\"\"",
    "^",
    "(",
    ")",
];

/// Applies 1–6 stacked mutations to `input`.
pub fn mutate(rng: &mut Rng, input: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut data = input.to_vec();
    for _ in 0..=rng.below(6) {
        let len = data.len();
        match rng.below(11) {
            0 if len > 0 => {
                let at = rng.below(len);
                data[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let at = rng.below(len);
                data[at] = [0u8, 0xff, 0x7f, 0x80, 0xc3, 0xe2, b'"', b'{', b'\\', b'\n', b'>'][rng.below(11)];
            }
            2 => {
                let at = rng.below(len + 1);
                let token = TOKENS[rng.below(TOKENS.len())].as_bytes();
                data.splice(at..at, token.iter().copied());
            }
            3 if len > 0 => {
                let from = rng.below(len);
                let to = (from + 1 + rng.below(64)).min(len);
                data.drain(from..to);
            }
            4 if len > 0 => {
                let from = rng.below(len);
                let to = (from + 1 + rng.below(128)).min(len);
                let piece: Vec<u8> = data[from..to].to_vec();
                let at = rng.below(len + 1);
                data.splice(at..at, piece);
            }
            5 if !seeds.is_empty() => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let from = rng.below(other.len());
                    let to = (from + 1 + rng.below(256)).min(other.len());
                    let at = rng.below(len + 1);
                    data.splice(at..at, other[from..to].iter().copied());
                }
            }
            6 if len > 0 => data.truncate(rng.below(len)),
            7 => {
                let depth = 1 + rng.below(3000);
                let at = rng.below(len + 1);
                let open = if rng.one_in(2) { b"[" } else { b"{" };
                data.splice(at..at, open.iter().copied().cycle().take(depth));
            }
            8 => {
                let at = rng.below(len + 1);
                let random: Vec<u8> = (0..1 + rng.below(16)).map(|_| rng.bits() as u8).collect();
                data.splice(at..at, random);
            }
            9 if len > 0 => {
                // Repeat a line or a record: long inputs, many records.
                let from = rng.below(len);
                let to = (from + 1 + rng.below(200)).min(len);
                let piece: Vec<u8> = data[from..to].to_vec();
                for _ in 0..rng.below(50) {
                    data.extend_from_slice(&piece);
                }
            }
            _ => {
                let at = rng.below(len + 1);
                let digits = format!("{}", rng.bits() as i64);
                data.splice(at..at, digits.into_bytes());
            }
        }
        if data.len() > MAX_INPUT {
            data.truncate(MAX_INPUT);
        }
    }
    data
}

/// Values that stress a JSON consumer's checks.
fn odd_value(rng: &mut Rng) -> Value {
    match rng.below(16) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(-1),
        3 => json!(0),
        4 => json!(i64::MAX),
        5 => json!(u64::MAX),
        6 => json!(-1.5e300),
        7 => json!(""),
        8 => json!("   "),
        9 => json!("x".repeat(1 + rng.below(20_000))),
        10 => json!([]),
        11 => json!({}),
        12 => json!(TOKENS[rng.below(TOKENS.len())]),
        13 => json!(["a", 1, null, {"k": []}]),
        14 => json!("2025-02-30T25:00:00Z"),
        _ => json!(format!("{}", rng.bits())),
    }
}

/// Changes one node of a JSON document: replaces a value with an odd one,
/// removes or adds a key, duplicates an array element, or wraps a value in
/// arrays.
fn mutate_value(rng: &mut Rng, value: &mut Value, depth: usize) {
    let descend = depth < 12 && rng.below(3) != 0;
    match value {
        Value::Object(map) if descend && !map.is_empty() => {
            let key = map.keys().nth(rng.below(map.len())).cloned().unwrap_or_default();
            match rng.below(6) {
                0 => {
                    map.remove(&key);
                }
                1 => {
                    map.insert(format!("{key}_{}", rng.below(9)), odd_value(rng));
                }
                _ => {
                    if let Some(child) = map.get_mut(&key) {
                        mutate_value(rng, child, depth + 1);
                    }
                }
            }
        }
        Value::Array(items) if descend && !items.is_empty() => {
            let at = rng.below(items.len());
            if rng.one_in(4) {
                let copy = items[at].clone();
                for _ in 0..rng.below(100) {
                    items.push(copy.clone());
                }
            } else {
                mutate_value(rng, &mut items[at], depth + 1);
            }
        }
        _ => {
            *value = if rng.one_in(6) {
                let mut wrapped = value.take();
                for _ in 0..1 + rng.below(200) {
                    wrapped = Value::Array(vec![wrapped]);
                }
                wrapped
            } else {
                odd_value(rng)
            };
        }
    }
}

/// A structure-aware mutation: when the input (or one of its lines) is
/// JSON, change its tree and write it back; `None` when nothing parses.
pub fn mutate_json(rng: &mut Rng, input: &[u8]) -> Option<Vec<u8>> {
    if let Ok(mut value) = serde_json::from_slice::<Value>(input) {
        for _ in 0..=rng.below(3) {
            mutate_value(rng, &mut value, 0);
        }
        return serde_json::to_vec(&value).ok();
    }
    let text = std::str::from_utf8(input).ok()?;
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return None;
    }
    let at = rng.below(lines.len());
    let mut value: Value = serde_json::from_str(&lines[at]).ok()?;
    mutate_value(rng, &mut value, 0);
    lines[at] = serde_json::to_string(&value).ok()?;
    Some(lines.join("\n").into_bytes())
}

/// One fuzz target.
pub trait Target {
    /// Its name.
    fn name(&self) -> &'static str;
    /// Seed inputs.
    fn seeds(&self) -> Vec<Vec<u8>>;
    /// Runs the parser on `input`; must never panic.
    fn run(&mut self, input: &[u8]);
}

/// A target's tally.
#[derive(Debug, Default, Clone)]
struct Tally {
    executions: u64,
    panics: u64,
    hangs: u64,
    seconds: f64,
    slowest_ms: f64,
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        let names: Vec<&str> = targets::all().iter().map(|t| t.name()).collect();
        print_line(&format!(
            "mempalace-fuzz [--seconds N] [--seed S] [--target NAME]... [--findings DIR] [--json]\ntargets: {}",
            names.join(", ")
        ));
        return;
    }
    let seconds: f64 = arg(&args, "--seconds").unwrap_or(10.0);
    let seed: u64 = arg(&args, "--seed").unwrap_or(0x5eed);
    let findings: PathBuf = arg(&args, "--findings").unwrap_or_else(|| PathBuf::from("target/fuzz-findings"));
    let chosen: Vec<String> = args.windows(2).filter(|w| w[0] == "--target").map(|w| w[1].clone()).collect();
    let json_out = args.iter().any(|a| a == "--json");

    // Panics are findings, reported once each, not printed by the hook.
    let last_panic: Arc<Mutex<Option<String>>> = Arc::default();
    let hook_panic = Arc::clone(&last_panic);
    std::panic::set_hook(Box::new(move |info| {
        *hook_panic.lock().unwrap_or_else(|e| e.into_inner()) = Some(info.to_string());
    }));

    let mut tallies: BTreeMap<&'static str, Tally> = BTreeMap::new();
    let mut failed = false;
    let mut targets = targets::all();
    targets.retain(|t| chosen.is_empty() || chosen.iter().any(|c| c == t.name()));
    if targets.is_empty() {
        eprint_line(&format!("no such target: {chosen:?}; --help lists them"));
        std::process::exit(2);
    }
    for (index, target) in targets.iter_mut().enumerate() {
        let mut rng = Rng::new(seed ^ ((index as u64 + 1) << 32));
        let seeds = target.seeds();
        let budget = Duration::from_secs_f64(seconds);
        let started = Instant::now();
        let mut tally = Tally::default();
        let mut run_one = |input: &[u8], tally: &mut Tally| {
            let one = Instant::now();
            let outcome = catch_unwind(AssertUnwindSafe(|| target.run(input)));
            let took = one.elapsed();
            tally.executions += 1;
            tally.slowest_ms = tally.slowest_ms.max(took.as_secs_f64() * 1000.0);
            let problem = match outcome {
                Err(_) => {
                    Some(("panic", last_panic.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default()))
                }
                Ok(()) if took > HANG => Some(("hang", format!("took {:.1} s", took.as_secs_f64()))),
                Ok(()) => None,
            };
            if let Some((kind, detail)) = problem {
                if kind == "panic" {
                    tally.panics += 1;
                } else {
                    tally.hangs += 1;
                }
                save(&findings, target.name(), kind, input, &detail);
            }
        };
        // Every seed as it is first.
        for input in &seeds {
            run_one(input, &mut tally);
        }
        while started.elapsed() < budget {
            let base = if seeds.is_empty() { Vec::new() } else { seeds[rng.below(seeds.len())].clone() };
            // Half the time change the JSON tree (valid documents with odd
            // values reach the checks behind the parser), else the bytes.
            let structured = if rng.one_in(2) { mutate_json(&mut rng, &base) } else { None }
                .filter(|mutated| mutated.len() <= MAX_INPUT);
            let input = structured.unwrap_or_else(|| mutate(&mut rng, &base, &seeds));
            run_one(&input, &mut tally);
        }
        tally.seconds = started.elapsed().as_secs_f64();
        failed |= tally.panics + tally.hangs > 0;
        if !json_out {
            print_line(&format!(
                "{:<16} {:>10} executions {:>9.0}/s  {} panics  {} hangs  slowest {:.1} ms",
                target.name(),
                tally.executions,
                tally.executions as f64 / tally.seconds.max(1e-9),
                tally.panics,
                tally.hangs,
                tally.slowest_ms
            ));
        }
        tallies.insert(target.name(), tally);
    }
    let total: u64 = tallies.values().map(|t| t.executions).sum();
    if json_out {
        let targets: serde_json::Map<String, Value> = tallies
            .iter()
            .map(|(name, t)| {
                (
                    name.to_string(),
                    json!({"executions": t.executions, "panics": t.panics, "hangs": t.hangs,
                           "seconds": t.seconds, "slowest_ms": t.slowest_ms}),
                )
            })
            .collect();
        print_line(&json!({"seed": seed, "executions": total, "targets": targets}).to_string());
    } else {
        print_line(&format!("total {total} executions; findings in {}", findings.display()));
    }
    if failed {
        std::process::exit(1);
    }
}

/// Writes a finding's input and what happened.
fn save(dir: &Path, target: &str, kind: &str, input: &[u8], detail: &str) {
    let name = hex::encode(&Sha256::digest(input)[..8]);
    let folder = dir.join(target);
    if std::fs::create_dir_all(&folder).is_ok() {
        let _ = std::fs::write(folder.join(format!("{kind}-{name}.bin")), input);
        let _ = std::fs::write(folder.join(format!("{kind}-{name}.txt")), detail);
    }
    eprint_line(&format!("{target}: {kind} ({detail}); input saved as {}/{kind}-{name}.bin", folder.display()));
}

#[allow(clippy::print_stdout)]
fn print_line(text: &str) {
    println!("{text}");
}

#[allow(clippy::print_stderr)]
fn eprint_line(text: &str) {
    eprintln!("{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fragile;

    impl Target for Fragile {
        fn name(&self) -> &'static str {
            "fragile"
        }

        fn seeds(&self) -> Vec<Vec<u8>> {
            vec![b"{}".to_vec()]
        }

        fn run(&mut self, input: &[u8]) {
            assert!(!input.contains(&b'!'), "a bang");
        }
    }

    #[test]
    fn mutations_are_deterministic_bounded_and_varied() {
        let seeds = vec![br#"{"a":[1,2,{"b":"c"}]}"#.to_vec(), b"> hello\nworld".to_vec()];
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..500).map(|i| mutate(&mut rng, &seeds[i % 2], &seeds)).collect::<Vec<_>>()
        };
        let first = run(42);
        assert_eq!(first, run(42), "the same seed, the same inputs");
        assert_ne!(first, run(43));
        assert!(first.iter().all(|m| m.len() <= MAX_INPUT));
        let distinct: std::collections::BTreeSet<&Vec<u8>> = first.iter().collect();
        assert!(distinct.len() > 400, "{} distinct of 500", distinct.len());
        let mut rng = Rng::new(1);
        let tree = mutate_json(&mut rng, &seeds[0]).expect("JSON is mutated as a tree");
        assert_ne!(tree, seeds[0]);
        assert!(mutate_json(&mut rng, b"not json").is_none());
    }

    #[test]
    fn a_panicking_target_is_caught() {
        let mut target = Fragile;
        let mut rng = Rng::new(9);
        let seeds = target.seeds();
        let caught = (0..10_000).any(|_| {
            let input = mutate(&mut rng, &seeds[0], &seeds);
            std::panic::catch_unwind(AssertUnwindSafe(|| target.run(&input))).is_err()
        });
        assert!(caught, "the mutator reaches a '!' byte and the panic is caught");
    }
}
