//! kspaces CRD support, pure (fed CRD objects, does no IO):
//! - `definition`: a CustomResourceDefinition parsed and validated once per write, with kube's defaults;
//! - `structural`: structural schemas of CRD versions: validation (OpenAPI v3 subset and CEL
//!   `x-kubernetes-validations`), defaulting and pruning;
//! - `sharing`: which definition serves a resource in a space (forced system CRDs, then the space's
//!   `crdPolicy`);
//! - `cost`: the estimated cost of CEL rules, checked against kube's static limits when a CRD is written and
//!   against its runtime budget before an object's rules run;
//! - `field`: the field errors every check reports, in Kubernetes' `field.Error` shape;
//! - `columns` and `jsonpath`: a version's printer columns, parsed once, and the JSONPath subset they use.

pub mod columns;
pub mod cost;
pub mod definition;
pub mod field;
pub mod jsonpath;
pub mod structural;
pub mod sharing;

pub use definition::Definition;
pub use field::FieldError;
pub use sharing::CrdPolicy;
