//! The authorization webhook (`--authorization-webhook-config-file`, mode `Webhook`): an
//! `authorization.k8s.io/v1` SubjectAccessReview with kube's attributes, and in `spec.extra` the caller's tenant
//! (`kspaces.io/tenant`) and the workspace the request is for (`kspaces.io/space`, its path, e.g. `root:t-a`).
//! It is asked only where the request was already placed: tenancy refuses another tenant's path before any
//! authorizer runs, so an allow reaches the caller's own spaces only. `status.denied` is a definite no (no later
//! mode is asked). Answers are remembered (`--authorization-webhook-cache-authorized-ttl`, `-unauthorized-ttl`);
//! a failed call or an answer that is not a review is no opinion, with the failure as the reason (a 403 when no
//! other mode allows).

use std::time::Duration;

use kspaces_authz::rbac::Attributes;
use kspaces_authz::{UserInfo, TENANT_EXTRA};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::outbound::kubeconfig::{Answers, Endpoint};

/// The extra key (beside `TENANT_EXTRA`) the review carries: the workspace's path.
pub const SPACE_EXTRA_KEY: &str = "kspaces.io/space";

/// How many answers are remembered; past this the expired ones go, then all.
const CACHE_ENTRIES: usize = 8192;

/// The webhook's answer.
#[derive(Clone, Debug)]
pub struct Verdict {
    pub allowed: bool,
    /// A definite no: no later authorizer is asked.
    pub denied: bool,
    pub reason: String,
}

pub struct AuthorizationWebhook {
    endpoint: Endpoint,
    authorized_ttl: Duration,
    unauthorized_ttl: Duration,
    cache: Answers<Verdict>,
}

/// What is asked: who, in which tenant and space, and the request's attributes (`version` as the request named it).
pub struct Question<'a> {
    pub user: &'a UserInfo,
    pub tenant: Option<&'a str>,
    pub space: &'a str,
    pub attributes: &'a Attributes,
    pub version: &'a str,
}

impl AuthorizationWebhook {
    pub fn new(endpoint: Endpoint, authorized_ttl: Duration, unauthorized_ttl: Duration) -> AuthorizationWebhook {
        AuthorizationWebhook { endpoint, authorized_ttl, unauthorized_ttl, cache: Answers::new(CACHE_ENTRIES) }
    }

    pub async fn authorize(&self, question: &Question<'_>) -> Verdict {
        let review = review(question);
        let body = review.to_string().into_bytes();
        let key: [u8; 32] = Sha256::digest(&body).into();
        if let Some(verdict) = self.cache.get(&key) {
            return verdict;
        }
        let answer = match self.endpoint.post(body).await {
            Ok(answer) => read_answer(&answer),
            Err(err) => Err(format!("authorization webhook: {err}")),
        };
        let verdict = match answer {
            Ok(verdict) => verdict,
            Err(why) => {
                tracing::warn!(why, "the authorization webhook gave no answer");
                return Verdict { allowed: false, denied: false, reason: why };
            }
        };
        let ttl = if verdict.allowed { self.authorized_ttl } else { self.unauthorized_ttl };
        self.cache.remember(key, verdict.clone(), ttl);
        verdict
    }
}

/// The SubjectAccessReview kube sends (empty fields left out), with the tenant and space in `extra`.
fn review(question: &Question<'_>) -> Value {
    let user = question.user;
    let mut extra: Map<String, Value> = user.extra.iter().map(|(key, values)| (key.clone(), json!(values))).collect();
    extra.remove(TENANT_EXTRA);
    if let Some(tenant) = question.tenant {
        extra.insert(TENANT_EXTRA.to_owned(), json!([tenant]));
    }
    extra.insert(SPACE_EXTRA_KEY.to_owned(), json!([question.space]));
    let mut spec = json!({"user": user.name, "groups": user.groups, "extra": extra});
    if !user.uid.is_empty() {
        spec["uid"] = json!(user.uid);
    }
    let mut attributes = Map::new();
    let mut put = |key: &str, value: &str| {
        if !value.is_empty() {
            attributes.insert(key.to_owned(), json!(value));
        }
    };
    match question.attributes {
        Attributes::Resource { verb, group, resource, subresource, name, namespace } => {
            put("namespace", namespace.as_deref().unwrap_or_default());
            put("verb", verb);
            put("group", group);
            put("version", question.version);
            put("resource", resource);
            put("subresource", subresource);
            put("name", name);
            spec["resourceAttributes"] = Value::Object(attributes);
        }
        Attributes::NonResource { verb, path } => {
            put("path", path);
            put("verb", verb);
            spec["nonResourceAttributes"] = Value::Object(attributes);
        }
    }
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
}

fn read_answer(body: &[u8]) -> Result<Verdict, String> {
    let garbage = |why: &str| format!("authorization webhook: the answer is not a SubjectAccessReview: {why}");
    let review: Value = serde_json::from_slice(body).map_err(|e| garbage(&e.to_string()))?;
    let status = review.get("status").filter(|s| s.is_object()).ok_or_else(|| garbage("no status"))?;
    let flag = |field: &str| match status.get(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(yes)) => Ok(*yes),
        Some(_) => Err(garbage(&format!("status.{field} is not a boolean"))),
    };
    let (allowed, denied) = (flag("allowed")?, flag("denied")?);
    if allowed && denied {
        return Err(garbage("status.allowed and status.denied are both true"));
    }
    let text = |field: &str| status.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut reason = text("reason");
    let error = text("evaluationError");
    if !error.is_empty() && !allowed {
        reason = if reason.is_empty() { error } else { format!("{reason}: {error}") };
    }
    Ok(Verdict { allowed, denied, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviews_carry_the_tenant_and_space_and_answers_are_read() {
        let mut user = UserInfo::authenticated("jane".into(), "7".into(), vec!["dev".into()], Some("t-a".into()));
        user.extra.insert(TENANT_EXTRA.into(), vec!["forged".into()]);
        user.extra.insert("scope".into(), vec!["x".into()]);
        let attributes = Attributes::Resource { verb: "get".into(), group: "".into(), resource: "pods".into(), subresource: "log".into(),
            name: "p".into(), namespace: Some("dev".into()) };
        let sent = review(&Question { user: &user, tenant: Some("t-a"), space: "root:t-a", attributes: &attributes, version: "v1" });
        assert_eq!(sent["spec"]["extra"][TENANT_EXTRA], json!(["t-a"]));
        assert_eq!(sent["spec"]["extra"][SPACE_EXTRA_KEY], json!(["root:t-a"]));
        assert_eq!(sent["spec"]["extra"]["scope"], json!(["x"]));
        assert_eq!(sent["spec"]["resourceAttributes"], json!({"namespace": "dev", "verb": "get", "version": "v1", "resource": "pods",
            "subresource": "log", "name": "p"}));
        let verdict = read_answer(br#"{"status":{"allowed":false,"denied":true,"reason":"no"}}"#).expect("an answer");
        assert!(!verdict.allowed && verdict.denied && verdict.reason == "no");
        assert!(read_answer(br#"{"status":{"allowed":true}}"#).expect("an answer").allowed);
        for garbage in [&b"<html>"[..], b"{}", br#"{"status":{"allowed":"yes"}}"#, br#"{"status":{"allowed":true,"denied":true}}"#] {
            assert!(read_answer(garbage).is_err());
        }
    }
}
