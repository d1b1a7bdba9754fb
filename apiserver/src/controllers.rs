//! Background controllers that run inside the server.

pub mod compaction;
pub mod namespace;
pub mod tenant;
