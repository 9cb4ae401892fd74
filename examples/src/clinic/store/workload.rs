//! Workload: training sessions and the acute:chronic workload ratio.

use super::access::*;
use super::records::*;
use crate::clinic::perms;
use crate::service::ServiceError;
use agents_runtime::Principal;

impl Store {
    /// Sessions of the last `days` days.
    pub fn list_sessions(&self, p: &Principal, athlete_id: &str, days: u32) -> Result<Vec<Session>> {
        self.athlete_records(p, perms::workload::read::NAME, athlete_id, |d| &d.sessions, |s| s.days_ago < days)
    }

    /// The acute:chronic workload ratio (7-day load over the 28-day weekly average).
    pub fn acwr(&self, p: &Principal, athlete_id: &str) -> Result<Acwr> {
        require(p, perms::workload::read::NAME)?;
        let d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        let mine: Vec<&Session> = d.sessions.iter().filter(|s| s.athlete_id == athlete_id && s.days_ago < 28).collect();
        let acute: u32 = mine.iter().filter(|s| s.days_ago < 7).map(|s| s.minutes * s.rpe).sum();
        let chronic_total: u32 = mine.iter().map(|s| s.minutes * s.rpe).sum();
        let chronic = f64::from(chronic_total) / 4.0;
        let ratio = (chronic > 0.0).then(|| (f64::from(acute) / chronic * 100.0).round() / 100.0);
        let band = match ratio {
            None => "no chronic load recorded".to_owned(),
            Some(r) if r < 0.8 => "below 0.8: load lower than the athlete is used to".to_owned(),
            Some(r) if r <= 1.3 => "0.8–1.3: load in line with the recent weeks".to_owned(),
            Some(r) if r <= 1.5 => "1.3–1.5: load climbing faster than the recent weeks".to_owned(),
            Some(_) => "above 1.5: a sharp rise over the recent weeks".to_owned(),
        };
        Ok(Acwr {
            athlete_id: athlete_id.into(),
            acute_load: acute,
            chronic_weekly_load: chronic,
            ratio,
            band,
            sessions: mine.len(),
        })
    }

    /// Logs a training session for an athlete.
    pub fn log_session(
        &self,
        p: &Principal,
        athlete_id: &str,
        kind: &str,
        minutes: u32,
        rpe: u32,
        days_ago: u32,
    ) -> Result<Session> {
        require(p, perms::workload::write::NAME)?;
        if minutes == 0 || minutes > 600 || !(1..=10).contains(&rpe) {
            return Err(ServiceError::Invalid("minutes 1–600, RPE 1–10".into()));
        }
        let mut d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        let id = Self::next_id(&mut d, "ses");
        let s = Session {
            id,
            org_id: p.org_id.clone(),
            athlete_id: athlete_id.into(),
            days_ago,
            kind: kind.into(),
            minutes,
            rpe,
        };
        d.sessions.push(s.clone());
        Ok(s)
    }
}
