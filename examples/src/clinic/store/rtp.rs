//! Return to play: the staged entries and their three sign-offs, each gated on its own
//! permission.

use super::access::*;
use super::records::*;
use crate::clinic::perms;
use crate::service::ServiceError;
use agents_runtime::Principal;

impl Store {
    /// Return-to-play entries of one athlete.
    pub fn list_rtp(&self, p: &Principal, athlete_id: &str) -> Result<Vec<RtpEntry>> {
        self.athlete_records(p, perms::rtp::read::NAME, athlete_id, |d| &d.rtp, |_| true)
    }

    /// Each requested signature needs its own permission, checked independently.
    fn check_signoffs(p: &Principal, physio: bool, doctor: bool, coach: bool) -> Result<()> {
        if physio && !has(p, perms::rtp::signoff_physio::NAME) {
            return Err(ServiceError::Forbidden("physio sign-off requires physio authority".into()));
        }
        if doctor && !has(p, perms::rtp::signoff_doctor::NAME) {
            return Err(ServiceError::Forbidden("doctor sign-off requires doctor authority".into()));
        }
        if coach && !has(p, perms::rtp::signoff_coach::NAME) {
            return Err(ServiceError::Forbidden("coach sign-off requires coach authority".into()));
        }
        Ok(())
    }

    /// Creates a return-to-play entry, optionally signed by the caller (each signature gated).
    #[allow(clippy::too_many_arguments)]
    pub fn create_rtp(
        &self,
        p: &Principal,
        athlete_id: &str,
        injury_id: &str,
        stage: u8,
        notes: &str,
        physio: bool,
        doctor: bool,
        coach: bool,
    ) -> Result<RtpEntry> {
        require(p, perms::rtp::write::NAME)?;
        Self::check_signoffs(p, physio, doctor, coach)?;
        if !(1..=6).contains(&stage) {
            return Err(ServiceError::Invalid("stage is 1 to 6".into()));
        }
        let mut d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        if !d.injuries.iter().any(|i| i.id == injury_id && i.athlete_id == athlete_id && i.org_id == p.org_id) {
            return Err(ServiceError::NotFound(format!("injury `{injury_id}` of athlete `{athlete_id}`")));
        }
        let sign = |yes: bool| yes.then(|| SignOff { by: p.user_id.clone(), on: TODAY.into() });
        let id = Self::next_id(&mut d, "rtp");
        let e = RtpEntry {
            id,
            org_id: p.org_id.clone(),
            athlete_id: athlete_id.into(),
            injury_id: injury_id.into(),
            stage,
            notes: notes.into(),
            physio_signoff: sign(physio),
            doctor_signoff: sign(doctor),
            coach_signoff: sign(coach),
        };
        d.rtp.push(e.clone());
        Ok(e)
    }

    /// Updates a return-to-play entry: stage, notes, and signatures (each gated by its own
    /// permission; a signature is added, never removed here).
    #[allow(clippy::too_many_arguments)]
    pub fn update_rtp(
        &self,
        p: &Principal,
        rtp_id: &str,
        stage: Option<u8>,
        notes: Option<&str>,
        physio: bool,
        doctor: bool,
        coach: bool,
    ) -> Result<RtpEntry> {
        require(p, perms::rtp::write::NAME)?;
        Self::check_signoffs(p, physio, doctor, coach)?;
        if stage.is_some_and(|s| !(1..=6).contains(&s)) {
            return Err(ServiceError::Invalid("stage is 1 to 6".into()));
        }
        let mut d = self.lock();
        let index = Self::record_index(&d, p, &d.rtp, rtp_id, "return-to-play entry")?;
        let e = &mut d.rtp[index];
        let sign = || Some(SignOff { by: p.user_id.clone(), on: TODAY.into() });
        if let Some(s) = stage {
            e.stage = s;
        }
        if let Some(n) = notes {
            e.notes = n.into();
        }
        if physio {
            e.physio_signoff = sign();
        }
        if doctor {
            e.doctor_signoff = sign();
        }
        if coach {
            e.coach_signoff = sign();
        }
        Ok(e.clone())
    }

    /// One return-to-play entry (for checks and reports).
    pub fn get_rtp(&self, p: &Principal, rtp_id: &str) -> Result<RtpEntry> {
        require(p, perms::rtp::read::NAME)?;
        let d = self.lock();
        let e = Self::record_index(&d, p, &d.rtp, rtp_id, "return-to-play entry")?;
        Ok(d.rtp[e].clone())
    }
}
