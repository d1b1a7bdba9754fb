//! One priority level's seats and queues, as kube's `fairqueuing/queueset` keeps them, with a simpler dispatch
//! rule of the same fairness for requests of equal cost (every request here is one seat).
//!
//! A flow (a hash of the FlowSchema, the tenant and the distinguisher) is dealt a hand of queues by shuffle
//! sharding (`deal`); a request that cannot run at once waits in the shortest queue of its hand, or is refused
//! when that queue is full. Seats go out by start-time fair queuing with unit costs (kube orders by virtual
//! finish time with estimated costs): each queue's next request has a virtual start tag, one more than its
//! previous request's, and a queue that was idle starts at the level's virtual time (the tag last dispatched);
//! a freed seat goes to the waiting queue with the smallest tag, equals in turn. Every backlogged queue gets an
//! equal share of the seats, and a queue that just became busy is served within one round: a flooding flow gets
//! its share while the others wait only for the next few seats. A waiting request gives up after the wait limit.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

/// The most cards a hand may hold (kube's entropy bound, 60 bits, allows no more with two or more queues).
pub const MAX_HAND: usize = 60;

/// How a level limits: its seats, and how requests wait for one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// The level's nominal concurrency limit (at least one).
    pub seats: u32,
    /// `None`: kube's `Reject` limit response (no seat, no wait).
    pub queuing: Option<Queuing>,
}

/// `limited.limitResponse.queuing`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queuing {
    pub queues: u32,
    pub hand_size: u32,
    pub queue_length_limit: u32,
}

/// Why a request was refused (kube's `reason` label values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Its queue held `queueLengthLimit` requests.
    QueueFull,
    /// It waited the whole wait limit.
    TimedOut,
    /// No seat was free and the level does not queue (`Reject`).
    ConcurrencyLimit,
}

impl Rejection {
    pub fn reason(self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue-full",
            Rejection::TimedOut => "time-out",
            Rejection::ConcurrencyLimit => "concurrency-limit",
        }
    }
}

/// Which queue a running request is counted in (and in which arrangement of queues).
#[derive(Clone, Copy, Debug)]
struct Ticket {
    queue: usize,
    generation: u64,
}

struct Waiter {
    id: u64,
    flow: u64,
    grant: oneshot::Sender<Ticket>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiter>,
    executing: u32,
    /// The virtual start tag of the queue's next request.
    next_start: u64,
}

struct State {
    params: Params,
    queues: Vec<Queue>,
    executing: u32,
    waiting: usize,
    /// The virtual start tag of the request dispatched last (none is ever dispatched before it).
    virtual_time: u64,
    /// Where the round robin among equally served queues starts next.
    cursor: usize,
    /// Bumped when the queues are rearranged: tickets of an older arrangement count only in `executing`.
    generation: u64,
    next_id: u64,
}

/// A level's seats and queues.
pub struct QueueSet {
    state: Mutex<State>,
}

/// Deals `flow` a hand of `hand` distinct queues out of `deck` (shuffle sharding): the same flow always gets the
/// same hand, and two flows rarely share all of theirs. Each card is a mixed-radix digit of the hash, counted
/// among the cards not yet dealt.
pub fn deal(mut flow: u64, deck: u32, hand: u32, out: &mut [u32; MAX_HAND]) -> usize {
    let hand = (hand.max(1).min(deck.max(1)) as usize).min(MAX_HAND);
    let deck = deck.max(1);
    let mut sorted = [0u32; MAX_HAND];
    for dealt in 0..hand {
        let left = u64::from(deck) - dealt as u64;
        let mut card = (flow % left) as u32;
        flow /= left;
        // The card-th queue among those not dealt yet: step over every dealt one at or below it, in order.
        let mut at = 0;
        while at < dealt && sorted[at] <= card {
            card += 1;
            at += 1;
        }
        sorted.copy_within(at..dealt, at + 1);
        sorted[at] = card;
        out[dealt] = card;
    }
    hand
}

impl State {
    fn new(params: Params) -> State {
        let queues = params.queuing.map_or(1, |q| q.queues.max(1)) as usize;
        State { params, queues: (0..queues).map(|_| Queue::default()).collect(), executing: 0, waiting: 0, virtual_time: 0, cursor: 0, generation: 0,
            next_id: 0 }
    }

    /// The least loaded queue (waiting and running) of `flow`'s hand.
    fn choose(&self, flow: u64) -> usize {
        let Some(queuing) = self.params.queuing else { return 0 };
        let mut hand = [0u32; MAX_HAND];
        let dealt = deal(flow, self.queues.len() as u32, queuing.hand_size, &mut hand);
        let load = |q: usize| self.queues[q].waiting.len() + self.queues[q].executing as usize;
        hand[..dealt].iter().map(|card| *card as usize).min_by_key(|q| load(*q)).unwrap_or(0)
    }

    /// The waiting queue whose next request has the smallest start tag, equals in turn from the cursor.
    fn pick(&self) -> Option<usize> {
        let count = self.queues.len();
        (0..count).map(|step| (self.cursor + step) % count).filter(|q| !self.queues[*q].waiting.is_empty()).min_by_key(|q| self.queues[*q].next_start)
    }

    /// A queue that was idle starts at the current virtual time (it has no credit for its idle past).
    fn wake(&mut self, queue: usize) {
        let virtual_time = self.virtual_time;
        let queue = &mut self.queues[queue];
        if queue.waiting.is_empty() {
            queue.next_start = queue.next_start.max(virtual_time);
        }
    }

    /// Gives queue `queue`'s next request a seat: its start tag becomes the virtual time.
    fn start(&mut self, queue: usize) -> Ticket {
        let queue_state = &mut self.queues[queue];
        self.virtual_time = self.virtual_time.max(queue_state.next_start);
        queue_state.next_start += 1;
        queue_state.executing += 1;
        self.executing += 1;
        Ticket { queue, generation: self.generation }
    }

    /// Gives free seats to waiting requests.
    fn dispatch(&mut self) {
        while self.waiting > 0 && self.executing < self.params.seats {
            let Some(queue) = self.pick() else { return };
            self.cursor = (queue + 1) % self.queues.len();
            let Some(waiter) = self.queues[queue].waiting.pop_front() else { return };
            self.waiting -= 1;
            let ticket = self.start(queue);
            if waiter.grant.send(ticket).is_err() {
                // Gone without leaving its queue (not reached: `Waiting` leaves on drop): the seat is free again.
                self.release(ticket);
                return;
            }
        }
    }

    fn remove(&mut self, id: u64) -> bool {
        for queue in &mut self.queues {
            if let Some(at) = queue.waiting.iter().position(|w| w.id == id) {
                queue.waiting.remove(at);
                self.waiting -= 1;
                return true;
            }
        }
        false
    }

    fn release(&mut self, ticket: Ticket) {
        self.executing = self.executing.saturating_sub(1);
        if ticket.generation == self.generation {
            if let Some(queue) = self.queues.get_mut(ticket.queue) {
                queue.executing = queue.executing.saturating_sub(1);
            }
        }
        self.dispatch();
    }
}

/// What `offer` decided.
enum Offer {
    Now(Ticket),
    Queued(u64, oneshot::Receiver<Ticket>),
    Refused(Rejection),
}

impl QueueSet {
    pub fn new(params: Params) -> QueueSet {
        QueueSet { state: Mutex::new(State::new(params)) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The level's limits, as last configured.
    pub fn params(&self) -> Params {
        self.lock().params
    }

    /// Requests waiting, and seats in use.
    pub fn load(&self) -> (usize, u32) {
        let state = self.lock();
        (state.waiting, state.executing)
    }

    /// Takes new limits (an edited PriorityLevelConfiguration, or a changed share of the server's seats). When
    /// the number of queues changes, the waiting requests are dealt again into the new queues, in order; running
    /// ones keep their seats.
    pub fn reconfigure(&self, params: Params) {
        let mut state = self.lock();
        let queues = params.queuing.map_or(1, |q| q.queues.max(1)) as usize;
        let rearranged = queues != state.queues.len();
        state.params = params;
        if rearranged {
            let waiters: Vec<Waiter> = state.queues.iter_mut().flat_map(|q| q.waiting.drain(..)).collect();
            state.queues = (0..queues).map(|_| Queue::default()).collect();
            state.generation += 1;
            state.cursor = 0;
            for waiter in waiters {
                let queue = state.choose(waiter.flow);
                state.wake(queue);
                state.queues[queue].waiting.push_back(waiter);
            }
        }
        state.dispatch();
    }

    fn offer(&self, flow: u64) -> Offer {
        let mut state = self.lock();
        let queue = state.choose(flow);
        if state.waiting == 0 && state.executing < state.params.seats {
            state.wake(queue);
            return Offer::Now(state.start(queue));
        }
        let Some(queuing) = state.params.queuing else { return Offer::Refused(Rejection::ConcurrencyLimit) };
        if state.queues[queue].waiting.len() >= queuing.queue_length_limit as usize {
            return Offer::Refused(Rejection::QueueFull);
        }
        let (grant, granted) = oneshot::channel();
        let id = state.next_id;
        state.next_id += 1;
        state.wake(queue);
        state.queues[queue].waiting.push_back(Waiter { id, flow, grant });
        state.waiting += 1;
        state.dispatch();
        Offer::Queued(id, granted)
    }

    /// A seat for a request of `flow`: at once when one is free and nobody waits, else after waiting in the
    /// flow's queue for at most `wait_limit`. Dropping the future while it waits leaves the queue.
    pub async fn acquire(self: &Arc<Self>, flow: u64, wait_limit: Duration) -> Result<Seat, Rejection> {
        let (id, granted) = match self.offer(flow) {
            Offer::Now(ticket) => return Ok(Seat { set: self.clone(), ticket }),
            Offer::Refused(rejection) => return Err(rejection),
            Offer::Queued(id, granted) => (id, granted),
        };
        let mut waiting = Waiting { set: self.clone(), id, granted, done: false };
        let outcome = tokio::time::timeout(wait_limit, &mut waiting.granted).await;
        waiting.done = true;
        match outcome {
            Ok(Ok(ticket)) => Ok(Seat { set: self.clone(), ticket }),
            // The sender is dropped only with the queue set, which this future holds: not reached.
            Ok(Err(_)) => Err(Rejection::TimedOut),
            Err(_) => match waiting.leave() {
                Some(ticket) => Ok(Seat { set: self.clone(), ticket }),
                None => Err(Rejection::TimedOut),
            },
        }
    }
}

/// A request waiting for a seat; dropped unfinished (the client went away), it leaves its queue.
struct Waiting {
    set: Arc<QueueSet>,
    id: u64,
    granted: oneshot::Receiver<Ticket>,
    done: bool,
}

impl Waiting {
    /// Leaves the queue; the seat, if one was given meanwhile.
    fn leave(&mut self) -> Option<Ticket> {
        let mut state = self.set.lock();
        if state.remove(self.id) {
            return None;
        }
        drop(state);
        // Dispatched under the lock before we took it: the ticket is in the channel.
        self.granted.try_recv().ok()
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.done {
            if let Some(ticket) = self.leave() {
                self.set.lock().release(ticket);
            }
        }
    }
}

/// A seat held: given back (and handed to the next waiting request) when dropped.
pub struct Seat {
    set: Arc<QueueSet>,
    ticket: Ticket,
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.set.lock().release(self.ticket);
    }
}

#[cfg(test)]
mod tests;
