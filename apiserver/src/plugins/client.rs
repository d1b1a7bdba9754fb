//! The plugins' HTTP calls: kube's client (the kubeconfig's credentials and TLS settings) rooted at the server's
//! base URL, each call naming its workspace by an absolute `/clusters/<path>/...` request path, as kcp's cluster-
//! aware clientset does.

use std::path::Path;

use http::header::{ACCEPT, CONTENT_TYPE};
use http::Method;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::api::{ApiBinding, ApiExport, List, Workspace};
use super::path::WorkspacePath;

const WORKSPACES: &str = "apis/tenancy.kcp.io/v1alpha1/workspaces";
const API_BINDINGS: &str = "apis/apis.kcp.io/v1alpha1/apibindings";
const API_EXPORTS: &str = "apis/apis.kcp.io/v1alpha1/apiexports";

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error: its `Status` (message printed as client-go prints it).
    #[error("{}", api_message(*.code, .message))]
    Api { code: u16, reason: String, message: String },
    #[error("{0}")]
    Connection(String),
    #[error("unexpected answer to {path}: {message}")]
    Decode { path: String, message: String },
}

/// The `Status` message, or client-go's words for a status without one.
fn api_message(code: u16, message: &str) -> String {
    if !message.is_empty() {
        return message.to_owned();
    }
    match code {
        401 => "the server has asked for the client to provide credentials".to_owned(),
        403 => "the server does not allow access to the requested resource".to_owned(),
        404 => "the server could not find the requested resource".to_owned(),
        409 => "the server reported a conflict".to_owned(),
        _ => format!("the server responded with status {code}"),
    }
}

impl ClientError {
    fn code(&self) -> Option<u16> {
        match self {
            ClientError::Api { code, .. } => Some(*code),
            _ => None,
        }
    }
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }
    pub fn is_forbidden(&self) -> bool {
        self.code() == Some(403)
    }
    pub fn is_already_exists(&self) -> bool {
        matches!(self, ClientError::Api { code: 409, reason, .. } if reason == "AlreadyExists")
    }
}

impl From<kube::Error> for ClientError {
    fn from(error: kube::Error) -> ClientError {
        match error {
            kube::Error::Api(status) => ClientError::Api { code: status.code, reason: status.reason, message: status.message },
            other => ClientError::Connection(other.to_string()),
        }
    }
}

/// A client of one server, addressing any workspace on it.
#[derive(Clone)]
pub struct KcpClient {
    client: kube::Client,
}

impl KcpClient {
    /// A client with context `context`'s user and cluster settings from `kubeconfig`, sending to `base` (the server
    /// URL up to `/clusters/`).
    pub async fn connect(kubeconfig: &Path, context: &str, base: &str) -> Result<KcpClient, ClientError> {
        let connection = |e: &dyn std::fmt::Display| ClientError::Connection(e.to_string());
        let file = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| connection(&e))?;
        let options = kube::config::KubeConfigOptions { context: Some(context.to_owned()), ..Default::default() };
        let mut config = kube::Config::from_custom_kubeconfig(file, &options).await.map_err(|e| connection(&e))?;
        config.cluster_url = base.parse().map_err(|e| connection(&e))?;
        let client = kube::Client::try_from(config)?;
        Ok(KcpClient { client })
    }

    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, ClientError> {
        let mut request = http::Request::builder().method(method).uri(path).header(ACCEPT, "application/json");
        let bytes = match body {
            Some(body) => {
                request = request.header(CONTENT_TYPE, "application/json");
                serde_json::to_vec(body).map_err(|e| ClientError::Decode { path: path.to_owned(), message: e.to_string() })?
            }
            None => Vec::new(),
        };
        let request = request.body(bytes).map_err(|e| ClientError::Connection(format!("{path}: {e}")))?;
        let text = self.client.request_text(request).await?;
        serde_json::from_str(&text).map_err(|e| ClientError::Decode { path: path.to_owned(), message: e.to_string() })
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        decode(path, self.call(Method::GET, path, None).await?)
    }

    /// Workspace `name` in workspace `parent` (`~` in `root` is the caller's home).
    pub async fn workspace(&self, parent: &WorkspacePath, name: &str) -> Result<Workspace, ClientError> {
        self.get(&format!("/clusters/{parent}/{WORKSPACES}/{}", segment(name))).await
    }

    /// The workspaces in workspace `parent`.
    pub async fn workspaces(&self, parent: &WorkspacePath) -> Result<Vec<Workspace>, ClientError> {
        Ok(self.get::<List<Workspace>>(&format!("/clusters/{parent}/{WORKSPACES}")).await?.items)
    }

    /// POSTs `workspace` in `parent`; returns what the server made of it.
    pub async fn create_workspace(&self, parent: &WorkspacePath, workspace: &Value) -> Result<Workspace, ClientError> {
        let path = format!("/clusters/{parent}/{WORKSPACES}");
        decode(&path, self.call(Method::POST, &path, Some(workspace)).await?)
    }

    /// How many API groups workspace `path` serves (the legacy group counts as one), as client-go's
    /// `ServerGroups` counts them: a 404 on `/api` is no legacy group, any other error is the answer.
    pub async fn api_group_count(&self, path: &WorkspacePath) -> Result<usize, ClientError> {
        let legacy = match self.call(Method::GET, &format!("/clusters/{path}/api"), None).await {
            Ok(versions) => usize::from(versions["versions"].as_array().is_some_and(|v| !v.is_empty())),
            Err(error) if error.is_not_found() => 0,
            Err(error) => return Err(error),
        };
        let groups = self.call(Method::GET, &format!("/clusters/{path}/apis"), None).await?;
        Ok(legacy + groups["groups"].as_array().map_or(0, Vec::len))
    }

    /// Which workspace the server's short path (no `/clusters/`) reaches for the caller: the `kcp.io/path`
    /// annotation of the LogicalCluster `cluster` there (kspaces: the caller's own space). `None` when it has none.
    pub async fn short_path_workspace(&self) -> Result<Option<WorkspacePath>, ClientError> {
        let cluster = self.call(Method::GET, "/apis/core.kcp.io/v1alpha1/logicalclusters/cluster", None).await?;
        Ok(cluster["metadata"]["annotations"]["kcp.io/path"].as_str().and_then(WorkspacePath::parse))
    }

    pub async fn api_binding(&self, workspace: &WorkspacePath, name: &str) -> Result<ApiBinding, ClientError> {
        decode(name, self.api_binding_object(workspace, name).await?)
    }

    /// Binding `name` as the server sent it, every field kept (to send it back changed).
    pub async fn api_binding_object(&self, workspace: &WorkspacePath, name: &str) -> Result<Value, ClientError> {
        self.call(Method::GET, &format!("/clusters/{workspace}/{API_BINDINGS}/{}", segment(name)), None).await
    }

    pub async fn api_bindings(&self, workspace: &WorkspacePath) -> Result<Vec<ApiBinding>, ClientError> {
        Ok(self.get::<List<ApiBinding>>(&format!("/clusters/{workspace}/{API_BINDINGS}")).await?.items)
    }

    pub async fn create_api_binding(&self, workspace: &WorkspacePath, binding: &Value) -> Result<ApiBinding, ClientError> {
        let path = format!("/clusters/{workspace}/{API_BINDINGS}");
        decode(&path, self.call(Method::POST, &path, Some(binding)).await?)
    }

    /// PUTs `binding` (named `name`) back.
    pub async fn replace_api_binding(&self, workspace: &WorkspacePath, name: &str, binding: &Value) -> Result<ApiBinding, ClientError> {
        let path = format!("/clusters/{workspace}/{API_BINDINGS}/{}", segment(name));
        decode(&path, self.call(Method::PUT, &path, Some(binding)).await?)
    }

    pub async fn api_export(&self, workspace: &WorkspacePath, name: &str) -> Result<ApiExport, ClientError> {
        self.get(&format!("/clusters/{workspace}/{API_EXPORTS}/{}", segment(name))).await
    }
}

/// `name` as one path segment: anything but unreserved characters (and `:`) percent-encoded, so a name typed by a
/// user (`claims get apibinding a/b`) cannot reach another URL.
fn segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b':' => out.push(char::from(byte)),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

fn decode<T: DeserializeOwned>(path: &str, value: Value) -> Result<T, ClientError> {
    serde_json::from_value(value).map_err(|e| ClientError::Decode { path: path.to_owned(), message: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_one_segment() {
        assert_eq!(segment("~"), "~");
        assert_eq!(segment("my-binding.v1"), "my-binding.v1");
        assert_eq!(segment("a/b?c d"), "a%2Fb%3Fc%20d");
    }

    #[test]
    fn error_messages() {
        let status = |code: u16, reason: &str, message: &str| ClientError::Api { code, reason: reason.into(), message: message.into() };
        assert_eq!(status(404, "NotFound", "workspaces.tenancy.kcp.io \"x\" not found").to_string(), "workspaces.tenancy.kcp.io \"x\" not found");
        assert_eq!(status(404, "", "").to_string(), "the server could not find the requested resource");
        assert!(status(409, "AlreadyExists", "").is_already_exists());
        assert!(!status(409, "Conflict", "").is_already_exists());
        assert!(status(403, "Forbidden", "").is_forbidden());
    }
}
