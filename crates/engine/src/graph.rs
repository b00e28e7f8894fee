//! The palace graph (SPEC §8, MemPalace `palace_graph`): rooms are nodes,
//! a room present in two wings is a passive tunnel, rooms sharing a wing are
//! neighbours; explicit tunnels link two (wing, room) places.
//!
//! The graph is built from the store's aggregates (room and hall counts,
//! never a scan of drawers) and cached until the store's revision moves.
//! Like MemPalace, the catch-all room `general` is not a node: it would
//! link every wing to every other.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use mempalace_core::name::normalize_wing_name;
use mempalace_core::tunnel::{Place, Tunnel};
use mempalace_core::{Room, Wing};

use crate::error::{EngineError, EngineResult};
use crate::palace::Palace;

/// Hops a traversal may take at most.
pub const MAX_HOPS: usize = 10;
/// Hops when the caller gives none.
pub const DEFAULT_HOPS: usize = 2;
/// Results of traverse and find_tunnels (MemPalace caps both at 50).
pub const MAX_RESULTS: usize = 50;
/// The catch-all room, left out of the graph.
pub const GENERAL_ROOM: &str = "general";
/// Suggestions offered for an unknown room.
const MAX_SUGGESTIONS: usize = 5;

/// One room of the graph.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoomNode {
    /// Wings holding the room.
    pub wings: BTreeSet<String>,
    /// Halls used in it.
    pub halls: BTreeSet<String>,
    /// Visible drawers in it, over all wings.
    pub count: u64,
}

/// A room reached by a traversal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// Room name.
    pub room: String,
    /// Its wings.
    pub wings: Vec<String>,
    /// Its halls.
    pub halls: Vec<String>,
    /// Its drawers.
    pub count: u64,
    /// Hops from the start.
    pub hop: usize,
    /// Wings (or explicit tunnels, as `tunnel:label`) shared with the room it was reached from.
    pub connected_via: Vec<String>,
}

/// A room bridging wings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelRoom {
    /// Room name.
    pub room: String,
    /// Its wings.
    pub wings: Vec<String>,
    /// Its halls.
    pub halls: Vec<String>,
    /// Its drawers.
    pub count: u64,
}

/// Graph overview.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphStats {
    /// Distinct room names.
    pub total_rooms: usize,
    /// (wing, room) placements.
    pub total_room_instances: usize,
    /// Rooms in two or more wings.
    pub tunnel_rooms: usize,
    /// Explicit tunnels.
    pub explicit_tunnels: usize,
    /// Wing pairs linked through shared rooms, one per (room, wing pair, hall)
    /// as in MemPalace (a room without halls adds none).
    pub total_edges: usize,
    /// Rooms per wing, most first.
    pub rooms_per_wing: Vec<(String, usize)>,
    /// Rooms in the most wings (up to 10).
    pub top_tunnels: Vec<TunnelRoom>,
}

/// Rooms by name.
pub type RoomGraph = BTreeMap<String, RoomNode>;

/// The cached graph, with the store revision it was built at.
#[derive(Default)]
pub(crate) struct GraphCache {
    inner: Mutex<Option<(i64, Arc<RoomGraph>)>>,
}

impl Palace {
    /// The room graph of the workspace (cached per store revision).
    pub fn room_graph(&self) -> EngineResult<Arc<RoomGraph>> {
        let revision = self.store().revision()?;
        let cache = self.graph_cache();
        if let Some((cached_rev, graph)) = cache.inner.lock().expect("graph cache poisoned").as_ref()
            && *cached_rev == revision
        {
            return Ok(Arc::clone(graph));
        }
        let taxonomy = self.store().taxonomy(self.workspace())?;
        let mut nodes: BTreeMap<String, RoomNode> = BTreeMap::new();
        for (wing, counts) in &taxonomy.wings {
            for (room, count) in counts.rooms.iter().filter(|(room, _)| room.as_str() != GENERAL_ROOM) {
                let node = nodes.entry(room.clone()).or_default();
                node.wings.insert(wing.clone());
                node.count += count;
            }
        }
        for hall in self.store().hall_counts(self.workspace())? {
            if let Some(node) = nodes.get_mut(&hall.room) {
                node.halls.insert(hall.hall);
            }
        }
        let graph = Arc::new(nodes);
        *cache.inner.lock().expect("graph cache poisoned") = Some((revision, Arc::clone(&graph)));
        Ok(graph)
    }

    /// Breadth-first walk from a room through shared wings (and explicit
    /// tunnels), up to `max_hops` (default 2, at most 10). Nearest first,
    /// then by size; at most 50 rooms.
    pub fn traverse(&self, start: &str, max_hops: Option<usize>) -> EngineResult<Vec<Reached>> {
        let max_hops = max_hops.unwrap_or(DEFAULT_HOPS).clamp(1, MAX_HOPS);
        let graph = self.room_graph()?;
        let Some(start_node) = graph.get(start) else {
            return Err(EngineError::RoomNotFound { room: start.to_string(), suggestions: suggestions(start, &graph) });
        };
        let tunnels = self.store().tunnels(self.workspace())?;
        let mut tunnel_links: HashMap<&str, Vec<(&str, String)>> = HashMap::new();
        for tunnel in &tunnels {
            let label = format!("tunnel:{}", tunnel.label.as_deref().unwrap_or(&tunnel.id));
            tunnel_links.entry(tunnel.a.room.as_str()).or_default().push((tunnel.b.room.as_str(), label.clone()));
            tunnel_links.entry(tunnel.b.room.as_str()).or_default().push((tunnel.a.room.as_str(), label));
        }
        let mut visited: BTreeSet<String> = BTreeSet::from([start.to_string()]);
        let mut results = vec![Reached {
            room: start.to_string(),
            wings: start_node.wings.iter().cloned().collect(),
            halls: start_node.halls.iter().cloned().collect(),
            count: start_node.count,
            hop: 0,
            connected_via: Vec::new(),
        }];
        let mut frontier = VecDeque::from([(start.to_string(), 0_usize)]);
        while let Some((room, depth)) = frontier.pop_front() {
            if depth >= max_hops {
                continue;
            }
            let current = &graph[&room];
            let mut neighbours: Vec<(String, Vec<String>)> = graph
                .iter()
                .filter(|(other, _)| !visited.contains(*other))
                .filter_map(|(other, node)| {
                    let shared: Vec<String> = current.wings.intersection(&node.wings).cloned().collect();
                    (!shared.is_empty()).then(|| (other.clone(), shared))
                })
                .collect();
            for (other, label) in tunnel_links.get(room.as_str()).into_iter().flatten() {
                if !visited.contains(*other)
                    && graph.contains_key(*other)
                    && !neighbours.iter().any(|(n, _)| n == other)
                {
                    neighbours.push((other.to_string(), vec![label.clone()]));
                }
            }
            for (other, via) in neighbours {
                visited.insert(other.clone());
                let node = &graph[&other];
                results.push(Reached {
                    room: other.clone(),
                    wings: node.wings.iter().cloned().collect(),
                    halls: node.halls.iter().cloned().collect(),
                    count: node.count,
                    hop: depth + 1,
                    connected_via: via,
                });
                frontier.push_back((other, depth + 1));
            }
        }
        results.sort_by(|a, b| a.hop.cmp(&b.hop).then(b.count.cmp(&a.count)).then(a.room.cmp(&b.room)));
        results.truncate(MAX_RESULTS);
        Ok(results)
    }

    /// Rooms present in two or more wings, optionally in both given wings;
    /// largest first, at most 50.
    pub fn find_tunnels(&self, wing_a: Option<&str>, wing_b: Option<&str>) -> EngineResult<Vec<TunnelRoom>> {
        let graph = self.room_graph()?;
        // Wing names are matched as `init` stores them ("my-project" → "my_project").
        let (wing_a, wing_b) = (wing_a.map(normalize_wing_name), wing_b.map(normalize_wing_name));
        let (wing_a, wing_b) =
            (wing_a.as_deref().filter(|w| !w.is_empty()), wing_b.as_deref().filter(|w| !w.is_empty()));
        let mut tunnels: Vec<TunnelRoom> = graph
            .iter()
            .filter(|(_, node)| node.wings.len() >= 2)
            .filter(|(_, node)| {
                wing_a.is_none_or(|w| node.wings.contains(w)) && wing_b.is_none_or(|w| node.wings.contains(w))
            })
            .map(|(room, node)| TunnelRoom {
                room: room.clone(),
                wings: node.wings.iter().cloned().collect(),
                halls: node.halls.iter().cloned().collect(),
                count: node.count,
            })
            .collect();
        tunnels.sort_by(|a, b| b.count.cmp(&a.count).then(a.room.cmp(&b.room)));
        tunnels.truncate(MAX_RESULTS);
        Ok(tunnels)
    }

    /// Graph overview.
    pub fn graph_stats(&self) -> EngineResult<GraphStats> {
        let graph = self.room_graph()?;
        let explicit_tunnels = self.store().tunnels(self.workspace())?.len();
        let mut per_wing: BTreeMap<String, usize> = BTreeMap::new();
        let mut edges = 0;
        for node in graph.values() {
            for wing in &node.wings {
                *per_wing.entry(wing.clone()).or_default() += 1;
            }
            let pairs = node.wings.len() * node.wings.len().saturating_sub(1) / 2;
            edges += pairs * node.halls.len();
        }
        let mut rooms_per_wing: Vec<(String, usize)> = per_wing.into_iter().collect();
        rooms_per_wing.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut top: Vec<TunnelRoom> = graph
            .iter()
            .filter(|(_, node)| node.wings.len() >= 2)
            .map(|(room, node)| TunnelRoom {
                room: room.clone(),
                wings: node.wings.iter().cloned().collect(),
                halls: node.halls.iter().cloned().collect(),
                count: node.count,
            })
            .collect();
        top.sort_by(|a, b| b.wings.len().cmp(&a.wings.len()).then(b.count.cmp(&a.count)).then(a.room.cmp(&b.room)));
        top.truncate(10);
        Ok(GraphStats {
            total_rooms: graph.len(),
            total_room_instances: graph.values().map(|n| n.wings.len()).sum(),
            tunnel_rooms: graph.values().filter(|n| n.wings.len() >= 2).count(),
            explicit_tunnels,
            total_edges: edges,
            rooms_per_wing,
            top_tunnels: top,
        })
    }

    /// Creates an explicit tunnel between two places (the same pair in
    /// either order is one tunnel). Returns it and whether it is new.
    pub fn create_tunnel(
        &self,
        from: Place,
        to: Place,
        label: Option<String>,
        created_by: Option<String>,
    ) -> EngineResult<(Tunnel, bool)> {
        let id = Tunnel::make_id(&from, &to);
        let (a, b) = Tunnel::ordered(from, to);
        let tunnel =
            Tunnel { workspace_id: self.workspace().clone(), id, a, b, label, created_by, created_at: self.now() };
        let created = self.store().put_tunnel(&tunnel)?;
        if !created {
            let existing = self.store().tunnels(self.workspace())?.into_iter().find(|t| t.id == tunnel.id);
            return Ok((existing.unwrap_or(tunnel), false));
        }
        Ok((tunnel, true))
    }

    /// Explicit tunnels, optionally only those touching a wing.
    pub fn list_tunnels(&self, wing: Option<&str>) -> EngineResult<Vec<Tunnel>> {
        let mut tunnels = self.store().tunnels(self.workspace())?;
        if let Some(wing) = wing {
            tunnels.retain(|t| t.a.wing.as_str() == wing || t.b.wing.as_str() == wing);
        }
        Ok(tunnels)
    }

    /// Deletes an explicit tunnel.
    pub fn delete_tunnel(&self, id: &str) -> EngineResult<()> {
        if self.store().delete_tunnel(self.workspace(), id)? {
            Ok(())
        } else {
            Err(EngineError::NotFound { what: "tunnel", id: id.to_string() })
        }
    }

    /// The places an explicit tunnel leads to from (wing, room), with each
    /// tunnel.
    pub fn follow_tunnels(&self, wing: &Wing, room: &Room) -> EngineResult<Vec<(Tunnel, Place)>> {
        let here = Place { wing: wing.clone(), room: room.clone() };
        Ok(self
            .store()
            .tunnels(self.workspace())?
            .into_iter()
            .filter_map(|t| {
                if t.a == here {
                    let other = t.b.clone();
                    Some((t, other))
                } else if t.b == here {
                    let other = t.a.clone();
                    Some((t, other))
                } else {
                    None
                }
            })
            .collect())
    }
}

/// Rooms whose name contains the query, then rooms containing one of its
/// dash-separated words (MemPalace's fuzzy match).
fn suggestions(query: &str, graph: &RoomGraph) -> Vec<String> {
    let query = query.to_lowercase();
    let words: Vec<&str> = query.split('-').filter(|w| !w.is_empty()).collect();
    let mut whole: Vec<String> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    for room in graph.keys() {
        if room.contains(&query) {
            whole.push(room.clone());
        } else if words.iter().any(|w| room.contains(w)) {
            partial.push(room.clone());
        }
    }
    whole.extend(partial);
    whole.truncate(MAX_SUGGESTIONS);
    whole
}
