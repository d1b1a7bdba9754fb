//! Regenerates the etcd v3 client code checked in under `storage/src/etcd/proto/`.
//!
//! Only the three packages the KV and Watch services need are written (`etcdserverpb`, `mvccpb`, `authpb`);
//! the other imported files (`google.api`, `grpc-gateway` and `versionpb` options) carry annotations only.

use std::path::Path;

/// The files whose packages are generated; everything they import is read but not written.
const FILES: [&str; 3] =
    ["etcd/api/etcdserverpb/rpc.proto", "etcd/api/mvccpb/kv.proto", "etcd/api/authpb/auth.proto"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = here.join("../src/etcd/proto");
    let mut set = protox::compile(FILES, [here.join("proto")])?;
    set.file.retain(|file| FILES.contains(&file.name()));
    std::fs::create_dir_all(&out)?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_transport(false)
        .emit_rerun_if_changed(false)
        .out_dir(&out)
        .compile_fds(set)?;
    for file in std::fs::read_dir(&out)? {
        println!("wrote {}", file?.path().display());
    }
    Ok(())
}
