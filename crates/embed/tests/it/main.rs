//! The embed crate's one integration-test binary: the real models, model
//! downloads and the remote providers against local servers that speak
//! their protocols.

// Tests take their setup (model directory) from the environment that
// scripts/test.sh prepares.
#![allow(clippy::disallowed_methods)]

mod fetch;
mod models;
#[cfg(feature = "remote")]
mod remote;
