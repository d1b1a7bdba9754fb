//! OpenAPI v2 and v3 documents (being written).
