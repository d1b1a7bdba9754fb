//! Background controllers that run inside the server.

pub mod namespace;
