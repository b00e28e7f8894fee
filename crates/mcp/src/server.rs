//! The MCP service: one type serves stdio and streamable HTTP.
//!
//! Tool calls run on tokio's blocking pool (the engine is synchronous and
//! SQLite calls block), so a slow search never stalls the transport, and a
//! panic inside a tool is caught there and answered as an internal error.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode, ErrorData, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value};

use mempalace_core::WorkspaceId;
use mempalace_core::tenancy::Caller;

use crate::context::Backend;
use crate::registry::{Profile, ToolError, ToolSpec};
use crate::stdio::Sequencer;

/// Extra argument some MemPalace clients send; accepted and ignored.
const IGNORED_ARGUMENTS: &[&str] = &["wait_for_previous"];

/// Instructions sent at `initialize`.
const INSTRUCTIONS: &str = "mempalace is persistent memory: verbatim drawers filed by wing and room, a temporal \
knowledge graph, and agent diaries. Start a session with mempalace_status (it returns the memory protocol) and \
mempalace_wake_up; search before answering about past work; file decisions and facts as they happen; write your \
diary at the end.";

/// Who a request comes from, as the HTTP transport resolved it from its
/// bearer token and `Mempalace-Workspace` header (docs/tenancy.md).
#[derive(Debug, Clone)]
pub struct RequestScope {
    /// The caller.
    pub caller: Caller,
    /// The workspace asked for (default: the server's).
    pub workspace: Option<WorkspaceId>,
}

/// The MCP server over one palace.
#[derive(Clone)]
pub struct McpServer {
    backend: Backend,
    tools: Arc<Vec<ToolSpec>>,
    index: Arc<HashMap<&'static str, usize>>,
    sequencer: Arc<Sequencer>,
    caller: Caller,
}

impl McpServer {
    /// A server offering the tools of `profile`.
    pub fn new(backend: Backend, profile: Profile) -> Self {
        let tools: Vec<ToolSpec> = crate::tools::all().into_iter().filter(|t| profile.includes(t.family)).collect();
        let index = tools.iter().enumerate().map(|(i, t)| (t.name, i)).collect();
        Self {
            backend,
            tools: Arc::new(tools),
            index: Arc::new(index),
            sequencer: Arc::default(),
            caller: Caller::Local,
        }
    }

    /// Serves every call for `caller` (stdio with `$MEMPALACE_TOKEN`); HTTP
    /// requests carry their own caller.
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// The palace backend.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Files every queued background write and stops taking more (see
    /// [`Backend::shutdown`]).
    pub fn shutdown(&self) {
        self.backend.shutdown();
    }

    /// The order keeper of this server's stdio session.
    pub fn sequencer(&self) -> Arc<Sequencer> {
        Arc::clone(&self.sequencer)
    }

    /// Whether each offered tool writes.
    pub fn tool_writes(&self) -> HashMap<&'static str, bool> {
        self.tools.iter().map(|t| (t.name, t.writes)).collect()
    }

    /// Names of the offered tools, in list order.
    pub fn tool_names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name).collect()
    }

    /// Runs one tool call to completion for the server's caller (used by
    /// the transports and tests).
    pub async fn call(&self, name: &str, arguments: Option<Map<String, Value>>) -> Result<CallToolResult, ErrorData> {
        self.call_as(None, name, arguments).await
    }

    /// Runs one tool call for `scope`'s caller (default: the server's).
    pub async fn call_as(
        &self,
        scope: Option<RequestScope>,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(&position) = self.index.get(name) else {
            return Err(ErrorData::new(
                ErrorCode::INVALID_PARAMS,
                format!("Unknown tool: {name}; tools/list shows the tools of this server's profile"),
                None,
            ));
        };
        let spec = self.tools[position].clone();
        let arguments = check_arguments(&spec, arguments.unwrap_or_default())?;
        let backend = self.backend.clone();
        let (caller, workspace) = match scope {
            Some(scope) => (scope.caller, scope.workspace),
            None => (self.caller.clone(), None),
        };
        let started = std::time::Instant::now();
        let metrics = self.backend.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let backend = backend.scoped(&caller, workspace.as_ref())?;
            let arguments = own_user_id(&spec, &backend, arguments)?;
            spec.call(&backend, arguments)
        })
        .await;
        let kind = match &outcome {
            Ok(Ok(_)) => "ok",
            Ok(Err(ToolError::Failed(_))) => "error",
            Ok(Err(ToolError::InvalidParams(_))) => "invalid",
            Ok(Err(ToolError::Internal(_))) | Err(_) => "internal",
        };
        metrics.metrics().record_tool(name, kind, started.elapsed());
        let elapsed_ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok(Ok(value)) => {
                tracing::debug!(tool = name, elapsed_ms, "tool call done");
                Ok(CallToolResult::success(vec![ContentBlock::text(pretty(&value))]))
            }
            Ok(Err(ToolError::Failed(value))) => {
                tracing::info!(tool = name, elapsed_ms, "tool call failed for the caller");
                Ok(CallToolResult::error(vec![ContentBlock::text(pretty(&value))]))
            }
            Ok(Err(ToolError::InvalidParams(message))) => Err(ErrorData::invalid_params(message, None)),
            Ok(Err(ToolError::Internal(detail))) => {
                tracing::error!(tool = name, %detail, "tool call failed");
                Err(ErrorData::internal_error(
                    format!("internal error in {name}; the server log has the details"),
                    None,
                ))
            }
            Err(join) => {
                tracing::error!(tool = name, error = %join, "tool call panicked");
                Err(ErrorData::internal_error(
                    format!("internal error in {name}; the server log has the details"),
                    None,
                ))
            }
        }
    }
}

/// Refuses unknown and missing parameters the way MemPalace words it,
/// before the typed parse (which then names mistyped ones).
fn check_arguments(spec: &ToolSpec, mut arguments: Map<String, Value>) -> Result<Map<String, Value>, ErrorData> {
    for ignored in IGNORED_ARGUMENTS {
        arguments.remove(*ignored);
    }
    let schema = &spec.tool.input_schema;
    let properties = schema.get("properties").and_then(Value::as_object);
    let unknown: Vec<String> = arguments
        .keys()
        .filter(|key| !properties.is_some_and(|p| p.contains_key(key.as_str())))
        .map(|key| format!("'{key}'"))
        .collect();
    if !unknown.is_empty() {
        let allowed: Vec<&str> = properties.map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
        return Err(ErrorData::invalid_params(
            format!(
                "Unknown parameter{} {} for tool {}; accepted: {}",
                if unknown.len() > 1 { "s" } else { "" },
                unknown.join(", "),
                spec.name,
                if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") }
            ),
            None,
        ));
    }
    let missing: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|key| arguments.get(*key).is_none_or(Value::is_null))
        .map(|key| format!("'{key}'"))
        .collect();
    if !missing.is_empty() {
        return Err(ErrorData::invalid_params(
            format!(
                "Missing required parameter{} {} for tool {}",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", "),
                spec.name
            ),
            None,
        ));
    }
    Ok(arguments)
}

/// A principal speaks for itself: a tool's `user_id` is theirs (filled
/// in when left out, so their private memories are theirs to search);
/// another user's id is refused.
fn own_user_id(
    spec: &ToolSpec,
    backend: &Backend,
    mut arguments: Map<String, Value>,
) -> Result<Map<String, Value>, ToolError> {
    let Some(me) = backend.palace().principal_id() else { return Ok(arguments) };
    let takes_user =
        spec.tool.input_schema.get("properties").and_then(Value::as_object).is_some_and(|p| p.contains_key("user_id"));
    if !takes_user {
        return Ok(arguments);
    }
    match arguments.get("user_id") {
        None | Some(Value::Null) => {
            arguments.insert("user_id".into(), Value::String(me.to_string()));
        }
        Some(Value::String(given)) if given.trim().is_empty() || given == me => {
            arguments.insert("user_id".into(), Value::String(me.to_string()));
        }
        Some(other) => {
            return Err(ToolError::InvalidParams(format!(
                "user_id {other} is not yours: you are {me}, and a token speaks for its own user only"
            )));
        }
    }
    Ok(arguments)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("mempalace", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(INSTRUCTIONS.to_string());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.iter().map(|t| t.tool.clone()).collect()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.index.get(name).map(|&i| self.tools[i].tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // On stdio, calls take effect in the order they were sent.
        let id = serde_json::to_value(&context.id).map(|id| crate::stdio::id_key(&id)).unwrap_or_default();
        self.sequencer.enter(&id).await;
        let scope = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<RequestScope>())
            .cloned();
        let result = self.call_as(scope, &request.name, request.arguments).await.map(Into::into);
        self.sequencer.finish(&id);
        result
    }
}
