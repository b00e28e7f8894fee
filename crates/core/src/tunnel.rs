//! Explicit tunnels: links between two (wing, room) places (SPEC §2, §8).
//!
//! A tunnel is symmetric: the link A↔B and B↔A is one tunnel with one id.
//! Computed tunnels (a room present in two wings) are derived by the engine
//! and never stored.

use sha2::{Digest, Sha256};

use crate::id::WorkspaceId;
use crate::name::{Room, Wing};
use crate::time::Timestamp;

/// One end of a tunnel.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Place {
    /// Wing.
    pub wing: Wing,
    /// Room in that wing.
    pub room: Room,
}

/// A link between two places, with an optional label.
#[derive(Debug, Clone, PartialEq)]
pub struct Tunnel {
    /// Tenant.
    pub workspace_id: WorkspaceId,
    /// [`Tunnel::make_id`] of the two ends.
    pub id: String,
    /// The end that sorts first.
    pub a: Place,
    /// The end that sorts second.
    pub b: Place,
    /// Why the places are linked.
    pub label: Option<String>,
    /// Who made the link.
    pub created_by: Option<String>,
    /// When.
    pub created_at: Timestamp,
}

impl Tunnel {
    /// Orders the two ends canonically, so A↔B and B↔A are the same tunnel.
    pub fn ordered(first: Place, second: Place) -> (Place, Place) {
        if first <= second { (first, second) } else { (second, first) }
    }

    /// Symmetric id: the same for either order of the ends.
    pub fn make_id(first: &Place, second: &Place) -> String {
        let (a, b) = if first <= second { (first, second) } else { (second, first) };
        let mut hasher = Sha256::new();
        for part in [a.wing.as_str(), a.room.as_str(), b.wing.as_str(), b.room.as_str()] {
            hasher.update(part.as_bytes());
            hasher.update([0u8]);
        }
        format!("tunnel_{}", &hex::encode(hasher.finalize())[..24])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(wing: &str, room: &str) -> Place {
        Place { wing: Wing::parse(wing).unwrap(), room: Room::parse(room).unwrap() }
    }

    #[test]
    fn tunnel_ids_are_symmetric() {
        let lab = place("lab", "gripper");
        let notes = place("lab_notes", "general");
        assert_eq!(Tunnel::make_id(&lab, &notes), Tunnel::make_id(&notes, &lab));
        assert_ne!(Tunnel::make_id(&lab, &notes), Tunnel::make_id(&lab, &place("lab_notes", "other")));
        let (a, b) = Tunnel::ordered(notes.clone(), lab.clone());
        assert_eq!((a, b), (lab, notes));
    }
}
