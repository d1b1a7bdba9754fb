//! Patching: JSON patch, JSON merge patch and strategic merge patch (being written).

pub mod json;
pub mod strategic;
