//! The MCP surface of mempalace: every tool over the engine, served on
//! stdio and on streamable HTTP.
//!
//! * [`registry`] — tool table, profiles, parameter checking, error kinds;
//! * [`tools`] — the `mempalace_*` (Python MemPalace compatible, the
//!   coordination tools of MemPalace 3.11 included), `memory_*` (seed 0)
//!   and robotmem tool families;
//! * [`shapes`] — MemPalace's JSON result shapes (also used by the CLI);
//! * [`server`] — the rmcp service; [`stdio`] — the stdio transport (parse
//!   errors answered, calls in the order sent); [`http`] — the HTTP endpoint;
//! * [`context`] — the palace and the embedder that loads in the background.
//!
//! Nothing here writes to stdout except the stdio transport itself.

pub mod context;
pub mod http;
pub mod metrics;
pub mod registry;
pub mod server;
pub mod shapes;
pub mod stdio;
pub mod texts;
pub mod tools;

pub use context::{Backend, EmbedderLoader};
pub use registry::Profile;
pub use server::McpServer;
pub use stdio::serve_stdio;
