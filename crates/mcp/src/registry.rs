//! The tool table: names, descriptions, JSON schemas, profiles, and the
//! typed handlers behind them.
//!
//! Every tool takes a parameter struct that derives `Deserialize` (with
//! `deny_unknown_fields`) and `JsonSchema`; the schema the client sees and
//! the check the server runs come from the same type, so they cannot
//! disagree. A parameter that does not fit is a JSON-RPC `-32602` error
//! naming it; a tool that ran and failed for a reason the caller can fix
//! returns a result flagged `isError` with the reason; an internal fault is
//! logged and reported as such, and never takes the server down.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::context::Backend;

/// The tool families; a profile selects one of them or all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Seed 0's `memory_*` tools.
    Memory,
    /// The Python MemPalace's `mempalace_*` tools.
    Mempalace,
    /// robotmem's tools (learn, recall, …).
    Robotmem,
}

/// Which tools a server offers (`--tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// Only `memory_*`.
    Memory,
    /// Only `mempalace_*` (the default: what existing agent setups call).
    #[default]
    Mempalace,
    /// Only robotmem's.
    Robotmem,
    /// Every tool.
    All,
}

impl Profile {
    /// Parses a `--tools` value.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "memory" => Ok(Self::Memory),
            "mempalace" => Ok(Self::Mempalace),
            "robotmem" => Ok(Self::Robotmem),
            "all" => Ok(Self::All),
            other => Err(format!("tool profile {other:?} is not known; use memory, mempalace, robotmem or all")),
        }
    }

    /// Whether this profile includes a family.
    pub fn includes(self, family: Family) -> bool {
        matches!(
            (self, family),
            (Self::All, _)
                | (Self::Memory, Family::Memory)
                | (Self::Mempalace, Family::Mempalace)
                | (Self::Robotmem, Family::Robotmem)
        )
    }
}

/// Why a tool call did not produce its normal result.
#[derive(Debug)]
pub enum ToolError {
    /// A parameter is missing, unknown, of the wrong type or out of range:
    /// JSON-RPC `-32602`.
    InvalidParams(String),
    /// The call was valid but cannot be done (not found, limit reached,
    /// the palace is busy): a result flagged `isError` carrying this JSON
    /// (MemPalace's `{"error": …}` shapes).
    Failed(Value),
    /// Our fault: logged in full, reported without details.
    Internal(String),
}

impl ToolError {
    /// An out-of-range or malformed parameter.
    pub fn param(name: &str, problem: impl std::fmt::Display) -> Self {
        Self::InvalidParams(format!("{name}: {problem}"))
    }
}

impl From<mempalace_feed::FeedError> for ToolError {
    fn from(error: mempalace_feed::FeedError) -> Self {
        use mempalace_feed::FeedError as E;
        match error {
            E::Engine(error) => error.into(),
            E::NotFound { .. } | E::Invalid(_) | E::Unreadable { .. } | E::NothingMined(_) => {
                crate::tools::failure(&error)
            }
        }
    }
}

impl From<mempalace_engine::EngineError> for ToolError {
    fn from(error: mempalace_engine::EngineError) -> Self {
        use mempalace_engine::EngineError as E;
        use mempalace_store::StoreError as S;
        match &error {
            E::Invalid(_) => Self::InvalidParams(error.to_string()),
            E::NotFound { .. } | E::RoomNotFound { .. } => crate::tools::failure(&error),
            // MemPalace answers every coordination refusal as a result the
            // agent can read (`{"error": …}`; writers add `"success": false`).
            E::Coordination(_) => crate::tools::failure(&error),
            E::Unavailable(_) | E::Conflict(_) => crate::tools::failure(&error),
            // Tenancy refusals are results the agent reads: what was refused
            // and who can allow it (nothing was read or written).
            E::Unauthenticated(_) | E::RateLimited { .. } => crate::tools::failure(&error),
            E::Store(store) => match store {
                S::Missing { .. } | S::Busy { .. } | S::Limit { .. } | S::Io { .. } | S::Unreachable { .. } => {
                    crate::tools::failure(&error)
                }
                S::Denied { .. } | S::OverLimit(_) => crate::tools::failure(&error),
                S::NotAPalace { .. } | S::SchemaTooNew { .. } | S::InvalidData { .. } | S::Corrupt { .. } => {
                    crate::tools::failure(&error)
                }
                S::Backend { .. } => Self::Internal(error.to_string()),
            },
        }
    }
}

/// What a handler returns.
pub type ToolResult = Result<Value, ToolError>;

type Handler = Arc<dyn Fn(&Backend, Map<String, Value>) -> ToolResult + Send + Sync>;

/// One tool.
#[derive(Clone)]
pub struct ToolSpec {
    /// Wire name.
    pub name: &'static str,
    /// The family it belongs to.
    pub family: Family,
    /// What the client lists.
    pub tool: Tool,
    /// Whether the tool changes the palace (a call that writes waits for
    /// the calls sent before it on stdio; see `stdio`). Tools write unless
    /// marked [`ToolSpec::read_only`].
    pub writes: bool,
    handler: Handler,
}

impl ToolSpec {
    /// A tool whose parameters are `P`.
    pub fn new<P>(
        name: &'static str,
        family: Family,
        description: &'static str,
        handler: fn(&Backend, P) -> ToolResult,
    ) -> Self
    where
        P: DeserializeOwned + JsonSchema + 'static,
    {
        let schema: Arc<JsonObject> = rmcp::handler::server::common::schema_for_type::<P>();
        Self {
            name,
            family,
            tool: Tool::new(name, description, schema),
            writes: true,
            handler: Arc::new(move |backend, arguments| handler(backend, parse::<P>(arguments)?)),
        }
    }

    /// Marks the tool as one that only reads: listed with `readOnlyHint`
    /// (as the Python MemPalace 3.11 lists its read tools), and run side by
    /// side with other reads.
    pub fn read_only(mut self) -> Self {
        self.writes = false;
        self.tool = self.tool.annotate(rmcp::model::ToolAnnotations::new().read_only(true));
        self
    }

    /// Runs the tool.
    pub fn call(&self, backend: &Backend, arguments: Map<String, Value>) -> ToolResult {
        (self.handler)(backend, arguments)
    }
}

/// Reads the arguments into `P`, naming the offending parameter on failure.
fn parse<P: DeserializeOwned>(arguments: Map<String, Value>) -> Result<P, ToolError> {
    serde_path_to_error::deserialize::<_, P>(Value::Object(arguments)).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner().to_string();
        if path == "." || path.is_empty() { ToolError::InvalidParams(inner) } else { ToolError::param(&path, inner) }
    })
}
