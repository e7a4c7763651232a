//! Sharing this machine's cores between tests: every env holds a share; a test that needs the
//! cores to itself keeps new shares out, waits until the held ones are given back, and runs
//! alone. A count under a mutex rather than a reader-writer lock, because one test may hold
//! several envs at once: a thread that holds a share gets another at once, or it would wait for
//! a test that waits for it.

use std::sync::{Condvar, Mutex, PoisonError};

struct State {
    /// Shares held.
    shared: usize,
    /// Tests waiting to run alone: no new share is given while there are any.
    waiting: usize,
    /// Whether a test runs alone now.
    running: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    shared: 0,
    waiting: 0,
    running: false,
});
static CHANGED: Condvar = Condvar::new();

thread_local! {
    /// Shares this thread holds.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A test's claim on the cores, given back when dropped.
pub struct Share {
    alone: bool,
}

impl Share {
    /// A share beside the other tests' (waits while a test runs alone or waits to).
    pub fn shared() -> Share {
        let mut s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        while HELD.get() == 0 && (s.running || s.waiting > 0) {
            s = CHANGED.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        s.shared += 1;
        HELD.set(HELD.get() + 1);
        Share { alone: false }
    }

    /// The cores alone.
    pub fn alone() -> Share {
        let mut s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        s.waiting += 1;
        while s.running || s.shared > 0 {
            s = CHANGED.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        s.waiting -= 1;
        s.running = true;
        Share { alone: true }
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        if self.alone {
            s.running = false;
        } else {
            s.shared -= 1;
            HELD.set(HELD.get().saturating_sub(1));
        }
        CHANGED.notify_all();
    }
}
