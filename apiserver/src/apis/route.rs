//! Which non-resource route a path names, and who may call it: the vocabulary the chain, the access reviews and
//! the virtual workspaces judge paths by (`routes.rs` serves them).

/// Why a user who is not a system user may not call a server-wide endpoint (the 403's reason).
pub const SERVER_WIDE_REASON: &str = "it shows the whole server and is served to system users only";

/// A non-resource route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Version,
    Health(String),
    Metrics,
    /// `/debug/...` and `/metrics/...` (kube's pprof, flags, SLIs): not served, but server-wide like `/metrics`.
    Debug,
    Api,
    Apis,
    Group(String),
    GroupVersion(String, String),
    OpenApiV2,
    OpenApiV3Index,
    OpenApiV3(String),
    /// `/.well-known/openid-configuration`: service-account token discovery (OIDC).
    OpenIdConfiguration,
    /// `/openid/v1/jwks`: the keys that verify service-account tokens.
    Jwks,
    /// `/snapshot`: the whole store at one revision, as `kspaces snapshot save --kubeconfig` reads it.
    Snapshot,
    NotFound,
}

/// Maps a path (without any `/clusters/<path>` prefix) to its route.
pub fn route(path: &str) -> Route {
    let trimmed = path.trim_end_matches('/');
    let parts: Vec<&str> = trimmed.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz", ..] => Route::Health(trimmed.to_owned()),
        ["metrics"] => Route::Metrics,
        ["debug", ..] | ["metrics", ..] => Route::Debug,
        ["api"] => Route::Api,
        ["api", version] => Route::GroupVersion(String::new(), (*version).to_owned()),
        ["apis"] => Route::Apis,
        ["apis", group] => Route::Group((*group).to_owned()),
        ["apis", group, version] => Route::GroupVersion((*group).to_owned(), (*version).to_owned()),
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Index,
        ["openapi", "v3", rest @ ..] if !rest.is_empty() => Route::OpenApiV3(rest.join("/")),
        [".well-known", "openid-configuration"] => Route::OpenIdConfiguration,
        ["openid", "v1", "jwks"] => Route::Jwks,
        ["snapshot"] => Route::Snapshot,
        _ => Route::NotFound,
    }
}

impl Route {
    /// Routes anonymous users may call (kube's `system:public-info-viewer`).
    pub fn is_public(&self) -> bool {
        matches!(self, Route::Version | Route::Health(_))
    }

    /// Endpoints that expose server-wide state (every tenant's request counts, CRD groups, timings): authorized
    /// in the system space, for system users only.
    pub fn is_server_wide(&self) -> bool {
        matches!(self, Route::Metrics | Route::Debug | Route::Snapshot)
    }

    /// Discovery and OpenAPI: what every authenticated user may read (kube's `system:discovery`), served even to
    /// a user with no space to judge them in, so that kubectl gets as far as the real refusal.
    pub fn is_discovery(&self) -> bool {
        matches!(self, Route::Api | Route::Apis | Route::Group(_) | Route::GroupVersion(..) | Route::OpenApiV2
            | Route::OpenApiV3Index | Route::OpenApiV3(_))
    }
}
