//! Storage clusters over in-memory stores: placement by space, lists and watches across clusters merged with a
//! position clients resume from.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::*;
use crate::conformance::{configmaps, key, space, test_config, value};
use crate::watch::WatchItem;

struct Map(Mutex<HashMap<String, ClusterId>>);

impl Placement for Map {
    fn cluster_of(&self, space: &str) -> Option<ClusterId> {
        self.0.lock().expect("test").get(space).copied()
    }
}

fn id(n: u8) -> ClusterId {
    ClusterId::new(n).expect("test")
}

/// Clusters 0 and 5; tenant `a` on 0, tenants `b` and `c` on 5.
fn two() -> (Clusters, Store, Store) {
    let (zero, five) = (Store::memory(test_config()), Store::memory(test_config()));
    let clusters = Clusters::new(zero.clone(), vec![(id(5), five.clone())]);
    let placement = [("a", 0), ("b", 5), ("c", 5)].into_iter().map(|(s, n)| (s.to_owned(), id(n))).collect();
    clusters.place_with(Arc::new(Map(Mutex::new(placement))));
    (clusters, zero, five)
}

async fn put(clusters: &Clusters, store: &Store, space_name: &str, name: &str) -> Revision {
    let key = key(store, space_name, "default", name);
    clusters.create(&key, value("{}")).await.expect("test").expect("test").revision
}

fn names(listed: &Listed) -> Vec<String> {
    listed.items.iter().map(|r| r.key.as_str().rsplit('/').next().expect("test").to_owned()).collect()
}

#[test]
fn positions_read_and_write_as_numbers_or_cluster_revision_pairs() {
    assert_eq!("42".parse(), Ok(Position::One(Revision(42))));
    assert_eq!("5:7,0:9".parse::<Position>().map(|p| p.to_string()), Ok("0:9,5:7".to_owned()), "written in cluster order");
    for bad in ["", "x", "-1", "1:2:3", "64:1", "0:1,0:2", "0:", ":1", "0:1,", "1.5"] {
        assert_eq!(bad.parse::<Position>(), Err(BadPosition), "{bad:?}");
    }
    let each: Position = "0:9,5:7".parse().expect("test");
    assert_eq!((each.on(id(5)), each.on(id(3))), (Some(Revision(7)), None));
    assert!(each.covers(&"0:9,5:6".parse().expect("test")) && !each.covers(&"0:10,5:6".parse().expect("test")) && !each.covers(&Position::One(Revision(1))));
}

#[tokio::test]
async fn each_space_is_stored_on_its_cluster_and_a_space_nobody_placed_is_refused() {
    let (clusters, zero, five) = two();
    put(&clusters, &zero, "a", "x").await;
    put(&clusters, &zero, "b", "y").await;
    put(&clusters, &zero, "system", "z").await;
    assert!(zero.get(&key(&zero, "a", "default", "x")).await.expect("test").is_some());
    assert!(five.get(&key(&zero, "b", "default", "y")).await.expect("test").is_some());
    assert!(zero.get(&key(&zero, "b", "default", "y")).await.expect("test").is_none(), "b's objects are on cluster 5 only");
    assert!(zero.get(&key(&zero, "system", "default", "z")).await.expect("test").is_some(), "the system space is on the default cluster");

    let unknown = key(&zero, "d", "default", "w");
    assert!(matches!(clusters.create(&unknown, value("{}")).await, Err(StorageError::Unavailable(_))), "never written to a guessed cluster");
    let occupied = clusters.occupied(&[configmaps(&zero).space(&space("b")), configmaps(&zero).space(&space("a")), configmaps(&zero).all_spaces()]).await.expect("test");
    assert_eq!(occupied, vec![true, true, true]);
}

#[tokio::test]
async fn a_list_across_clusters_is_merged_in_key_order_and_pages_from_one_position() {
    let (clusters, zero, _) = two();
    for (s, n) in [("a", "1"), ("b", "2"), ("a", "3"), ("c", "4"), ("b", "5")] {
        put(&clusters, &zero, s, n).await;
    }
    let everywhere = configmaps(&zero).all_spaces();
    let whole = clusters.list(&everywhere, &Listing::default()).await.expect("test");
    assert_eq!(names(&whole), ["1", "3", "2", "5", "4"], "key order: space a, then b, then c");
    let Position::Each(each) = &whole.position else { panic!("a merged list names every cluster: {}", whole.position) };
    assert_eq!(each.iter().map(|(id, _)| id.get()).collect::<Vec<_>>(), [0, 5]);

    // Pages of 2 from one snapshot: a write after the first page is not seen.
    let first = clusters.list(&everywhere, &Listing { limit: Some(2), ..Listing::default() }).await.expect("test");
    assert_eq!((names(&first), first.remaining), (vec!["1".to_owned(), "3".to_owned()], Some(3)));
    put(&clusters, &zero, "b", "0").await;
    let mut seen = names(&first);
    let mut token = first.continue_token.clone();
    while let Some(continue_token) = token {
        let page = clusters.list(&everywhere, &Listing { limit: Some(2), continue_token: Some(continue_token), ..Listing::default() }).await.expect("test");
        assert_eq!(page.position, first.position, "every page is read at the first page's position");
        seen.extend(names(&page));
        token = page.continue_token;
    }
    assert_eq!(seen, ["1", "3", "2", "5", "4"]);

    // At an exact position, and a one-revision position refused for a merged range.
    let exact = clusters.list(&everywhere, &Listing { at: Some(whole.position.clone()), ..Listing::default() }).await.expect("test");
    assert_eq!(names(&exact), names(&whole));
    let one = Listing { at: Some(Position::One(Revision(1))), ..Listing::default() };
    assert!(matches!(clusters.list(&everywhere, &one).await, Err(StorageError::PositionMismatch(_))));

    // One space's list is its cluster's, with that cluster's revision.
    let b = clusters.list(&configmaps(&zero).space(&space("b")), &Listing::default()).await.expect("test");
    assert_eq!(names(&b), ["0", "2", "5"]);
    assert!(matches!(b.position, Position::One(_)));
}

#[tokio::test]
async fn a_watch_across_clusters_sees_every_event_once_and_resumes_from_any_position_it_gave() {
    let (clusters, zero, _) = two();
    let everywhere = configmaps(&zero).all_spaces();
    let start = clusters.current(&everywhere).await.expect("test");
    let mut watcher = clusters.watch(&everywhere, &start, WatchOptions::default()).await.expect("test");
    for (s, n) in [("a", "1"), ("b", "2"), ("c", "3"), ("a", "4")] {
        put(&clusters, &zero, s, n).await;
    }
    let mut got = Vec::new();
    let mut after_second = None;
    while got.len() < 4 {
        let Some(Ok(WatchItem::Event(event))) = watcher.next().await else { panic!("expected an event") };
        got.push(event.key.as_str().rsplit('/').next().expect("test").to_owned());
        if got.len() == 2 {
            after_second = watcher.position().cloned();
        }
    }
    let first_two = got[..2].to_vec();
    got.sort();
    assert_eq!(got, ["1", "2", "3", "4"]);

    // Resuming from the position after the second event delivers exactly the other two.
    let resume = after_second.expect("test");
    let mut resumed = clusters.watch(&everywhere, &resume, WatchOptions::default()).await.expect("test");
    let mut rest = Vec::new();
    while rest.len() < 2 {
        let Some(Ok(WatchItem::Event(event))) = resumed.next().await else { panic!("expected an event") };
        rest.push(event.key.as_str().rsplit('/').next().expect("test").to_owned());
    }
    rest.extend(first_two);
    rest.sort();
    assert_eq!(rest, got, "the resumed watch delivers exactly what came after the position");
    assert!(tokio::time::timeout(std::time::Duration::from_millis(100), resumed.next()).await.is_err(), "nothing delivered twice");

    // A one-revision position cannot resume a merged watch: kube's 410, and the client lists again.
    assert!(matches!(clusters.watch(&everywhere, &Position::One(Revision(1)), WatchOptions::default()).await, Err(StorageError::PositionMismatch(_))));
}

#[tokio::test]
async fn one_cluster_behaves_as_its_store() {
    let store = Store::memory(test_config());
    let clusters = Clusters::single(store.clone());
    let written = put(&clusters, &store, "anything", "x").await;
    let listed = clusters.list(&configmaps(&store).all_spaces(), &Listing::default()).await.expect("test");
    assert_eq!((names(&listed), listed.position), (vec!["x".to_owned()], Position::One(written)));
}
