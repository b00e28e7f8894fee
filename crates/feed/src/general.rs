//! `--extract general`: memories picked out of a conversation without an
//! LLM, as the Python MemPalace's general extractor does — each message is
//! cut into paragraphs, each paragraph of 20 characters or more is scored
//! by the heuristic classifier, and those it finds to be a decision,
//! preference, milestone, problem or emotional moment with confidence 0.3
//! or more are kept, verbatim (with the speaker), longer ones cut at
//! sentence boundaries into 800-character pieces.

use mempalace_core::MemoryType;
use mempalace_core::chunk::chunk_text;
use mempalace_core::classify::classify;
use mempalace_mine::Conversation;

/// Shortest paragraph considered (Python MemPalace's rule).
const MIN_PARAGRAPH_CHARS: usize = 20;
/// Lowest classifier confidence kept (Python MemPalace's `min_confidence`).
const MIN_CONFIDENCE: f64 = 0.3;

/// The types the general extractor keeps (and the rooms they go to).
const KEPT: [MemoryType; 5] =
    [MemoryType::Decision, MemoryType::Preference, MemoryType::Milestone, MemoryType::Problem, MemoryType::Emotional];

/// One extracted memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    /// Its type (also its room).
    pub memory_type: MemoryType,
    /// `speaker: paragraph`, verbatim.
    pub text: String,
    /// The message it came from.
    pub message_ids: Vec<String>,
}

/// The memories of a conversation, in order.
pub fn memories(conversation: &Conversation) -> Vec<Memory> {
    let mut out = Vec::new();
    for message in &conversation.messages {
        let speaker = message.speaker.as_deref().unwrap_or(message.role.speaker());
        for paragraph in message.text.split("\n\n").map(str::trim) {
            if paragraph.chars().count() < MIN_PARAGRAPH_CHARS {
                continue;
            }
            let classification = classify(paragraph);
            if classification.confidence < MIN_CONFIDENCE || !KEPT.contains(&classification.memory_type) {
                continue;
            }
            for piece in chunk_text(&format!("{speaker}: {paragraph}")) {
                out.push(Memory {
                    memory_type: classification.memory_type,
                    text: piece,
                    message_ids: vec![message.id.clone()],
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mempalace_mine::{Message, Role};

    fn message(role: Role, id: &str, text: &str) -> Message {
        Message { role, text: text.into(), timestamp: None, id: id.into(), speaker: None, line: 0 }
    }

    #[test]
    fn decisions_and_problems_are_picked_out_and_chatter_is_not() {
        let conversation = Conversation {
            session_id: "s".into(),
            messages: vec![
                message(Role::User, "1", "hi there"),
                message(
                    Role::User,
                    "2",
                    "We decided to go with PostgreSQL instead of MongoDB because we need transactions.\n\nok",
                ),
                message(
                    Role::Assistant,
                    "3",
                    "The build keeps failing with a segfault in the linker; the root cause is the old toolchain.",
                ),
            ],
            ..Conversation::default()
        };
        let found = memories(&conversation);
        let kinds: Vec<MemoryType> = found.iter().map(|m| m.memory_type).collect();
        assert_eq!(kinds, vec![MemoryType::Decision, MemoryType::Problem], "{found:?}");
        assert!(found[0].text.starts_with("user: We decided"));
        assert_eq!(found[1].message_ids, vec!["3".to_string()]);
    }
}
