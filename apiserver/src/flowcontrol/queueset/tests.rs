//! The queue set's rules, in process: dealing, fairness between flows, queue-full, time-out and reject refusals,
//! leaving a queue, and following new limits.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::*;

fn queuing(seats: u32, queues: u32, hand_size: u32, queue_length_limit: u32) -> Params {
    Params { seats, queuing: Some(Queuing { queues, hand_size, queue_length_limit }) }
}

fn now(set: &QueueSet, flow: u64) -> Ticket {
    match set.offer(flow) {
        Offer::Now(ticket) => ticket,
        Offer::Queued(..) => panic!("flow {flow} queued"),
        Offer::Refused(why) => panic!("flow {flow} refused: {why:?}"),
    }
}

fn queued(set: &QueueSet, flow: u64) -> oneshot::Receiver<Ticket> {
    match set.offer(flow) {
        Offer::Queued(_, granted) => granted,
        Offer::Now(_) => panic!("flow {flow} ran at once"),
        Offer::Refused(why) => panic!("flow {flow} refused: {why:?}"),
    }
}

fn refused(set: &QueueSet, flow: u64) -> Rejection {
    match set.offer(flow) {
        Offer::Refused(why) => why,
        _ => panic!("flow {flow} was not refused"),
    }
}

#[test]
fn a_flow_is_always_dealt_the_same_distinct_cards() {
    let mut hand = [0u32; MAX_HAND];
    let mut again = [0u32; MAX_HAND];
    for flow in [0u64, 1, 7, 0xdead_beef, u64::MAX, 0x9e37_79b9_7f4a_7c15] {
        let dealt = deal(flow, 128, 6, &mut hand);
        assert_eq!(dealt, 6);
        assert_eq!(deal(flow, 128, 6, &mut again), 6);
        assert_eq!(hand[..6], again[..6], "flow {flow}: dealing is deterministic");
        let cards: HashSet<u32> = hand[..6].iter().copied().collect();
        assert_eq!(cards.len(), 6, "flow {flow}: {:?} has a card twice", &hand[..6]);
        assert!(hand[..6].iter().all(|card| *card < 128), "{:?}", &hand[..6]);
    }
    // A whole deck dealt is every card once.
    let dealt = deal(0x1234_5678_9abc_def0, 12, 12, &mut hand);
    let mut cards = hand[..dealt].to_vec();
    cards.sort_unstable();
    assert_eq!(cards, (0..12).collect::<Vec<_>>());
    // A hand is never larger than the deck, and one queue is always queue 0.
    assert_eq!(deal(99, 3, 8, &mut hand), 3);
    assert_eq!((deal(99, 1, 1, &mut hand), hand[0]), (1, 0));
}

#[test]
fn different_flows_mostly_get_different_hands() {
    let mut hand = [0u32; MAX_HAND];
    let hands: HashSet<Vec<u32>> = (0..1000u64)
        .map(|flow| {
            let dealt = deal(flow.wrapping_mul(0x9e37_79b9_7f4a_7c15), 64, 6, &mut hand);
            let mut cards = hand[..dealt].to_vec();
            cards.sort_unstable();
            cards
        })
        .collect();
    assert!(hands.len() > 990, "only {} distinct hands of 1000 flows", hands.len());
}

/// Which of the receivers got a seat since the last look.
fn granted(receivers: &mut [(char, oneshot::Receiver<Ticket>)]) -> Vec<(char, Ticket)> {
    receivers.iter_mut().filter_map(|(who, granted)| granted.try_recv().ok().map(|ticket| (*who, ticket))).collect()
}

#[test]
fn a_flooding_flow_gets_its_share_and_a_light_flow_the_next_free_seat() {
    // One card per hand and 16 queues: flow 0 is queue 0, flow 1 is queue 1.
    let set = QueueSet::new(queuing(2, 16, 1, 100));
    let mut running = vec![now(&set, 0), now(&set, 0)];
    let mut waiting: Vec<(char, oneshot::Receiver<Ticket>)> = (0..20).map(|_| ('A', queued(&set, 0))).collect();
    waiting.extend((0..3).map(|_| ('B', queued(&set, 1))));
    assert_eq!(set.load(), (23, 2));
    let mut order = String::new();
    for _ in 0..10 {
        let ticket = running.remove(0);
        set.lock().release(ticket);
        let given = granted(&mut waiting);
        assert_eq!(given.len(), 1, "one seat freed, one request dispatched");
        order.push(given[0].0);
        running.push(given[0].1);
    }
    // B's queue starts at the virtual time, ahead of the flood's next request; then they alternate.
    assert_eq!(order, "BABABAAAAA");
    assert_eq!(set.load(), (13, 2));
}

#[test]
fn a_full_queue_refuses_and_a_level_without_queues_rejects() {
    let set = QueueSet::new(queuing(1, 1, 1, 1));
    let _running = now(&set, 5);
    let _waiting = queued(&set, 6);
    assert_eq!(refused(&set, 7), Rejection::QueueFull);
    assert_eq!(Rejection::QueueFull.reason(), "queue-full");

    let reject = QueueSet::new(Params { seats: 1, queuing: None });
    let _running = now(&reject, 1);
    assert_eq!(refused(&reject, 1), Rejection::ConcurrencyLimit);
}

#[tokio::test]
async fn a_request_waiting_past_the_limit_is_refused_and_leaves_its_queue() {
    let set = Arc::new(QueueSet::new(queuing(1, 4, 2, 10)));
    let seat = set.acquire(1, Duration::from_secs(1)).await.expect("a free seat");
    let refused = set.acquire(2, Duration::from_millis(20)).await;
    assert_eq!(refused.err(), Some(Rejection::TimedOut));
    assert_eq!(set.load(), (0, 1), "the refused request left its queue");
    drop(seat);
    assert_eq!(set.load(), (0, 0));
    let _again = set.acquire(2, Duration::from_millis(20)).await.expect("the seat is free again");
}

#[tokio::test]
async fn a_request_whose_client_goes_away_leaves_its_queue() {
    let set = Arc::new(QueueSet::new(queuing(1, 4, 2, 10)));
    let seat = set.acquire(1, Duration::from_secs(1)).await.expect("a free seat");
    let gone = tokio::time::timeout(Duration::from_millis(20), set.acquire(2, Duration::from_secs(60))).await;
    assert!(gone.is_err(), "still waiting when dropped");
    assert_eq!(set.load(), (0, 1));
    let waiter = {
        let set = set.clone();
        tokio::spawn(async move { set.acquire(3, Duration::from_secs(10)).await.map(drop) })
    };
    while set.load().0 == 0 {
        tokio::task::yield_now().await;
    }
    drop(seat);
    assert_eq!(waiter.await.expect("joined"), Ok(()), "the freed seat went to the one still waiting");
    assert_eq!(set.load(), (0, 0));
}

#[test]
fn new_limits_dispatch_waiting_requests_and_rearranged_queues_keep_them() {
    let set = QueueSet::new(queuing(1, 8, 2, 10));
    let running = now(&set, 1);
    let mut waiting: Vec<(char, oneshot::Receiver<Ticket>)> = (0..3).map(|_| ('A', queued(&set, 1))).collect();
    set.reconfigure(queuing(1, 32, 4, 10));
    assert_eq!(set.load(), (3, 1), "dealt again into 32 queues, still waiting");
    set.reconfigure(queuing(3, 32, 4, 10));
    assert_eq!(granted(&mut waiting).len(), 2, "two new seats, two dispatched");
    set.lock().release(running);
    assert_eq!(granted(&mut waiting).len(), 1);
    assert_eq!(set.load(), (0, 3));
}
