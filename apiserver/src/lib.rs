//! The kspaces API server: the only crate that knows actix-web, rustls, clap and HTTP status codes.
//!
//! A request flows through [`chain`]: authenticate, parse ([`apis::request_info`]), resolve the space,
//! authorize, resolve the resource ([`registry`]), then the verb [`handlers`] decode, validate and store.

pub mod aggregator;
pub mod api_server;
pub mod apis;
pub mod audit;
pub mod authorization;
pub mod builtin;
pub mod chain;
pub mod claims;
pub mod config;
pub mod controllers;
pub mod decode;
pub mod discovery;
pub mod fieldmanager;
pub mod filters;
pub mod flowcontrol;
#[doc(hidden)]
pub mod fuzzing;
pub mod handlers;
pub mod kinds;
pub mod kubeconfig;
pub mod metrics;
pub mod negotiate;
pub mod openapi;
pub mod outbound;
pub mod patch;
pub mod pki;
pub mod platform;
pub mod plugins;
pub mod protobuf;
pub mod quota;
pub mod registry;
pub mod resolver;
pub mod routes;
pub mod server;
pub mod snapshot;
pub mod status;
pub mod table;
pub mod tenancy;
pub mod virtual_workspace;
