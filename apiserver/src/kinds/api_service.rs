//! APIService (`apiregistration.k8s.io/v1`, system space only): kube's checks (its name is `<version>.<group>`,
//! a version, a group but for `v1`, both priorities in range, a `service`'s namespace, name and port,
//! `insecureSkipTLSVerify` and `caBundle` excluding each other), kube's default port (443), and `ApiServices`, the cache the aggregator proxies by: every
//! APIService with a `service`, parsed once per write, with its `Available` condition as stored.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use kspaces_authz::Caller;
use kspaces_storage::{Revision, SpaceName};
use serde_json::{json, Value};

use super::{Context, Kind, Rules};
use crate::outbound::Tls;
use crate::registry::observe::{RevisionMap, WriteObserver};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::ResourceInfo;
use crate::status::Cause;

pub const GROUP: &str = "apiregistration.k8s.io";
pub const NAME: &str = "APIService";

/// APIService: its strategy and the aggregator's cache.
pub const KIND: Kind = Kind::rules(|context: &Context, rules: &mut Rules| {
    rules.strategy(GROUP, NAME, Arc::new(ApiServiceStrategy));
    rules.observe(context.api_services.clone());
});

struct ApiServiceStrategy;

fn default_port(object: &mut Value) {
    if let Some(service) = object.pointer_mut("/spec/service").and_then(Value::as_object_mut) {
        service.entry("port").or_insert(json!(443));
    }
}

impl Strategy for ApiServiceStrategy {
    fn prepare_create(&self, _: &ResourceInfo, _: &SpaceName, _: Option<&Caller>, object: &mut Value) {
        default_port(object);
    }

    fn prepare_update(&self, _: &ResourceInfo, _: &SpaceName, _: &Value, new: &mut Value, _: Part) {
        default_port(new);
    }

    fn validate(&self, _: &ResourceInfo, object: &Value, _: Option<&Value>, causes: &mut Vec<Cause>) {
        let spec = object.get("spec").unwrap_or(&Value::Null);
        let text = |key: &str| spec.get(key).and_then(Value::as_str).unwrap_or_default();
        let (group, version) = (text("group"), text("version"));
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let expected = if group.is_empty() { version.to_owned() } else { format!("{version}.{group}") };
        if name != expected {
            causes.push(Cause::invalid("metadata.name", name, &format!("must be `spec.version+\".\"+spec.group`: {expected:?}")));
        }
        if version.is_empty() {
            causes.push(Cause::required("spec.version"));
        } else if !is_dns_label(version) {
            causes.push(Cause::invalid("spec.version", version, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"));
        }
        // Only the legacy core group-version (`v1`) has no group.
        if group.is_empty() && version != "v1" {
            causes.push(Cause::invalid("spec.group", "", "only v1 may have an empty group and it better be legacy kube"));
        }
        for (field, at_most) in [("groupPriorityMinimum", 20000), ("versionPriority", 1000)] {
            let value = spec.get(field).and_then(Value::as_i64).unwrap_or(0);
            if !(1..=at_most).contains(&value) {
                causes.push(Cause::invalid(format!("spec.{field}"), &value.to_string(), &format!("must be positive and less than {}", at_most + 1)));
            }
        }
        if let Some(service) = spec.get("service").filter(|s| !s.is_null()) {
            for key in ["namespace", "name"] {
                if service.get(key).and_then(Value::as_str).unwrap_or_default().is_empty() {
                    causes.push(Cause::required(format!("spec.service.{key}")));
                }
            }
            let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
            if !(1..=65535).contains(&port) {
                causes.push(Cause::invalid("spec.service.port", &port.to_string(), "must be a valid port number (1-65535)"));
            }
        }
        let skip = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool).unwrap_or(false);
        if skip && !text("caBundle").is_empty() {
            causes.push(Cause::invalid("spec.insecureSkipTLSVerify", "true", "may not be true if caBundle is present"));
        }
    }
}

fn is_dns_label(text: &str) -> bool {
    text.len() <= 63
        && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// An APIService's `service` reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub port: u16,
}

/// One APIService, parsed.
#[derive(Debug)]
pub struct ApiService {
    pub name: String,
    pub group: String,
    pub version: String,
    /// `None`: served by this server (kube's `Local`).
    pub service: Option<ServiceRef>,
    /// How its server is trusted (`caBundle` or `insecureSkipTLSVerify`), with the proxy's client identity.
    pub tls: Result<Tls, String>,
    pub group_priority: i64,
    pub version_priority: i64,
    /// Its stored `Available` condition is `True`.
    pub available: bool,
    /// That condition's `reason` and `message`, as stored.
    pub reason: String,
    pub message: String,
}

impl ApiService {
    fn parse(name: &str, object: &Value, identity: Option<&Identity>) -> ApiService {
        use base64::Engine;
        let spec = object.get("spec").unwrap_or(&Value::Null);
        let text = |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or_default().to_owned();
        let service = spec.get("service").filter(|s| s.is_object()).map(|service| ServiceRef {
            namespace: text(service.get("namespace")),
            name: text(service.get("name")),
            port: service.get("port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()).unwrap_or(443),
        });
        let identity = identity.map(|i| (i.certificate.as_slice(), i.key.as_slice()));
        let tls = match spec.get("insecureSkipTLSVerify").and_then(Value::as_bool).unwrap_or(false) {
            true => Tls::insecure(identity),
            false => {
                let bundle = base64::engine::general_purpose::STANDARD.decode(text(spec.get("caBundle"))).unwrap_or_default();
                Tls::with_client_certificate(&bundle, identity)
            }
        };
        let conditions = object.pointer("/status/conditions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let condition = conditions.iter().find(|c| c.get("type") == Some(&json!("Available")));
        ApiService {
            name: name.to_owned(),
            group: text(spec.get("group")),
            version: text(spec.get("version")),
            service,
            tls,
            group_priority: spec.get("groupPriorityMinimum").and_then(Value::as_i64).unwrap_or(0),
            version_priority: spec.get("versionPriority").and_then(Value::as_i64).unwrap_or(0),
            available: condition.is_some_and(|c| c.get("status") == Some(&json!("True"))),
            reason: text(condition.and_then(|c| c.get("reason"))),
            message: text(condition.and_then(|c| c.get("message"))),
        }
    }
}

/// The client certificate and key the proxy presents (`--proxy-client-cert-file`, `--proxy-client-key-file`), PEM.
#[derive(Clone, Debug)]
pub struct Identity {
    pub certificate: Vec<u8>,
    pub key: Vec<u8>,
}

/// Every APIService of the system space.
#[derive(Default)]
pub struct ApiServices {
    /// Whether any APIService has a `service` (one load: the whole cost of aggregation to a server without).
    any: AtomicBool,
    held: RwLock<RevisionMap<String, Arc<ApiService>>>,
    identity: OnceLock<Identity>,
    /// What each APIService's server last answered for its group-version (`APIResourceList`), by name.
    discovered: RwLock<HashMap<String, Value>>,
    /// Told when an APIService is written (the availability checker looks at once).
    changed: tokio::sync::Notify,
}

impl ApiServices {
    /// The proxy's client identity; set before the cache is primed.
    pub fn set_identity(&self, identity: Identity) {
        let _ = self.identity.set(identity);
    }

    /// The APIService that proxies `group`/`version`, if one with a `service` does.
    pub fn proxied(&self, group: &str, version: &str) -> Option<Arc<ApiService>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let held = self.held.read().unwrap_or_else(|e| e.into_inner());
        let found = held.iter().map(|(_, s)| s).find(|s| s.service.is_some() && s.group == group && s.version == version).cloned();
        found
    }

    /// Every APIService with a `service`.
    pub fn all_proxied(&self) -> Vec<Arc<ApiService>> {
        if !self.any.load(Ordering::Acquire) {
            return Vec::new();
        }
        let held = self.held.read().unwrap_or_else(|e| e.into_inner());
        held.iter().map(|(_, s)| s.clone()).filter(|s| s.service.is_some()).collect()
    }

    /// Every APIService, `Local` ones included.
    pub fn all(&self) -> Vec<Arc<ApiService>> {
        self.held.read().unwrap_or_else(|e| e.into_inner()).iter().map(|(_, s)| s.clone()).collect()
    }

    /// Remembers the `APIResourceList` `name`'s server answered (`None`: it answered none).
    pub fn discovered(&self, name: &str, resources: Option<Value>) {
        let mut discovered = self.discovered.write().unwrap_or_else(|e| e.into_inner());
        match resources {
            Some(resources) => discovered.insert(name.to_owned(), resources),
            None => discovered.remove(name),
        };
    }

    /// Resolves when an APIService is written after the call (or was since the last such future resolved).
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// The `APIResourceList` `name`'s server last answered.
    pub fn resources_of(&self, name: &str) -> Option<Value> {
        self.discovered.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }
}

impl WriteObserver for ApiServices {
    fn follows(&self) -> &[(&'static str, &'static str)] {
        &[(GROUP, NAME)]
    }

    fn written(&self, resource: &ResourceInfo, space: &SpaceName, name: &str, object: Option<&Value>, revision: Revision) {
        if !resource.is(GROUP, NAME) || !space.is_system() {
            return;
        }
        let parsed = object.map(|object| Arc::new(ApiService::parse(name, object, self.identity.get())));
        let mut held = self.held.write().unwrap_or_else(|e| e.into_inner());
        held.apply(name.to_owned(), parsed, revision);
        self.any.store(held.iter().any(|(_, s)| s.service.is_some()), Ordering::Release);
        self.changed.notify_one();
    }

    fn holds(&self, resource: &ResourceInfo) -> Vec<(SpaceName, String)> {
        if !resource.is(GROUP, NAME) {
            return Vec::new();
        }
        self.held.read().unwrap_or_else(|e| e.into_inner()).keys().map(|name| (SpaceName::system(), name.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_refuses_what_kube_refuses() {
        let check = |object: Value| {
            let mut causes = Vec::new();
            ApiServiceStrategy.validate(&crate::registry::builtin::builtin_resources()[0], &object, None, &mut causes);
            causes.into_iter().map(|c| c.field).collect::<Vec<_>>()
        };
        let good = json!({"metadata": {"name": "v1.things.example.com"}, "spec": {"group": "things.example.com", "version": "v1",
            "service": {"namespace": "ns", "name": "svc"}, "groupPriorityMinimum": 1000, "versionPriority": 15}});
        assert!(check(good.clone()).is_empty());
        let mut bad = good.clone();
        bad["metadata"]["name"] = json!("v2.things.example.com");
        bad["spec"]["versionPriority"] = json!(0);
        bad["spec"]["service"] = json!({"port": 70000});
        bad["spec"]["insecureSkipTLSVerify"] = json!(true);
        bad["spec"]["caBundle"] = json!("Zm9v");
        assert_eq!(check(bad), ["metadata.name", "spec.versionPriority", "spec.service.namespace", "spec.service.name", "spec.service.port",
            "spec.insecureSkipTLSVerify"]);
        let local = json!({"metadata": {"name": "v1.apps"}, "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}});
        assert!(check(local).is_empty());
        assert_eq!(check(json!({"metadata": {"name": "v2"}, "spec": {"version": "v2"}})), ["spec.group", "spec.groupPriorityMinimum", "spec.versionPriority"]);
    }
}
