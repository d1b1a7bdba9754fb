//! The etcd backend (being written).
