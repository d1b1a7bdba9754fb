//! A small HTTPS ConversionReview server for the tests, with its own CA: it converts `spec.host` (v1) and
//! `spec.hostname` (v2) into each other, or answers as its `Mode` says, and logs every review's request.

use std::sync::{Arc, Mutex};

use base64::Engine;
use kspaces_tests::https::{self, Certificates};
use serde_json::{json, Value};

/// How the webhook answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Convert,
    /// A body that is not JSON.
    Garbage,
    /// The answer of another review.
    WrongUid,
    /// One object too few.
    WrongCount,
    /// Converted objects renamed.
    Renamed,
    /// `result.status: Failed` with a message.
    Refuse,
    /// No answer for 40 s (past kube's 30 s bound).
    Hang,
}

pub struct Webhook {
    pub port: u16,
    ca_pem: String,
    log: Arc<Mutex<Vec<Value>>>,
    mode: Arc<Mutex<Mode>>,
}

impl Webhook {
    pub fn start() -> Webhook {
        let certificates = Certificates::new(false, &[]);
        let ca_pem = certificates.ca_pem.clone();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mode = Arc::new(Mutex::new(Mode::Convert));
        let (kept, mode_kept) = (log.clone(), mode.clone());
        let port = https::serve(certificates.server_config(), move |request| answer(&request.body, &kept, &mode_kept));
        Webhook { port, ca_pem, log, mode }
    }

    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/convert", self.port)
    }

    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner()) = mode;
    }

    /// The `request` of every review received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// v1's `spec.host` is v2's `spec.hostname`.
pub fn convert(object: &Value, desired: &str) -> Value {
    let mut object = object.clone();
    let (from, to) = if desired.ends_with("/v2") { ("host", "hostname") } else { ("hostname", "host") };
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(value) = spec.remove(from) {
            spec.insert(to.into(), value);
        }
    }
    object["apiVersion"] = json!(desired);
    object
}

/// The ConversionReview answering `body` as the mode says (`None`: no answer).
fn answer(body: &[u8], log: &Mutex<Vec<Value>>, mode: &Mutex<Mode>) -> Option<String> {
    let review: Value = serde_json::from_slice(body).unwrap_or_default();
    let request = review["request"].clone();
    log.lock().unwrap_or_else(|e| e.into_inner()).push(request.clone());
    let uid = request["uid"].as_str().unwrap_or_default().to_owned();
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let mut converted: Vec<Value> = objects.iter().map(|o| convert(o, desired)).collect();
    let mode = *mode.lock().unwrap_or_else(|e| e.into_inner());
    let response = |uid: &str, converted: Vec<Value>, result: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": {"uid": uid, "result": result, "convertedObjects": converted}}).to_string()
    };
    let success = json!({"status": "Success"});
    Some(match mode {
        Mode::Convert => response(&uid, converted, success),
        Mode::Garbage => "this is not a review".to_owned(),
        Mode::WrongUid => response("not-the-request", converted, success),
        Mode::WrongCount => {
            converted.pop();
            response(&uid, converted, success)
        }
        Mode::Renamed => {
            for object in &mut converted {
                object["metadata"]["name"] = json!("renamed");
            }
            response(&uid, converted, success)
        }
        Mode::Refuse => response(&uid, Vec::new(), json!({"status": "Failure", "message": "cannot convert today"})),
        Mode::Hang => {
            std::thread::sleep(std::time::Duration::from_secs(40));
            return None;
        }
    })
}
