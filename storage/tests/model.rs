//! Property test: the sled store against the in-memory reference model, operation by operation.
//!
//! Random sequences of writes (guarded and unguarded), reads, paged lists (continued across later writes),
//! lists at past revisions, compactions and resumed watches run against both stores over a small key space
//! (spaces `t1` and `t10`, namespaces `a` and `b`, names `x`, `y`, `z`); every outcome must be identical:
//! records, conflicts, and errors. The hub window is 2 so resumed watches replay the backend's history. Each
//! shrunk failure found is pinned below as a numbered `regression_NNN_*` test.

use std::time::Duration;

use bytes::Bytes;
use kspaces_storage::conformance::{configmaps, space, test_config};
use kspaces_storage::sled::SledConfig;
use kspaces_storage::{
    Conflict, HubConfig, Key, KeyRange, ListPage, ListRequest, Record, Revision, StorageError, Store, StoreConfig,
    WatchFrom, WatchItem, WatchOptions,
};
use proptest::prelude::*;

/// Which revision a guarded write expects.
#[derive(Clone, Debug)]
enum Expect {
    /// No precondition.
    Any,
    /// The key's current revision (read first), so the write usually succeeds.
    Current,
    /// This literal revision, usually stale.
    Literal(u64),
}

/// One step of a sequence. Keys and ranges are indices into [`KEYS`] and [`ranges`].
#[derive(Clone, Debug)]
enum Op {
    Create(usize, u8),
    Update(usize, u8, Expect),
    Delete(usize, Expect),
    Get(usize),
    /// A first page of `range` with `limit`, at `back` revisions before the current one; the continue token is kept.
    List { range: usize, limit: Option<usize>, back: u64 },
    /// The next page of the last kept continue token.
    Continue,
    /// Compacts to `back` revisions before the current one.
    Compact { back: u64 },
    /// Watches everything after `back` revisions before the current one, up to the current revision.
    Watch { back: u64 },
}

/// `(space, namespace, name)` of every key the test uses.
const KEYS: [(&str, &str, &str); 12] = [
    ("t1", "a", "x"),
    ("t1", "a", "y"),
    ("t1", "a", "z"),
    ("t1", "b", "x"),
    ("t1", "b", "y"),
    ("t1", "b", "z"),
    ("t10", "a", "x"),
    ("t10", "a", "y"),
    ("t10", "a", "z"),
    ("t10", "b", "x"),
    ("t10", "b", "y"),
    ("t10", "b", "z"),
];

fn object_key(store: &Store, index: usize) -> Key {
    let (space_name, namespace, name) = KEYS[index % KEYS.len()];
    configmaps(store).object(&space(space_name), Some(namespace), name).expect("valid key")
}

fn ranges(store: &Store) -> Vec<KeyRange> {
    let keys = configmaps(store);
    vec![
        keys.all_spaces(),
        keys.space(&space("t1")),
        keys.space(&space("t10")),
        keys.namespace(&space("t1"), Some("a")).expect("range"),
        keys.namespace(&space("t10"), Some("b")).expect("range"),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let expect = prop_oneof![Just(Expect::Any), Just(Expect::Current), (0u64..12).prop_map(Expect::Literal)];
    prop_oneof![
        4 => (0..KEYS.len(), any::<u8>()).prop_map(|(k, v)| Op::Create(k, v)),
        3 => (0..KEYS.len(), any::<u8>(), expect.clone()).prop_map(|(k, v, e)| Op::Update(k, v, e)),
        2 => (0..KEYS.len(), expect).prop_map(|(k, e)| Op::Delete(k, e)),
        1 => (0..KEYS.len()).prop_map(Op::Get),
        3 => (0..5usize, proptest::option::of(1..4usize), 0u64..4)
            .prop_map(|(range, limit, back)| Op::List { range, limit, back }),
        2 => Just(Op::Continue),
        1 => (0u64..6).prop_map(|back| Op::Compact { back }),
        1 => (0u64..8).prop_map(|back| Op::Watch { back }),
    ]
}

/// What one operation returned, in a form both stores must agree on.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Write(Result<Result<Record, Conflict>, StorageError>),
    Deleted(Result<Result<(Record, Revision), Conflict>, StorageError>),
    Got(Result<Option<Record>, StorageError>),
    Page(Result<ListPage, StorageError>),
    Compacted(Result<(), StorageError>),
    /// `(kind, key, value, prev, revision)` of each event, or the error that ended the watch.
    Watched(Vec<String>),
    Skipped,
}

/// One store under test, with the continue token of its last paged list.
struct Subject {
    store: Store,
    token: Option<(usize, String)>,
}

impl Subject {
    async fn back(&self, back: u64) -> Revision {
        Revision(self.store.current_revision().await.expect("revision").0.saturating_sub(back))
    }

    async fn expected(&self, index: usize, expect: &Expect) -> Option<Revision> {
        match expect {
            Expect::Any => None,
            Expect::Literal(revision) => Some(Revision(*revision)),
            Expect::Current => {
                let current = self.store.get(&object_key(&self.store, index)).await.expect("get");
                Some(current.map_or(Revision(1), |record| record.revision))
            }
        }
    }

    async fn apply(&mut self, op: &Op) -> Outcome {
        let store = self.store.clone();
        match op {
            Op::Create(k, v) => Outcome::Write(store.create(&object_key(&store, *k), Bytes::from(vec![*v])).await),
            Op::Update(k, v, expect) => {
                let expected = self.expected(*k, expect).await;
                Outcome::Write(store.update(&object_key(&store, *k), Bytes::from(vec![*v]), expected).await)
            }
            Op::Delete(k, expect) => {
                let expected = self.expected(*k, expect).await;
                let deleted = store.delete(&object_key(&store, *k), expected).await;
                Outcome::Deleted(deleted.map(|inner| inner.map(|d| (d.prev, d.revision))))
            }
            Op::Get(k) => Outcome::Got(store.get(&object_key(&store, *k)).await),
            Op::List { range, limit, back } => {
                let request = ListRequest { revision: Some(self.back(*back).await), limit: *limit, ..ListRequest::default() };
                let page = store.list(&ranges(&store)[*range], &request).await;
                self.keep_token(*range, &page);
                Outcome::Page(page)
            }
            Op::Continue => {
                let Some((range, token)) = self.token.take() else { return Outcome::Skipped };
                let request = ListRequest { continue_token: Some(token), limit: Some(2), ..ListRequest::default() };
                let page = store.list(&ranges(&store)[range], &request).await;
                self.keep_token(range, &page);
                Outcome::Page(page)
            }
            Op::Compact { back } => Outcome::Compacted(store.compact(self.back(*back).await).await),
            Op::Watch { back } => Outcome::Watched(self.watch(*back).await),
        }
    }

    fn keep_token(&mut self, range: usize, page: &Result<ListPage, StorageError>) {
        self.token = page.as_ref().ok().and_then(|page| page.continue_token.clone()).map(|token| (range, token));
    }

    async fn watch(&self, back: u64) -> Vec<String> {
        let from = self.back(back).await;
        let through = self.store.current_revision().await.expect("revision");
        let range = configmaps(&self.store).all_spaces();
        let mut watcher = match self.store.watch(&range, WatchFrom::After(from), WatchOptions::default()).await {
            Ok(watcher) => watcher,
            Err(err) => return vec![format!("error {err}")],
        };
        let mut seen = Vec::new();
        let mut at = from;
        while at < through {
            match tokio::time::timeout(Duration::from_secs(5), watcher.next()).await {
                Ok(Some(Ok(WatchItem::Event(e)))) => {
                    at = e.revision;
                    seen.push(format!("{:?} {} {:?} {:?} {}", e.kind, e.key, e.value, e.prev, e.revision));
                }
                Ok(Some(Ok(WatchItem::Bookmark(_)))) => {}
                other => {
                    seen.push(format!("ended: {other:?}"));
                    break;
                }
            }
        }
        seen
    }
}

fn config() -> StoreConfig {
    StoreConfig { hub: HubConfig { window: 2, ..HubConfig::default() }, ..test_config() }
}

/// Runs `ops` against memory and sled; returns the first difference.
fn run(ops: &[Op]) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    runtime.block_on(async {
        let sled = Store::open_sled(&SledConfig::new(dir.path().join("db")), config()).expect("open sled");
        let mut model = Subject { store: Store::memory(config()), token: None };
        let mut subject = Subject { store: sled, token: None };
        for (step, op) in ops.iter().enumerate() {
            let expected = model.apply(op).await;
            let actual = subject.apply(op).await;
            if expected != actual {
                return Err(format!("step {step} {op:?}:\n memory: {expected:?}\n sled:   {actual:?}"));
            }
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn sled_behaves_like_the_memory_model(ops in proptest::collection::vec(op_strategy(), 1..40)) {
        if let Err(difference) = run(&ops) {
            prop_assert!(false, "{}", difference);
        }
    }
}

/// Pins a shrunk failure: `ops` must behave the same on both stores.
fn pinned(ops: &[Op]) {
    if let Err(difference) = run(ops) {
        panic!("{difference}");
    }
}

/// A continue token resumed at the last key of the previous page on sled (its version keys sort after the
/// `key \0` position), so that key came twice. Fixed in `sled::scan`.
#[test]
fn regression_001_continue_token_repeats_last_key_on_sled() {
    pinned(&[Op::Create(6, 0), Op::Create(7, 0), Op::List { range: 2, limit: Some(1), back: 0 }, Op::Continue]);
}
