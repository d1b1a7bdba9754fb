//! The generic registry: one store implementation serving every resource from the resource table.

pub mod builtin;
pub mod resource;

pub use resource::{ResourceInfo, Subresource};
