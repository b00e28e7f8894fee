//! The palace audit: how navigable the palace is, not how big — scores
//! from 0 to 100 for its rooms, naming, tunnels and knowledge graph, with
//! findings a person can act on (the Python MemPalace's `palace_audit.py`,
//! same thresholds and formulas where we have the same layer).
//!
//! * **rooms** — the share of drawers outside the miner's generic rooms;
//! * **naming** — 100 − 10 per wing or room spelled two ways and per wing
//!   mixing five or more source projects;
//! * **tunnels** — the share of explicit tunnels that are sound (no end in
//!   a wing that no longer exists, no second tunnel between the same two
//!   places under another spelling); not scored without tunnels;
//! * **knowledge graph** — predicate reuse over open facts,
//!   `1 − distinct predicates / open facts`;
//! * **hallways** — the share of the strongest [`HALLWAY_TOP_N`] hallways
//!   that are not spelling artefacts: a self-link (two spellings of one
//!   entity: `src/main.zig` ↔ `main.zig`, `Postgres` ↔ `postgres`) or a
//!   duplicate (a pair already linked under other spellings; the strongest
//!   of the group is kept); not scored without hallways.
//!
//! Overall is the mean of the scores present. Pure: the engine gathers the
//! counts ([`AuditInput`]); this module scores and words them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::name::normalize_wing_name;

/// Rooms the transcript classifier falls back to (as in [`crate::roomset::GENERIC_ROOMS`]).
pub use crate::roomset::GENERIC_ROOMS;
/// A wing with at most this many drawers is a stub.
pub const TINY_WING_MAX: u64 = 5;
/// Above this share in one room, a wing of at least
/// [`FLAT_WING_MIN_DRAWERS`] is "flat".
pub const FLAT_WING_SHARE: f64 = 0.90;
/// Smallest wing judged flat.
pub const FLAT_WING_MIN_DRAWERS: u64 = 100;
/// A wing with transcripts of this many projects …
pub const MIXED_WING_MIN_PROJECTS: usize = 5;
/// … and at least this many drawers is a machine-level export.
pub const MIXED_WING_MIN_DRAWERS: u64 = 500;
const SAMPLE_LIMIT: usize = 10;

/// One end of an explicit tunnel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelEnds {
    /// First wing and room.
    pub a: (String, String),
    /// Second wing and room.
    pub b: (String, String),
}

/// The knowledge graph's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KgInput {
    /// Entities.
    pub entities: u64,
    /// Facts, open and ended.
    pub triples: u64,
    /// Open facts per predicate.
    pub open_predicates: BTreeMap<String, u64>,
}

/// Transcript drawers of one wing by the project they came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectMix {
    /// Drawers of the wing with a project key, per target project.
    pub projects: BTreeMap<String, u64>,
    /// All drawers of the wing.
    pub drawers: u64,
}

/// What the audit reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditInput {
    /// Visible drawers per wing and room.
    pub wing_rooms: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per wing, its transcripts' projects.
    pub project_mix: BTreeMap<String, ProjectMix>,
    /// Explicit tunnels.
    pub tunnels: Vec<TunnelEnds>,
    /// The knowledge graph.
    pub kg: KgInput,
    /// Hallways (entity pairs mentioned together), any order.
    pub hallways: Vec<HallwayInput>,
}

/// A hallway as the audit sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HallwayInput {
    /// Its id.
    pub id: String,
    /// Its wing.
    pub wing: String,
    /// One entity.
    pub entity_a: String,
    /// The other.
    pub entity_b: String,
    /// Drawers mentioning both.
    pub count: u64,
}

/// How many of the strongest hallways the hallway score judges (what a
/// wake-up or a traversal reads).
pub const HALLWAY_TOP_N: usize = 100;

/// Extensions that make a name a file's: `main.zig` and `main` are one
/// entity, `parser.c` and `parser.h` two (the Python MemPalace's list).
pub const CODE_EXTENSIONS: &[&str] = &[
    "py", "js", "ts", "tsx", "jsx", "mjs", "cjs", "zig", "swift", "rs", "go", "md", "json", "yaml", "yml", "toml",
    "sh", "c", "h", "cpp", "hpp", "java", "kt", "rb", "php", "html", "css", "sql", "txt", "cs", "vue", "svelte",
];

/// The base name of an entity without a path or a code extension.
fn entity_base(entity: &str) -> (String, Option<String>) {
    let base = entity.replace('\\', "/");
    let base = base.trim_end_matches('/').rsplit('/').next().unwrap_or("").to_string();
    if let Some((stem, extension)) = base.rsplit_once('.')
        && !stem.is_empty()
        && CODE_EXTENSIONS.contains(&extension.to_lowercase().as_str())
    {
        return (stem.to_string(), Some(extension.to_lowercase()));
    }
    (base, None)
}

/// The key two spellings of one entity share: the base name without a
/// path or code extension, lowercase, letters and digits only
/// (`src/main.zig`, `main.zig` and `Main` → `main`; `Crawbl Backend` and
/// `crawbl-backend` → `crawblbackend`).
pub fn entity_spelling_key(entity: &str) -> String {
    entity_base(entity).0.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// Whether two names spell one entity: the same key, and not two
/// different code extensions (`parser.c` and `parser.h` are two files).
pub fn same_entity_spelling(a: &str, b: &str) -> bool {
    let ((_, ext_a), (_, ext_b)) = (entity_base(a), entity_base(b));
    let key = entity_spelling_key(a);
    !key.is_empty() && key == entity_spelling_key(b) && (ext_a.is_none() || ext_b.is_none() || ext_a == ext_b)
}

/// The spelling artefacts among hallways, by index: self-links, and
/// duplicates (every hallway of a wing joining the same two entities
/// under other spellings, except the strongest of them).
pub fn hallway_artifacts(hallways: &[HallwayInput]) -> (BTreeSet<usize>, BTreeSet<usize>) {
    let mut self_links = BTreeSet::new();
    let mut groups: BTreeMap<(String, String, String), Vec<usize>> = BTreeMap::new();
    for (index, hallway) in hallways.iter().enumerate() {
        if same_entity_spelling(&hallway.entity_a, &hallway.entity_b) {
            self_links.insert(index);
            continue;
        }
        let (mut a, mut b) = (entity_spelling_key(&hallway.entity_a), entity_spelling_key(&hallway.entity_b));
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        groups.entry((hallway.wing.clone(), a, b)).or_default().push(index);
    }
    let mut duplicates = BTreeSet::new();
    for mut members in groups.into_values() {
        members.sort_by(|x, y| hallways[*y].count.cmp(&hallways[*x].count).then(hallways[*x].id.cmp(&hallways[*y].id)));
        duplicates.extend(members.into_iter().skip(1));
    }
    (self_links, duplicates)
}

/// A wing whose drawers sit almost all in one room.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatWing {
    /// The wing.
    pub wing: String,
    /// Its largest room.
    pub room: String,
    /// Its drawers.
    pub drawers: u64,
    /// The largest room's share.
    pub share: f64,
}

/// A room name found in several wings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrossWingRoom {
    /// The room.
    pub room: String,
    /// In how many wings.
    pub wings: usize,
    /// Drawers in all of them.
    pub drawers: u64,
}

/// The rooms layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoomsReport {
    /// Visible drawers.
    pub total_drawers: u64,
    /// Wings.
    pub wings: usize,
    /// Distinct room names.
    pub distinct_rooms: usize,
    /// (wing, room) pairs.
    pub room_instances: usize,
    /// Drawers in generic rooms.
    pub generic_drawers: u64,
    /// Their share.
    pub generic_share: f64,
    /// Flat wings, largest first.
    pub flat_wings: Vec<FlatWing>,
    /// Room names shared by wings (at most ten).
    pub cross_wing_rooms: Vec<CrossWingRoom>,
}

/// Two spellings of one room.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoomDrift {
    /// The spellings.
    pub rooms: Vec<String>,
    /// The wings holding any of them.
    pub wings: Vec<String>,
}

/// A stub wing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TinyWing {
    /// The wing.
    pub wing: String,
    /// Its drawers.
    pub drawers: u64,
}

/// A wing of many projects.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixedWing {
    /// The wing.
    pub wing: String,
    /// Projects in it.
    pub projects: usize,
    /// Its drawers.
    pub drawers: u64,
    /// The largest projects, with their drawers.
    pub top: Vec<(String, u64)>,
}

/// The naming layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamingReport {
    /// Wings that are one name spelled differently.
    pub wing_drift: Vec<Vec<String>>,
    /// Wing pairs where one is the other plus a `_suffix` (not scored).
    pub wing_prefix_pairs: Vec<Vec<String>>,
    /// Rooms spelled differently.
    pub room_drift: Vec<RoomDrift>,
    /// Wings of at most five drawers.
    pub tiny_wings: Vec<TinyWing>,
    /// Wings mixing many source projects.
    pub mixed_wings: Vec<MixedWing>,
}

/// The tunnels layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TunnelsReport {
    /// Explicit tunnels.
    pub total: usize,
    /// Ends in a wing that holds no drawers.
    pub dangling_endpoints: usize,
    /// Tunnels repeating another between the same places under other spellings.
    pub duplicates: usize,
    /// Tunnels with a dangling end or duplicating another.
    pub artifacts: usize,
    /// Their share.
    pub artifact_share: f64,
}

/// The knowledge-graph layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KgReport {
    /// Entities.
    pub entities: u64,
    /// Facts.
    pub triples: u64,
    /// Open facts.
    pub current_facts: u64,
    /// Ended facts.
    pub expired_facts: u64,
    /// Predicates of open facts.
    pub distinct_predicates: usize,
    /// Predicates used by one open fact.
    pub one_off_predicates: usize,
    /// Some of them.
    pub one_off_sample: Vec<String>,
    /// `1 − distinct / open facts`.
    pub predicate_reuse: f64,
}

/// The hallways layer.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HallwaysReport {
    /// Hallways.
    pub total: usize,
    /// Two spellings of one entity linked to each other.
    pub self_links: usize,
    /// Pairs linked again under other spellings.
    pub duplicates: usize,
    /// `(self_links + duplicates) / total`.
    pub artifact_share: f64,
    /// The strongest hallways judged.
    pub top_n: usize,
    /// Artefacts among them.
    pub top_artifacts: usize,
    /// Their share: what the score counts.
    pub top_artifact_share: f64,
    /// Some artefacts, strongest first.
    pub artifact_sample: Vec<String>,
}

fn analyze_hallways(hallways: &[HallwayInput]) -> HallwaysReport {
    let (self_links, duplicates) = hallway_artifacts(hallways);
    let mut order: Vec<usize> = (0..hallways.len()).collect();
    order.sort_by(|x, y| hallways[*y].count.cmp(&hallways[*x].count).then(hallways[*x].id.cmp(&hallways[*y].id)));
    let artifact = |index: &usize| self_links.contains(index) || duplicates.contains(index);
    let top: Vec<usize> = order.iter().copied().take(HALLWAY_TOP_N).collect();
    let top_artifacts = top.iter().filter(|i| artifact(i)).count();
    let total = hallways.len();
    HallwaysReport {
        total,
        self_links: self_links.len(),
        duplicates: duplicates.len(),
        artifact_share: if total > 0 {
            round4((self_links.len() + duplicates.len()) as f64 / total as f64)
        } else {
            0.0
        },
        top_n: top.len(),
        top_artifacts,
        top_artifact_share: if top.is_empty() { 0.0 } else { round4(top_artifacts as f64 / top.len() as f64) },
        artifact_sample: order
            .iter()
            .filter(|i| artifact(i))
            .take(SAMPLE_LIMIT)
            .map(|i| format!("{} ↔ {}", hallways[*i].entity_a, hallways[*i].entity_b))
            .collect(),
    }
}

/// Scores per layer, `None` where a layer is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Scores {
    /// Mean of the others.
    pub overall: Option<u8>,
    /// Rooms.
    pub rooms: Option<u8>,
    /// Naming.
    pub naming: Option<u8>,
    /// Tunnels.
    pub tunnels: Option<u8>,
    /// Hallways.
    pub hallways: Option<u8>,
    /// Knowledge graph.
    pub knowledge_graph: Option<u8>,
}

/// One sentence to act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// `rooms`, `naming`, `tunnels` or `knowledge graph`.
    pub layer: String,
    /// What is wrong and what to run.
    pub text: String,
}

/// The whole audit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditReport {
    /// Scores.
    pub scores: Scores,
    /// Rooms.
    pub rooms: RoomsReport,
    /// Naming.
    pub naming: NamingReport,
    /// Tunnels.
    pub tunnels: TunnelsReport,
    /// Hallways.
    pub hallways: HallwaysReport,
    /// Knowledge graph.
    pub knowledge_graph: KgReport,
    /// Findings, by layer.
    pub findings: Vec<Finding>,
}

/// The key two drifted spellings share: lowercase, only letters and
/// digits, a trailing `s` dropped (`release-3.6.0` = `release_3_6_0`,
/// `automation` = `automations`).
pub fn drift_key(name: &str) -> String {
    let mut key: String =
        name.to_lowercase().chars().filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit()).collect();
    if key.len() > 3 && key.ends_with('s') {
        key.pop();
    }
    key
}

// Python's `round` rounds halves to even; so do these.
fn round4(value: f64) -> f64 {
    (value * 10_000.0).round_ties_even() / 10_000.0
}

fn clamp(value: f64) -> u8 {
    value.clamp(0.0, 100.0).round_ties_even() as u8
}

fn analyze_rooms(wing_rooms: &BTreeMap<String, BTreeMap<String, u64>>) -> RoomsReport {
    let total: u64 = wing_rooms.values().flat_map(|rooms| rooms.values()).sum();
    let generic: u64 = wing_rooms
        .values()
        .flat_map(|rooms| rooms.iter())
        .filter(|(room, _)| GENERIC_ROOMS.contains(&room.as_str()))
        .map(|(_, n)| n)
        .sum();
    let mut room_totals: BTreeMap<&str, u64> = BTreeMap::new();
    let mut room_wings: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (wing, rooms) in wing_rooms {
        for (room, n) in rooms {
            *room_totals.entry(room).or_default() += n;
            room_wings.entry(room).or_default().insert(wing);
        }
    }
    let mut flat_wings = Vec::new();
    for (wing, rooms) in wing_rooms {
        let wing_total: u64 = rooms.values().sum();
        if wing_total < FLAT_WING_MIN_DRAWERS || rooms.is_empty() {
            continue;
        }
        // The first of the largest rooms, in name order (Python's `max` keeps the first).
        let (room, n) =
            rooms.iter().fold(("", 0_u64), |best, (room, n)| if *n > best.1 { (room.as_str(), *n) } else { best });
        let share = n as f64 / wing_total as f64;
        if share >= FLAT_WING_SHARE {
            flat_wings.push(FlatWing {
                wing: wing.clone(),
                room: room.to_string(),
                drawers: wing_total,
                share: round4(share),
            });
        }
    }
    flat_wings.sort_by_key(|flat| std::cmp::Reverse(flat.drawers));
    let mut shared: Vec<(&str, &BTreeSet<&str>)> =
        room_wings.iter().filter(|(_, wings)| wings.len() >= 2).map(|(room, wings)| (*room, wings)).collect();
    shared.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    RoomsReport {
        total_drawers: total,
        wings: wing_rooms.len(),
        distinct_rooms: room_totals.len(),
        room_instances: wing_rooms.values().map(BTreeMap::len).sum(),
        generic_drawers: generic,
        generic_share: if total == 0 { 0.0 } else { round4(generic as f64 / total as f64) },
        flat_wings,
        cross_wing_rooms: shared
            .into_iter()
            .take(SAMPLE_LIMIT)
            .map(|(room, wings)| CrossWingRoom {
                room: room.to_string(),
                wings: wings.len(),
                drawers: room_totals[room],
            })
            .collect(),
    }
}

fn analyze_naming(
    wing_rooms: &BTreeMap<String, BTreeMap<String, u64>>,
    project_mix: &BTreeMap<String, ProjectMix>,
) -> NamingReport {
    let mut wing_groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for wing in wing_rooms.keys() {
        wing_groups.entry(drift_key(wing)).or_default().push(wing.clone());
    }
    let wing_drift: Vec<Vec<String>> = wing_groups.into_values().filter(|group| group.len() > 1).collect();
    let mut seen: BTreeSet<Vec<String>> = wing_drift.iter().cloned().collect();
    let mut wing_prefix_pairs = Vec::new();
    let normalized: BTreeMap<&str, String> = wing_rooms.keys().map(|w| (w.as_str(), normalize_wing_name(w))).collect();
    for a in wing_rooms.keys() {
        let na = &normalized[a.as_str()];
        if na.is_empty() {
            continue;
        }
        for b in wing_rooms.keys() {
            let nb = &normalized[b.as_str()];
            if a != b && nb.len() > na.len() + 1 && nb.starts_with(na.as_str()) && nb.as_bytes()[na.len()] == b'_' {
                let mut pair = vec![a.clone(), b.clone()];
                pair.sort();
                if seen.insert(pair.clone()) {
                    wing_prefix_pairs.push(pair);
                }
            }
        }
    }
    let mut room_groups: BTreeMap<String, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (wing, rooms) in wing_rooms {
        for room in rooms.keys() {
            room_groups.entry(drift_key(room)).or_default().entry(room).or_default().insert(wing);
        }
    }
    let mut room_drift: Vec<RoomDrift> = room_groups
        .into_values()
        .filter(|spellings| spellings.len() > 1)
        .map(|spellings| RoomDrift {
            rooms: spellings.keys().map(|r| r.to_string()).collect(),
            wings: spellings.values().flatten().map(|w| w.to_string()).collect::<BTreeSet<_>>().into_iter().collect(),
        })
        .collect();
    room_drift.sort_by(|a, b| a.rooms.cmp(&b.rooms));
    let tiny_wings = wing_rooms
        .iter()
        .map(|(wing, rooms)| TinyWing { wing: wing.clone(), drawers: rooms.values().sum() })
        .filter(|tiny| tiny.drawers <= TINY_WING_MAX)
        .collect();
    let mut mixed: Vec<MixedWing> = project_mix
        .iter()
        .filter(|(wing, mix)| {
            mix.projects.len() >= MIXED_WING_MIN_PROJECTS
                && mix.drawers >= MIXED_WING_MIN_DRAWERS
                && wing_rooms.contains_key(*wing)
        })
        .map(|(wing, mix)| {
            let mut top: Vec<(String, u64)> = mix.projects.iter().map(|(p, n)| (p.clone(), *n)).collect();
            top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            top.truncate(5);
            MixedWing { wing: wing.clone(), projects: mix.projects.len(), drawers: mix.drawers, top }
        })
        .collect();
    mixed.sort_by(|a, b| b.drawers.cmp(&a.drawers).then(a.wing.cmp(&b.wing)));
    NamingReport { wing_drift, wing_prefix_pairs, room_drift, tiny_wings, mixed_wings: mixed }
}

fn analyze_tunnels(tunnels: &[TunnelEnds], wings: &BTreeSet<String>) -> TunnelsReport {
    let known: BTreeSet<String> = wings.iter().map(|w| normalize_wing_name(w)).collect();
    let mut seen: BTreeSet<((String, String), (String, String))> = BTreeSet::new();
    let (mut dangling, mut duplicates, mut artifacts) = (0, 0, 0);
    for tunnel in tunnels {
        let mut bad = false;
        let key = |(wing, room): &(String, String)| (normalize_wing_name(wing), drift_key(room));
        for end in [&tunnel.a, &tunnel.b] {
            if !known.contains(&normalize_wing_name(&end.0)) {
                bad = true;
                dangling += 1;
            }
        }
        let (a, b) = (key(&tunnel.a), key(&tunnel.b));
        let pair = if a <= b { (a, b) } else { (b, a) };
        if !bad && !seen.insert(pair) {
            bad = true;
            duplicates += 1;
        }
        if bad {
            artifacts += 1;
        }
    }
    let total = tunnels.len();
    TunnelsReport {
        total,
        dangling_endpoints: dangling,
        duplicates,
        artifacts,
        artifact_share: if total == 0 { 0.0 } else { round4(artifacts as f64 / total as f64) },
    }
}

fn analyze_kg(kg: &KgInput) -> KgReport {
    let current: u64 = kg.open_predicates.values().sum();
    let one_off: Vec<String> = kg.open_predicates.iter().filter(|(_, n)| **n == 1).map(|(p, _)| p.clone()).collect();
    let reuse = if current == 0 { 0.0 } else { 1.0 - kg.open_predicates.len() as f64 / current as f64 };
    KgReport {
        entities: kg.entities,
        triples: kg.triples,
        current_facts: current,
        expired_facts: kg.triples.saturating_sub(current),
        distinct_predicates: kg.open_predicates.len(),
        one_off_predicates: one_off.len(),
        one_off_sample: one_off.into_iter().take(SAMPLE_LIMIT).collect(),
        predicate_reuse: round4(reuse),
    }
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// `a, b, c, +N more`.
fn name_list(names: &[String], keep: usize) -> String {
    if names.len() <= keep {
        names.join(", ")
    } else {
        format!("{}, +{} more", names[..keep].join(", "), names.len() - keep)
    }
}

fn findings(
    rooms: &RoomsReport,
    naming: &NamingReport,
    tunnels: &TunnelsReport,
    hallways: &HallwaysReport,
    kg: &KgReport,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut add = |layer: &str, text: String| out.push(Finding { layer: layer.to_string(), text });
    if rooms.total_drawers > 0 && rooms.generic_share >= 0.5 {
        add(
            "rooms",
            format!(
                "{} of {} drawers ({}) sit in generic rooms; the room layer carries little information \
                 (`mempalace rooms propose --wing W` then `rooms apply`).",
                rooms.generic_drawers,
                rooms.total_drawers,
                percent(rooms.generic_share)
            ),
        );
    }
    for flat in rooms.flat_wings.iter().take(3) {
        add(
            "rooms",
            format!("{} keeps {} of its {} drawers in {}.", flat.wing, percent(flat.share), flat.drawers, flat.room),
        );
    }
    if rooms.flat_wings.len() > 3 {
        let extra = rooms.flat_wings.len() - 3;
        add("rooms", format!("{extra} more flat wing{}; see --json.", if extra == 1 { "" } else { "s" }));
    }
    for group in &naming.wing_drift {
        add("naming", format!("{}: one wing spelled two ways.", group.join(" / ")));
    }
    for drift in naming.room_drift.iter().take(5) {
        add(
            "naming",
            format!("{}: one room spelled two ways (in {}).", drift.rooms.join(" / "), name_list(&drift.wings, 4)),
        );
    }
    if naming.room_drift.len() > 5 {
        let extra = naming.room_drift.len() - 5;
        add("naming", format!("{extra} more room spelling group{}; see --json.", if extra == 1 { "" } else { "s" }));
    }
    if !naming.wing_prefix_pairs.is_empty() {
        let pairs: Vec<String> = naming.wing_prefix_pairs.iter().map(|pair| pair.join(" / ")).collect();
        add("naming", format!("May be one project filed twice (not scored): {}.", name_list(&pairs, 5)));
    }
    for mixed in naming.mixed_wings.iter().take(4) {
        let top: Vec<String> = mixed.top.iter().take(3).map(|(p, n)| format!("{p} ({n})")).collect();
        add(
            "naming",
            format!(
                "{} mixes {} projects in {} drawers (largest: {}); run `mempalace wings split --wing {}`.",
                mixed.wing,
                mixed.projects,
                mixed.drawers,
                top.join(", "),
                mixed.wing
            ),
        );
    }
    if naming.mixed_wings.len() > 4 {
        add("naming", format!("{} more mixed wings; see --json.", naming.mixed_wings.len() - 4));
    }
    if naming.tiny_wings.len() >= 3 {
        let names: Vec<String> = naming.tiny_wings.iter().map(|t| t.wing.clone()).collect();
        add(
            "naming",
            format!("{} wings hold {TINY_WING_MAX} drawers or fewer: {}.", names.len(), name_list(&names, 6)),
        );
    }
    if tunnels.total > 0 && tunnels.artifact_share >= 0.1 {
        add(
            "tunnels",
            format!(
                "{} of {} tunnels are artifacts ({} dangling endpoints, {} duplicate spellings); \
                 list them with `mempalace graph tunnel list` and remove them with `mempalace graph tunnel delete ID`.",
                tunnels.artifacts, tunnels.total, tunnels.dangling_endpoints, tunnels.duplicates
            ),
        );
    } else if tunnels.total == 0 {
        add(
            "tunnels",
            "No explicit tunnels; link related wings with `mempalace graph tunnel create WING/ROOM WING/ROOM`.".into(),
        );
    }
    if hallways.total > 0 && hallways.top_artifact_share >= 0.1 {
        add(
            "hallways",
            format!(
                "{} of the {} strongest hallways ({:.0}%) are spelling artifacts: an entity paired with another \
                 spelling of itself or a pair linked again under other spellings; {} self-links and {} duplicates of \
                 {} overall; run `mempalace hallways --prune-spellings`.",
                hallways.top_artifacts,
                hallways.top_n,
                hallways.top_artifact_share * 100.0,
                hallways.self_links,
                hallways.duplicates,
                hallways.total
            ),
        );
    }
    if kg.triples > 0 {
        if kg.predicate_reuse < 0.5 {
            add(
                "knowledge graph",
                format!(
                    "{} predicates for {} open facts ({} used once); not queryable by relation.",
                    kg.distinct_predicates, kg.current_facts, kg.one_off_predicates
                ),
            );
        }
    } else {
        add("knowledge graph", "Knowledge graph is empty.".into());
    }
    out
}

/// Audits the palace described by `input`.
pub fn audit(input: &AuditInput) -> AuditReport {
    let rooms = analyze_rooms(&input.wing_rooms);
    let naming = analyze_naming(&input.wing_rooms, &input.project_mix);
    let wings: BTreeSet<String> = input.wing_rooms.keys().cloned().collect();
    let tunnels = analyze_tunnels(&input.tunnels, &wings);
    let kg = analyze_kg(&input.kg);
    let hallways = analyze_hallways(&input.hallways);
    let drift_groups = naming.wing_drift.len() + naming.room_drift.len() + naming.mixed_wings.len();
    let mut scores = Scores {
        overall: None,
        rooms: (rooms.total_drawers > 0).then(|| clamp(100.0 * (1.0 - rooms.generic_share))),
        naming: (rooms.wings > 0).then(|| clamp(100.0 - 10.0 * drift_groups as f64)),
        tunnels: (tunnels.total > 0).then(|| clamp(100.0 * (1.0 - tunnels.artifact_share))),
        hallways: (hallways.total > 0).then(|| clamp(100.0 * (1.0 - hallways.top_artifact_share))),
        knowledge_graph: (kg.triples > 0).then(|| clamp(100.0 * kg.predicate_reuse)),
    };
    let present: Vec<u8> = [scores.rooms, scores.naming, scores.tunnels, scores.hallways, scores.knowledge_graph]
        .into_iter()
        .flatten()
        .collect();
    scores.overall =
        (!present.is_empty()).then(|| clamp(present.iter().map(|s| f64::from(*s)).sum::<f64>() / present.len() as f64));
    let findings = findings(&rooms, &naming, &tunnels, &hallways, &kg);
    AuditReport { scores, rooms, naming, tunnels, hallways, knowledge_graph: kg, findings }
}

const LAYERS: &[(&str, &str)] = &[
    ("overall", ""),
    ("rooms", "drawers outside generic rooms"),
    ("naming", "wing/room spellings that do not collide"),
    ("tunnels", "explicit tunnels that are sound"),
    ("hallways", "strongest hallways that are not spelling artifacts"),
    ("knowledge graph", "predicate reuse across open facts"),
];

fn bar(score: Option<u8>) -> String {
    match score {
        None => " ".repeat(10),
        Some(score) => {
            let filled = (f64::from(score) / 10.0).round_ties_even() as usize;
            format!("{}{}", "#".repeat(filled), ".".repeat(10 - filled))
        }
    }
}

/// Greedy word wrap with a first-line and a hanging indent.
fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(line);
    lines.join("\n")
}

/// The terminal rendering (the Python layout), wrapped at `width` columns.
pub fn render(report: &AuditReport, palace: &str, width: usize) -> String {
    let width = width.max(40);
    let s = &report.scores;
    let mut lines = vec![String::new(), format!("MemPalace audit: {palace}"), String::new()];
    for (label, meaning) in LAYERS {
        let score = match *label {
            "overall" => s.overall,
            "rooms" => s.rooms,
            "naming" => s.naming,
            "tunnels" => s.tunnels,
            "hallways" => s.hallways,
            _ => s.knowledge_graph,
        };
        let number = score.map_or("n/a".to_string(), |score| format!("{score:>3}"));
        lines.push(format!("  {label:<16}{number:>4}  {}  {meaning}", bar(score)).trim_end().to_string());
    }
    lines.push(String::new());
    lines.push(format!(
        "  {} drawers, {} wings, {} rooms, {} tunnels, {} hallways, {} facts",
        report.rooms.total_drawers,
        report.rooms.wings,
        report.rooms.distinct_rooms,
        report.tunnels.total,
        report.hallways.total,
        report.knowledge_graph.triples
    ));
    lines.push(String::new());
    if report.findings.is_empty() {
        lines.push("  No findings. The palace is well organized.".into());
    }
    let mut current: Option<&str> = None;
    for finding in &report.findings {
        if current != Some(finding.layer.as_str()) {
            current = Some(&finding.layer);
            lines.push(format!("  {}", finding.layer.to_uppercase()));
        }
        lines.push(wrap(&finding.text, width, "    - ", "      "));
    }
    lines.push(String::new());
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rooms(pairs: &[(&str, &str, u64)]) -> BTreeMap<String, BTreeMap<String, u64>> {
        let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for (wing, room, n) in pairs {
            out.entry(wing.to_string()).or_default().insert(room.to_string(), *n);
        }
        out
    }

    #[test]
    fn drift_keys_join_spellings() {
        assert_eq!(drift_key("release-3.6.0"), drift_key("release_3_6_0"));
        assert_eq!(drift_key("concierge-automations"), drift_key("concierge-automation"));
        assert_ne!(drift_key("bus"), drift_key("bu"));
    }

    #[test]
    fn a_tidy_palace_scores_high_and_a_messy_one_low_with_findings() {
        let tidy = AuditInput {
            wing_rooms: rooms(&[("app", "auth", 40), ("app", "billing", 30), ("ops", "deploys", 30)]),
            kg: KgInput {
                entities: 3,
                triples: 6,
                open_predicates: [("uses".to_string(), 4), ("owns".to_string(), 2)].into(),
            },
            ..AuditInput::default()
        };
        let report = audit(&tidy);
        assert_eq!(report.scores.rooms, Some(100));
        assert_eq!(report.scores.naming, Some(100));
        assert_eq!(report.scores.tunnels, None, "no tunnels: not scored");
        assert_eq!(report.scores.knowledge_graph, Some(67));
        assert_eq!(report.scores.overall, Some(89));
        assert!(report.findings.iter().all(|f| f.layer == "tunnels"), "{:?}", report.findings);

        let messy = AuditInput {
            wing_rooms: rooms(&[
                ("acme-app", "technical", 150),
                ("acme_app", "general", 10),
                ("acme_app", "release-3.6", 1),
                ("acme_app", "release_3_6", 1),
                ("x", "technical", 1),
                ("y", "general", 1),
            ]),
            tunnels: vec![
                TunnelEnds { a: ("acme_app".into(), "general".into()), b: ("gone".into(), "room".into()) },
                TunnelEnds { a: ("acme-app".into(), "technical".into()), b: ("x".into(), "technical".into()) },
                TunnelEnds { a: ("acme_app".into(), "Technical".into()), b: ("x".into(), "technical".into()) },
            ],
            kg: KgInput { entities: 2, triples: 3, open_predicates: [("a".into(), 1), ("b".into(), 1)].into() },
            ..AuditInput::default()
        };
        let report = audit(&messy);
        assert_eq!(report.rooms.generic_drawers, 162);
        assert_eq!(report.scores.rooms, Some(1));
        assert_eq!(report.naming.wing_drift, vec![vec!["acme-app".to_string(), "acme_app".to_string()]]);
        assert_eq!(report.naming.room_drift.len(), 1);
        assert_eq!(report.scores.naming, Some(80));
        assert_eq!((report.tunnels.dangling_endpoints, report.tunnels.duplicates), (1, 1));
        assert_eq!(report.scores.tunnels, Some(33));
        assert_eq!(report.scores.knowledge_graph, Some(0));
        assert_eq!(report.rooms.flat_wings.len(), 1);
        let layers: BTreeSet<&str> = report.findings.iter().map(|f| f.layer.as_str()).collect();
        assert_eq!(layers, BTreeSet::from(["rooms", "naming", "tunnels", "knowledge graph"]));
        let text = render(&report, "/p", 60);
        assert!(text.contains("  hallways         n/a"), "{text}");
        let findings = text.lines().filter(|l| l.starts_with("    - ") || l.starts_with("      "));
        assert!(findings.clone().count() > 4, "{text}");
        assert!(findings.into_iter().all(|l| l.chars().count() <= 60), "findings wrap at the width: {text}");
    }

    #[test]
    fn hallway_artifacts_are_self_links_and_duplicates() {
        assert!(same_entity_spelling("src/main.zig", "main.zig"));
        assert!(same_entity_spelling("Postgres", "postgres"));
        assert!(same_entity_spelling("Crawbl Backend", "crawbl-backend"));
        assert!(!same_entity_spelling("parser.c", "parser.h"), "two files");
        assert!(!same_entity_spelling("Alice", "Alicia"));
        let hallway = |id: &str, wing: &str, a: &str, b: &str, count: u64| HallwayInput {
            id: id.into(),
            wing: wing.into(),
            entity_a: a.into(),
            entity_b: b.into(),
            count,
        };
        let hallways = vec![
            hallway("h1", "app", "ChatStore", "RootView", 9),
            hallway("h2", "app", "chatstore", "RootView", 4),
            hallway("h3", "app", "ChatStore.swift", "RootView.swift", 2),
            hallway("h4", "app", "src/main.zig", "main.zig", 7),
            hallway("h5", "app", "parser.c", "parser.h", 3),
            hallway("h6", "web", "chatstore", "RootView", 3),
        ];
        let (self_links, duplicates) = hallway_artifacts(&hallways);
        assert_eq!(self_links, BTreeSet::from([3]));
        assert_eq!(duplicates, BTreeSet::from([1, 2]), "the strongest of a group stays; another wing is its own");
        let report = audit(&AuditInput { hallways, ..AuditInput::default() });
        assert_eq!((report.hallways.total, report.hallways.top_artifacts), (6, 3));
        assert_eq!(report.scores.hallways, Some(50));
        assert!(report.findings.iter().any(|f| f.layer == "hallways" && f.text.contains("--prune-spellings")));
        assert_eq!(report.hallways.artifact_sample[0], "src/main.zig ↔ main.zig", "strongest first");
    }

    #[test]
    fn an_empty_palace_has_no_scores() {
        let report = audit(&AuditInput::default());
        assert_eq!(report.scores.overall, None);
        assert!(render(&report, "/p", 80).contains("overall          n/a"));
    }

    #[test]
    fn mixed_wings_need_five_projects_and_five_hundred_drawers() {
        let mut input = AuditInput { wing_rooms: rooms(&[("claude", "technical", 600)]), ..AuditInput::default() };
        let projects: BTreeMap<String, u64> = (0..5).map(|i| (format!("p{i}"), 100)).collect();
        input.project_mix.insert("claude".into(), ProjectMix { projects, drawers: 600 });
        let report = audit(&input);
        assert_eq!(report.naming.mixed_wings[0].projects, 5);
        assert!(report.findings.iter().any(|f| f.text.contains("wings split --wing claude")));
    }
}
