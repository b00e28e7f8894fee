//! Domain types and pure logic of mempalace.
//!
//! Everything here is a value or a function of values: ids, names, drawers,
//! knowledge-graph records, text preparation for the lexical index. Core
//! opens no files, reads no clock or environment, spawns no threads and knows
//! no storage engine or transport; callers pass time and text in.

/// Declares a closed vocabulary stored as lowercase text, with `ALL`,
/// `as_str`, `Display` and a `FromStr` whose error lists the alternatives.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::error::ValidationError;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                match text.trim().to_ascii_lowercase().as_str() {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::error::ValidationError::NotOneOf {
                        what: $what,
                        value: text.to_string(),
                        allowed: concat!($($text, " "),+),
                    }),
                }
            }
        }
    };
}

pub mod aaak;
pub mod alias;
pub mod audit;
pub mod centroid;
pub mod chunk;
pub mod classify;
pub mod config;
pub mod coordination;
pub mod dedup;
pub mod drawer;
pub mod embedder;
pub mod episode;
pub mod error;
pub mod eval;
pub mod exchange;
pub mod extract;
pub mod filter;
pub mod fusion;
pub mod id;
pub mod identity;
pub mod kg;
pub mod layers;
pub mod learn;
pub mod lexical;
pub mod llm;
pub mod megafile;
pub mod memory;
pub mod name;
pub mod origin;
pub mod paragraph;
pub mod project;
pub mod prompts;
pub mod query;
pub mod roomset;
pub mod secret;
pub mod session;
pub mod tenancy;
pub mod time;
pub mod tunnel;
pub mod vector;
pub mod when;

pub use drawer::{
    Confidence, Content, Drawer, DrawerState, DrawerStatus, DrawerTag, Embedding, Importance, MemoryType, Perception,
    PerceptionType, PipelineTier, TagSource,
};
pub use error::ValidationError;
pub use id::{ContentHash, DrawerId, WorkspaceId};
pub use identity::Identity;
pub use name::{AgentName, Hall, Room, Wing};
pub use time::Timestamp;
