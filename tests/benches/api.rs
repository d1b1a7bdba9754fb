//! API server benchmark (being written).
fn main() {}
