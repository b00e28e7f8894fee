//! The conversation drawer unit: an exchange — one turn and the reply to
//! it — kept verbatim with its speakers, split when it is longer than a
//! chunk. Each unit remembers which turns it holds, so a search hit can be
//! traced back to the turns of the transcript.

use crate::chunk::CHUNK_SIZE;

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Who spoke.
    pub speaker: String,
    /// What was said (an image turn's caption stands in for the image).
    pub text: String,
    /// The turn's id in its source (LoCoMo `dia_id`, a message id, …).
    pub id: String,
}

/// The text of one drawer and the ids of the turns it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// `Speaker: text` lines.
    pub text: String,
    /// Turn ids, in order.
    pub turn_ids: Vec<String>,
}

/// Key of a drawer's context naming the drawer just before it in its
/// source (a conversation's previous exchange) when its vector was made
/// from both texts ([`in_context`]). Such a vector is not a function of
/// the drawer's content alone: it is never reused for another drawer with
/// the same text, and re-embedding rebuilds it from the two drawers.
pub const PRECEDED_BY: &str = "preceded_by";

/// The text embedded for a drawer whose vector carries its context: the
/// text before it, then its own. A reply ("Yes, since last May") is then
/// found by what it answers; measured on the LoCoMo dev split, embedding
/// the previous exchange with each exchange lifts turn recall@5 from 0.737
/// to 0.788 (BENCHMARKS.md, "Retrieval levers measured offline"). The
/// engine passes only the end of the preceding text that fits the model's
/// window beside the drawer's own ([`crate::embedder::Embedder::context_that_fits`]).
pub fn in_context(preceding: &str, text: &str) -> String {
    format!("{}\n{}", preceding.trim_end(), text)
}

fn line(turn: &Turn) -> String {
    format!("{}: {}", turn.speaker, turn.text.trim())
}

/// Groups turns into exchanges: a turn with the next turn when the speaker
/// changes (the reply); an exchange longer than [`CHUNK_SIZE`] characters
/// is filed as its turns one by one, and a single turn longer than that is
/// cut into [`CHUNK_SIZE`]-character pieces at sentence or word
/// boundaries, each piece keeping the turn's id.
pub fn exchanges(turns: &[Turn]) -> Vec<Exchange> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < turns.len() {
        let first = &turns[i];
        let pair = turns.get(i + 1).filter(|next| next.speaker != first.speaker);
        if let Some(reply) = pair {
            let text = format!("{}\n{}", line(first), line(reply));
            if text.chars().count() <= CHUNK_SIZE {
                out.push(Exchange { text, turn_ids: vec![first.id.clone(), reply.id.clone()] });
                i += 2;
                continue;
            }
        }
        out.extend(single(first));
        i += 1;
    }
    out
}

fn single(turn: &Turn) -> Vec<Exchange> {
    let text = line(turn);
    if text.chars().count() <= CHUNK_SIZE {
        return vec![Exchange { text, turn_ids: vec![turn.id.clone()] }];
    }
    let mut pieces = Vec::new();
    let mut rest = text.as_str();
    while rest.chars().count() > CHUNK_SIZE {
        let limit = rest.char_indices().nth(CHUNK_SIZE).map_or(rest.len(), |(i, _)| i);
        let window = &rest[..limit];
        let cut = window
            .rfind(['.', '!', '?', '\n'])
            .map(|i| i + 1)
            .filter(|&i| i > limit / 2)
            .or_else(|| window.rfind(' ').filter(|&i| i > limit / 2))
            .unwrap_or(limit);
        pieces.push(rest[..cut].trim().to_string());
        rest = &rest[cut..];
    }
    if !rest.trim().is_empty() {
        pieces.push(rest.trim().to_string());
    }
    pieces.into_iter().map(|text| Exchange { text, turn_ids: vec![turn.id.clone()] }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(speaker: &str, text: &str, id: &str) -> Turn {
        Turn { speaker: speaker.into(), text: text.into(), id: id.into() }
    }

    #[test]
    fn turns_pair_with_their_replies() {
        let turns = [
            turn("Ann", "Hi Bob, how was the trip?", "D1:1"),
            turn("Bob", "Great, we hiked a lot.", "D1:2"),
            turn("Ann", "Nice!", "D1:3"),
            turn("Ann", "Send photos.", "D1:4"),
            turn("Bob", "Sure.", "D1:5"),
        ];
        let units = exchanges(&turns);
        let ids: Vec<Vec<&str>> = units.iter().map(|u| u.turn_ids.iter().map(String::as_str).collect()).collect();
        assert_eq!(ids, vec![vec!["D1:1", "D1:2"], vec!["D1:3"], vec!["D1:4", "D1:5"]]);
        assert_eq!(units[0].text, "Ann: Hi Bob, how was the trip?\nBob: Great, we hiked a lot.");
    }

    #[test]
    fn long_exchanges_split_by_turn_and_long_turns_by_sentence() {
        let long = "This sentence is filler. ".repeat(60);
        let units = exchanges(&[turn("Ann", &long, "a"), turn("Bob", "ok", "b")]);
        assert!(units.len() >= 3, "{units:?}");
        assert!(units.iter().all(|u| u.text.chars().count() <= CHUNK_SIZE));
        assert_eq!(units.last().unwrap().turn_ids, vec!["b".to_string()]);
        assert!(units[..units.len() - 1].iter().all(|u| u.turn_ids == vec!["a".to_string()]));
    }

    #[test]
    fn a_vector_in_context_reads_the_preceding_text_first() {
        assert_eq!(in_context("Ann: Where to?\n", "Bob: Lisbon."), "Ann: Where to?\nBob: Lisbon.");
    }

    proptest::proptest! {
        #[test]
        fn every_turn_is_in_some_unit(texts in proptest::collection::vec("\\PC{0,1200}", 0..8)) {
            let turns: Vec<Turn> = texts.iter().enumerate()
                .map(|(i, t)| turn(if i % 3 == 0 { "A" } else { "B" }, t, &i.to_string())).collect();
            let units = exchanges(&turns);
            for t in &turns {
                proptest::prop_assert!(units.iter().any(|u| u.turn_ids.contains(&t.id)));
            }
            proptest::prop_assert!(units.iter().all(|u| u.text.chars().count() <= CHUNK_SIZE));
        }
    }
}
