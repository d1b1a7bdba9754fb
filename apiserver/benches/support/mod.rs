//! What the in-process benches that write through the registry share: the server's allocator, the process's CPU
//! time, and a registry primed over a store with tenant `t1` made.

use std::time::Duration;

use kspaces_apiserver::config::AuthorizationMode;
use kspaces_apiserver::registry::{Scope, WriteContext, SERVER_MANAGER};
use kspaces_apiserver::server::Core;
use kspaces_storage::{SpaceName, Store};
use serde_json::json;

// The server's allocator (`src/main.rs`): the write path allocates on every step, and glibc's malloc would be
// most of these figures instead of the server's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The process's CPU time (user + system) so far.
pub fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks: u64 = [11, 12].iter().filter_map(|i| fields.get(*i)?.parse::<u64>().ok()).sum();
    Duration::from_millis(ticks * 10)
}

/// The registry and its caches over `store`, primed, with the tenants `system` and `t1` made by the server.
pub async fn core_with_t1(store: Store) -> Core {
    let core = Core::new(store, vec![AuthorizationMode::Rbac]);
    core.prime().await.unwrap_or_else(|e| panic!("{e}"));
    let tenants = core.resources.by_kind("", "Tenant").cloned().unwrap_or_else(|| panic!("no Tenant"));
    let (system, server) = (Scope::one(SpaceName::system(), None), WriteContext::server(SERVER_MANAGER, ""));
    for tenant in ["system", "t1"] {
        core.registry.create(&tenants, &system, json!({"metadata": {"name": tenant}}), &server).await.unwrap_or_else(|e| panic!("{e}"));
    }
    core
}
