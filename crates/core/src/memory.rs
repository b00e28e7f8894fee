//! Extracted memories (seed 4, Platypus): what a conversation teaches about
//! its user, as decisions against the memories the palace already holds —
//! ADD a new memory, UPDATE one whose information changed, DELETE one the
//! user retracted, or nothing.
//!
//! Each memory has an entity type, a short entity name, an observation (one
//! sentence) and a scope: **user** (personal; filed owned by the user) or
//! **workspace** (shared by everyone in the workspace). The model path asks
//! a language model ([`crate::prompts::extract_request`]); this module's
//! [`extract_by_rules`] makes the same decisions without one,
//! conservatively: only first-person statements of the user (or an
//! assistant's restatement the user confirmed), never questions,
//! hypotheticals or passing moods, and an existing memory is updated only
//! when the new statement fills the same slot (home city, editor, employer,
//! deadline…) with something else.

use std::sync::OnceLock;

use regex::Regex;

use crate::dedup;
use crate::layers::is_stopword;

vocabulary! {
    /// What a memory is about (seed 4's entity types).
    EntityType, "memory entity type" {
        /// A liking or a way the user wants things done.
        Preference => "preference",
        /// A fact about the user or the project.
        Fact => "fact",
        /// Something the user or the team is working towards.
        Goal => "goal",
        /// A rule that must hold (allergy, budget, platform, policy).
        Constraint => "constraint",
        /// How answers should be written.
        Style => "style",
        /// Someone in the user's life or team.
        Person => "person",
    }
}

vocabulary! {
    /// Who a memory belongs to.
    MemoryScope, "memory scope" {
        /// The user's own, in every workspace, seen only by them.
        User => "user",
        /// Shared by the workspace (this project, this team).
        Workspace => "workspace",
    }
}

/// Who speaks a turn of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    /// The person the memories are about.
    User,
    /// The agent (or anyone else).
    Assistant,
}

impl Speaker {
    /// How a speaker is named in a prompt.
    pub fn as_str(self) -> &'static str {
        match self {
            Speaker::User => "user",
            Speaker::Assistant => "assistant",
        }
    }
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Who spoke.
    pub speaker: Speaker,
    /// What was said.
    pub text: String,
}

/// A memory the palace holds, as extraction sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingMemory {
    /// Its drawer id.
    pub id: String,
    /// Type.
    pub entity_type: EntityType,
    /// Short label.
    pub entity_name: String,
    /// The sentence.
    pub observation: String,
    /// Scope.
    pub scope: MemoryScope,
}

/// A memory to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMemory {
    /// Type.
    pub entity_type: EntityType,
    /// Short label (`editor`, `home city`, `sister`).
    pub entity_name: String,
    /// One sentence.
    pub observation: String,
    /// Scope.
    pub scope: MemoryScope,
}

/// One extraction decision (NONE is the absence of decisions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// A new memory.
    Add(NewMemory),
    /// An existing memory whose information changed.
    Update {
        /// The existing memory's id.
        id: String,
        /// The corrected observation.
        observation: String,
    },
    /// An existing memory the user retracted.
    Delete {
        /// The existing memory's id.
        id: String,
        /// Why.
        reason: String,
    },
}

impl Decision {
    /// `add`, `update` or `delete`.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Add(_) => "add",
            Decision::Update { .. } => "update",
            Decision::Delete { .. } => "delete",
        }
    }
}

/// Reads the turns of a conversation drawer (`user: …` / `assistant: …`
/// lines as the miners file them; a `>` line is the user's, as in
/// MemPalace's exchange files). Lines without a speaker continue the turn
/// before; `user_names` lists other speaker names that mean the user.
pub fn turns_from_text(text: &str, user_names: &[&str]) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        let started = if let Some(rest) = trimmed.strip_prefix('>') {
            Some((Speaker::User, rest.trim()))
        } else {
            trimmed.split_once(':').and_then(|(who, rest)| {
                let who = who.trim();
                if who.is_empty() || who.len() > 40 || who.split_whitespace().count() > 3 {
                    return None;
                }
                let lowered = who.to_lowercase();
                let speaker = if ["user", "human", "me"].contains(&lowered.as_str())
                    || user_names.iter().any(|name| name.eq_ignore_ascii_case(who))
                {
                    Speaker::User
                } else if ["assistant", "ai", "agent", "claude", "chatgpt", "gpt", "gemini", "bot", "model", "codex"]
                    .contains(&lowered.as_str())
                {
                    Speaker::Assistant
                } else {
                    return None;
                };
                Some((speaker, rest.trim()))
            })
        };
        match (started, turns.last_mut()) {
            (Some((speaker, rest)), _) => turns.push(Turn { speaker, text: rest.to_string() }),
            (None, Some(last)) => {
                last.text.push('\n');
                last.text.push_str(trimmed);
            }
            (None, None) => {}
        }
    }
    turns.retain(|turn| !turn.text.trim().is_empty());
    turns
}

/// Slots a statement can fill: a new statement in the slot of an existing
/// memory updates it. Each slot lists cues (lowercase, matched as words or
/// phrases).
const SLOTS: &[(&str, &[&str])] = &[
    ("name", &["my name", "call me", "i'm called", "i go by"]),
    (
        "deadline",
        &[
            "deadline",
            "launch",
            "release date",
            "due",
            "ship date",
            "go-live",
            "go live",
            "demo day",
            "launches",
            "ships",
        ],
    ),
    (
        "home city",
        &[
            "live in",
            "lives in",
            "lived in",
            "living in",
            "based in",
            "moved to",
            "relocated",
            "relocating",
            "moving to",
            "hometown",
            "home town",
        ],
    ),
    (
        "employer",
        &[
            "work at",
            "work for",
            "working at",
            "working for",
            "joined",
            "employer",
            "my company",
            "job at",
            "started at",
            "left",
        ],
    ),
    ("role", &["work as", "my role", "my job", "my title", "position", "i'm a senior", "promoted", "team", "teams"]),
    ("diet", &["vegetarian", "vegan", "pescatarian", "eat meat", "eat fish", "diet", "keto"]),
    ("allergy", &["allergic", "allergy", "intolerant", "intolerance"]),
    (
        "editor",
        &[
            "vim", "neovim", "emacs", "vs code", "vscode", "helix", "editor", "ide", "intellij", "pycharm", "sublime",
            "zed", "cursor",
        ],
    ),
    ("package manager", &["npm", "pnpm", "yarn", "bun", "package manager", "poetry", "uv", "pip"]),
    ("indentation", &["tabs", "spaces", "indent", "indentation"]),
    (
        "framework",
        &[
            "framework",
            "react",
            "vue",
            "svelte",
            "angular",
            "django",
            "rails",
            "flask",
            "fastapi",
            "next.js",
            "nextjs",
            "remix",
            "express",
            "spring",
        ],
    ),
    ("database", &["postgres", "postgresql", "mysql", "sqlite", "mongodb", "mongo", "dynamodb", "database", "redis"]),
    ("timezone", &["timezone", "time zone", "utc", "pst", "est", "cet"]),
    ("drink", &["coffee", "tea", "espresso", "latte"]),
    ("operating system", &["linux", "macos", "windows", "ubuntu", "arch", "fedora"]),
    ("language", &["typescript", "javascript", "python", "rust", "golang", "kotlin", "java", "swift", "ruby"]),
    ("cloud", &["aws", "gcp", "azure", "vercel", "fly.io", "heroku", "netlify", "cloudflare"]),
    ("test framework", &["jest", "vitest", "pytest", "mocha", "cypress", "playwright"]),
    (
        "answer style",
        &["answers", "responses", "replies", "explanations", "concise", "verbose", "bullet points", "emoji", "tone"],
    ),
    ("pet", &["my dog", "my cat", "a dog", "a cat", "puppy", "kitten"]),
    (
        "partner",
        &[
            "my wife",
            "my husband",
            "my partner",
            "my girlfriend",
            "my boyfriend",
            "my fiancé",
            "my fiance",
            "my fiancée",
        ],
    ),
    ("manager", &["my manager", "my boss", "tech lead", "team lead"]),
];

struct Rules {
    question_or_hypothetical: Regex,
    transient: Regex,
    retraction: Regex,
    change: Regex,
    replacement: Regex,
    first_person: Regex,
    workspace: Regex,
    person: Regex,
    named_person: Regex,
    own_name: Regex,
    style: Regex,
    instruction: Regex,
    constraint: Regex,
    goal: Regex,
    preference: Regex,
    fact: Regex,
    confirmation: Regex,
    anaphor: Regex,
    negated: Regex,
}

/// A first-person subject with an optional adverb: `i`, `we're actually`.
const SUBJECT: &str = r"\b(?:i|we)(?:'m|'ve|'re| am| are| have)?(?: (?:actually|just|now|also|still|finally|already|really|mostly|only|basically|recently|officially|\w+ly))?";

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| {
        let re = |pattern: &str| Regex::new(&format!("(?i){}", pattern.replace("SUBJ", SUBJECT))).expect("memory rule patterns are valid");
        let cased = |pattern: &str| Regex::new(pattern).expect("memory rule patterns are valid");
        Rules {
            question_or_hypothetical: re(
                r"^(what|how|why|when|where|which|who|can|could|would|should|do|does|did|is|are|will|shall)\b|\b(what if|if i|if we|suppose|imagine|maybe|might|thinking about|considering|wondering|not sure|hypothetically|let's say|in theory|just curious|don't save|do not save|don't remember|just for this|only for this|this one time)\b",
            ),
            transient: re(
                r"\b(today|tonight|right now|at the moment|this morning|this afternoon|this evening|currently feeling|i'm (so )?(tired|hungry|sleepy|bored|exhausted|stressed|sick|wiped)|i feel|slept)\b",
            ),
            retraction: re(
                r"SUBJ (?:\w+ ){0,4}?(no longer|not \w+ anymore|not \w+ \w+ anymore|not doing it anymore|anymore|any more|stopped|quit|gave up|dropped|got rid of|removed|ditched|ripped out)\b|\b(forget (that|what|about|my)|scratch that|ignore what i said|off whatever you know|off what you know|isn't true|not true anymore|no longer true|plan's dead|plan is dead|is dead)\b",
            ),
            change: re(
                r"\b(switched|switching|moved|changed|migrated|migrating|relocated|actually|instead|from now on|these days|pushed (back )?to|postponed|rescheduled|moved up|new deadline|replaced|bumped|raised|lowered|left|started at|now)\b",
            ),
            replacement: re(r"\b(now|instead|switched|replaced|these days)\b"),
            first_person: re(r"\b(i|i'm|i am|i've|i'd|i'll|my|me|mine|we|we're|we've|our|us)\b"),
            workspace: re(
                r"\b((this|the|our)( \w+)? (repo|repository|project|codebase|code base|app|service|team|sprint|api|backend|frontend|stack|ci|pipeline|monorepo|release|launch|deadline|client|product|company|org|organization|startup|roadmap|design system|style guide|beta|freeze)|we|we're|we've|our|in here|here we|prod|production|staging|code freeze|sprint)\b",
            ),
            person: re(
                r"\b(my|our) (wife|husband|partner|girlfriend|boyfriend|fianc[ée]e?|manager|boss|sister|brother|mom|mum|mother|dad|father|son|daughter|kids?|children|colleague|coworker|co-worker|co-founder|cofounder|friend|mentor|designer|pm|product manager|cto|ceo|client)\b",
            ),
            named_person: cased(
                r"\b[A-Z][a-z]+ (?:on|from|in) (?:the|our) [a-z]+ team\b|\b[A-Z][a-z]+ (?:owns|runs|leads|manages|reviews|approves) (?:the|our|all|every)\b|\b[A-Z][a-z]+ is (?:my|our|the) (?:\w+ )?(?:lead|manager|boss|designer|owner|reviewer|pm|cto|ceo)\b",
            ),
            own_name: cased(r"(?:^|\b)(?:I'm|I am|my name is|My name is|call me|Call me) [A-Z][a-z]+(?:\s*[,.!]|$)"),
            style: re(
                r"\b(answers?|responses?|replies|explanations?|explain|comments?|commit messages?|tone|format(ting)?|bullet points?|concise|verbose|brief|short version|detailed|emojis?|british spelling|american spelling|formal|casual|code examples?|jargon|walls? of text|under \w+ lines)\b",
            ),
            instruction: re(r"^(please |in general|always |never |whenever you|when you)|\b(when you|whenever you) \w+"),
            constraint: re(
                r"\b(allergic|allergy|intolerant|can't eat|cannot eat|don't eat|do not eat|must|has to|need to support|not allowed|can't use|cannot use|mustn't|must not|never (use|deploy|push|merge|commit)|no more than|at most|budget|only (works|runs|available|allowed)|requires?|compliance|hipaa|gdpr|stuck on|stuck with|pinned to|locked to|limited to)\b",
            ),
            goal: re(
                r"\b(my goal|our goal|the goal|SUBJ (learning|training|saving|studying|preparing)|i want to (learn|become|get|run|build|move|finish|switch|start)|i plan to|i'm planning to|we plan to|we're planning to|i hope to|aiming (to|for)|we want to (ship|launch|reach|hit|get)|trying to (learn|get|become)|working towards|taking \w+ lessons|started \w+ lessons)\b",
            ),
            preference: re(
                r"SUBJ (prefer|like|love|enjoy|hate|dislike|avoid|favor|favour|use|go with|stick with)\b|\bcan't stand\b|\bmy favou?rite\b|\bi'm a (big )?fan of\b|\bi'd rather\b|SUBJ (always|never|usually|don't|do not) (use|write|put|want|like|touch)\b|\bplease (always|never|don't|do not|keep|use|avoid)\b|\b(our|the) convention\b|\bis what (i|we) (want|prefer|like|use)\b|\bfor every(thing| \w+ \w+ i do)\b|SUBJ (read|listen to|watch|do|write|code) (everything|all|most)\b",
            ),
            fact: re(
                r"\b(my name is|call me|i'm called|i go by|SUBJ (live|living|based|work|working|moved|switched|joined|left|started|own|drive|speak|grew up|was born|use|using|deploy|host|run|build|write|adopted|got) |i'm (a|an|the) [a-z]+|i am (a|an|the) [a-z]+|i have (a|an|two|three|four|\d+) |i was born|my birthday|i'm from|i am from|my (email|phone|address|timezone|time zone)|i'm (vegetarian|vegan|pescatarian)|SUBJ on (the )?[a-z0-9]+|(our|the) (stack|backend|frontend|database|api|app|repo|ci|deploy\w*|server|infra\w*|team|project|service) (is|uses|use|runs|lives)|(launch|deadline|release|demo|due date|go-live|code freeze|freeze|cutoff)( date)?( for [\w.]+)? is|is due|(launch|ship|release)(es|s)? on|(prod|production|staging)( and \w+)?( both)? (runs?|is|are|deploys?) on|named [a-z]+|birthday is)\b",
            ),
            confirmation: re(r"^(yes|yep|yeah|yup|exactly|correct|right|that's right|that is right|indeed|true|sure)\b"),
            anaphor: re(r"\b(them|they|those|these)\b"),
            negated: re(r"\b(not|no|never|n't|instead of|rather than|from)\s+(on\s+|using\s+|use\s+)?$"),
        }
    })
}

/// The slot a text speaks about, by the first cue found in order of
/// [`SLOTS`].
pub fn slot_of(text: &str) -> Option<&'static str> {
    let lowered = format!(" {} ", text.to_lowercase());
    SLOTS.iter().find(|(_, cues)| cues.iter().any(|cue| contains_phrase(&lowered, cue))).map(|(slot, _)| *slot)
}

fn contains_phrase(padded_lowered: &str, phrase: &str) -> bool {
    phrase_starts(padded_lowered, phrase).next().is_some()
}

/// Where `phrase` stands as whole words in `lowered`.
fn phrase_starts<'a>(lowered: &'a str, phrase: &'a str) -> impl Iterator<Item = usize> + 'a {
    lowered.match_indices(phrase).map(|(at, _)| at).filter(move |&at| {
        let before = lowered[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = lowered[at + phrase.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        before && after
    })
}

/// The sentences of a turn.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (at, &c) in chars.iter().enumerate() {
        if c == '\n' {
            push_sentence(&mut out, &mut current);
            continue;
        }
        current.push(c);
        let next = chars.get(at + 1).copied();
        let ends = matches!(c, '.' | '!' | '?' | ';') && next.is_none_or(char::is_whitespace);
        if ends {
            push_sentence(&mut out, &mut current);
        }
    }
    push_sentence(&mut out, &mut current);
    out
}

fn push_sentence(out: &mut Vec<String>, current: &mut String) {
    for clause in clauses(current) {
        let clause = clause.trim().trim_start_matches(['-', '*', '•']).trim();
        if clause.chars().filter(|c| c.is_alphanumeric()).count() >= 3 {
            out.push(clause.to_string());
        }
    }
    current.clear();
}

/// A sentence cut where a dash sets off a new statement, or where a comma
/// or an "and" starts a new first-person one ("I'm Dario, I live in Turin
/// and I work as…").
fn clauses(sentence: &str) -> Vec<String> {
    static CUT: OnceLock<Regex> = OnceLock::new();
    let cut = CUT.get_or_init(|| Regex::new(r"\s+[—–]\s+|\s-\s|,\s+(?:and\s+|so\s+)?|\s+and\s+").expect("valid"));
    let mut out = Vec::new();
    let mut start = 0;
    for found in cut.find_iter(sentence) {
        let rest = sentence[found.end()..].to_lowercase();
        let dash = found.as_str().contains(['—', '–', '-']);
        let new_subject = ["i ", "i'm ", "i've ", "i'd ", "we ", "we're ", "we've ", "my ", "our "]
            .iter()
            .any(|p| rest.starts_with(p));
        if dash || new_subject {
            out.push(sentence[start..found.start()].to_string());
            start = found.end();
        }
    }
    out.push(sentence[start..].to_string());
    out
}

/// Content words of a text (lowercase, no stop words, at least 3 letters),
/// cut to their first six letters so plural and verb forms meet.
fn stems(text: &str) -> Vec<String> {
    content_words(text).into_iter().map(|w| w.chars().take(6).collect()).collect()
}

/// Content words in full, lowercase (for stems and entity names).
fn content_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '.' && c != '-')
        .map(|w| w.trim_matches(['.', '-']).to_lowercase())
        .filter(|w| w.chars().count() >= 3 && !is_stopword(w) && !GENERIC.contains(&w.as_str()))
        .collect()
}

/// Words too common in statements about oneself to link two of them.
const GENERIC: &[&str] = &[
    "use", "uses", "using", "used", "prefer", "prefers", "like", "likes", "really", "always", "never", "now",
    "anymore", "longer", "user", "want", "wants", "also", "just", "still", "actually", "instead", "switched", "moved",
    "changed", "work", "working", "works", "lot", "thing", "things", "think", "know", "got", "get", "going", "make",
    "made",
];

/// The first-person statements worth remembering in one user sentence, as
/// (type, scope, slot-or-name).
fn classify_statement(sentence: &str) -> Option<(EntityType, MemoryScope, String)> {
    let r = rules();
    if !r.first_person.is_match(sentence)
        && !r.named_person.is_match(sentence)
        && !r.fact.is_match(sentence)
        && !r.instruction.is_match(sentence)
    {
        return None;
    }
    let scope = if r.workspace.is_match(sentence) { MemoryScope::Workspace } else { MemoryScope::User };
    let entity_type = if r.own_name.is_match(sentence) {
        EntityType::Fact
    } else if r.person.is_match(sentence) || r.named_person.is_match(sentence) {
        EntityType::Person
    } else if r.goal.is_match(sentence) {
        EntityType::Goal
    } else if r.style.is_match(sentence) && (r.preference.is_match(sentence) || r.instruction.is_match(sentence)) {
        EntityType::Style
    } else if r.constraint.is_match(sentence) {
        EntityType::Constraint
    } else if r.fact.is_match(sentence) {
        EntityType::Fact
    } else if r.preference.is_match(sentence) {
        EntityType::Preference
    } else {
        return None;
    };
    let name = if r.own_name.is_match(sentence) {
        "name".to_string()
    } else {
        slot_of(sentence).map(str::to_string).unwrap_or_else(|| {
            let words: Vec<String> = content_words(sentence).into_iter().take(2).collect();
            if words.is_empty() { entity_type.as_str().to_string() } else { words.join(" ") }
        })
    };
    Some((entity_type, scope, name))
}

/// The cues of `slot` a text names, except those it negates ("not npm",
/// "from Vim").
fn slot_values(text: &str, slot: &str, skip_negated: bool) -> Vec<&'static str> {
    let lowered = format!(" {} ", text.to_lowercase());
    let Some((_, cues)) = SLOTS.iter().find(|(name, _)| *name == slot) else {
        return Vec::new();
    };
    cues.iter()
        .copied()
        .filter(|cue| {
            phrase_starts(&lowered, cue).any(|at| !(skip_negated && rules().negated.is_match(&lowered[..at])))
        })
        .collect()
}

/// Whether `sentence` restates `memory`: the same slot values (none
/// new), or the same words.
fn restates_memory(sentence: &str, memory: &ExistingMemory) -> bool {
    if let (Some(slot), Some(theirs)) = (slot_of(sentence), memory_slot(memory))
        && slot == theirs
    {
        let new_values = slot_values(sentence, slot, true);
        let old_values = slot_values(&format!("{} {}", memory.entity_name, memory.observation), slot, false);
        let value_cues = !new_values.is_empty() && new_values.iter().any(|v| !is_slot_noun(v));
        if value_cues {
            return new_values.iter().all(|v| old_values.contains(v) || is_slot_noun(v));
        }
        return dedup::distinguishing_tokens(sentence, &memory.observation).is_empty();
    }
    restates(sentence, &memory.observation)
}

/// Cues that name a slot rather than fill it (`editor`, `deadline`).
fn is_slot_noun(cue: &str) -> bool {
    matches!(
        cue,
        "editor"
            | "ide"
            | "package manager"
            | "framework"
            | "database"
            | "deadline"
            | "launch"
            | "release date"
            | "due"
            | "ship date"
            | "go-live"
            | "go live"
            | "demo day"
            | "launches"
            | "ships"
            | "timezone"
            | "time zone"
            | "diet"
            | "allergy"
            | "indent"
            | "indentation"
            | "answers"
            | "responses"
            | "replies"
            | "explanations"
            | "tone"
    )
}

/// The slot of a memory: its entity name when that names a slot, else
/// the slot its words speak of.
fn memory_slot(memory: &ExistingMemory) -> Option<&'static str> {
    let name = memory.entity_name.trim().to_lowercase();
    SLOTS
        .iter()
        .find(|(slot, _)| *slot == name)
        .map(|(slot, _)| *slot)
        .or_else(|| slot_of(&format!("{} {}", memory.entity_name, memory.observation)))
}

/// Whether a sentence is a question, a hypothetical or a passing state.
fn not_lasting(sentence: &str) -> bool {
    let r = rules();
    sentence.trim_end().ends_with('?')
        || r.question_or_hypothetical.is_match(sentence)
        || r.transient.is_match(sentence)
}

/// The existing memory a retraction or change speaks of: the one sharing
/// the sentence's slot, else the one sharing most content words (at
/// least one).
fn target<'a>(sentence: &str, existing: &'a [ExistingMemory], taken: &[String]) -> Option<&'a ExistingMemory> {
    let open = existing.iter().filter(|m| !taken.contains(&m.id));
    if let Some(slot) = slot_of(sentence)
        && let Some(found) = open.clone().find(|m| memory_slot(m) == Some(slot))
    {
        return Some(found);
    }
    let words = stems(sentence);
    open.map(|m| {
        let theirs = stems(&format!("{} {}", m.entity_name, m.observation));
        (words.iter().filter(|w| theirs.contains(w)).count(), m)
    })
    .filter(|(shared, _)| *shared >= 1)
    .fold(None, |best: Option<(usize, &ExistingMemory)>, (shared, m)| match best {
        Some((most, _)) if most >= shared => best,
        _ => Some((shared, m)),
    })
    .map(|(_, m)| m)
}

/// The memory an assistant's restatement holds when the user confirms it
/// ("So you prefer tabs?" — "Yes."): the assistant's words turned back into
/// the user's first person.
fn confirmed_restatement(assistant: &str) -> Option<String> {
    let sentence = sentences(assistant).into_iter().rev().find(|s| {
        let lowered = s.to_lowercase();
        lowered.contains("you ") || lowered.contains("you're") || lowered.contains("your ")
    })?;
    let mut out = Vec::new();
    for word in sentence.trim_end_matches(['?', '.', '!']).split(' ') {
        let mapped = match word.to_lowercase().as_str() {
            "you" => "I".to_string(),
            "you're" => "I'm".to_string(),
            "your" => "my".to_string(),
            "yours" => "mine".to_string(),
            "so" | "so," if out.is_empty() => continue,
            _ => word.to_string(),
        };
        out.push(mapped);
    }
    let text = out.join(" ");
    Some(format!("{}.", text.trim_start_matches("and ").trim()))
}

/// Extraction without a model: the decisions a conversation supports
/// against `existing` (see the module doc).
pub fn extract_by_rules(conversation: &[Turn], existing: &[ExistingMemory]) -> Vec<Decision> {
    let r = rules();
    let mut decisions: Vec<Decision> = Vec::new();
    let mut taken: Vec<String> = Vec::new();
    for (at, turn) in conversation.iter().enumerate() {
        if turn.speaker != Speaker::User {
            continue;
        }
        let mut statements = sentences(&turn.text);
        if statements.first().is_some_and(|first| r.confirmation.is_match(first))
            && let Some(previous) =
                at.checked_sub(1).map(|i| &conversation[i]).filter(|t| t.speaker == Speaker::Assistant)
        {
            statements.extend(confirmed_restatement(&previous.text));
        }
        let mut index = 0;
        while index < statements.len() {
            let sentence = statements[index].clone();
            index += 1;
            if not_lasting(&sentence) {
                continue;
            }
            let changes = r.change.is_match(&sentence);
            if r.retraction.is_match(&sentence) {
                let replaced = changes && r.replacement.is_match(&sentence);
                if let Some(memory) = target(&sentence, existing, &taken) {
                    taken.push(memory.id.clone());
                    let next = statements.get(index).filter(|next| r.replacement.is_match(next)).cloned();
                    decisions.push(match (replaced, next) {
                        (true, _) => Decision::Update { id: memory.id.clone(), observation: sentence },
                        (false, Some(next)) => {
                            index += 1;
                            Decision::Update { id: memory.id.clone(), observation: format!("{sentence} {next}") }
                        }
                        (false, None) => Decision::Delete { id: memory.id.clone(), reason: sentence },
                    });
                }
                continue;
            }
            if existing.iter().any(|m| restates_memory(&sentence, m)) {
                continue;
            }
            let classified = classify_statement(&sentence);
            let slot = slot_of(&sentence);
            let same_slot = slot.and_then(|slot| {
                existing.iter().filter(|m| !taken.contains(&m.id)).find(|m| {
                    memory_slot(m) == Some(slot) && classified.as_ref().is_none_or(|(_, scope, _)| m.scope == *scope)
                })
            });
            let updated = match same_slot {
                Some(memory) if changes || classified.is_some() => Some(memory),
                Some(_) => None,
                None if changes => target(&sentence, existing, &taken)
                    .filter(|m| classified.as_ref().is_none_or(|(_, scope, _)| m.scope == *scope)),
                None => None,
            };
            if let Some(memory) = updated {
                taken.push(memory.id.clone());
                // "I changed teams. I'm on the platform team now": the next
                // statement says what it changed to.
                let mut observation = sentence;
                if let Some(next) = statements.get(index).filter(|next| r.replacement.is_match(next)) {
                    observation = format!("{observation} {next}");
                    index += 1;
                }
                decisions.push(Decision::Update { id: memory.id.clone(), observation });
                continue;
            }
            let Some((entity_type, scope, name)) = classified else {
                continue;
            };
            if r.anaphor.is_match(&sentence.to_lowercase().replace("these days", "")) {
                continue;
            }
            // Two statements of one turn about one slot make one memory.
            let merged = decisions.iter_mut().rev().find_map(|d| match d {
                Decision::Add(m) if m.entity_name == name && m.scope == scope && slot.is_some() => Some(m),
                _ => None,
            });
            match merged {
                Some(memory) => {
                    memory.observation = format!("{} {}", memory.observation, sentence);
                }
                None => decisions.push(Decision::Add(NewMemory {
                    entity_type,
                    entity_name: name,
                    observation: sentence,
                    scope,
                })),
            }
        }
    }
    decisions
}

/// Whether `newer` contradicts `older` without a model, conservatively:
/// both speak of one slot (home city, editor, deadline…) and `newer` fills
/// it with something `older` does not hold — another value ("we deploy to
/// GCP now" after "we deploy to AWS"), or, for slots named by a noun
/// ("the beta launch is April 24" after "…April 10"), other numbers or
/// names in an otherwise similar sentence. Returns the slot.
pub fn contradicts(older: &str, newer: &str) -> Option<&'static str> {
    let slot = slot_of(newer)?;
    if slot_of(older) != Some(slot) {
        return None;
    }
    let new_values: Vec<&str> = slot_values(newer, slot, true).into_iter().filter(|v| !is_slot_noun(v)).collect();
    let old_values: Vec<&str> = slot_values(older, slot, false).into_iter().filter(|v| !is_slot_noun(v)).collect();
    if !new_values.is_empty() && !old_values.is_empty() {
        return new_values.iter().all(|v| !old_values.contains(v)).then_some(slot);
    }
    let (mine, theirs) = (stems(newer), stems(older));
    let shared = mine.iter().filter(|w| theirs.contains(w)).count();
    let similar = !mine.is_empty() && shared * 2 >= mine.len().min(theirs.len());
    let differs = !dedup::distinguishing_tokens(newer, older).is_empty()
        && !dedup::distinguishing_tokens(older, newer).is_empty();
    (similar && differs).then_some(slot)
}

/// Whether `new` says nothing `old` does not: same words, or no
/// distinguishing token and most content words shared.
fn restates(new: &str, old: &str) -> bool {
    if dedup::same_text(new, old) {
        return true;
    }
    let (mine, theirs) = (stems(new), stems(old));
    if mine.is_empty() {
        return false;
    }
    let shared = mine.iter().filter(|w| theirs.contains(w)).count();
    shared * 3 >= mine.len() * 2 && dedup::judge(new, old).is_duplicate()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Turn {
        Turn { speaker: Speaker::User, text: text.into() }
    }

    fn assistant(text: &str) -> Turn {
        Turn { speaker: Speaker::Assistant, text: text.into() }
    }

    fn memory(id: &str, entity_name: &str, observation: &str, scope: MemoryScope) -> ExistingMemory {
        ExistingMemory {
            id: id.into(),
            entity_type: EntityType::Fact,
            entity_name: entity_name.into(),
            observation: observation.into(),
            scope,
        }
    }

    #[test]
    fn first_person_statements_become_memories_with_their_scope() {
        let decisions = extract_by_rules(
            &[
                user("Hi! I always use pnpm for my own projects. In this repo we use Vitest for tests."),
                assistant("Got it."),
                user("What if we tried Jest? I'm so tired today."),
            ],
            &[],
        );
        let adds: Vec<&NewMemory> =
            decisions.iter().filter_map(|d| if let Decision::Add(m) = d { Some(m) } else { None }).collect();
        assert_eq!(adds.len(), 2, "{decisions:?}");
        assert_eq!((adds[0].scope, adds[0].entity_name.as_str()), (MemoryScope::User, "package manager"));
        assert_eq!((adds[1].scope, adds[1].entity_name.as_str()), (MemoryScope::Workspace, "test framework"));
    }

    #[test]
    fn a_changed_slot_updates_and_a_retraction_deletes() {
        let existing = vec![
            memory("m1", "home city", "Lives in Paris.", MemoryScope::User),
            memory("m2", "diet", "Is vegetarian.", MemoryScope::User),
            memory("m3", "editor", "Prefers Vim.", MemoryScope::User),
        ];
        let decisions = extract_by_rules(
            &[
                user("Big news: I moved to Berlin last month."),
                user("Also, I'm no longer vegetarian."),
                user("I prefer Vim."),
            ],
            &existing,
        );
        assert_eq!(
            decisions,
            vec![
                Decision::Update { id: "m1".into(), observation: "Big news: I moved to Berlin last month.".into() },
                Decision::Delete { id: "m2".into(), reason: "I'm no longer vegetarian.".into() },
            ],
            "the restated editor preference is NONE"
        );
    }

    #[test]
    fn a_confirmed_restatement_is_remembered() {
        let decisions = extract_by_rules(&[assistant("So you prefer tabs over spaces?"), user("Yes, exactly.")], &[]);
        assert!(
            matches!(&decisions[..], [Decision::Add(m)] if m.observation == "I prefer tabs over spaces." && m.entity_name == "indentation"),
            "{decisions:?}"
        );
    }

    #[test]
    fn conversation_drawers_are_read_back_into_turns() {
        let turns = turns_from_text("user: I live in Oslo.\nand I like it\nassistant: Nice!\n> quoted question", &[]);
        assert_eq!(turns, vec![user("I live in Oslo.\nand I like it"), assistant("Nice!"), user("quoted question")]);
        assert_eq!(turns_from_text("Alex: hello\nBot: hi", &["alex"]), vec![user("hello"), assistant("hi")]);
    }

    #[test]
    fn contradictions_need_one_slot_and_another_value() {
        assert_eq!(contradicts("We deploy to AWS.", "We deploy to GCP now."), Some("cloud"));
        assert_eq!(
            contradicts("The beta launch is on April 10.", "The beta launch moved to April 24."),
            Some("deadline")
        );
        assert_eq!(contradicts("We deploy to AWS.", "We deploy to AWS and GCP."), None, "adds a value, keeps the old");
        assert_eq!(contradicts("I use Vim.", "I live in Oslo."), None, "different slots");
        assert_eq!(contradicts("We use Postgres.", "We use Postgres 15 for the API."), None);
    }
}
