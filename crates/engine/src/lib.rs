//! The one library API of mempalace.
//!
//! [`Palace`] is a handle on one workspace of one store. The CLI commands,
//! MCP tools and REST routes are thin surfaces over its methods: they parse
//! their input into the engine's types, call one method, and render the
//! result. The engine knows no transport (no JSON-RPC, HTTP, terminal or
//! wire format) and no concrete backend: it sees only the store traits.
//!
//! This is also where the clock is read; core takes time as an argument.

pub mod aaak;
pub mod audit;
pub mod centroids;
pub mod consolidate;
pub mod coordination;
pub mod drawers;
pub mod embedding;
pub mod entities;
pub mod error;
pub mod graph;
pub mod guard;
pub mod hallways;
pub mod ingest;
pub mod kg;
pub mod layers;
pub mod layout;
pub mod memories;
pub mod palace;
pub mod pool;
pub mod search;
pub mod tenancy;
pub mod vector_index;
pub mod work;

pub use embedding::{EmbeddedTexts, ReembedProgress, ReembedReport};
pub use error::{EngineError, EngineResult};
pub use ingest::{ChunkOutcome, IngestReport, IngestRequest};
pub use palace::{
    AddOutcome, DeleteMode, DoctorReport, EmbedderCell, EmbedderLoader, ExportError, NewDrawer, Palace, PalaceStatus,
};
pub use search::{Fusion, ScoreParts, SearchHit, SearchMode, SearchOutcome, SearchRequest};
