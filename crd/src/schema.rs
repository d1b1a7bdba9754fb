//! Structural schemas of CRD versions (being written).
