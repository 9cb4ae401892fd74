//! Wellness check-ins and vitals.

use super::access::*;
use super::records::*;
use crate::clinic::perms;
use crate::service::ServiceError;
use agents_runtime::Principal;

impl Store {
    /// Recent wellness check-ins of one athlete.
    pub fn wellness_history(&self, p: &Principal, athlete_id: &str) -> Result<Vec<Wellness>> {
        self.athlete_records(p, perms::wellness::read::NAME, athlete_id, |d| &d.wellness, |_| true)
    }

    /// Records a wellness check-in. An athlete submits their own; staff may submit for an
    /// athlete of their organisation.
    pub fn submit_wellness(
        &self,
        p: &Principal,
        athlete_id: &str,
        sleep_hours: f64,
        soreness: u8,
        mood: u8,
        note: &str,
    ) -> Result<Wellness> {
        require(p, perms::wellness::write::NAME)?;
        if !(0.0..=16.0).contains(&sleep_hours) || !(1..=10).contains(&soreness) || !(1..=5).contains(&mood) {
            return Err(ServiceError::Invalid("sleep 0–16 h, soreness 1–10, mood 1–5".into()));
        }
        let mut d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        let w = Wellness {
            org_id: p.org_id.clone(),
            athlete_id: athlete_id.into(),
            date: TODAY.into(),
            sleep_hours,
            soreness,
            mood,
            note: note.into(),
        };
        d.wellness.push(w.clone());
        Ok(w)
    }

    /// Vitals readings of one athlete.
    pub fn vitals(&self, p: &Principal, athlete_id: &str) -> Result<Vec<Vitals>> {
        self.athlete_records(p, perms::vitals::read::NAME, athlete_id, |d| &d.vitals, |_| true)
    }
}
