//! The OpenAPI document of the REST API, generated from the route table
//! below and the request and response types' `JsonSchema` derives (the
//! same types the handlers parse and return), served at
//! `/api/v1/openapi.json`. A test checks that every route the router serves
//! is in the table and the other way round.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

use crate::problem::Problem;
use crate::{api, directory};

type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// One route as documented.
pub struct RouteDoc {
    /// HTTP method, lowercase.
    pub method: &'static str,
    /// Path, with `{name}` parameters.
    pub path: &'static str,
    /// What it does.
    pub summary: &'static str,
    /// The query-string type, whose fields become query parameters.
    pub query: Option<SchemaFn>,
    /// The JSON body type.
    pub body: Option<SchemaFn>,
    /// Success status and its JSON type (`None`: no body, or not JSON).
    pub ok: (u16, Option<SchemaFn>),
}

fn s<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

fn root<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.root_schema_for::<T>()
}

/// Every route of `/api/v1`.
pub const ROUTES: &[RouteDoc] = &[
    RouteDoc {
        method: "get",
        path: "/api/v1/health",
        summary: "Whether the palace answers; the caller and the workspace.",
        query: None,
        body: None,
        ok: (200, Some(s::<api::Health>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/openapi.json",
        summary: "This document.",
        query: None,
        body: None,
        ok: (200, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/taxonomy",
        summary: "The palace map: wings and rooms with drawer counts.",
        query: None,
        body: None,
        ok: (200, Some(s::<api::TaxonomyView>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/drawers",
        summary: "Drawers of a wing and/or room, newest first, a page at a time; `status=hidden` lists superseded, deleted and archived ones.",
        query: Some(root::<api::DrawerListQuery>),
        body: None,
        ok: (200, Some(s::<api::DrawerList>)),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/drawers",
        summary: "File a drawer verbatim (201; 200 when the same text was already there).",
        query: None,
        body: Some(s::<api::NewDrawerBody>),
        ok: (201, Some(s::<api::Created>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/drawers/{id}",
        summary: "One drawer, whatever its status.",
        query: None,
        body: None,
        ok: (200, Some(s::<api::DrawerView>)),
    },
    RouteDoc {
        method: "patch",
        path: "/api/v1/drawers/{id}",
        summary: "Edit a drawer's text or place; its id stays.",
        query: None,
        body: Some(s::<api::DrawerPatch>),
        ok: (200, Some(s::<api::DrawerView>)),
    },
    RouteDoc {
        method: "delete",
        path: "/api/v1/drawers/{id}",
        summary: "Delete a drawer: hidden and restorable, or with `hard=true` removed.",
        query: Some(root::<api::DeleteQuery>),
        body: None,
        ok: (204, None),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/drawers/{id}/restore",
        summary: "Bring a deleted or archived drawer back.",
        query: None,
        body: None,
        ok: (200, Some(s::<api::DrawerView>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/search",
        summary: "Hybrid search, each result with its score breakdown.",
        query: Some(root::<api::SearchQuery>),
        body: None,
        ok: (200, Some(s::<api::SearchResults>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/kg/entities",
        summary: "Entities, most used first (facts and mentions), a page at a time; `q` filters by name.",
        query: Some(root::<api::EntityListQuery>),
        body: None,
        ok: (200, Some(s::<api::EntityList>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/kg/entities/{name}",
        summary: "An entity's facts, outgoing and incoming.",
        query: Some(root::<api::EntityQuery>),
        body: None,
        ok: (200, Some(s::<api::Facts>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/kg/timeline",
        summary: "Facts in time order, of one entity or all.",
        query: Some(root::<api::TimelineQuery>),
        body: None,
        ok: (200, Some(s::<api::Facts>)),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/kg/facts",
        summary: "Record a fact.",
        query: None,
        body: Some(s::<api::NewFact>),
        ok: (201, Some(s::<api::FactAdded>)),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/kg/invalidate",
        summary: "End a current fact.",
        query: None,
        body: Some(s::<api::Invalidate>),
        ok: (200, Some(s::<api::Invalidated>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/kg/stats",
        summary: "Knowledge-graph counts (MemPalace's kg_stats shape).",
        query: None,
        body: None,
        ok: (200, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/graph",
        summary: "The palace graph: rooms, tunnels, stats (MemPalace's graph_stats shape plus explicit tunnels).",
        query: None,
        body: None,
        ok: (200, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/diaries/{agent}",
        summary: "An agent's diary, newest first.",
        query: Some(root::<api::DiaryQuery>),
        body: None,
        ok: (200, Some(s::<api::Diary>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/sessions",
        summary: "Agent sessions, newest first.",
        query: None,
        body: None,
        ok: (200, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/episodes",
        summary: "Episodic summaries, newest first or ranked by a query.",
        query: Some(root::<api::EpisodeQuery>),
        body: None,
        ok: (200, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/episodes/{id}",
        summary: "An episode with the drawers it summarises.",
        query: None,
        body: None,
        ok: (200, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/jobs",
        summary: "The cold path and the background jobs: counts per state and tier, last runs.",
        query: None,
        body: None,
        ok: (200, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/conflicts",
        summary: "Drawers superseded by newer ones, and near-duplicates merged, with the drawer kept.",
        query: None,
        body: None,
        ok: (200, Some(s::<api::Conflicts>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/export",
        summary: "Everything the caller may read, as export JSONL (streamed).",
        query: None,
        body: None,
        ok: (200, None),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/import",
        summary: "Import export JSONL (the request body); existing records are left as they are.",
        query: None,
        body: None,
        ok: (200, Some(s::<api::Imported>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/whoami",
        summary: "Who is calling, and its workspaces and roles.",
        query: None,
        body: None,
        ok: (200, Some(s::<directory::WhoAmI>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/users",
        summary: "Users and agents (admins).",
        query: None,
        body: None,
        ok: (200, Some(s::<directory::Users>)),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/users",
        summary: "Add a user or agent (admins; the first one makes a team palace).",
        query: None,
        body: Some(s::<directory::NewUser>),
        ok: (201, Some(s::<directory::UserView>)),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/users/{id}/disable",
        summary: "Disable a user or agent: its tokens stop working (admins).",
        query: None,
        body: None,
        ok: (204, None),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/users/{id}/enable",
        summary: "Enable a disabled user or agent (admins).",
        query: None,
        body: None,
        ok: (204, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/tokens",
        summary: "Tokens, never their secrets (your own; admins: anyone's).",
        query: Some(root::<directory::TokenQuery>),
        body: None,
        ok: (200, Some(s::<directory::Tokens>)),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/tokens",
        summary: "Create a token; the answer holds it this once.",
        query: None,
        body: Some(s::<directory::NewToken>),
        ok: (201, Some(s::<directory::IssuedToken>)),
    },
    RouteDoc {
        method: "delete",
        path: "/api/v1/tokens/{id}",
        summary: "Revoke a token (its user or an admin).",
        query: None,
        body: None,
        ok: (204, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/teams",
        summary: "Teams (admins: all; others: their own).",
        query: None,
        body: None,
        ok: (200, Some(s::<directory::Teams>)),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/teams",
        summary: "Create a team: a leader who writes, members who read (admins).",
        query: None,
        body: Some(s::<directory::NewTeam>),
        ok: (201, Some(s::<directory::TeamView>)),
    },
    RouteDoc {
        method: "delete",
        path: "/api/v1/teams/{id}",
        summary: "Delete a team and its grants (admins).",
        query: None,
        body: None,
        ok: (204, None),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/teams/{id}/members",
        summary: "Add a member (the leader or an admin).",
        query: None,
        body: Some(s::<directory::TeamMember>),
        ok: (204, None),
    },
    RouteDoc {
        method: "delete",
        path: "/api/v1/teams/{id}/members/{user}",
        summary: "Remove a member (the leader or an admin).",
        query: None,
        body: None,
        ok: (204, None),
    },
    RouteDoc {
        method: "post",
        path: "/api/v1/workspaces",
        summary: "Create a shared workspace with the default limits; a user who creates one owns it.",
        query: None,
        body: Some(s::<directory::NewWorkspace>),
        ok: (201, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/workspaces/{id}/members",
        summary: "A workspace's members and roles.",
        query: None,
        body: None,
        ok: (200, Some(s::<directory::Members>)),
    },
    RouteDoc {
        method: "put",
        path: "/api/v1/workspaces/{id}/members/{member}",
        summary: "Give a user, agent or team:NAME a role (owners).",
        query: None,
        body: Some(s::<directory::RoleBody>),
        ok: (200, Some(s::<directory::MemberView>)),
    },
    RouteDoc {
        method: "delete",
        path: "/api/v1/workspaces/{id}/members/{member}",
        summary: "Take a member's role away (owners).",
        query: None,
        body: None,
        ok: (204, None),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/workspaces/{id}/limits",
        summary: "A workspace's limits and what it uses.",
        query: None,
        body: None,
        ok: (200, Some(s::<directory::LimitsView>)),
    },
    RouteDoc {
        method: "patch",
        path: "/api/v1/workspaces/{id}/limits",
        summary: "Change limits: a number, or null for none (owners).",
        query: None,
        body: Some(s::<directory::LimitsPatch>),
        ok: (200, Some(s::<directory::LimitsView>)),
    },
    RouteDoc {
        method: "get",
        path: "/api/v1/audit",
        summary: "The audit trail of writes and deletes, newest first (owners: their workspace; admins: all).",
        query: Some(root::<directory::AuditQuery>),
        body: None,
        ok: (200, Some(s::<directory::AuditTrail>)),
    },
];

/// The OpenAPI 3.0 document.
pub fn document() -> Value {
    let mut generator: SchemaGenerator = SchemaSettings::openapi3().into_generator();
    let problem = generator.subschema_for::<Problem>();
    let mut paths: Map<String, Value> = Map::new();
    for route in ROUTES {
        let mut operation = Map::new();
        operation.insert("summary".into(), json!(route.summary));
        let mut parameters: Vec<Value> = route
            .path
            .split('/')
            .filter_map(|part| part.strip_prefix('{').and_then(|p| p.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        if let Some(query) = route.query {
            let schema = query(&mut generator);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    let mut property = property.clone();
                    let description = property.as_object_mut().and_then(|p| p.remove("description"));
                    parameters.push(json!({
                        "name": name, "in": "query", "required": required.contains(&name.as_str()),
                        "description": description, "schema": property,
                    }));
                }
            }
        }
        if !parameters.is_empty() {
            operation.insert("parameters".into(), Value::Array(parameters));
        }
        if let Some(body) = route.body {
            let schema = body(&mut generator);
            operation.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/json": {"schema": schema}}}),
            );
        } else if route.path.ends_with("/import") {
            operation.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}),
            );
        }
        let (status, ok) = route.ok;
        let ok = match ok {
            Some(schema) => {
                json!({"description": "OK", "content": {"application/json": {"schema": schema(&mut generator)}}})
            }
            None if route.path.ends_with("/export") => {
                json!({"description": "export JSONL", "content": {"application/x-ndjson": {"schema": {"type": "string"}}}})
            }
            None if status == 204 || status == 201 => json!({"description": "done"}),
            None => json!({"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}),
        };
        let problem_response = json!({"description": "a problem (RFC 9457)", "content": {"application/problem+json": {"schema": problem.clone()}}});
        operation.insert("responses".into(), json!({ status.to_string(): ok, "default": problem_response }));
        let entry = paths.entry(route.path.to_string()).or_insert_with(|| json!({}));
        entry[route.method] = Value::Object(operation);
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "mempalace REST API",
            "version": "1",
            "description": "Persistent memory for agents: drawers, search with score breakdowns, the knowledge graph, \
                            and the palace's jobs. Authentication: `Authorization: Bearer <token>` (none on loopback); \
                            `Mempalace-Workspace` chooses the workspace. See docs/rest-api.md and docs/tenancy.md.",
        },
        "servers": [{"url": "/"}],
        "components": {
            "schemas": generator.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}, {}],
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The routes `lib.rs` serves under `/api/v1`, read from its source:
    /// (method, path) for every `get(`, `post(`, `.patch(` and `.delete(`
    /// on a `.route("/api/v1…"` line.
    fn served() -> BTreeSet<(String, String)> {
        let source = include_str!("lib.rs");
        let mut out = BTreeSet::new();
        for line in source.lines().map(str::trim).filter(|l| l.starts_with(".route(\"/api/v1")) {
            let path = line.split('"').nth(1).unwrap().to_string();
            for method in ["get", "post", "put", "patch", "delete"] {
                if line.contains(&format!(" {method}(")) || line.contains(&format!(".{method}(")) {
                    out.insert((method.to_string(), path.clone()));
                }
            }
        }
        out
    }

    #[test]
    fn every_served_route_is_documented_and_every_documented_route_served() {
        let documented: BTreeSet<(String, String)> =
            ROUTES.iter().map(|r| (r.method.to_string(), r.path.to_string())).collect();
        assert_eq!(served(), documented);
        assert_eq!(documented.len(), ROUTES.len(), "each route once");
    }

    #[test]
    fn the_document_references_only_schemas_it_defines() {
        let document = document();
        let text = document.to_string();
        let defined = document["components"]["schemas"].as_object().unwrap();
        for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = piece.split('"').next().unwrap();
            assert!(defined.contains_key(name), "{name} is referenced but not defined");
        }
        for route in ROUTES {
            let operation = &document["paths"][route.path][route.method];
            assert!(operation["responses"]["default"].is_object(), "{} {}", route.method, route.path);
            assert_eq!(operation["summary"], route.summary);
        }
        let list = &document["paths"]["/api/v1/drawers"]["get"]["parameters"];
        let mut names: Vec<&str> = list.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        names.sort_unstable();
        assert_eq!(names, ["limit", "offset", "room", "status", "wing"]);
    }
}
