//! The generic registry: one store implementation serving every resource from the resource table.

pub mod builtin;
pub mod defaults;
pub mod fields;
pub mod deletion;
pub mod managed;
pub mod resource;
pub mod selector;
pub mod store;
pub mod table;
pub mod validate;

pub use managed::WriteContext;
pub use resource::{Custom, ResourceInfo, Subresource};
pub use store::{GenericStore, Scope, Spaces};
pub use table::ResourceTable;
