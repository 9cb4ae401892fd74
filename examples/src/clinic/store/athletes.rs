//! Athletes: listed, read, created, updated, deactivated and reactivated (never deleted).

use super::access::*;
use super::records::*;
use crate::clinic::perms;
use crate::service::ServiceError;
use agents_runtime::Principal;

impl Store {
    /// Lists athletes of the caller's organisation. For an athlete-role user the query is
    /// narrowed to their own record, so "list athletes" never exposes peers' profiles.
    pub fn list_athletes(
        &self,
        p: &Principal,
        squad: Option<&str>,
        name: Option<&str>,
        include_inactive: bool,
    ) -> Result<Vec<Athlete>> {
        require(p, perms::athlete::read::NAME)?;
        let self_only = if is_athlete(p) {
            Some(p.subject.clone().ok_or_else(|| {
                ServiceError::Forbidden("this athlete account is not linked to an athlete record".into())
            })?)
        } else {
            None
        };
        let d = self.lock();
        let name = name.map(str::to_lowercase);
        Ok(d.athletes
            .iter()
            .filter(|a| a.org_id == p.org_id)
            .filter(|a| self_only.as_ref().is_none_or(|id| &a.id == id))
            .filter(|a| include_inactive || a.active)
            .filter(|a| squad.is_none_or(|s| a.squad.eq_ignore_ascii_case(s)))
            .filter(|a| name.as_ref().is_none_or(|n| a.full_name().to_lowercase().contains(n.as_str())))
            .cloned()
            .collect())
    }

    /// One athlete.
    pub fn get_athlete(&self, p: &Principal, athlete_id: &str) -> Result<Athlete> {
        require(p, perms::athlete::read::NAME)?;
        let d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id).cloned()
    }

    /// Adds an athlete to the caller's organisation.
    pub fn create_athlete(
        &self,
        p: &Principal,
        first_name: &str,
        last_name: &str,
        squad: &str,
        position: &str,
        date_of_birth: &str,
    ) -> Result<Athlete> {
        require(p, perms::athlete::write::NAME)?;
        if first_name.trim().is_empty() || last_name.trim().is_empty() {
            return Err(ServiceError::Invalid("first and last name are required".into()));
        }
        let mut d = self.lock();
        let id = Self::next_id(&mut d, "ath");
        let a = Athlete {
            id,
            org_id: p.org_id.clone(),
            first_name: first_name.into(),
            last_name: last_name.into(),
            squad: squad.into(),
            position: position.into(),
            date_of_birth: date_of_birth.into(),
            active: true,
            deactivated_on: None,
        };
        d.athletes.push(a.clone());
        Ok(a)
    }

    /// Updates an athlete's squad or position.
    pub fn update_athlete(
        &self,
        p: &Principal,
        athlete_id: &str,
        squad: Option<&str>,
        position: Option<&str>,
    ) -> Result<Athlete> {
        require(p, perms::athlete::write::NAME)?;
        let mut d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        let a = d
            .athletes
            .iter_mut()
            .find(|a| a.id == athlete_id)
            .ok_or_else(|| ServiceError::NotFound(athlete_id.into()))?;
        if let Some(s) = squad {
            a.squad = s.into();
        }
        if let Some(pos) = position {
            a.position = pos.into();
        }
        Ok(a.clone())
    }

    /// Soft-deletes an athlete: removed from active squads and lists, history preserved.
    pub fn deactivate_athlete(&self, p: &Principal, athlete_id: &str) -> Result<Athlete> {
        self.set_active(p, athlete_id, false)
    }

    /// Returns a deactivated athlete to active lists.
    pub fn reactivate_athlete(&self, p: &Principal, athlete_id: &str) -> Result<Athlete> {
        self.set_active(p, athlete_id, true)
    }

    fn set_active(&self, p: &Principal, athlete_id: &str, active: bool) -> Result<Athlete> {
        require(p, perms::athlete::write::NAME)?;
        let mut d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        let a = d
            .athletes
            .iter_mut()
            .find(|a| a.id == athlete_id)
            .ok_or_else(|| ServiceError::NotFound(athlete_id.into()))?;
        a.active = active;
        a.deactivated_on = if active { None } else { Some(TODAY.into()) };
        Ok(a.clone())
    }
}
