//! The embed crate's one integration-test binary: the real models, and the
//! remote providers against a local server that speaks their protocols.

mod models;
#[cfg(feature = "remote")]
mod remote;
