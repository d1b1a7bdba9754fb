//! One request to an aggregated API's server, over HTTPS to the `<service>.<namespace>.svc` name its certificate
//! must hold (trusted by the APIService's `caBundle`, or not checked with `insecureSkipTLSVerify`), presenting
//! `--proxy-client-cert-file` when it asks. The caller's credentials are not forwarded: kube's front-proxy headers
//! say who it is (`X-Remote-User`, one `X-Remote-Group` per group, `X-Remote-Extra-<key>` per extra value, the key
//! percent-encoded), and any such header the client sent is dropped. The answer is passed back as it came: sized
//! ones whole, others (a watch) streamed as they arrive. Connections are kept for the next request (`outbound::pool`,
//! by the APIService's TLS settings, address and certificate name) once an answer was read whole.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use actix_web::http::header::HeaderMap;
use actix_web::{HttpResponse, HttpResponseBuilder};
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, BodyStream, Full, Limited};
use kspaces_authz::{Caller, TENANT_EXTRA};
use serde_json::Value;

use crate::authorization::webhook::SPACE_EXTRA_KEY;
use crate::kinds::api_service::ApiService;
use crate::outbound::pool::Key;
use crate::outbound::{self, Kept};
use crate::status::{ApiError, ApiResult};

/// How long connecting and the TLS handshake may take (kube's dialer: 30 s).
const CONNECT_WITHIN: Duration = Duration::from_secs(30);

/// The largest sized answer passed back whole (larger ones, or unsized ones, are streamed).
const WHOLE_ANSWER_BYTES: u64 = 16 << 20;

/// What is forwarded.
pub struct Forward<'a> {
    /// The group-version's path (`/apis/<group>/<version>/...`), percent-encoded.
    pub path: String,
    pub query: &'a str,
    pub method: actix_web::http::Method,
    /// The client's headers; those about its credentials or its connection are dropped.
    pub headers: &'a HeaderMap,
    pub body: Bytes,
    pub caller: &'a Caller,
    /// The workspace path of the request's space (none: every space).
    pub space: Option<&'a str>,
}

/// Sends `forward` to `address`, `api`'s server, and answers with what it answers.
pub async fn forward(address: &str, api: &ApiService, forward: Forward<'_>) -> ApiResult<HttpResponse> {
    let unreachable = |why: String| ApiError::service_unavailable(format!("error trying to reach service: {why}"));
    let target = if forward.query.is_empty() { forward.path.clone() } else { format!("{}?{}", forward.path, forward.query) };
    let mut request = http::Request::builder().method(forward.method.as_str()).uri(target).header(http::header::HOST, server_name(api));
    for (name, value) in forward.headers.iter().filter(|(name, _)| forwarded(name.as_str())) {
        request = request.header(name.as_str(), value.as_bytes());
    }
    for (name, value) in identity(forward.caller, forward.space) {
        request = request.header(name, value);
    }
    let request = request.body(Full::new(forward.body)).map_err(|e| ApiError::bad_request(format!("the request cannot be forwarded: {e}")))?;
    let (answer, kept) = send(address, api, request).await.map_err(unreachable)?;
    respond(answer, kept).await.map_err(unreachable)
}

/// GETs `/apis/<group>/<version>` of `api`'s server at `address` as the server itself (no user), within
/// `within`: its `APIResourceList`, or why there is none.
pub async fn discover(address: &str, api: &ApiService, within: Duration) -> Result<Value, String> {
    let ask = async {
        let path = format!("/apis/{}/{}", api.group, api.version);
        let request = http::Request::builder().method("GET").uri(path).header(http::header::HOST, server_name(api))
            .header(http::header::ACCEPT, "application/json").body(Full::new(Bytes::new())).map_err(|e| e.to_string())?;
        let (answer, kept) = send(address, api, request).await?;
        let code = answer.status().as_u16();
        let body = Limited::new(answer.into_body(), WHOLE_ANSWER_BYTES as usize).collect().await.map_err(|e| e.to_string())?.to_bytes();
        kept.keep();
        if !(200..300).contains(&code) {
            return Err(format!("bad status from https://{address}/apis/{}/{}: {code}", api.group, api.version));
        }
        let list: Value = serde_json::from_slice(&body).map_err(|e| format!("the answer is not an APIResourceList: {e}"))?;
        match list.get("resources") {
            Some(Value::Array(_)) => Ok(list),
            _ => Err("the answer is not an APIResourceList: no resources".to_owned()),
        }
    };
    match tokio::time::timeout(within, ask).await {
        Ok(answer) => answer,
        Err(_) => Err(format!("failing or missing response from https://{address}/apis/{}/{}: context deadline exceeded", api.group, api.version)),
    }
}

/// The name the server's certificate must hold: `<service>.<namespace>.svc`.
fn server_name(api: &ApiService) -> String {
    api.service.as_ref().map(|s| format!("{}.{}.svc", s.name, s.namespace)).unwrap_or_default()
}

/// Sends `request` to `address` (`ip:port`), `api`'s server, over a kept connection when there is one.
async fn send(address: &str, api: &ApiService, request: http::Request<Full<Bytes>>) -> Result<(http::Response<hyper::body::Incoming>, Kept), String> {
    let tls = api.tls.as_ref().map_err(Clone::clone)?;
    let socket: SocketAddr = address.parse().map_err(|e| format!("dial tcp {address}: {e}"))?;
    let key = Key { tls: tls.id(), host: socket.ip().to_string(), port: socket.port(), server_name: server_name(api) };
    outbound::send_kept(key, tls, &|_| true, request, CONNECT_WITHIN).await
}

/// Whether a client's header goes on: not its credentials, not front-proxy headers it made up, not what
/// describes its own connection.
fn forwarded(name: &str) -> bool {
    const DROPPED: &[&str] = &["host", "authorization", "connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
        "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "content-length"];
    let name = name.to_ascii_lowercase();
    !DROPPED.contains(&name.as_str()) && !name.starts_with("impersonate-") && !name.starts_with("x-remote-")
}

/// The front-proxy headers naming `caller`; its tenant and the request's space are among the extra, whatever
/// its credentials said they were.
fn identity(caller: &Caller, space: Option<&str>) -> Vec<(String, String)> {
    let user = &caller.user;
    let mut headers = vec![("X-Remote-User".to_owned(), user.name.clone())];
    headers.extend(user.groups.iter().map(|group| ("X-Remote-Group".to_owned(), group.clone())));
    let mut extra: BTreeMap<&str, Vec<&str>> = user.extra.iter().map(|(key, values)| (key.as_str(), values.iter().map(String::as_str).collect())).collect();
    extra.remove(TENANT_EXTRA);
    extra.remove(SPACE_EXTRA_KEY);
    if let Some(tenant) = caller.tenant.as_deref() {
        extra.insert(TENANT_EXTRA, vec![tenant]);
    }
    if let Some(space) = space {
        extra.insert(SPACE_EXTRA_KEY, vec![space]);
    }
    for (key, values) in extra {
        let name = format!("X-Remote-Extra-{}", escape_key(key));
        headers.extend(values.into_iter().map(|value| (name.clone(), value.to_owned())));
    }
    // A value no header may carry (a control character) is left out rather than failing the request.
    headers.retain(|(_, value)| http::HeaderValue::from_str(value).is_ok());
    headers
}

/// An extra key as a header name's tail: every byte that is not a token character, and `%`, percent-encoded (as
/// kube escapes it, so `kspaces.io/tenant` is `kspaces.io%2ftenant`).
fn escape_key(key: &str) -> String {
    let mut escaped = String::with_capacity(key.len());
    for byte in key.bytes() {
        let token = byte.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&byte);
        if token {
            escaped.push(byte as char);
        } else {
            escaped.push_str(&format!("%{byte:02x}"));
        }
    }
    escaped
}

/// The backend's answer as the client's: its status and headers (but those about its connection), its body whole
/// when sized and small, else streamed.
async fn respond(answer: http::Response<hyper::body::Incoming>, kept: Kept) -> Result<HttpResponse, String> {
    let status = actix_web::http::StatusCode::from_u16(answer.status().as_u16()).map_err(|e| e.to_string())?;
    let mut response = HttpResponseBuilder::new(status);
    for (name, value) in answer.headers().iter().filter(|(name, _)| forwarded(name.as_str())) {
        if let Ok(value) = actix_web::http::header::HeaderValue::from_bytes(value.as_bytes()) {
            response.append_header((name.as_str(), value));
        }
    }
    let sized = answer.headers().get(http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if sized.is_some_and(|length| length <= WHOLE_ANSWER_BYTES) {
        let body = answer.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
        kept.keep();
        return Ok(response.body(body));
    }
    // Passed on as it comes: the server's compression would hold a watch's events back.
    if !answer.headers().contains_key(http::header::CONTENT_ENCODING) {
        response.insert_header((actix_web::http::header::CONTENT_ENCODING, "identity"));
    }
    let frames = BodyStream::new(answer.into_body()).filter_map(|frame| async move {
        match frame {
            Ok(frame) => frame.into_data().ok().map(Ok::<Bytes, hyper::Error>),
            Err(error) => Some(Err(error)),
        }
    });
    Ok(response.streaming(frames))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kspaces_authz::UserInfo;

    #[test]
    fn the_backend_learns_who_asks_and_nothing_the_client_made_up() {
        let mut user = UserInfo::authenticated("alice".into(), String::new(), vec!["devs".into()], Some("t-a".into()));
        user.extra.insert(TENANT_EXTRA.into(), vec!["forged".into()]);
        user.extra.insert("scopes.example/x y".into(), vec!["a".into(), "bad\u{1}".into()]);
        let caller = Caller { user, tenant: Some("t-a".into()), system: false };
        let headers = identity(&caller, Some("root:t-a"));
        let shown: Vec<String> = headers.iter().map(|(name, value)| format!("{name}: {value}")).collect();
        assert_eq!(shown, ["X-Remote-User: alice", "X-Remote-Group: devs", "X-Remote-Group: system:authenticated",
            "X-Remote-Extra-kspaces.io%2fspace: root:t-a", "X-Remote-Extra-kspaces.io%2ftenant: t-a", "X-Remote-Extra-scopes.example%2fx%20y: a"]);
        assert!(!forwarded("X-Remote-User") && !forwarded("Authorization") && !forwarded("Impersonate-User") && forwarded("Accept"));
    }
}
