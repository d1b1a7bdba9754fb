//! Protobuf request bodies (being written).
