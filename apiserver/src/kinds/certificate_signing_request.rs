//! CertificateSigningRequest (`certificates.k8s.io/v1`, cluster-scoped, in every space): kube's request, approval
//! and status, and kube's `kubernetes.io/kube-apiserver-client` signer, so that a tenant's admin can mint user
//! certificates through the API.
//!
//! - Create: the requester's identity is recorded (`spec.username`, `uid`, `groups`, `extra`); the request must be
//!   a PEM certificate request, the signer named, the usages valid for it. The spec never changes after.
//! - `/approval`: only `status.conditions`; adding `Approved` or `Denied` needs the verb `approve` on `signers`
//!   (the signer's name, or `<domain>/*`) in the space, as kube's CertificateApproval admission asks.
//! - `/status`: `status.certificate` of a `kubernetes.io/*` signer is the server's alone; another signer's needs
//!   `sign` on `signers` (kube's CertificateSigning admission). Approval conditions stay as they were.
//! - Signing, when the approval is written: a `kubernetes.io/kube-apiserver-client` request approved and not denied
//!   gets a certificate from the server's CA (when it is also the client CA) for the request's public key and its
//!   CN, valid `spec.expirationSeconds` or a year. **In a tenant's space the certificate names that tenant** (O
//!   `tenant:<t>`, any other `tenant:` organization dropped), so no credential minted there acts outside it.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use kspaces_authz::rbac::Attributes as RbacAttributes;
use kspaces_authz::Caller;
use kspaces_storage::SpaceName;
use serde_json::{json, Value};

use super::{Context, Kind, Rules};
use crate::authorization::Authorizer;
use crate::pki::CertificateAuthority;
use crate::registry::admission::{Admission, AdmissionPhase, Attributes, Operation};
use crate::registry::strategy::{Part, Strategy};
use crate::registry::{GenericStore, ResourceInfo};
use crate::status::{ApiError, ApiResult, Cause};
use crate::tenancy::Tree;

/// CertificateSigningRequest: its strategy and admission (its row is Kubernetes' built-in one).
pub const KIND: Kind = Kind::rules(rules);

const GROUP: &str = "certificates.k8s.io";
/// The signer kspaces runs.
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// kube's `--cluster-signing-duration` default.
const DEFAULT_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// The usages a client certificate may have (kube's signer).
const CLIENT_USAGES: [&str; 3] = ["client auth", "digital signature", "key encipherment"];
/// Every usage kube knows.
const USAGES: [&str; 21] = ["signing", "digital signature", "content commitment", "key encipherment", "key agreement",
    "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth",
    "code signing", "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping",
    "ocsp signing"];

fn rules(context: &Context, rules: &mut Rules) {
    rules.strategy(GROUP, "CertificateSigningRequest", Arc::new(CsrStrategy { signer: context.csr_signer.clone(), tree: context.tree.clone() }));
    rules.admit(Arc::new(CsrAdmission { authorizer: context.authorizer.clone() }));
}

/// The CA that signs approved client requests: the server's own, when clients are verified against it.
#[derive(Default)]
pub struct CsrSigner {
    ca: OnceLock<CertificateAuthority>,
}

impl std::fmt::Debug for CsrSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsrSigner").field("signs", &self.ca.get().is_some()).finish()
    }
}

impl CsrSigner {
    pub fn set(&self, ca: CertificateAuthority) {
        let _ = self.ca.set(ca);
    }
}

/// The public key (DER), CN and organizations of a PEM certificate request (`spec.request` is its base64).
fn parse_request(request: &str) -> Result<(Vec<u8>, String, Vec<String>), String> {
    use base64::Engine;
    let pem = base64::engine::general_purpose::STANDARD.decode(request).map_err(|_| "must be base64-encoded PEM".to_owned())?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).map_err(|_| "PEM block type must be CERTIFICATE REQUEST".to_owned())?;
    if pem.label != "CERTIFICATE REQUEST" && pem.label != "NEW CERTIFICATE REQUEST" {
        return Err("PEM block type must be CERTIFICATE REQUEST".to_owned());
    }
    use x509_parser::prelude::FromDer;
    let (_, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
        .map_err(|e| format!("x509: malformed certificate request: {e}"))?;
    let info = &csr.certification_request_info;
    let spki = info.subject_pki.raw.to_vec();
    let cn = info.subject.iter_common_name().next().and_then(|a| a.as_str().ok()).unwrap_or_default().to_owned();
    let organizations = info.subject.iter_organization().filter_map(|a| a.as_str().ok()).map(str::to_owned).collect();
    Ok((spki, cn, organizations))
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn conditions(object: &Value) -> Vec<Value> {
    object.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// Whether `object` has a condition of `kind` that holds.
fn has(object: &Value, kind: &str) -> bool {
    conditions(object).iter().any(|c| c.get("type").and_then(Value::as_str) == Some(kind) && c.get("status").and_then(Value::as_str) != Some("False"))
}

pub struct CsrStrategy {
    signer: Arc<CsrSigner>,
    tree: Arc<Tree>,
}

impl CsrStrategy {
    /// The certificate for an approved client request in `space`, if this server signs it.
    fn sign(&self, space: &SpaceName, object: &Value) -> Option<String> {
        let ca = self.signer.ca.get()?;
        let (spki, cn, mut organizations) = parse_request(text(object, "/spec/request")).ok()?;
        if !space.is_system() {
            organizations.retain(|o| !o.starts_with("tenant:"));
            organizations.push(format!("tenant:{}", self.tree.tenant_of(space)));
        }
        let validity = object.pointer("/spec/expirationSeconds").and_then(Value::as_u64)
            .map_or(DEFAULT_DURATION, |s| Duration::from_secs(s).min(DEFAULT_DURATION));
        match ca.sign_client(&spki, &cn, &organizations, validity) {
            Ok(pem) => {
                use base64::Engine;
                Some(base64::engine::general_purpose::STANDARD.encode(pem))
            }
            Err(err) => {
                tracing::warn!(%err, "signing a CertificateSigningRequest");
                None
            }
        }
    }
}

#[async_trait]
impl Strategy for CsrStrategy {
    /// kube's: the requester's identity recorded, the status empty.
    fn prepare_create(&self, _resource: &ResourceInfo, _space: &SpaceName, caller: Option<&Caller>, object: &mut Value) {
        let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return };
        for field in ["username", "uid", "groups", "extra"] {
            spec.remove(field);
        }
        if let Some(caller) = caller {
            spec.insert("username".into(), json!(caller.user.name));
            if !caller.user.uid.is_empty() {
                spec.insert("uid".into(), json!(caller.user.uid));
            }
            spec.insert("groups".into(), json!(caller.user.groups));
        }
    }

    fn prepare_update(&self, _resource: &ResourceInfo, space: &SpaceName, old: &Value, new: &mut Value, part: Part) {
        // The spec never changes once made.
        if let Some(spec) = old.get("spec") {
            new["spec"] = spec.clone();
        }
        match part {
            // A status write keeps the approval as it was.
            Part::Status => {
                let approval: Vec<Value> = conditions(old).into_iter()
                    .filter(|c| matches!(c.get("type").and_then(Value::as_str), Some("Approved" | "Denied"))).collect();
                let mut kept: Vec<Value> = conditions(new).into_iter()
                    .filter(|c| !matches!(c.get("type").and_then(Value::as_str), Some("Approved" | "Denied"))).collect();
                kept.extend(approval);
                if new.get("status").is_some_and(Value::is_object) {
                    new["status"]["conditions"] = json!(kept);
                }
            }
            Part::Approval => {
                let signable = text(new, "/spec/signerName") == CLIENT_SIGNER && has(new, "Approved") && !has(new, "Denied")
                    && text(new, "/status/certificate").is_empty();
                if signable {
                    if let Some(certificate) = self.sign(space, new) {
                        new["status"]["certificate"] = json!(certificate);
                    }
                }
            }
            Part::Main | Part::Finalize => {}
        }
    }

    fn validate(&self, _resource: &ResourceInfo, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
        if old.is_none() {
            if let Err(why) = parse_request(text(object, "/spec/request")) {
                causes.push(Cause::invalid("spec.request", "", &why));
            }
            let signer = text(object, "/spec/signerName");
            if signer.is_empty() {
                causes.push(Cause::required("spec.signerName"));
            } else if signer.split_once('/').is_none_or(|(domain, path)| domain.is_empty() || path.is_empty()) {
                causes.push(Cause::invalid("spec.signerName", signer, "must be a fully qualified domain and path of the form 'example.com/signer-name'"));
            }
            let usages: Vec<&str> = object.pointer("/spec/usages").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            if usages.is_empty() {
                causes.push(Cause::required("spec.usages"));
            }
            for (i, usage) in usages.iter().enumerate() {
                if !USAGES.contains(usage) {
                    causes.push(Cause::not_supported(format!("spec.usages[{i}]"), usage, &USAGES));
                } else if signer == CLIENT_SIGNER && !CLIENT_USAGES.contains(usage) {
                    causes.push(Cause::invalid(format!("spec.usages[{i}]"), usage, "invalid usage for client certificate"));
                }
            }
            if signer == CLIENT_SIGNER && !usages.contains(&"client auth") {
                causes.push(Cause::invalid("spec.usages", "", "missing required usages for client certificate: client auth"));
            }
            if object.pointer("/spec/expirationSeconds").and_then(Value::as_i64).is_some_and(|s| s < 600) {
                causes.push(Cause::invalid("spec.expirationSeconds", "", "may not specify a duration less than 600 seconds (10 minutes)"));
            }
        }
        if has(object, "Approved") && has(object, "Denied") {
            causes.push(Cause::invalid("status.conditions", "", "Approved and Denied conditions are mutually exclusive"));
        }
    }
}

/// kube's CertificateApproval and CertificateSigning admission, judged in the request's space.
pub struct CsrAdmission {
    authorizer: Arc<Authorizer>,
}

impl CsrAdmission {
    /// Whether the caller may `verb` the signer `name` (or `<domain>/*`) in `space`.
    async fn may(&self, caller: &Caller, space: &SpaceName, verb: &str, signer: &str) -> ApiResult<bool> {
        let wildcard = signer.split_once('/').map(|(domain, _)| format!("{domain}/*"));
        for name in std::iter::once(signer.to_owned()).chain(wildcard) {
            let attributes = RbacAttributes::Resource { verb: verb.into(), group: GROUP.into(), resource: "signers".into(),
                subresource: String::new(), name, namespace: None };
            if self.authorizer.authorize(caller, space, &attributes).await?.allowed {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[async_trait]
impl Admission for CsrAdmission {
    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        resource.is(GROUP, "CertificateSigningRequest") && operation == Operation::Update
    }

    fn phase(&self) -> AdmissionPhase {
        AdmissionPhase::Validating
    }

    async fn admit(&self, _registry: &GenericStore, attributes: &Attributes<'_>) -> ApiResult<()> {
        let (Some(caller), Some(object), Some(old)) = (attributes.caller, attributes.object, attributes.old) else { return Ok(()) };
        let signer = text(object, "/spec/signerName");
        let refused = |what: &str| ApiError::forbidden_object(GROUP, "certificatesigningrequests", attributes.name,
            &format!("user not permitted to {what} requests with signerName {signer:?}"));
        match attributes.part {
            Part::Approval => {
                let decided = |o: &Value| (has(o, "Approved"), has(o, "Denied"));
                if decided(object) != decided(old) && !self.may(caller, attributes.space, "approve", signer).await? {
                    return Err(refused("approve"));
                }
            }
            Part::Status if text(object, "/status/certificate") != text(old, "/status/certificate") => {
                // kube's own signers' certificates are this server's to write.
                if signer.starts_with("kubernetes.io/") || !self.may(caller, attributes.space, "sign", signer).await? {
                    return Err(refused("sign"));
                }
            }
            _ => {}
        }
        Ok(())
    }
}
