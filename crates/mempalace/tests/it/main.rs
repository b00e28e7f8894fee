//! The binary crate's one integration-test binary: the CLI and the MCP server driven as a
//! subprocess through one harness (on both stores), and repository-wide tidiness checks.

// Tests take their setup (model directory, shared data, servers) from the
// environment that scripts/test.sh prepares.
#![allow(clippy::disallowed_methods)]

mod harness;

// Oversized, non-UTF-8, deeply nested and mistyped input over REST, MCP HTTP and stdio.
mod bad_input;
mod cli;
mod consolidation;
mod coordination;
// Commands killed mid-run resume to the state of an uninterrupted run.
mod crash;
mod hook;
mod llm;
mod mcp;
mod memories;
mod memory_files;
mod migrate;
mod mine;
mod rest;
mod schedule;
// A team palace through every surface.
mod tenancy;
// Runs the binary against PostgreSQL: needs a build with the `postgres` feature.
#[cfg(feature = "postgres")]
mod store;
mod tidy;
mod verbs;
// The web UI in headless Chromium (Selenium), with screenshots.
mod web_ui;
