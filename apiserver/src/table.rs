//! Server-side tables (being written).
