//! The vocabulary every layer speaks, as Kubernetes' `pkg/apis` beside its `pkg/registry` and kcp's `sdk/apis`:
//! what a request asks for (`RequestInfo`, its query), the names, annotations, labels and hashes of kcp's and
//! kspaces' own kinds, and the names of the virtual workspaces' lifecycles. It holds no rules and no state, and
//! imports nothing above the registry's parsers: the kinds, tenancy, the resolver, claims, quota, filters and
//! the chain all read it, and it reads none of them.

pub mod kcp;
pub mod lifecycle;
pub mod pods;
pub mod query;
pub mod request_info;
pub mod route;
