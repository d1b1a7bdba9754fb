//! kill -9 in a loop: no acknowledged write is lost and the store always reopens consistent.
//!
//! The parent test re-runs this test binary as a child (`--exact child_writer`) that writes to a sled store
//! from several tasks and prints each write to stdout only after the store acknowledged it. The parent kills
//! the child (SIGKILL) at a random moment, then checks the store on disk: it passes the consistency check,
//! holds every acknowledged write (or a newer value), continues revisions above the last acknowledged one, and
//! accepts new writes. The same directory is reused across rounds, so later rounds crash over older crashes.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use kspaces_storage::conformance::{key, test_config, value};
use kspaces_storage::sled::{check_path, SledConfig};
use kspaces_storage::{Revision, Store};

/// Names the data directory of the child writer; the child does nothing without it.
const DIR_VAR: &str = "KSPACES_CRASH_TEST_DIR";
/// Names the round, so each child writes keys of its own.
const ROUND_VAR: &str = "KSPACES_CRASH_TEST_ROUND";
const ROUNDS: u32 = 6;
const WRITERS: usize = 4;

/// One acknowledged write as the child printed it: `ack <name> <revision> <value>`.
struct Ack {
    name: String,
    revision: Revision,
    value: String,
}

fn parse_ack(line: &str) -> Option<Ack> {
    let mut parts = line.strip_prefix("ack ")?.split(' ');
    let (name, revision, value) = (parts.next()?, parts.next()?, parts.next()?);
    Some(Ack { name: name.to_owned(), revision: revision.parse().ok()?, value: value.to_owned() })
}

/// The child: concurrent creates (new keys) and updates (one hot key per writer), with a compaction now and
/// then, until it is killed. A no-op when not started by [`kill_9_loses_no_acknowledged_write`].
#[test]
fn child_writer() {
    let Some(dir) = std::env::var_os(DIR_VAR) else {
        assert!(std::env::var_os(DIR_VAR).is_none(), "runs only as the crash test's child");
        return;
    };
    let round = std::env::var(ROUND_VAR).unwrap_or_default();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async move {
        let store = Store::open_sled(&SledConfig::new(Path::new(&dir)), test_config()).expect("open sled");
        let writers: Vec<_> = (0..WRITERS).map(|writer| tokio::spawn(write_forever(store.clone(), round.clone(), writer))).collect();
        for writer in writers {
            writer.await.expect("writer");
        }
    });
}

async fn write_forever(store: Store, round: String, writer: usize) {
    let hot = format!("hot-{writer}");
    for i in 0..100_000u32 {
        let name = format!("r{round}-w{writer}-{i}");
        let text = format!("v{round}-{i}");
        let created = store.create(&key(&store, "t1", "default", &name), value(&text)).await;
        let created = created.expect("no error").expect("a fresh key");
        println!("ack {name} {} {text}", created.revision);
        let updated = match store.get(&key(&store, "t1", "default", &hot)).await.expect("get") {
            Some(_) => store.update(&key(&store, "t1", "default", &hot), value(&text), None).await,
            None => store.create(&key(&store, "t1", "default", &hot), value(&text)).await,
        };
        let updated = updated.expect("no error").expect("only this writer writes its hot key");
        println!("ack {hot} {} {text}", updated.revision);
        if writer == 0 && i % 25 == 24 {
            store.compact(Revision(updated.revision.0.saturating_sub(20))).await.expect("compact");
        }
    }
}

/// Starts a child writer on `dir`, kills it after `delay`, and returns the acknowledged writes it printed.
fn run_and_kill(dir: &Path, round: u32, delay: Duration) -> Vec<Ack> {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "child_writer", "--nocapture"])
        .env(DIR_VAR, dir)
        .env(ROUND_VAR, round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the child writer");
    let stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut stdout = BufReader::new(stdout);
        let mut acks = Vec::new();
        let mut line = Vec::new();
        // Only whole lines count: the child may die in the middle of printing one.
        while stdout.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
            if line.ends_with(b"\n") {
                acks.extend(std::str::from_utf8(&line).ok().and_then(|text| parse_ack(text.trim_end())));
            }
            line.clear();
        }
        acks
    });
    std::thread::sleep(delay);
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    reader.join().expect("reader thread")
}

/// Checks the store in `dir` against every write acknowledged so far; returns its current revision.
async fn check_store(dir: &Path, latest: &HashMap<String, (Revision, String)>) -> Revision {
    let problems = check_path(dir).expect("the store opens for checking");
    assert!(problems.is_empty(), "consistency problems after kill -9: {problems:#?}");
    let store = Store::open_sled(&SledConfig::new(dir), test_config()).expect("the store reopens");
    let current = store.current_revision().await.expect("revision");
    for (name, (revision, text)) in latest {
        let record = store.get(&key(&store, "t1", "default", name)).await.expect("get");
        let record = record.unwrap_or_else(|| panic!("acknowledged write {name}@{revision} is lost"));
        assert!(record.revision >= *revision, "{name} went back from {revision} to {}", record.revision);
        if record.revision == *revision {
            assert_eq!(record.value, value(text), "{name}@{revision} has another value");
        }
    }
    let max = latest.values().map(|(revision, _)| *revision).max().unwrap_or_default();
    assert!(current >= max, "current revision {current} is below the acknowledged {max}");
    let probe = key(&store, "t1", "default", &format!("probe-{}", current.0));
    let written = store.create(&probe, value("probe")).await.expect("no error").expect("the store accepts writes");
    assert!(written.revision > current && written.revision > max);
    current
}

#[test]
fn kill_9_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let mut latest: HashMap<String, (Revision, String)> = HashMap::new();
    let mut total = 0;
    for round in 0..ROUNDS {
        // Early rounds may die while opening; later ones mostly mid-write.
        let delay = Duration::from_millis(rand::random_range(0..150) + u64::from(round) * 60);
        let acks = run_and_kill(&db, round, delay);
        total += acks.len();
        eprintln!("round {round}: killed after {delay:?} with {} acknowledged writes", acks.len());
        for ack in acks {
            let newer = latest.get(&ack.name).is_none_or(|(revision, _)| ack.revision > *revision);
            if newer {
                latest.insert(ack.name, (ack.revision, ack.value));
            }
        }
        runtime.block_on(check_store(&db, &latest));
    }
    assert!(total > 0, "no child acknowledged any write in {ROUNDS} rounds");
}
