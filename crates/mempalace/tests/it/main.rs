//! The binary crate's one integration-test binary: the CLI driven as a
//! subprocess, and repository-wide tidiness checks.

mod cli;
mod tidy;
