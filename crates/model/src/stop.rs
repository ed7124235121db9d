//! The stop token: one shared "stop now, keep what was measured" flag. The binary sets it
//! from its signal handlers (installed once, in `main`); the engine, the lab and every
//! loop over runs (repeats, sweeps, trials) read it. Once set it stays set: a stop asked
//! for during one run of a sweep also ends the sweep.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cloneable handle to one shared stop flag.
#[derive(Debug, Clone, Default)]
pub struct StopToken {
    stop: Arc<AtomicBool>,
}

impl StopToken {
    /// A fresh token, not stopped.
    pub fn new() -> StopToken {
        StopToken::default()
    }

    /// Ask everything holding this token to stop (idempotent).
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// True once a stop was asked for.
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The flag itself, for code that polls an `AtomicBool` (or a signal-hook flag).
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_flag_and_it_stays_set() {
        let token = StopToken::new();
        let other = token.clone();
        assert!(!other.stop_requested());
        token.request_stop();
        assert!(other.stop_requested());
        assert!(other.flag().load(Ordering::SeqCst));
        token.request_stop();
        assert!(token.stop_requested());
    }
}
