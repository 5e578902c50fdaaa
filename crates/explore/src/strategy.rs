//! The searches other than breadth first (`--strategy dfs|random`), over the same
//! steps, checks and path ends as [`Explorer::search`].

use super::*;
use rustc_hash::FxHashMap;

/// What one state of a search leads to.
pub(crate) enum Visit<P: Protocol> {
    /// Stop the search (a violation was recorded, or the state limit reached).
    Stop,
    /// Its successors, each new (or reached at a smaller depth) with its tree index
    /// and fingerprint.
    Next(Vec<(World<P>, u32, u64)>),
}

/// Where a state stands on its path.
struct Place {
    /// Everything answered and quiet ([`World::finished`]).
    done: bool,
    /// The steps it allows.
    steps: Vec<Step>,
    /// The path ends here and is judged: finished, at the depth bound, or nothing left
    /// but faults.
    ends: bool,
}

impl<P: Protocol> Explorer<'_, P> {
    /// Where `w`, `depth` steps from the root, stands on its path.
    fn place(&self, w: &World<P>, depth: u32) -> Place {
        let done = w.finished(self.sh);
        let steps = w.steps(self.sh);
        let ends = done || depth == self.cfg.depth || !World::<P>::can_progress(&steps);
        Place { done, steps, ends }
    }

    /// Judges the end of a path at `w` ([`Explorer::check_end`]), counting a path the
    /// depth bound cut with steps still possible.
    fn judge_end(&mut self, w: &World<P>, depth: u32, at: &Place) -> Option<(&'static str, String)> {
        if depth == self.cfg.depth && !at.done && !at.steps.is_empty() {
            self.report.cut_by_depth += 1;
        }
        self.check_end(w)
    }

    /// The work at one state `w` (tree index `idx`, `depth` steps from the root), as
    /// breadth first does it: judge the path's end where it ends, then take every step,
    /// keeping the successors `fresh` says were not explored yet.
    pub(crate) fn visit(
        &mut self,
        w: &World<P>,
        idx: u32,
        depth: u32,
        fresh: &mut dyn FnMut(u64, u32) -> bool,
    ) -> Visit<P> {
        let at = self.place(w, depth);
        if at.ends {
            if let Some((kind, what)) = self.judge_end(w, depth, &at) {
                self.found(idx, kind, what);
                self.report.exhaustive = false;
                return Visit::Stop;
            }
            if depth == self.cfg.depth {
                return Visit::Next(vec![]);
            }
        }
        let mut next = vec![];
        for s in at.steps {
            if at.done && !matches!(s, Step::Crash(_)) {
                continue;
            }
            let mut c = w.clone();
            if c.apply(self.sh, s).is_err() {
                continue;
            }
            self.report.transitions += 1;
            let fp = c.fingerprint();
            if !fresh(fp, depth + 1) {
                continue;
            }
            self.tree.push((idx, s));
            let cidx = self.tree.len() as u32 - 1;
            self.report.states += 1;
            if let Some(what) = c.split_decision() {
                self.found(cidx, "safety", what);
                self.report.exhaustive = false;
                return Visit::Stop;
            }
            if self.report.states >= self.cfg.max_states {
                self.report.exhaustive = false;
                return Visit::Stop;
            }
            next.push((c, cidx, fp));
        }
        Visit::Next(next)
    }

    /// Depth first. A state is explored again when it is reached by a shorter path
    /// than before, so that, as breadth first, it covers every state within the depth
    /// bound; `states` counts each exploration.
    pub(crate) fn dfs(&mut self, root: World<P>) {
        let mut seen: FxHashMap<u64, u32> = FxHashMap::default();
        seen.insert(root.fingerprint(), 0);
        let mut stack = vec![(root, 0u32, 0u32, 0u64)];
        while let Some((w, idx, depth, fp)) = stack.pop() {
            // Reached again by a shorter path while it waited: explored from there.
            if depth > 0 && seen.get(&fp).is_some_and(|&d| d < depth) {
                continue;
            }
            self.report.depth_reached = self.report.depth_reached.max(depth);
            let mut fresh = |fp: u64, d: u32| match seen.get(&fp) {
                Some(&old) if old <= d => false,
                _ => {
                    seen.insert(fp, d);
                    true
                }
            };
            match self.visit(&w, idx, depth, &mut fresh) {
                Visit::Stop => return,
                // Reversed, so the first step is explored first.
                Visit::Next(next) => stack.extend(next.into_iter().rev().map(|(c, i, f)| (c, i, depth + 1, f))),
            }
        }
    }

    /// `walks` random walks from the initial state: at each state one step drawn from
    /// those possible (see [`draw`]), until the path ends as in the other searches (everything answered and
    /// quiet, the depth bound, or nothing left but faults), where it is judged. Never
    /// exhaustive; `states` counts the distinct states the walks passed through.
    pub(crate) fn random_walks(&mut self, root: World<P>, walks: u64) {
        use rand::RngCore;
        let mut rng = rng_for(self.cfg.seed, u64::MAX - 7);
        let mut seen = FxHashSet::default();
        seen.insert(root.fingerprint());
        self.report.exhaustive = false;
        for _ in 0..walks {
            let mut w = root.clone();
            let mut path: Vec<Step> = vec![];
            loop {
                let depth = path.len() as u32;
                self.report.depth_reached = self.report.depth_reached.max(depth);
                let at = self.place(&w, depth);
                if at.ends {
                    if let Some((kind, what)) = self.judge_end(&w, depth, &at) {
                        self.found_path(&path, kind, what);
                        return;
                    }
                    break;
                }
                let mut steps = at.steps;
                // A step the budget refuses (a reordering beyond the bound) is drawn
                // again from the rest.
                let taken = loop {
                    if steps.is_empty() {
                        break None;
                    }
                    let s = steps.swap_remove(draw(&steps, w.net.is_empty(), rng.next_u64()));
                    let mut c = w.clone();
                    if c.apply(self.sh, s).is_ok() {
                        break Some((c, s));
                    }
                };
                let Some((c, s)) = taken else { break };
                w = c;
                path.push(s);
                self.report.transitions += 1;
                if seen.insert(w.fingerprint()) {
                    self.report.states += 1;
                }
                if let Some(what) = w.split_decision() {
                    self.found_path(&path, "safety", what);
                    return;
                }
                if self.report.states >= self.cfg.max_states {
                    return;
                }
            }
        }
    }
}

/// Which of `steps` a random walk takes, from the random number `r`. Drawn
/// uniformly, a fault (crash, restart, loss, duplicate, a timer firing while messages
/// are in flight) would be taken about as often as a delivery, since there are as many
/// losses as messages, and each walk would spend its budget in its first steps;
/// drawn with the rest, a single early timeout among dozens of deliveries is rare. So
/// a walk takes a fault with probability 1/8 when one is possible, and otherwise one
/// of the deliveries and quiet-network timers, each class uniformly.
fn draw(steps: &[Step], quiet: bool, r: u64) -> usize {
    let fault = |s: &Step| match s {
        Step::Deliver(_) => false,
        Step::Timer(_) => !quiet,
        Step::Crash(_) | Step::Restart(_) | Step::Drop(_) | Step::Dup(_) => true,
    };
    let faults = steps.iter().filter(|s| fault(s)).count() as u64;
    let rest = steps.len() as u64 - faults;
    let (want, n) = if faults > 0 && (rest == 0 || r.is_multiple_of(8)) {
        (true, faults)
    } else {
        (false, rest)
    };
    let pick = (r >> 3) % n;
    steps
        .iter()
        .enumerate()
        .filter(|(_, s)| fault(s) == want)
        .nth(pick as usize)
        .map(|(i, _)| i)
        .expect("the class drawn has a step")
}
