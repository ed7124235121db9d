//! Server-side samples taken while a run loads a lab stack (filled by the lab's sampler).
//! Placeholder shape; the lab owns what goes in here.

use serde::{Deserialize, Serialize};

/// What the server-side sampler saw during a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSamples {
    /// Sampling period in milliseconds.
    pub interval_ms: u64,
}
