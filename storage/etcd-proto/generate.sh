#!/usr/bin/env bash
# Regenerates storage/src/etcd/proto/*.rs (the etcd v3 gRPC client code) from proto/. Needs no protoc.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cargo run --quiet --manifest-path "$here/Cargo.toml" --target-dir "${CARGO_TARGET_DIR:-$here/../../target}/etcd-proto"
