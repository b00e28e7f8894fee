//! `kg …` (the temporal knowledge graph) and `graph …` (the palace graph
//! and explicit tunnels).
//!
//! JSON shapes follow the Python MemPalace's MCP results (`kg_query`,
//! `kg_timeline`, `kg_stats`, `traverse`, `find_tunnels`, `graph_stats`),
//! so scripts and agents read both the same way.

use anyhow::Result;
use clap::Subcommand;
use mempalace_core::time::DayEdge;
use mempalace_core::tunnel::Place;
use mempalace_core::{Room, Wing};
use mempalace_engine::Palace;
use mempalace_engine::kg::{Fact, fact_time, parse_date};
use mempalace_store::{Direction, TripleOutcome};
use serde_json::{Value, json};

use super::UserError;
use crate::output;
use mempalace_mcp::shapes;

/// Knowledge-graph subcommands.
#[derive(Debug, Subcommand)]
pub enum KgCommand {
    /// Add a fact SUBJECT PREDICATE OBJECT (entities are created as needed).
    Add {
        /// Subject entity, e.g. "Crawbl Backend".
        subject: String,
        /// Relation, e.g. uses, owns, works_at.
        predicate: String,
        /// Object entity.
        object: String,
        /// Start of validity (YYYY-MM-DD or RFC 3339; a date starts at 00:00).
        #[arg(long)]
        valid_from: Option<String>,
        /// End of validity (a date ends at 23:59:59).
        #[arg(long)]
        valid_to: Option<String>,
        /// Confidence 0–1 (default 1).
        #[arg(long)]
        confidence: Option<f64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Facts about an entity.
    Query {
        /// Entity name.
        entity: String,
        /// Only facts that held at this time.
        #[arg(long)]
        as_of: Option<String>,
        /// out (entity is the subject), in (the object) or both.
        #[arg(long, default_value = "both")]
        direction: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// End a current fact (default: now).
    Invalidate {
        /// Subject.
        subject: String,
        /// Relation.
        predicate: String,
        /// Object.
        object: String,
        /// When it ended (a date ends at 23:59:59).
        #[arg(long)]
        ended: Option<String>,
    },
    /// Every fact about an entity (or all facts) in time order.
    Timeline {
        /// Entity name; all facts when omitted.
        entity: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Entity and fact counts.
    Stats {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete one fact by id (reviewing a wrong extraction).
    Delete {
        /// Fact id, as `kg query --json` shows it.
        id: String,
    },
}

/// Palace-graph subcommands.
#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Rooms connected to ROOM through shared wings and tunnels.
    Traverse {
        /// Starting room.
        room: String,
        /// Hops (default 2, at most 10).
        #[arg(long)]
        max_hops: Option<usize>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rooms that appear in two or more wings.
    Tunnels {
        /// Only rooms in this wing…
        #[arg(long)]
        wing_a: Option<String>,
        /// …and in this one.
        #[arg(long)]
        wing_b: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Overview of the palace graph.
    Stats {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Explicit tunnels between two places.
    #[command(subcommand)]
    Tunnel(TunnelCommand),
}

/// Explicit-tunnel subcommands.
#[derive(Debug, Subcommand)]
pub enum TunnelCommand {
    /// Link two places, given as WING/ROOM.
    Create {
        /// First place, WING/ROOM.
        from: String,
        /// Second place, WING/ROOM.
        to: String,
        /// Why they are linked.
        #[arg(long)]
        label: Option<String>,
    },
    /// List explicit tunnels.
    List {
        /// Only tunnels touching this wing.
        #[arg(long)]
        wing: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a tunnel by id.
    Delete {
        /// Tunnel id.
        id: String,
    },
    /// Where tunnels lead from a place.
    Follow {
        /// The place, WING/ROOM.
        place: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn direction(text: &str) -> Result<Direction> {
    Ok(match text.to_ascii_lowercase().as_str() {
        "out" | "outgoing" => Direction::Outgoing,
        "in" | "incoming" => Direction::Incoming,
        "both" => Direction::Both,
        other => return Err(UserError(format!("direction {other:?} is not known; use out, in or both")).into()),
    })
}

fn fact_line(fact: &Fact) -> String {
    let from = fact_time(fact.valid_from.as_ref()).map_or("?".to_string(), |t| t[..10].to_string());
    let to = match (&fact.valid_to, fact.current) {
        (None, _) => "now".to_string(),
        (Some(t), _) => mempalace_core::time::format_timestamp(t)[..10].to_string(),
    };
    format!(
        "{} → {} → {}   [{from} … {to}]{}",
        fact.subject,
        fact.predicate,
        fact.object,
        if fact.current { "" } else { "  (ended)" }
    )
}

/// A place argument `WING/ROOM`.
pub fn place(text: &str) -> Result<Place> {
    let (wing, room) = text
        .split_once('/')
        .ok_or_else(|| UserError(format!("{text:?} is not a place; write WING/ROOM, e.g. lab/gripper")))?;
    Ok(Place { wing: Wing::parse(wing)?, room: Room::parse(room)? })
}

pub fn run_kg(palace: &Palace, command: KgCommand) -> Result<()> {
    match command {
        KgCommand::Add { subject, predicate, object, valid_from, valid_to, confidence, json: as_json } => {
            let from = parse_date(valid_from.as_deref(), "--valid-from", DayEdge::Start)?;
            let to = parse_date(valid_to.as_deref(), "--valid-to", DayEdge::End)?;
            let outcome =
                palace.kg_add(&subject, &predicate, &object, from, to, confidence, None, Some("cli".into()))?;
            let existed = matches!(outcome, TripleOutcome::Existing(_));
            let dated = match &outcome {
                TripleOutcome::Dated { replaced, .. } => Some(replaced.clone()),
                TripleOutcome::Added(_) | TripleOutcome::Existing(_) => None,
            };
            if as_json {
                let mut value = json!({"success": true, "triple_id": outcome.id(),
                    "fact": format!("{subject} → {predicate} → {object}"), "existing": existed});
                if let Some(replaced) = &dated {
                    value["dated"] = json!(replaced);
                }
                output::json(&value)?;
            } else {
                if existed {
                    output::note("already known: the same current fact holds since an earlier or equal start");
                }
                if let Some(replaced) = &dated {
                    output::note(format!("the undated fact {replaced} now carries the start you gave"));
                }
                output::line(outcome.id())?;
            }
        }
        KgCommand::Query { entity, as_of, direction: dir, json: as_json } => {
            let as_of_time = parse_date(as_of.as_deref(), "--as-of", DayEdge::End)?;
            let facts = palace.kg_query(&entity, as_of_time, direction(&dir)?)?;
            if as_json {
                output::json(
                    &json!({"entity": entity, "as_of": as_of, "facts": facts.iter().map(shapes::FactShape::of).collect::<Vec<_>>(), "count": facts.len()}),
                )?;
            } else if facts.is_empty() {
                output::note(format!("no facts about {entity:?}"));
            } else {
                for fact in &facts {
                    output::line(fact_line(fact))?;
                }
            }
        }
        KgCommand::Invalidate { subject, predicate, object, ended } => {
            let ended_at = parse_date(ended.as_deref(), "--ended", DayEdge::End)?;
            let count = palace.kg_invalidate(&subject, &predicate, &object, ended_at)?;
            if count == 0 {
                return Err(mempalace_engine::EngineError::NotFound {
                    what: "current fact",
                    id: format!("{subject} → {predicate} → {object}"),
                }
                .into());
            }
            output::line(format!("ended {count} fact{}", if count == 1 { "" } else { "s" }))?;
        }
        KgCommand::Timeline { entity, json: as_json } => {
            let facts = palace.kg_timeline(entity.as_deref())?;
            if as_json {
                output::json(
                    &json!({"entity": entity.as_deref().unwrap_or("all"), "timeline": facts.iter().map(shapes::FactShape::of).collect::<Vec<_>>(), "count": facts.len()}),
                )?;
            } else {
                for fact in &facts {
                    output::line(fact_line(fact))?;
                }
            }
        }
        KgCommand::Stats { json: as_json } => {
            let stats = palace.kg_stats()?;
            let types: Vec<&str> = stats.predicates.iter().map(|(p, _)| p.as_str()).collect();
            if as_json {
                output::json(&shapes::KgStatsShape::of(&stats))?;
            } else {
                output::line(format!(
                    "{} entities, {} facts ({} current, {} ended); relations: {}",
                    stats.entities,
                    stats.triples,
                    stats.current,
                    stats.expired,
                    types.join(", ")
                ))?;
            }
        }
        KgCommand::Delete { id } => {
            palace.kg_delete(&id)?;
            output::line(format!("deleted {id}"))?;
        }
    }
    Ok(())
}

pub fn run_graph(palace: &Palace, command: GraphCommand) -> Result<()> {
    match command {
        GraphCommand::Traverse { room, max_hops, json: as_json } => {
            let reached = palace.traverse(&room, max_hops)?;
            if as_json {
                output::json(&reached.iter().map(shapes::ReachedShape::of).collect::<Vec<_>>())?;
            } else {
                for step in &reached {
                    output::line(format!(
                        "{}{} ({} drawers; wings {})",
                        "  ".repeat(step.hop),
                        step.room,
                        step.count,
                        step.wings.join(", ")
                    ))?;
                }
            }
        }
        GraphCommand::Tunnels { wing_a, wing_b, json: as_json } => {
            let rooms = palace.find_tunnels(wing_a.as_deref(), wing_b.as_deref())?;
            if as_json {
                output::json(&rooms.iter().map(shapes::TunnelRoomShape::of).collect::<Vec<_>>())?;
            } else {
                for room in &rooms {
                    output::line(format!("{} ({} drawers) bridges {}", room.room, room.count, room.wings.join(", ")))?;
                }
            }
        }
        GraphCommand::Stats { json: as_json } => {
            let stats = palace.graph_stats()?;
            if as_json {
                output::json(&shapes::GraphStatsShape::of(&stats))?;
            } else {
                output::line(format!(
                    "{} rooms ({} placements), {} bridge wings, {} explicit tunnels, {} edges",
                    stats.total_rooms,
                    stats.total_room_instances,
                    stats.tunnel_rooms,
                    stats.explicit_tunnels,
                    stats.total_edges
                ))?;
            }
        }
        GraphCommand::Tunnel(TunnelCommand::Create { from, to, label }) => {
            let (tunnel, created) = palace.create_tunnel(place(&from)?, place(&to)?, label, Some("cli".into()))?;
            if !created {
                output::note("already linked: the same tunnel exists");
            }
            output::line(&tunnel.id)?;
        }
        GraphCommand::Tunnel(TunnelCommand::List { wing, json: as_json }) => {
            let tunnels = palace.list_tunnels(wing.as_deref())?;
            if as_json {
                output::json(&tunnels.iter().map(shapes::TunnelShape::of).collect::<Vec<_>>())?;
            } else {
                for t in &tunnels {
                    output::line(format!(
                        "{}  {}/{} ↔ {}/{}  {}",
                        t.id,
                        t.a.wing,
                        t.a.room,
                        t.b.wing,
                        t.b.room,
                        t.label.as_deref().unwrap_or("")
                    ))?;
                }
            }
        }
        GraphCommand::Tunnel(TunnelCommand::Delete { id }) => {
            palace.delete_tunnel(&id)?;
            output::line(format!("deleted {id}"))?;
        }
        GraphCommand::Tunnel(TunnelCommand::Follow { place: here, json: as_json }) => {
            let here = place(&here)?;
            let links = palace.follow_tunnels(&here.wing, &here.room)?;
            if as_json {
                output::json(&Value::Array(
                    links.iter().map(|(t, to)| json!({"tunnel_id": t.id, "label": t.label, "wing": to.wing.as_str(), "room": to.room.as_str()})).collect(),
                ))?;
            } else {
                for (t, to) in &links {
                    output::line(format!("→ {}/{}  {}", to.wing, to.room, t.label.as_deref().unwrap_or("")))?;
                }
            }
        }
    }
    Ok(())
}
