//! `metadata.managedFields` as kube keeps it: one entry per manager identity (manager, operation, and for
//! updates the apiVersion; plus the subresource), decoded from and encoded to the API form, sorted as kube
//! sorts it (Apply first, then by time, manager, apiVersion, subresource), and the 10-update-entry cap.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::set::FieldSet;

/// The two operations a managedFields entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who owns an entry. Appliers are one identity whatever apiVersion they apply with; updaters are one per
/// apiVersion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    pub(crate) manager: String,
    pub(crate) operation: Operation,
    /// Empty for appliers.
    pub(crate) api_version: String,
    pub(crate) subresource: String,
}

impl Identity {
    pub(crate) fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Identity {
        let manager = if manager.is_empty() { "unknown" } else { manager };
        let api_version = if operation == Operation::Apply { "" } else { api_version };
        Identity { manager: manager.to_owned(), operation, api_version: api_version.to_owned(), subresource: subresource.to_owned() }
    }

    /// kube's manager identifier: the entry's JSON without time and fields (`{"manager":"m","operation":"Apply"}`);
    /// also the order conflicts are reported in.
    pub(crate) fn key(&self) -> String {
        // Written as bytes by serde_json's string escaping: every write computes keys, and a `Value` per field
        // cost more than the rest of a small write's bookkeeping.
        let mut key = Vec::with_capacity(96);
        key.push(b'{');
        for (name, value) in [("manager", self.manager.as_str()), ("operation", self.operation.as_str()),
            ("apiVersion", &self.api_version), ("subresource", &self.subresource)] {
            if value.is_empty() {
                continue;
            }
            if key.len() > 1 {
                key.push(b',');
            }
            key.push(b'"');
            key.extend_from_slice(name.as_bytes());
            key.extend_from_slice(b"\":");
            // Writing a string into a Vec<u8> cannot fail.
            let _ = serde_json::to_writer(&mut key, value);
        }
        key.push(b'}');
        String::from_utf8(key).unwrap_or_default()
    }

    /// How kube names the manager in a conflict: `"m"`, `"m" with subresource "status"`, `"m" using apps/v1`.
    pub(crate) fn describe(&self) -> String {
        let mut text = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            text = format!("{text} with subresource {:?}", self.subresource);
        }
        if self.operation == Operation::Update {
            text = format!("{text} using {}", self.api_version);
        }
        text
    }
}

/// One manager's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry<'a> {
    pub(crate) identity: Identity,
    set: FieldSet,
    /// The FieldsV1 the set was decoded from, while the set is unchanged: encoding reuses it.
    decoded_from: Option<&'a Value>,
    /// The apiVersion the fields were written with (appliers too).
    pub(crate) api_version: String,
    /// `metadata.managedFields[].time`: set when the manager last changed the object.
    pub(crate) time: Option<String>,
}

impl<'a> Entry<'a> {
    pub(crate) fn new(identity: Identity, set: FieldSet, api_version: String, time: Option<String>) -> Entry<'a> {
        Entry { identity, set, decoded_from: None, api_version, time }
    }

    pub(crate) fn set(&self) -> &FieldSet {
        &self.set
    }

    /// Replaces the fields (the entry is then encoded from them).
    pub(crate) fn set_fields(&mut self, set: FieldSet) {
        self.set = set;
        self.decoded_from = None;
    }

    /// Reuses `earlier`'s FieldsV1 when this entry owns exactly the same fields (nothing to encode).
    pub(crate) fn keep_encoding_of(&mut self, earlier: &Entry<'a>) {
        if self.decoded_from.is_none() && self.set == earlier.set {
            self.decoded_from = earlier.decoded_from;
        }
    }

    fn fields_v1(&self) -> Value {
        self.decoded_from.cloned().unwrap_or_else(|| self.set.to_fields_v1())
    }
}

/// Every entry, by identity key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Managers<'a> {
    pub(crate) entries: BTreeMap<String, Entry<'a>>,
}

impl<'a> Managers<'a> {
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn get(&self, identity: &Identity) -> Option<&Entry<'a>> {
        self.entries.get(&identity.key())
    }

    pub(crate) fn put(&mut self, entry: Entry<'a>) {
        self.entries.insert(entry.identity.key(), entry);
    }

    /// Drops the entries that own nothing.
    pub(crate) fn drop_empty(&mut self) {
        self.entries.retain(|_, entry| !entry.set.is_empty());
    }

    /// Decodes `metadata.managedFields`; absent or null is empty. Every entry must name an operation of
    /// `Apply` or `Update`, an apiVersion and `fieldsType: FieldsV1`, as kube requires.
    pub(crate) fn decode(value: Option<&'a Value>) -> Result<Managers<'a>, String> {
        let mut managers = Managers::default();
        let entries = match value {
            None | Some(Value::Null) => return Ok(managers),
            Some(Value::Array(entries)) => entries,
            Some(_) => return Err("managedFields must be a list".into()),
        };
        for (i, entry) in entries.iter().enumerate() {
            managers.put(decode_entry(entry).map_err(|why| format!("managedFields[{i}]: {why}"))?);
        }
        Ok(managers)
    }

    /// The API form, sorted as kube sorts it; `None` when there are no entries (the field is then omitted).
    pub(crate) fn encode(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        let mut entries: Vec<&Entry<'a>> = self.entries.values().collect();
        entries.sort_by(|a, b| {
            let seconds = |e: &Entry<'a>| e.time.as_deref().and_then(parse_seconds).unwrap_or(0);
            a.identity.operation.cmp(&b.identity.operation)
                .then_with(|| seconds(a).cmp(&seconds(b)))
                .then_with(|| a.identity.manager.cmp(&b.identity.manager))
                .then_with(|| a.api_version.cmp(&b.api_version))
                .then_with(|| a.identity.subresource.cmp(&b.identity.subresource))
        });
        Some(Value::Array(entries.into_iter().map(encode_entry).collect()))
    }

    /// kube's cap: with more than `max` update entries, the oldest are merged, per apiVersion, into an
    /// `ancient-changes` entry until at most `max` remain.
    pub(crate) fn cap_updaters(&mut self, max: usize) {
        let mut updaters: Vec<(i64, String)> = self.entries.iter()
            .filter(|(_, e)| e.identity.operation == Operation::Update)
            .map(|(key, e)| (e.time.as_deref().and_then(parse_seconds).unwrap_or(0), key.clone()))
            .collect();
        if updaters.len() <= max {
            return;
        }
        updaters.sort();
        let mut remaining = updaters.len();
        let mut first_of_version: BTreeMap<String, String> = BTreeMap::new();
        for (_, key) in updaters {
            if remaining <= max {
                break;
            }
            let Some(entry) = self.entries.get(&key).cloned() else { continue };
            let bucket = Identity::new(ANCIENT_CHANGES, Operation::Update, &entry.api_version, "");
            let Some(first) = first_of_version.get(&entry.api_version) else {
                first_of_version.insert(entry.api_version.clone(), key);
                continue;
            };
            if !self.entries.contains_key(&bucket.key()) {
                if let Some(moved) = self.entries.remove(first) {
                    self.put(Entry { identity: bucket.clone(), ..moved });
                }
            }
            let union = self.get(&bucket).map_or_else(|| entry.set.clone(), |b| entry.set.union(&b.set));
            self.entries.remove(&key);
            self.put(Entry::new(bucket, union, entry.api_version.clone(), entry.time.clone()));
            remaining -= 1;
        }
    }
}

/// The manager old update entries merge into.
const ANCIENT_CHANGES: &str = "ancient-changes";

fn decode_entry(entry: &Value) -> Result<Entry<'_>, String> {
    let text = |name: &str| entry.get(name).and_then(Value::as_str).unwrap_or_default();
    let operation = match text("operation") {
        "Apply" => Operation::Apply,
        "Update" => Operation::Update,
        _ => return Err("operation must be `Apply` or `Update`".into()),
    };
    let api_version = text("apiVersion");
    if api_version.is_empty() {
        return Err("apiVersion must not be empty".into());
    }
    match text("fieldsType") {
        "FieldsV1" => {}
        "" => return Err("missing fieldsType".into()),
        other => return Err(format!("invalid fieldsType {other:?}")),
    }
    let (set, decoded_from) = match entry.get("fieldsV1") {
        None | Some(Value::Null) => (FieldSet::new(), None),
        Some(fields) => (FieldSet::from_fields_v1(fields)?, Some(fields)),
    };
    let identity = Identity::new(text("manager"), operation, api_version, text("subresource"));
    let time = entry.get("time").and_then(Value::as_str).map(str::to_owned);
    Ok(Entry { identity, set, decoded_from, api_version: api_version.to_owned(), time })
}

fn encode_entry(entry: &Entry<'_>) -> Value {
    let mut map = Map::new();
    map.insert("manager".into(), json!(entry.identity.manager));
    map.insert("operation".into(), json!(entry.identity.operation.as_str()));
    map.insert("apiVersion".into(), json!(entry.api_version));
    if let Some(time) = &entry.time {
        map.insert("time".into(), json!(time));
    }
    map.insert("fieldsType".into(), json!("FieldsV1"));
    map.insert("fieldsV1".into(), entry.fields_v1());
    if !entry.identity.subresource.is_empty() {
        map.insert("subresource".into(), json!(entry.identity.subresource));
    }
    Value::Object(map)
}

/// Seconds since the epoch of an RFC 3339 time (entries are ordered by whole seconds, as kube orders them).
fn parse_seconds(time: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(time).ok().map(|t| t.timestamp())
}

/// True for the two ways a client asks to clear managedFields: an empty list, or a list of one empty entry.
pub(crate) fn is_reset(value: Option<&Value>) -> bool {
    match value.and_then(Value::as_array).map(Vec::as_slice) {
        Some([]) => true,
        Some([Value::Object(only)]) => only.is_empty(),
        _ => false,
    }
}
