//! The kspaces API server: the only crate that knows actix-web, rustls, clap and HTTP status codes.

pub mod openapi;
pub mod patch;
pub mod registry;
pub mod table;
