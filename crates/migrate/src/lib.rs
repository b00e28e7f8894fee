//! Bringing a Python MemPalace palace over.
//!
//! [`python::read`] reads a `~/.mempalace` folder directly from its files —
//! ChromaDB's `chroma.sqlite3` (never through ChromaDB, whose vector index
//! is often the damaged part), `knowledge_graph.sqlite3`, `identity.txt`,
//! `tunnels.json` — into a [`python::Source`] with every problem it met;
//! [`convert`] turns that into our [`PalaceRecord`]s, keeping MemPalace's
//! drawer, fact and tunnel ids so notes that cite them stay valid.
//!
//! Nothing here writes: the caller imports the records (idempotently, so an
//! interrupted migration is finished by running it again) and re-embeds.

pub mod convert;
pub mod python;

pub use convert::{Converted, convert};
pub use python::{Problem, Source, read};
