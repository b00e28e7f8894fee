//! The binary crate's one integration-test binary: the CLI and the MCP server driven as a
//! subprocess, and repository-wide tidiness checks.

mod cli;
mod hook;
mod mcp;
mod migrate;
mod mine;
mod store;
mod tidy;
