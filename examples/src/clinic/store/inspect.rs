//! What tests and the demo read and reset outside any principal's authority; never reachable
//! from a tool.

use super::access::Store;
use super::records::{Athlete, Injury, Organisation, RtpEntry};
use super::seed::seed;

impl Store {
    /// Every injury of an organisation, unscoped: for tests and the demo's narration, never
    /// reachable from a tool.
    pub fn inspect_injuries(&self, org_id: &str) -> Vec<Injury> {
        self.lock().injuries.iter().filter(|i| i.org_id == org_id).cloned().collect()
    }

    /// One return-to-play entry, unscoped: for tests and the demo's narration.
    pub fn inspect_rtp(&self, rtp_id: &str) -> Option<RtpEntry> {
        self.lock().rtp.iter().find(|r| r.id == rtp_id).cloned()
    }

    /// One athlete, unscoped: for tests and the demo's narration.
    pub fn inspect_athlete(&self, athlete_id: &str) -> Option<Athlete> {
        self.lock().athletes.iter().find(|a| a.id == athlete_id).cloned()
    }

    /// The organisations.
    pub fn organisations(&self) -> Vec<Organisation> {
        self.lock().orgs.clone()
    }

    /// Puts back exactly the seeded data, so independent scenarios (an evaluation suite's) can
    /// share the process's store one after another. Never reachable from a tool.
    pub fn reset(&self) {
        *self.lock() = seed();
    }
}
