//! The collector's work queue (pure, time passed in), with client-go's workqueue rules: an item is queued at
//! most once; an item added while it is being processed is processed again afterwards, never twice at once; a
//! failed item comes back after an exponential backoff. Memory is bounded by the number of distinct items.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use kspaces_storage::SpaceName;

use super::graph::Uid;

/// One thing for the collector to look at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Work {
    /// An object with ownerReferences: delete it if no owner is left, or drop its dangling references.
    Dependent(SpaceName, Uid),
    /// An object being deleted with `orphan` or `foregroundDeletion`: orphan its dependents or wait for them, then
    /// lift the finalizer.
    Owner(SpaceName, Uid),
}

impl Work {
    pub fn space(&self) -> &SpaceName {
        match self {
            Work::Dependent(space, _) | Work::Owner(space, _) => space,
        }
    }
}

/// The first retry waits this long; each failure doubles it, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between retries (an owner whose kind the space does not serve is retried this often).
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

#[derive(Debug, Default)]
pub struct WorkQueue {
    ready: VecDeque<Work>,
    /// Queued and not yet taken.
    dirty: HashSet<Work>,
    processing: HashSet<Work>,
    /// Items waiting for a retry, with their earliest due time (the heap may hold outdated entries).
    delayed: BinaryHeap<Reverse<(Instant, Work)>>,
    due: HashMap<Work, Instant>,
    failures: HashMap<Work, u32>,
}

impl WorkQueue {
    /// Queues `work` now (a no-op if it is queued already).
    pub fn add(&mut self, work: Work) {
        if !self.dirty.insert(work.clone()) {
            return;
        }
        if !self.processing.contains(&work) {
            self.ready.push_back(work);
        }
    }

    /// Takes the next ready item; it stays "processing" until [`WorkQueue::done`].
    pub fn pop(&mut self) -> Option<Work> {
        let work = self.ready.pop_front()?;
        self.dirty.remove(&work);
        self.processing.insert(work.clone());
        Some(work)
    }

    /// Ends processing; an item added meanwhile goes back in line.
    pub fn done(&mut self, work: &Work) {
        self.processing.remove(work);
        if self.dirty.contains(work) {
            self.ready.push_back(work.clone());
        }
    }

    /// Counts a failure and queues `work` again after its backoff.
    pub fn retry(&mut self, work: Work, now: Instant) {
        let failures = self.failures.entry(work.clone()).or_insert(0);
        *failures = failures.saturating_add(1);
        let backoff = FIRST_BACKOFF.saturating_mul(1u32 << (*failures - 1).min(16)).min(MAX_BACKOFF);
        self.add_at(work, now + backoff);
    }

    /// Forgets the failures of `work` (it succeeded).
    pub fn forget(&mut self, work: &Work) {
        self.failures.remove(work);
    }

    fn add_at(&mut self, work: Work, at: Instant) {
        if self.due.get(&work).is_some_and(|known| *known <= at) {
            return;
        }
        self.due.insert(work.clone(), at);
        self.delayed.push(Reverse((at, work)));
    }

    /// Moves the retries due at `now` into line.
    pub fn promote(&mut self, now: Instant) {
        while let Some(Reverse((at, _))) = self.delayed.peek() {
            if *at > now {
                break;
            }
            if let Some(Reverse((at, work))) = self.delayed.pop() {
                if self.due.get(&work) == Some(&at) {
                    self.due.remove(&work);
                    self.add(work);
                }
            }
        }
    }

    /// Moves the retries of `space` (of every space, for `None`) into line at once: a CRD changed there, so an owner
    /// kind it did not serve may be served now.
    pub fn promote_space(&mut self, space: Option<&SpaceName>) {
        let mut waiting: Vec<(Instant, Work)> = self.due.iter()
            .filter(|(w, _)| space.is_none_or(|s| w.space() == s))
            .map(|(w, at)| (*at, w.clone()))
            .collect();
        // In the order they were due, so that the queue stays fair.
        waiting.sort();
        for (_, work) in waiting {
            self.due.remove(&work);
            self.add(work);
        }
    }

    /// When the next retry is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.delayed.peek().map(|Reverse((at, _))| *at)
    }

    /// Items queued or waiting for a retry.
    pub fn len(&self) -> usize {
        self.ready.len() + self.due.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(n: u128) -> Work {
        Work::Dependent(SpaceName::system(), Uid::Uuid(n))
    }

    /// Runs a script of operations, then checks the order in which items come out.
    fn check(script: &[(&str, u128)], expected: &[u128]) {
        let mut queue = WorkQueue::default();
        let start = Instant::now();
        let mut now = start;
        let mut popped = Vec::new();
        for (op, n) in script {
            match *op {
                "add" => queue.add(item(*n)),
                "pop" => popped.extend(queue.pop().map(|w| match w { Work::Dependent(_, Uid::Uuid(n)) => n, _ => 0 })),
                "done" => queue.done(&item(*n)),
                "retry" => queue.retry(item(*n), now),
                "forget" => queue.forget(&item(*n)),
                "wait" => {
                    now = start + Duration::from_millis(*n as u64);
                    queue.promote(now);
                }
                "crd" => queue.promote_space(None),
                _ => unreachable!("unknown op {op}"),
            }
        }
        assert_eq!(popped, expected, "{script:?}");
    }

    #[test]
    fn items_come_out_once_in_order_and_never_twice_at_once() {
        check(&[("add", 1), ("add", 2), ("add", 1), ("pop", 0), ("pop", 0), ("pop", 0)], &[1, 2]);
        // Added while processing: comes out again only after `done`.
        check(&[("add", 1), ("pop", 0), ("add", 1), ("pop", 0), ("done", 1), ("pop", 0)], &[1, 1]);
        check(&[("add", 1), ("pop", 0), ("done", 1), ("pop", 0)], &[1]);
    }

    #[test]
    fn retries_back_off_exponentially() {
        // The first retry comes after 100 ms; a second failure doubles the wait.
        check(&[("add", 1), ("pop", 0), ("done", 1), ("retry", 1), ("wait", 99), ("pop", 0), ("wait", 100), ("pop", 0)], &[1, 1]);
        check(&[("retry", 1), ("wait", 100), ("pop", 0), ("done", 1), ("retry", 1), ("wait", 299), ("pop", 0), ("wait", 300), ("pop", 0)], &[1, 1]);
        // A retry asked while one is pending keeps the earlier time.
        check(&[("retry", 1), ("retry", 1), ("wait", 150), ("pop", 0), ("wait", 400), ("pop", 0)], &[1]);
        check(&[("retry", 1), ("forget", 1), ("retry", 1), ("wait", 100), ("pop", 0)], &[1]);
        // A CRD change brings every retry back at once.
        check(&[("retry", 1), ("retry", 2), ("crd", 0), ("pop", 0), ("pop", 0)], &[1, 2]);
    }

    #[test]
    fn backoff_is_capped() {
        let mut queue = WorkQueue::default();
        let start = Instant::now();
        for _ in 0..40 {
            queue.retry(item(1), start);
        }
        assert_eq!(queue.next_due(), Some(start + FIRST_BACKOFF));
        let mut later = WorkQueue::default();
        later.failures.insert(item(1), 39);
        later.retry(item(1), start);
        assert_eq!(later.next_due(), Some(start + MAX_BACKOFF));
    }
}
