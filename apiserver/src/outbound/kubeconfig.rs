//! The endpoint of a kubeconfig-format webhook file (`--authentication-token-webhook-config-file`,
//! `--authorization-webhook-config-file`), read as kube reads one: the current context's cluster and user (the
//! first of each when no context names them); the cluster's `server` (https), `certificate-authority` or
//! `-data` (the system's roots when neither), `tls-server-name`; the user's `client-certificate`/`-key` (or
//! `-data`) and `token` or `tokenFile`. Relative file names are relative to the file's folder.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;

use super::{Call, CallError, Tls};

/// Where a webhook is called and with what credentials.
pub struct Endpoint {
    url: url::Url,
    tls: Tls,
    server_name: Option<String>,
    token: Option<String>,
    timeout: Duration,
}

impl Endpoint {
    /// Reads the file `flag` names. Every error names the flag and the file.
    pub fn load(flag: &str, path: &Path, timeout: Duration) -> Result<Endpoint, String> {
        let error = |why: String| format!("{flag} {}: {why}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Endpoint::parse(&text, &folder, timeout).map_err(error)
    }

    fn parse(text: &str, folder: &Path, timeout: Duration) -> Result<Endpoint, String> {
        let config: Value = serde_saphyr::from_str(text).map_err(|e| format!("not a kubeconfig: {e}"))?;
        if !config.is_object() || config.get("clusters").is_none() {
            return Err("not a kubeconfig: no clusters".to_owned());
        }
        let context = config.get("current-context").and_then(Value::as_str).filter(|c| !c.is_empty()).and_then(|current| {
            named(&config, "contexts", current).map(|entry| entry.get("context").cloned().unwrap_or(Value::Null))
        });
        let pick = |list: &str, field: &str| -> Option<Value> {
            let entry = match context.as_ref().and_then(|c| c.get(field)).and_then(Value::as_str) {
                Some(name) => named(&config, list, name)?,
                None => config.get(list)?.as_array()?.first()?,
            };
            entry.get(field).cloned()
        };
        let cluster = pick("clusters", "cluster").filter(Value::is_object).ok_or("not a kubeconfig: no cluster")?;
        let user = pick("users", "user").unwrap_or(Value::Null);
        let server = text_of(&cluster, "server").ok_or("the cluster has no server")?;
        let url = url::Url::parse(server).map_err(|e| format!("cluster.server {server:?}: {e}"))?;
        if url.scheme() != "https" || url.host_str().is_none() {
            return Err(format!("cluster.server {server:?}: must be an https URL"));
        }
        if cluster.get("insecure-skip-tls-verify").and_then(Value::as_bool) == Some(true) {
            return Err("cluster.insecure-skip-tls-verify is not supported: give certificate-authority".to_owned());
        }
        let bundle = material(&cluster, "certificate-authority", folder)?.unwrap_or_default();
        let certificate = material(&user, "client-certificate", folder)?;
        let key = material(&user, "client-key", folder)?;
        let identity = match (&certificate, &key) {
            (Some(certificate), Some(key)) => Some((certificate.as_slice(), key.as_slice())),
            (None, None) => None,
            _ => return Err("user: client-certificate and client-key go together".to_owned()),
        };
        let tls = Tls::with_client_certificate(&bundle, identity).map_err(|e| format!("cluster.certificate-authority: {e}"))?;
        let token = match (text_of(&user, "token"), text_of(&user, "tokenFile")) {
            (Some(token), _) => Some(token.to_owned()),
            (None, Some(file)) => {
                let file = resolve(folder, file);
                let token = std::fs::read_to_string(&file).map_err(|e| format!("user.tokenFile {}: {e}", file.display()))?;
                Some(token.trim().to_owned())
            }
            (None, None) => None,
        };
        let server_name = text_of(&cluster, "tls-server-name").map(str::to_owned);
        Ok(Endpoint { url, tls, server_name, token, timeout })
    }

    /// Posts `body` and returns the answer's body.
    pub async fn post(&self, body: Vec<u8>) -> Result<Vec<u8>, CallError> {
        let anywhere = |_| true;
        super::post_json(Call {
            url: &self.url,
            tls: &self.tls,
            body,
            timeout: self.timeout,
            allowed: &anywhere,
            server_name: self.server_name.as_deref(),
            bearer: self.token.as_deref(),
        })
        .await
    }
}

/// The entry of `list` whose `name` is `name`.
fn named<'a>(config: &'a Value, list: &str, name: &str) -> Option<&'a Value> {
    config.get(list)?.as_array()?.iter().find(|entry| entry.get("name").and_then(Value::as_str) == Some(name))
}

fn text_of<'a>(value: &'a Value, field: &str) -> Option<&'a str> {
    value.get(field).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// `field`'s file, or `field-data`'s base64 (the data wins, as in kube).
fn material(value: &Value, field: &str, folder: &Path) -> Result<Option<Vec<u8>>, String> {
    if let Some(data) = text_of(value, &format!("{field}-data")) {
        let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim()).map_err(|e| format!("{field}-data: {e}"))?;
        return Ok(Some(bytes));
    }
    match text_of(value, field) {
        Some(file) => {
            let file = resolve(folder, file);
            std::fs::read(&file).map(Some).map_err(|e| format!("{field} {}: {e}", file.display()))
        }
        None => Ok(None),
    }
}

fn resolve(folder: &Path, file: &str) -> PathBuf {
    let file = Path::new(file);
    if file.is_absolute() { file.to_path_buf() } else { folder.join(file) }
}

/// A webhook's answers remembered by a digest of what was asked, each until its time is up; at most `capacity`
/// (past that the expired ones go, then all).
pub struct Answers<V> {
    entries: Mutex<HashMap<[u8; 32], (V, Instant)>>,
    capacity: usize,
}

impl<V: Clone> Answers<V> {
    pub fn new(capacity: usize) -> Answers<V> {
        Answers { entries: Mutex::default(), capacity }
    }

    /// The answer to `key`, if it is remembered and its time is not up.
    pub fn get(&self, key: &[u8; 32]) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.get(key).filter(|(_, until)| *until > Instant::now()).map(|(answer, _)| answer.clone())
    }

    /// Remembers `answer` to `key` for `ttl` (a zero `ttl`: not at all).
    pub fn remember(&self, key: [u8; 32], answer: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.capacity {
            entries.retain(|_, (_, until)| *until > now);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(key, (answer, now + ttl));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kubeconfig_names_its_endpoint_and_other_files_are_refused() {
        let timeout = Duration::from_secs(1);
        let folder = Path::new("/nonexistent");
        let ok = "apiVersion: v1\nkind: Config\nclusters:\n- name: hook\n  cluster:\n    server: https://127.0.0.1:8443/authn\n\
                  users:\n- name: api\n  user:\n    token: secret\ncurrent-context: c\ncontexts:\n- name: c\n  context:\n    cluster: hook\n    user: api\n";
        let endpoint = Endpoint::parse(ok, folder, timeout).expect("parses");
        assert_eq!(endpoint.url.as_str(), "https://127.0.0.1:8443/authn");
        assert_eq!(endpoint.token.as_deref(), Some("secret"));
        let refused = |text: &str| Endpoint::parse(text, folder, timeout).err().unwrap_or_default();
        assert!(refused("just: text\n").contains("not a kubeconfig"));
        assert!(refused("[1, 2").contains("not a kubeconfig"));
        assert!(refused("clusters:\n- name: a\n  cluster:\n    server: http://x\n").contains("must be an https URL"));
        assert!(refused("clusters:\n- name: a\n  cluster:\n    server: https://x\n    certificate-authority: ca.pem\n").contains("/nonexistent/ca.pem"));
    }
}
