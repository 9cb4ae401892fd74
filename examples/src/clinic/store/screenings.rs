//! Screenings: test results, listed and recorded.

use super::access::*;
use super::records::*;
use crate::clinic::perms;
use agents_runtime::Principal;

impl Store {
    /// Screenings of one athlete.
    pub fn list_screenings(&self, p: &Principal, athlete_id: &str) -> Result<Vec<Screening>> {
        self.athlete_records(p, perms::screening::read::NAME, athlete_id, |d| &d.screenings, |_| true)
    }

    /// Records a screening result.
    pub fn create_screening(
        &self,
        p: &Principal,
        athlete_id: &str,
        test: &str,
        value: f64,
        unit: &str,
        notes: &str,
    ) -> Result<Screening> {
        require(p, perms::screening::write::NAME)?;
        let mut d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        let id = Self::next_id(&mut d, "scr");
        let s = Screening {
            id,
            org_id: p.org_id.clone(),
            athlete_id: athlete_id.into(),
            test: test.into(),
            value,
            unit: unit.into(),
            date: TODAY.into(),
            notes: notes.into(),
        };
        d.screenings.push(s.clone());
        Ok(s)
    }
}
