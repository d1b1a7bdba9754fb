//! kspaces CRD support: the CRD registry, structural schema validation, defaulting and pruning, and
//! system-CRD sharing-policy resolution. Pure: fed CRD objects, does no IO.
//!
//! Nothing is here yet: CustomResourceDefinitions arrive with the CRD issue. The crate exists so that the
//! workspace layout (and the dependency direction `apiserver` → `crd`) is fixed from the start.
