//! Injuries: listed, read, recorded and updated (resolved, never deleted).

use super::access::*;
use super::records::*;
use crate::clinic::perms;
use crate::service::ServiceError;
use agents_runtime::Principal;

impl Store {
    /// The injuries of one athlete.
    pub fn list_injuries(&self, p: &Principal, athlete_id: &str, include_resolved: bool) -> Result<Vec<Injury>> {
        self.athlete_records(
            p,
            perms::injury::read::NAME,
            athlete_id,
            |d| &d.injuries,
            |i| include_resolved || i.status != "resolved",
        )
    }

    /// One injury.
    pub fn get_injury(&self, p: &Principal, injury_id: &str) -> Result<Injury> {
        require(p, perms::injury::read::NAME)?;
        let d = self.lock();
        let i = Self::record_index(&d, p, &d.injuries, injury_id, "injury")?;
        Ok(d.injuries[i].clone())
    }

    /// Records an injury.
    pub fn create_injury(
        &self,
        p: &Principal,
        athlete_id: &str,
        body_part: &str,
        side: &str,
        description: &str,
        grade: Option<u8>,
        onset: Option<&str>,
    ) -> Result<Injury> {
        require(p, perms::injury::write::NAME)?;
        if grade.is_some_and(|g| !(1..=3).contains(&g)) {
            return Err(ServiceError::Invalid("grade is 1, 2 or 3".into()));
        }
        if !matches!(side, "left" | "right" | "n/a") {
            return Err(ServiceError::Invalid("side is `left`, `right` or `n/a`".into()));
        }
        let mut d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        let id = Self::next_id(&mut d, "inj");
        let injury = Injury {
            id,
            org_id: p.org_id.clone(),
            athlete_id: athlete_id.into(),
            body_part: body_part.into(),
            side: side.into(),
            description: description.into(),
            grade,
            status: "active".into(),
            onset: onset.unwrap_or(TODAY).into(),
            resolved_on: None,
            recorded_by: p.user_id.clone(),
        };
        d.injuries.push(injury.clone());
        Ok(injury)
    }

    /// Changes an injury's status (`active`, `rehab`, `resolved`) or description.
    pub fn update_injury(
        &self,
        p: &Principal,
        injury_id: &str,
        status: Option<&str>,
        description: Option<&str>,
    ) -> Result<Injury> {
        require(p, perms::injury::write::NAME)?;
        if status.is_some_and(|s| !matches!(s, "active" | "rehab" | "resolved")) {
            return Err(ServiceError::Invalid("status is `active`, `rehab` or `resolved`".into()));
        }
        let mut d = self.lock();
        let index = Self::record_index(&d, p, &d.injuries, injury_id, "injury")?;
        let i = &mut d.injuries[index];
        if let Some(s) = status {
            i.status = s.into();
            i.resolved_on = (s == "resolved").then(|| TODAY.to_owned());
        }
        if let Some(desc) = description {
            i.description = desc.into();
        }
        Ok(i.clone())
    }
}
