//! The token webhook (`--authentication-token-webhook-config-file`): a bearer token no other authenticator
//! accepts is sent in an `authentication.k8s.io/v1` TokenReview to the platform's endpoint, whose answer names the
//! user, groups, uid and extra; `extra["kspaces.io/tenant"]` is the user's tenant (as an OIDC user's mapped extra
//! is). The webhook is the platform administrator's, so its answers are trusted as kube trusts them. Answers (yes
//! and no) are remembered for `--authentication-token-webhook-cache-ttl`; a failed call is not, and is a 401.

use std::collections::BTreeMap;
use std::time::Duration;

use kspaces_authz::{UserInfo, TENANT_EXTRA};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::outbound::kubeconfig::{Answers, Endpoint};

/// How many answers are remembered; past this the expired ones go, then all (a bound, not an LRU).
const CACHE_ENTRIES: usize = 4096;

/// A user the webhook authenticated, and the audiences the token is good for; or why it did not.
type Answer = Result<(UserInfo, Vec<String>), String>;

pub struct TokenWebhook {
    endpoint: Endpoint,
    ttl: Duration,
    cache: Answers<Answer>,
}

impl TokenWebhook {
    pub fn new(endpoint: Endpoint, ttl: Duration) -> TokenWebhook {
        TokenWebhook { endpoint, ttl, cache: Answers::new(CACHE_ENTRIES) }
    }

    /// Asks the webhook (or the cache) who `token` is, for `audiences`. The error is the reason, for logs and
    /// TokenReviews.
    pub async fn authenticate(&self, token: &str, audiences: &[String]) -> Answer {
        let mut hasher = Sha256::new();
        hasher.update(token.as_bytes());
        for audience in audiences {
            hasher.update([0]);
            hasher.update(audience.as_bytes());
        }
        let key: [u8; 32] = hasher.finalize().into();
        if let Some(answer) = self.cache.get(&key) {
            return answer;
        }
        let review = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": audiences},
        });
        let body = self.endpoint.post(review.to_string().into_bytes()).await.map_err(|e| format!("token webhook: {e}"))?;
        let answer = read_answer(&body, audiences)?;
        self.cache.remember(key, answer.clone(), self.ttl);
        answer
    }
}

/// The webhook's TokenReview answer: `Err(Err(_))` for an answer that is not one (not cached).
fn read_answer(body: &[u8], audiences: &[String]) -> Result<Answer, String> {
    let garbage = |why: &str| format!("token webhook: the answer is not a TokenReview: {why}");
    let review: Value = serde_json::from_slice(body).map_err(|e| garbage(&e.to_string()))?;
    let status = review.get("status").filter(|s| s.is_object()).ok_or_else(|| garbage("no status"))?;
    let authenticated = match status.get("authenticated") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(yes)) => *yes,
        Some(_) => return Err(garbage("status.authenticated is not a boolean")),
    };
    if !authenticated {
        let why = status.get("error").and_then(Value::as_str).filter(|e| !e.is_empty()).unwrap_or("the token webhook did not authenticate the token");
        return Ok(Err(why.to_owned()));
    }
    let user = status.get("user").filter(|u| u.is_object()).ok_or_else(|| garbage("status.user is missing"))?;
    let name = user.get("username").and_then(Value::as_str).filter(|n| !n.is_empty()).ok_or_else(|| garbage("status.user.username is empty"))?;
    let uid = match user.get("uid") {
        None | Some(Value::Null) => "",
        Some(uid) => uid.as_str().ok_or_else(|| garbage("status.user.uid is not a string"))?,
    };
    let groups = strings(user.get("groups")).ok_or_else(|| garbage("status.user.groups is not a list of strings"))?;
    let mut extra = BTreeMap::new();
    match user.get("extra") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (key, values) in map {
                let values = strings(Some(values)).ok_or_else(|| garbage("status.user.extra holds a value that is not a list of strings"))?;
                extra.insert(key.clone(), values);
            }
        }
        Some(_) => return Err(garbage("status.user.extra is not an object")),
    }
    // The audiences the webhook says the token is for must meet those asked for; none said: those asked for.
    let granted = strings(status.get("audiences")).ok_or_else(|| garbage("status.audiences is not a list of strings"))?;
    let audiences: Vec<String> = match granted.is_empty() {
        true => audiences.to_vec(),
        false => audiences.iter().filter(|a| granted.contains(a)).cloned().collect(),
    };
    if audiences.is_empty() && !granted.is_empty() {
        return Ok(Err(format!("token audiences {granted:?} is invalid for the target audiences")));
    }
    let tenant = extra.get(TENANT_EXTRA).and_then(|values| values.first()).filter(|t| !t.is_empty()).cloned();
    let mut user = UserInfo::authenticated(name.to_owned(), uid.to_owned(), groups, tenant);
    user.extra = extra;
    Ok(Ok((user, audiences)))
}

/// A list of strings (absent or null: none); `None` if it is anything else.
fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    match value {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(|v| v.as_str().map(str::to_owned)).collect(),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_as_kube_reads_them() {
        let asked = vec!["api".to_owned()];
        let yes = br#"{"status":{"authenticated":true,"user":{"username":"jane","uid":"7","groups":["dev"],"extra":{"kspaces.io/tenant":["t-a"],"scope":["x","y"]}}}}"#;
        let (user, audiences) = read_answer(yes, &asked).expect("an answer").expect("authenticated");
        assert_eq!((user.name.as_str(), user.uid.as_str(), user.tenant.as_deref()), ("jane", "7", Some("t-a")));
        assert!(user.in_group("dev") && user.in_group("system:authenticated"));
        assert_eq!(user.extra["scope"], ["x", "y"]);
        assert_eq!(audiences, asked);
        let no = br#"{"status":{"authenticated":false,"error":"expired"}}"#;
        assert_eq!(read_answer(no, &asked).expect("an answer").err().as_deref(), Some("expired"));
        let elsewhere = br#"{"status":{"authenticated":true,"user":{"username":"j"},"audiences":["other"]}}"#;
        assert!(read_answer(elsewhere, &asked).expect("an answer").is_err());
        for garbage in [&b"not json"[..], b"{}", br#"{"status":{"authenticated":"yes"}}"#, br#"{"status":{"authenticated":true,"user":{}}}"#,
            br#"{"status":{"authenticated":true,"user":{"username":"j","groups":"g"}}}"#] {
            assert!(read_answer(garbage, &asked).is_err(), "{}", String::from_utf8_lossy(garbage));
        }
    }
}
