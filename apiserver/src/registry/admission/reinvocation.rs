//! kube-apiserver's reinvocation of mutating admission, one context per write: the mutating rules run once; if
//! one of them changed the object after a rule asking to be reinvoked (`reinvocationPolicy: IfNeeded`) ran, the
//! rules run a second time, and in it only those that asked and saw the object change afterwards run again. Each
//! reinvocable plugin (mutating policies, mutating webhooks) keeps its own record here under its name, so a change
//! by either counts for both: a webhook's change reinvokes the policies that ran before it, and a policy's change in
//! the second round reinvokes the webhooks that ran after the first round's last change.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

/// One write's reinvocation state.
#[derive(Debug, Default)]
pub struct Reinvocation(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    /// Some item changed the object.
    changed: bool,
    second: bool,
    plugins: HashMap<&'static str, Plugin>,
}

/// What one plugin knows of its own items (a policy binding, a webhook), each named by an id stable within the write.
#[derive(Debug, Default)]
struct Plugin {
    /// Items asking to be reinvoked that ran since the last change.
    since_change: Vec<usize>,
    /// Items to run in the second round.
    again: Vec<usize>,
    /// The object as the plugin left it in the first round, kept while an item of `since_change` may need it.
    left: Option<Value>,
}

impl Plugin {
    /// Every item that ran before a change runs again in the second round.
    fn changed(&mut self) {
        self.again.append(&mut self.since_change);
    }
}

impl Reinvocation {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether this is the second round.
    pub fn second(&self) -> bool {
        self.state().second
    }

    /// Whether a second round may run anything: kube runs it after any change; kspaces skips it when no item
    /// asking to be reinvoked ran before a change (its built-in rules are not run again, so nothing would differ).
    pub fn wanted(&self) -> bool {
        let state = self.state();
        state.changed && state.plugins.values().any(|record| !record.again.is_empty() || record.left.is_some())
    }

    pub fn begin_second(&self) {
        self.state().second = true;
    }

    /// Plugin `plugin` starts its round on `object`: in the second, a change since it left the object (by a later
    /// plugin) reinvokes its items that ran after its own last change.
    pub fn start(&self, plugin: &'static str, object: &Value) {
        let mut state = self.state();
        if !state.second {
            return;
        }
        let record = state.plugins.entry(plugin).or_default();
        if record.left.as_ref().is_some_and(|left| left != object) {
            record.changed();
        }
    }

    /// Whether item `id` of `plugin` runs in this round.
    pub fn runs(&self, plugin: &'static str, id: usize) -> bool {
        let state = self.state();
        !state.second || state.plugins.get(plugin).is_some_and(|record| record.again.contains(&id))
    }

    /// Item `id` of `plugin` ran: whether it `changed` the object, and whether it asks to be reinvoked.
    pub fn ran(&self, plugin: &'static str, id: usize, changed: bool, reinvocable: bool) {
        let mut state = self.state();
        state.changed |= changed;
        if state.second {
            return;
        }
        let record = state.plugins.entry(plugin).or_default();
        if changed {
            record.changed();
        }
        if reinvocable {
            record.since_change.push(id);
        }
    }

    /// Plugin `plugin` ends its first round with `object`, kept if a later change would reinvoke one of its items.
    pub fn finish(&self, plugin: &'static str, object: &Value) {
        let mut state = self.state();
        if state.second {
            return;
        }
        if let Some(record) = state.plugins.get_mut(plugin).filter(|record| !record.since_change.is_empty()) {
            record.left = Some(object.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_later_plugins_change_reinvokes_the_items_that_asked() {
        let round = Reinvocation::default();
        round.start("policies", &json!(1));
        round.ran("policies", 1, false, true);
        round.ran("policies", 2, false, false);
        round.finish("policies", &json!(1));
        round.start("webhooks", &json!(1));
        round.ran("webhooks", 7, true, false);
        round.ran("webhooks", 8, false, true);
        round.finish("webhooks", &json!(2));
        assert!(round.wanted());
        round.begin_second();
        round.start("policies", &json!(2));
        assert!(round.runs("policies", 1) && !round.runs("policies", 2));
        round.ran("policies", 1, true, true);
        round.start("webhooks", &json!(3));
        assert!(round.runs("webhooks", 8) && !round.runs("webhooks", 7), "webhook 8 ran after the last first-round change");
    }

    #[test]
    fn nothing_changed_after_an_item_asked_means_no_second_round() {
        let round = Reinvocation::default();
        round.ran("policies", 1, true, true);
        round.finish("policies", &json!(1));
        round.ran("webhooks", 2, false, true);
        round.finish("webhooks", &json!(1));
        round.begin_second();
        round.start("policies", &json!(1));
        round.start("webhooks", &json!(1));
        assert!(!round.runs("policies", 1) && !round.runs("webhooks", 2));
        let unchanged = Reinvocation::default();
        unchanged.ran("webhooks", 2, false, true);
        unchanged.finish("webhooks", &json!(1));
        assert!(!unchanged.wanted());
    }
}
