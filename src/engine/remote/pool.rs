//! The remote targets of one run: each call goes to the next target in turn; a fault (a node
//! lost, a job pre-empted or timed out, a connection dropped, a node of another context, a
//! node whose sandbox could not start the candidate's commands) is
//! retried on the next one, and a target that faults three times in a row is reported and
//! left out for the rest of the run. Nothing of a faulted call is recorded. Calls may be made
//! from several threads at once (candidates in flight together).

use super::target::{CallError, Remote};
use super::wire::{Job, Outcome, Reply};
use anyhow::{Result, bail};
use sandbox::CancelFlag;
use std::sync::Mutex;

/// Faults in a row after which a target is left out.
pub const MAX_FAULTS_IN_A_ROW: usize = 3;

/// Every target a call may go to was left out: the run stops as interrupted (resumable once
/// the cluster is back), never as a failure of the task.
#[derive(Debug)]
pub struct NoTargetLeft(Pick);

impl std::fmt::Display for NoTargetLeft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let which = match self.0 {
            Pick::Any => "every target",
            Pick::Only(_) => "the target that measured the candidate, on which it is confirmed,",
            Pick::Not(_) => "every target but the one that measured the candidate",
        };
        write!(
            f,
            "{which} failed {MAX_FAULTS_IN_A_ROW} times in a row; nothing of the abandoned evaluations was recorded (run again to resume)"
        )
    }
}

impl std::error::Error for NoTargetLeft {}

/// One target of a pool, for the rest of the run (ids are never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetId(usize);

/// Which of a pool's targets a call may go to.
#[derive(Debug, Clone, Copy)]
pub enum Pick {
    Any,
    /// Only this one (a confirmation on the node that measured the first series).
    Only(TargetId),
    /// Any but this one (a confirmation by a second node).
    Not(TargetId),
}

impl Pick {
    fn allows(self, id: TargetId) -> bool {
        match self {
            Pick::Any => true,
            Pick::Only(x) => x == id,
            Pick::Not(x) => x != id,
        }
    }
}

struct Slot {
    id: usize,
    remote: Remote,
    faults: usize,
}

struct State {
    slots: Vec<Slot>,
    next: usize,
}

pub struct Pool {
    state: Mutex<State>,
    /// The run's context: a reply from a node of another context is a fault.
    context_id: Option<String>,
}

impl Pool {
    pub fn new(remotes: Vec<Remote>) -> Self {
        let slots = remotes
            .into_iter()
            .enumerate()
            .map(|(id, remote)| Slot {
                id,
                remote,
                faults: 0,
            })
            .collect();
        Pool {
            state: Mutex::new(State { slots, next: 0 }),
            context_id: None,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A thread that panicked mid-update leaves counters, never broken invariants.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Probes every target and groups them by the context their node answered from, in the
    /// order first answered: on a mixed cluster, one pool (and one run) per node type. `None`
    /// when cancelled; a task error (the task cannot run there) ends the run.
    pub fn probe(self, job: &Job, cancel: &CancelFlag) -> Result<Option<Vec<(Reply, Pool)>>> {
        let slots = self
            .state
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .slots;
        let mut groups: Vec<(Reply, Vec<Slot>)> = Vec::new();
        for slot in slots {
            match slot.remote.call(job, cancel) {
                Err(CallError::Cancelled) => return Ok(None),
                Err(CallError::Fault(why)) => eprintln!("target left out: {why}"),
                Ok(reply) => {
                    if let Outcome::TaskError(why) = &reply.result {
                        bail!("on {} ({}): {why}", slot.remote.target, reply.node);
                    }
                    match groups
                        .iter_mut()
                        .find(|(r, _)| r.context_id == reply.context_id)
                    {
                        Some((_, same)) => same.push(slot),
                        None => groups.push((reply, vec![slot])),
                    }
                }
            }
        }
        if groups.is_empty() {
            bail!("no target answered; see the reasons above");
        }
        Ok(Some(
            groups
                .into_iter()
                .map(|(reply, slots)| {
                    let pool = Pool {
                        state: Mutex::new(State { slots, next: 0 }),
                        context_id: Some(reply.context_id.clone()),
                    };
                    (reply, pool)
                })
                .collect(),
        ))
    }

    /// The targets this pool holds, as the user named them.
    pub fn targets(&self) -> Vec<String> {
        self.state()
            .slots
            .iter()
            .map(|s| s.remote.target.to_string())
            .collect()
    }

    /// How many targets are left.
    pub fn targets_left(&self) -> usize {
        self.state().slots.len()
    }

    /// Sends `job` to the targets in turn until one answers from the run's context; `None`
    /// when the run was cancelled meanwhile.
    pub fn call(&self, job: &Job, cancel: &CancelFlag) -> Result<Option<Reply>> {
        Ok(self
            .call_on(job, cancel, Pick::Any)?
            .map(|(_, reply)| reply))
    }

    /// `call` on the targets `pick` allows; the reply with the target that answered.
    pub fn call_on(
        &self,
        job: &Job,
        cancel: &CancelFlag,
        pick: Pick,
    ) -> Result<Option<(TargetId, Reply)>> {
        loop {
            let (id, remote) = {
                let mut st = self.state();
                let allowed: Vec<usize> = (0..st.slots.len())
                    .filter(|&i| pick.allows(TargetId(st.slots[i].id)))
                    .collect();
                let Some(&i) = allowed
                    .iter()
                    .find(|&&i| i >= st.next % st.slots.len())
                    .or(allowed.first())
                else {
                    return Err(NoTargetLeft(pick).into());
                };
                st.next = i + 1;
                (st.slots[i].id, st.slots[i].remote.clone())
            };
            let why = match remote.call(job, cancel) {
                Err(CallError::Cancelled) => return Ok(None),
                Ok(reply) => match (&self.context_id, reply.harness_fault()) {
                    (Some(c), _) if *c != reply.context_id => format!(
                        "{}: node {} is in context {}, not the run's {}",
                        remote.target, reply.node, reply.context_id, c
                    ),
                    (_, Some(fault)) => format!(
                        "{}: node {} could not run the candidate's commands: {fault}",
                        remote.target, reply.node
                    ),
                    _ => {
                        if let Some(s) = self.state().slots.iter_mut().find(|s| s.id == id) {
                            s.faults = 0;
                        }
                        return Ok(Some((TargetId(id), reply)));
                    }
                },
                Err(CallError::Fault(why)) => why,
            };
            self.fault(id, &why);
        }
    }

    fn fault(&self, id: usize, why: &str) {
        let mut st = self.state();
        let Some(i) = st.slots.iter().position(|s| s.id == id) else {
            return; // another call already left it out
        };
        st.slots[i].faults += 1;
        if st.slots[i].faults >= MAX_FAULTS_IN_A_ROW {
            let gone = st.slots.remove(i);
            eprintln!(
                "target {} left out after {MAX_FAULTS_IN_A_ROW} faults in a row; the last: {why}",
                gone.remote.target
            );
        } else {
            eprintln!("evaluation abandoned (not recorded), retrying: {why}");
        }
    }
}
