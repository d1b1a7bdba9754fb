//! Every non-resource route in one table: version, health, metrics, discovery, OpenAPI and the service-account
//! issuer's OIDC documents. Paths are classified by `apis::route` (resource URLs by `apis::request_info`); resources are served by `handlers`.
//!
//! Who may call them: anyone the public ones (version, health); every authenticated user discovery and OpenAPI
//! (of their own space); only system users the server-wide ones (`/metrics`, `/debug/*`, `/snapshot`), which show every
//! tenant's activity. The chain (`chain.rs`) enforces it.

use actix_web::http::header;
use actix_web::HttpResponse;
use serde_json::json;

use crate::discovery;
use crate::negotiate::parse_accept;
use crate::registry::ResourceTable;
use crate::openapi::OpenApi;
use crate::api_server::ApiServer;
use crate::status::{ApiError, ApiResult};

/// Reported by `/version`: within kubectl 1.32's skew, and the version k8s-openapi's types describe.
pub const KUBERNETES_VERSION: &str = "v1.33.4";

pub use crate::apis::route::{route, Route, SERVER_WIDE_REASON};

fn json(body: serde_json::Value) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(body.to_string())
}

pub fn version() -> serde_json::Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": KUBERNETES_VERSION,
        "gitCommit": "kspaces",
        "gitTreeState": "clean",
        "buildDate": "2026-11-01T00:00:00Z",
        "goVersion": "rust",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if std::env::consts::ARCH == "x86_64" { "amd64" } else { std::env::consts::ARCH }),
    })
}

fn health(path: &str, verbose: bool) -> HttpResponse {
    let name = path.trim_start_matches('/').split('/').next().unwrap_or("healthz");
    let body = if verbose {
        format!("[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/start-kspaces ok\n{name} check passed\n")
    } else {
        "ok".to_owned()
    };
    HttpResponse::Ok().content_type("text/plain; charset=utf-8").insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff")).body(body)
}

/// The gnostic protobuf media type of `/openapi/v2`; kubectl 1.32 asks for the older `@v1.0` spelling.
const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const OPENAPI_V2_PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// Which `/openapi/v2` form `accept` asks for, as kube-openapi negotiates: the first clause (by preference) that
/// names JSON or either protobuf spelling, a wildcard meaning JSON; `None` (406, empty body) when none does.
fn openapi_v2_form(accept: Option<&str>) -> Option<bool> {
    let header = accept.filter(|a| !a.trim().is_empty()).unwrap_or("*/*");
    let forms = [("application/json", false), (OPENAPI_V2_PROTOBUF_DEPRECATED, true), (OPENAPI_V2_PROTOBUF, true)];
    parse_accept(header).iter().find_map(|media| {
        let (kind, subtype) = media.essence.split_once('/').unwrap_or((media.essence.as_str(), ""));
        forms.iter().find_map(|(form, protobuf)| {
            let (form_kind, form_subtype) = form.split_once('/').unwrap_or_default();
            let fits = (kind == form_kind || kind == "*") && (subtype == form_subtype || subtype == "*");
            fits.then_some(*protobuf)
        })
    })
}

/// `/openapi/v2` in JSON or as gnostic protobuf, with kube-openapi's headers.
fn openapi_v2(openapi: &OpenApi, accept: Option<&str>) -> HttpResponse {
    let (body, content_type) = match openapi_v2_form(accept) {
        Some(false) => (openapi.v2_json(), "application/json"),
        Some(true) => (openapi.v2_protobuf(), OPENAPI_V2_PROTOBUF),
        None => return HttpResponse::NotAcceptable().insert_header((header::VARY, "Accept")).finish(),
    };
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::VARY, "Accept"))
        .insert_header((header::ETAG, OpenApi::etag(&body)))
        .body(body)
}

/// Serves a non-resource request; discovery shows the resources of `table` and OpenAPI `openapi` (what the
/// caller's space serves).
pub fn serve(server: &ApiServer, table: &ResourceTable, openapi: &OpenApi, route: Route, accept: Option<&str>, query: &str, host: &str) -> ApiResult<HttpResponse> {
    match route {
        Route::Version => Ok(json(version())),
        Route::Health(path) => Ok(health(&path, query.split('&').any(|p| p == "verbose" || p.starts_with("verbose=")))),
        Route::Metrics => Ok(HttpResponse::Ok().content_type(crate::metrics::CONTENT_TYPE).body(server.metrics.render())),
        Route::Debug => Err(ApiError::no_route()),
        Route::Api | Route::Apis => {
            let core = route == Route::Api;
            if let Some(version) = discovery::aggregated_version(accept) {
                let body = discovery::aggregated(table, &server.aggregator.remote(), core, &version);
                return Ok(HttpResponse::Ok()
                    .content_type(format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"))
                    .body(body.to_string()));
            }
            Ok(json(if core { discovery::api_versions(host) } else { discovery::api_group_list(table, &server.aggregator.remote()) }))
        }
        Route::Group(group) => discovery::api_group_document(table, &server.aggregator.remote(), &group).map(json).ok_or_else(ApiError::no_route),
        Route::GroupVersion(group, version) => {
            discovery::api_resource_list(table, &group, &version).map(json).ok_or_else(ApiError::no_route)
        }
        Route::OpenApiV2 => Ok(openapi_v2(openapi, accept)),
        Route::OpenApiV3Index => Ok(json(server.aggregator.with_openapi_v3(openapi.v3_index()))),
        Route::OpenApiV3(path) => {
            let (body, hash) = openapi.v3_document(&path).ok_or_else(ApiError::no_route)?;
            let immutable = query.split('&').any(|p| p == format!("hash={hash}"));
            let cache = if immutable { "public, immutable" } else { "no-cache, private" };
            Ok(HttpResponse::Ok()
                .content_type("application/json")
                .insert_header((header::ETAG, format!("\"{hash}\"")))
                .insert_header((header::CACHE_CONTROL, cache))
                .body(body))
        }
        Route::OpenIdConfiguration => Ok(json(server.authenticator.issuer.openid_configuration())),
        Route::Jwks => Ok(HttpResponse::Ok().content_type("application/jwk-set+json").body(server.authenticator.issuer.jwks().to_string())),
        // Served by the chain once authorized (`snapshot::serve`): it reads the request body.
        Route::Snapshot => Err(ApiError::no_route()),
        Route::NotFound => Err(ApiError::no_route()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_table() {
        let cases = [
            ("/version", Route::Version),
            ("/readyz", Route::Health("/readyz".into())),
            ("/livez/ping", Route::Health("/livez/ping".into())),
            ("/api", Route::Api),
            ("/api/v1", Route::GroupVersion(String::new(), "v1".into())),
            ("/apis/", Route::Apis),
            ("/apis/apps", Route::Group("apps".into())),
            ("/apis/apps/v1", Route::GroupVersion("apps".into(), "v1".into())),
            ("/openapi/v3/apis/apps/v1", Route::OpenApiV3("apis/apps/v1".into())),
            ("/openapi/v2", Route::OpenApiV2),
            ("/.well-known/openid-configuration", Route::OpenIdConfiguration),
            ("/openid/v1/jwks/", Route::Jwks),
            ("/metrics", Route::Metrics),
            ("/snapshot", Route::Snapshot),
            ("/metrics/slis", Route::Debug),
            ("/debug/pprof/heap", Route::Debug),
            ("/nope", Route::NotFound),
        ];
        for (path, expected) in cases {
            assert_eq!(route(path), expected, "{path}");
        }
        assert!(route("/healthz").is_public() && !route("/api").is_public());
        assert!(route("/metrics").is_server_wide() && route("/debug/flags/v").is_server_wide() && route("/snapshot").is_server_wide());
        assert!(!route("/apis").is_server_wide() && !route("/version").is_server_wide() && !route("/nope").is_server_wide());
    }

    #[test]
    fn openapi_v2_negotiation_follows_kube_openapi() {
        let rows = [
            (None, Some(false)),
            (Some("application/json"), Some(false)),
            (Some("*/*"), Some(false)),
            (Some("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"), Some(true)),
            (Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf"), Some(true)),
            (Some("application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json"), Some(true)),
            (Some("application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"), Some(true)),
            (Some("application/application/vnd.kubernetes.protobuf"), None),
            (Some("text/html"), None),
        ];
        for (accept, expected) in rows {
            assert_eq!(openapi_v2_form(accept), expected, "{accept:?}");
        }
    }
}
