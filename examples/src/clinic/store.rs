//! The clinical application's own services over an in-memory store.
//!
//! Every service takes the caller's [`Principal`] and applies the application's rules: the
//! module permission, tenant scoping by `org_id`, athlete self-scoping by the principal's
//! linked subject, and the three return-to-play sign-off permissions gated field by field.
//! The agent's tools call these services with the run's principal and add no checks of their
//! own: authority is inherited.
//!
//! There is no delete for a clinical record here either: athletes are deactivated, injuries
//! are resolved, return-to-play entries and screenings are kept. Videos are the only thing
//! the application destroys.

use super::perms;
use agents_runtime::Principal;
use serde::Serialize;
use std::sync::{LazyLock, Mutex, MutexGuard};

/// The application's "today", fixed so the seeded data and the demo read the same every run.
pub const TODAY: &str = "2026-03-16";

pub use crate::service::ServiceError;

type Result<T> = std::result::Result<T, ServiceError>;

/// An organisation (tenant).
#[derive(Debug, Clone, Serialize)]
pub struct Organisation {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
}

/// An athlete. Deactivation is a soft delete: the record and its history stay.
#[derive(Debug, Clone, Serialize)]
pub struct Athlete {
    /// Id.
    pub id: String,
    /// Tenant.
    pub org_id: String,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Squad.
    pub squad: String,
    /// Position or event.
    pub position: String,
    /// Date of birth.
    pub date_of_birth: String,
    /// Whether the athlete is in active squads and lists.
    pub active: bool,
    /// When the athlete was deactivated, if so.
    pub deactivated_on: Option<String>,
}

impl Athlete {
    fn full_name(&self) -> String {
        format!("{} {}", self.first_name, self.last_name)
    }
}

/// An injury record. Never deleted; resolved when healed.
#[derive(Debug, Clone, Serialize)]
pub struct Injury {
    /// Id.
    pub id: String,
    /// Tenant.
    pub org_id: String,
    /// Athlete.
    pub athlete_id: String,
    /// Body part.
    pub body_part: String,
    /// `left`, `right` or `n/a`.
    pub side: String,
    /// Clinical description.
    pub description: String,
    /// Grade (1 to 3) when graded.
    pub grade: Option<u8>,
    /// `active`, `rehab` or `resolved`.
    pub status: String,
    /// Onset date.
    pub onset: String,
    /// Resolution date.
    pub resolved_on: Option<String>,
    /// Who recorded it.
    pub recorded_by: String,
}

/// A daily wellness check-in.
#[derive(Debug, Clone, Serialize)]
pub struct Wellness {
    /// Tenant.
    pub org_id: String,
    /// Athlete.
    pub athlete_id: String,
    /// Date.
    pub date: String,
    /// Hours slept.
    pub sleep_hours: f64,
    /// Soreness, 1 (none) to 10.
    pub soreness: u8,
    /// Mood, 1 (poor) to 5.
    pub mood: u8,
    /// Free text.
    pub note: String,
}

/// A vitals reading from a device.
#[derive(Debug, Clone, Serialize)]
pub struct Vitals {
    /// Tenant.
    pub org_id: String,
    /// Athlete.
    pub athlete_id: String,
    /// Date.
    pub date: String,
    /// Resting heart rate (bpm).
    pub resting_hr: u32,
    /// Heart-rate variability (ms, RMSSD).
    pub hrv_ms: u32,
}

/// A training session.
#[derive(Debug, Clone, Serialize)]
pub struct Session {
    /// Id.
    pub id: String,
    /// Tenant.
    pub org_id: String,
    /// Athlete.
    pub athlete_id: String,
    /// Days before [`TODAY`].
    pub days_ago: u32,
    /// Kind of session.
    pub kind: String,
    /// Minutes.
    pub minutes: u32,
    /// Session RPE, 1 to 10.
    pub rpe: u32,
}

/// A sign-off on a return-to-play entry: a person's signature.
#[derive(Debug, Clone, Serialize)]
pub struct SignOff {
    /// The user who signed.
    pub by: String,
    /// When.
    pub on: String,
}

/// A return-to-play entry with its three separate signatures.
#[derive(Debug, Clone, Serialize)]
pub struct RtpEntry {
    /// Id.
    pub id: String,
    /// Tenant.
    pub org_id: String,
    /// Athlete.
    pub athlete_id: String,
    /// The injury it follows.
    pub injury_id: String,
    /// Stage of the graded return (1 to 6).
    pub stage: u8,
    /// Notes.
    pub notes: String,
    /// Physio's signature.
    pub physio_signoff: Option<SignOff>,
    /// Doctor's signature.
    pub doctor_signoff: Option<SignOff>,
    /// Coach's signature.
    pub coach_signoff: Option<SignOff>,
}

impl RtpEntry {
    /// Cleared to play: all three signatures present.
    pub fn cleared(&self) -> bool {
        self.physio_signoff.is_some() && self.doctor_signoff.is_some() && self.coach_signoff.is_some()
    }
}

/// A screening result.
#[derive(Debug, Clone, Serialize)]
pub struct Screening {
    /// Id.
    pub id: String,
    /// Tenant.
    pub org_id: String,
    /// Athlete.
    pub athlete_id: String,
    /// Test.
    pub test: String,
    /// Result value.
    pub value: f64,
    /// Unit.
    pub unit: String,
    /// Date.
    pub date: String,
    /// Notes.
    pub notes: String,
}

/// One joint-angle summary from pose analysis, with the conditions it was measured under.
#[derive(Debug, Clone, Serialize)]
pub struct PoseMetric {
    /// Joint and movement.
    pub metric: String,
    /// Mean angle in degrees; absent when the observability gate refused the reading.
    pub mean_deg: Option<f64>,
    /// Fraction of frames with a reading.
    pub coverage: f64,
}

/// A video with its pose analysis.
#[derive(Debug, Clone, Serialize)]
pub struct Video {
    /// Id.
    pub id: String,
    /// Tenant.
    pub org_id: String,
    /// Athlete.
    pub athlete_id: String,
    /// Title.
    pub title: String,
    /// Recording date.
    pub recorded_on: String,
    /// Cameras used.
    pub cameras: u32,
    /// Angle between the declared and the observed view.
    pub view_obliquity_deg: f64,
    /// Whether the rig's refined layout matches its declared one.
    pub trustworthy: bool,
    /// Metrics.
    pub metrics: Vec<PoseMetric>,
}

/// A wearable paired to an athlete.
#[derive(Debug, Clone, Serialize)]
pub struct Device {
    /// Id.
    pub id: String,
    /// Tenant.
    pub org_id: String,
    /// Athlete.
    pub athlete_id: String,
    /// Model.
    pub model: String,
    /// Fingerprint of the current key (the key itself is never shown).
    pub key_fingerprint: String,
    /// Key version.
    pub key_version: u32,
}

/// Acute:chronic workload ratio.
#[derive(Debug, Clone, Serialize)]
pub struct Acwr {
    /// Athlete.
    pub athlete_id: String,
    /// Load (minutes × RPE) of the last 7 days.
    pub acute_load: u32,
    /// Average weekly load of the last 28 days.
    pub chronic_weekly_load: f64,
    /// The ratio, absent when there is no chronic load.
    pub ratio: Option<f64>,
    /// A description of the band (not a diagnosis).
    pub band: String,
    /// Sessions counted.
    pub sessions: usize,
}

#[derive(Debug, Default)]
struct Data {
    orgs: Vec<Organisation>,
    athletes: Vec<Athlete>,
    injuries: Vec<Injury>,
    wellness: Vec<Wellness>,
    vitals: Vec<Vitals>,
    sessions: Vec<Session>,
    rtp: Vec<RtpEntry>,
    screenings: Vec<Screening>,
    videos: Vec<Video>,
    devices: Vec<Device>,
    next_id: u32,
}

/// The application's store and services.
#[derive(Debug)]
pub struct Store {
    data: Mutex<Data>,
}

static GLOBAL: LazyLock<Store> = LazyLock::new(Store::seeded);

fn has(p: &Principal, permission: &str) -> bool {
    super::roles().has_permission(&p.role, permission)
}

fn require(p: &Principal, permission: &str) -> Result<()> {
    if has(p, permission) {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(format!("role `{}` does not hold `{permission}`", p.role)))
    }
}

fn is_athlete(p: &Principal) -> bool {
    p.role == super::ATHLETE
}

/// A record that belongs to one athlete.
trait AthleteRecord: Clone {
    fn athlete_id(&self) -> &str;
}

/// An athlete's record with an id of its own, looked up by it within a tenant.
trait KeyedRecord: AthleteRecord {
    fn id(&self) -> &str;
    fn org_id(&self) -> &str;
}

macro_rules! impl_athlete_record {
    ($($record:ty),*) => {$(
        impl AthleteRecord for $record {
            fn athlete_id(&self) -> &str {
                &self.athlete_id
            }
        }
    )*};
}

macro_rules! impl_keyed_record {
    ($($record:ty),*) => {$(
        impl KeyedRecord for $record {
            fn id(&self) -> &str {
                &self.id
            }

            fn org_id(&self) -> &str {
                &self.org_id
            }
        }
    )*};
}

impl_athlete_record!(Injury, Wellness, Vitals, Session, RtpEntry, Screening, Video, Device);
impl_keyed_record!(Injury, RtpEntry, Video, Device);

impl Store {
    /// The application's store, seeded once per process (what the tools use).
    pub fn global() -> &'static Store {
        &GLOBAL
    }

    /// A new store with the seeded organisations, athletes and records.
    pub fn seeded() -> Store {
        Store { data: Mutex::new(seed()) }
    }

    fn lock(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The athlete as the caller may see it: same tenant, and for an athlete-role user only
    /// their own linked record (an unlinked athlete account is refused).
    fn scoped_athlete<'d>(d: &'d Data, p: &Principal, athlete_id: &str) -> Result<&'d Athlete> {
        if is_athlete(p) {
            match &p.subject {
                None => {
                    return Err(ServiceError::Forbidden(
                        "this athlete account is not linked to an athlete record".into(),
                    ));
                }
                Some(own) if own != athlete_id => {
                    return Err(ServiceError::Forbidden("athletes can only access their own record".into()));
                }
                Some(_) => {}
            }
        }
        d.athletes
            .iter()
            .find(|a| a.id == athlete_id && a.org_id == p.org_id)
            .ok_or_else(|| ServiceError::NotFound(format!("athlete `{athlete_id}`")))
    }

    /// The records of one athlete in `records(d)` that pass `keep`, once the caller holds
    /// `permission` and may see the athlete.
    fn athlete_records<T: AthleteRecord>(
        &self,
        p: &Principal,
        permission: &str,
        athlete_id: &str,
        records: impl FnOnce(&Data) -> &Vec<T>,
        keep: impl Fn(&T) -> bool,
    ) -> Result<Vec<T>> {
        require(p, permission)?;
        let d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        Ok(records(&d).iter().filter(|r| r.athlete_id() == athlete_id && keep(r)).cloned().collect())
    }

    /// Where record `id` (a `what`) of the caller's organisation stands in `records`, once the
    /// caller may see its athlete.
    fn record_index<T: KeyedRecord>(d: &Data, p: &Principal, records: &[T], id: &str, what: &str) -> Result<usize> {
        let index = records
            .iter()
            .position(|r| r.id() == id && r.org_id() == p.org_id)
            .ok_or_else(|| ServiceError::NotFound(format!("{what} `{id}`")))?;
        Self::scoped_athlete(d, p, records[index].athlete_id())?;
        Ok(index)
    }

    fn next_id(d: &mut Data, prefix: &str) -> String {
        d.next_id += 1;
        format!("{prefix}-{}", d.next_id)
    }

    // ----- athletes -----

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

    // ----- injuries -----

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

    // ----- wellness and vitals -----

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

    // ----- workload -----

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

    // ----- return to play -----

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

    // ----- screenings -----

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

    // ----- videos -----

    /// Videos of one athlete (without metrics).
    pub fn list_videos(&self, p: &Principal, athlete_id: &str) -> Result<Vec<Video>> {
        self.athlete_records(p, perms::video::read::NAME, athlete_id, |d| &d.videos, |_| true)
    }

    /// One video with its pose metrics and the conditions they were measured under.
    pub fn get_video(&self, p: &Principal, video_id: &str) -> Result<Video> {
        require(p, perms::video::read::NAME)?;
        let d = self.lock();
        let v = Self::record_index(&d, p, &d.videos, video_id, "video")?;
        Ok(d.videos[v].clone())
    }

    /// Permanently deletes videos and their pose analyses. Cannot be undone.
    pub fn delete_videos(&self, p: &Principal, video_ids: &[String]) -> Result<Vec<String>> {
        require(p, perms::video::delete::NAME)?;
        let mut d = self.lock();
        for id in video_ids {
            Self::record_index(&d, p, &d.videos, id, "video")?;
        }
        d.videos.retain(|v| !video_ids.contains(&v.id));
        Ok(video_ids.to_vec())
    }

    // ----- devices -----

    /// Devices paired to an athlete.
    pub fn list_devices(&self, p: &Principal, athlete_id: &str) -> Result<Vec<Device>> {
        self.athlete_records(p, perms::device::manage::NAME, athlete_id, |d| &d.devices, |_| true)
    }

    /// Replaces a device's key; the old key stops working.
    pub fn rotate_device_key(&self, p: &Principal, device_id: &str) -> Result<Device> {
        require(p, perms::device::manage::NAME)?;
        let mut d = self.lock();
        let index = Self::record_index(&d, p, &d.devices, device_id, "device")?;
        let dev = &mut d.devices[index];
        dev.key_version += 1;
        let digest =
            agents_runtime::agents_core::canonical::sha256_hex(format!("{}:{}", dev.id, dev.key_version).as_bytes());
        dev.key_fingerprint = format!("SHA256:{}", &digest[..16]);
        Ok(dev.clone())
    }

    /// Pairs a new device with an athlete. The code the device shows on its screen proves the
    /// person holds it; only a fingerprint derived from it is kept, never the code.
    pub fn pair_device(&self, p: &Principal, athlete_id: &str, model: &str, pairing_code: &str) -> Result<Device> {
        require(p, perms::device::manage::NAME)?;
        if pairing_code.len() != 6 || !pairing_code.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ServiceError::Invalid("a pairing code is the 6 digits the device shows".into()));
        }
        if model.trim().is_empty() {
            return Err(ServiceError::Invalid("name the device's model".into()));
        }
        let mut d = self.lock();
        Self::scoped_athlete(&d, p, athlete_id)?;
        let id = Self::next_id(&mut d, "dev");
        let digest = agents_runtime::agents_core::canonical::sha256_hex(format!("{id}:{pairing_code}").as_bytes());
        let dev = Device {
            id,
            org_id: p.org_id.clone(),
            athlete_id: athlete_id.to_owned(),
            model: model.trim().to_owned(),
            key_fingerprint: format!("SHA256:{}", &digest[..16]),
            key_version: 1,
        };
        d.devices.push(dev.clone());
        Ok(dev)
    }

    // ----- tests and demo inspection -----

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

fn seed() -> Data {
    let mut d = Data { next_id: 1000, ..Data::default() };
    d.orgs = vec![
        Organisation { id: "org-northside".into(), name: "Northside FC".into() },
        Organisation { id: "org-harbour".into(), name: "Harbour Rowing Club".into() },
    ];
    let athletes = [
        ("ath-101", "org-northside", "Jane", "Doe", "First team", "Full-back", "2003-05-14"),
        ("ath-102", "org-northside", "Tom", "Becker", "First team", "Winger", "2001-11-02"),
        ("ath-103", "org-northside", "Amara", "Okoye", "First team", "Centre-back", "1999-08-21"),
        ("ath-104", "org-northside", "Luis", "Ferreira", "Under-19", "Striker", "2007-02-09"),
        ("ath-105", "org-northside", "Kenji", "Sato", "Under-19", "Goalkeeper", "2008-06-30"),
        ("ath-201", "org-harbour", "Freya", "Lund", "Senior eight", "Stroke", "2000-03-12"),
        ("ath-202", "org-harbour", "Oliver", "Grant", "Senior eight", "Bow", "1998-12-19"),
        ("ath-203", "org-harbour", "Maya", "Chen", "Junior quad", "Two seat", "2009-09-05"),
    ];
    for (id, org, first, last, squad, pos, dob) in athletes {
        d.athletes.push(Athlete {
            id: id.into(),
            org_id: org.into(),
            first_name: first.into(),
            last_name: last.into(),
            squad: squad.into(),
            position: pos.into(),
            date_of_birth: dob.into(),
            active: true,
            deactivated_on: None,
        });
    }
    let injuries = [
        (
            "inj-1",
            "org-northside",
            "ath-101",
            "ankle",
            "right",
            "Lateral ankle sprain (ATFL), rehab progressing; hopping pain-free since 2026-03-09",
            Some(2),
            "rehab",
            "2026-02-21",
        ),
        (
            "inj-2",
            "org-northside",
            "ath-102",
            "hamstring",
            "left",
            "Biceps femoris strain in sprint drill",
            Some(1),
            "active",
            "2026-03-11",
        ),
        (
            "inj-3",
            "org-northside",
            "ath-103",
            "knee",
            "left",
            "Patellar tendinopathy, load-managed",
            None,
            "resolved",
            "2025-10-04",
        ),
        (
            "inj-4",
            "org-harbour",
            "ath-201",
            "lower back",
            "n/a",
            "Lumbar muscle strain after ergometer test",
            Some(1),
            "rehab",
            "2026-03-01",
        ),
    ];
    for (id, org, ath, part, side, desc, grade, status, onset) in injuries {
        d.injuries.push(Injury {
            id: id.into(),
            org_id: org.into(),
            athlete_id: ath.into(),
            body_part: part.into(),
            side: side.into(),
            description: desc.into(),
            grade,
            status: status.into(),
            onset: onset.into(),
            resolved_on: (status == "resolved").then(|| "2025-12-01".to_owned()),
            recorded_by: if org == "org-northside" { "u-priya".into() } else { "u-harbour-physio".into() },
        });
    }
    d.rtp.push(RtpEntry {
        id: "rtp-1".into(),
        org_id: "org-northside".into(),
        athlete_id: "ath-101".into(),
        injury_id: "inj-1".into(),
        stage: 4,
        notes: "Sport-specific drills without contact; single-leg hop symmetry 92%".into(),
        physio_signoff: Some(SignOff { by: "u-priya".into(), on: "2026-03-13".into() }),
        doctor_signoff: None,
        coach_signoff: None,
    });
    d.rtp.push(RtpEntry {
        id: "rtp-2".into(),
        org_id: "org-harbour".into(),
        athlete_id: "ath-201".into(),
        injury_id: "inj-4".into(),
        stage: 2,
        notes: "Light ergometer work, no seat racing".into(),
        physio_signoff: None,
        doctor_signoff: None,
        coach_signoff: None,
    });
    for (i, a) in
        ["ath-101", "ath-102", "ath-103", "ath-104", "ath-105", "ath-201", "ath-202", "ath-203"].iter().enumerate()
    {
        let org = if a.starts_with("ath-1") { "org-northside" } else { "org-harbour" };
        let n = i as u32;
        for (k, days_ago) in [1u32, 2, 3, 5, 8, 9, 11, 13, 15, 17, 20, 22, 24, 27].iter().enumerate() {
            // Ferreira (ath-104) has a sharp rise this week.
            let minutes = if *a == "ath-104" && *days_ago < 7 { 95 } else { 55 + (n * 3 + k as u32 * 7) % 30 };
            let rpe = if *a == "ath-104" && *days_ago < 7 { 8 } else { 4 + (n + k as u32) % 4 };
            d.sessions.push(Session {
                id: format!("ses-{}-{k}", &a[4..]),
                org_id: org.into(),
                athlete_id: (*a).into(),
                days_ago: *days_ago,
                kind: if org == "org-harbour" {
                    "water session".into()
                } else if k % 3 == 0 {
                    "gym".into()
                } else {
                    "pitch session".into()
                },
                minutes,
                rpe,
            });
        }
        d.wellness.push(Wellness {
            org_id: org.into(),
            athlete_id: (*a).into(),
            date: "2026-03-15".into(),
            sleep_hours: 6.5 + f64::from(n % 3) * 0.5,
            soreness: 2 + (n % 4) as u8,
            mood: 3 + (n % 2) as u8,
            note: String::new(),
        });
        d.vitals.push(Vitals {
            org_id: org.into(),
            athlete_id: (*a).into(),
            date: "2026-03-15".into(),
            resting_hr: 48 + n * 2,
            hrv_ms: 62 + n * 5,
        });
        d.devices.push(Device {
            id: format!("dev-{}", &a[4..]),
            org_id: org.into(),
            athlete_id: (*a).into(),
            model: if org == "org-harbour" { "Polar H10".into() } else { "WHOOP 4.0".into() },
            key_fingerprint: format!("SHA256:{:016x}", 0x5eed_0000_u64 + u64::from(n)),
            key_version: 1,
        });
    }
    d.screenings.push(Screening {
        id: "scr-1".into(),
        org_id: "org-northside".into(),
        athlete_id: "ath-101".into(),
        test: "Single-leg hop symmetry".into(),
        value: 92.0,
        unit: "%".into(),
        date: "2026-03-13".into(),
        notes: "Right vs left".into(),
    });
    d.screenings.push(Screening {
        id: "scr-2".into(),
        org_id: "org-northside".into(),
        athlete_id: "ath-102".into(),
        test: "Nordic hamstring peak force".into(),
        value: 318.0,
        unit: "N".into(),
        date: "2026-02-27".into(),
        notes: "Left 12% below right".into(),
    });
    d.screenings.push(Screening {
        id: "scr-3".into(),
        org_id: "org-harbour".into(),
        athlete_id: "ath-201".into(),
        test: "Countermovement jump".into(),
        value: 34.5,
        unit: "cm".into(),
        date: "2026-02-20".into(),
        notes: String::new(),
    });
    d.videos.push(Video {
        id: "vid-1".into(),
        org_id: "org-northside".into(),
        athlete_id: "ath-101".into(),
        title: "Single-leg hop test, three cameras".into(),
        recorded_on: "2026-03-13".into(),
        cameras: 3,
        view_obliquity_deg: 6.0,
        trustworthy: true,
        metrics: vec![
            PoseMetric { metric: "right ankle dorsiflexion".into(), mean_deg: Some(17.8), coverage: 0.94 },
            PoseMetric { metric: "right knee flexion at landing".into(), mean_deg: Some(41.2), coverage: 0.97 },
        ],
    });
    d.videos.push(Video {
        id: "vid-2".into(),
        org_id: "org-northside".into(),
        athlete_id: "ath-102".into(),
        title: "Sprint drill, phone camera".into(),
        recorded_on: "2026-03-11".into(),
        cameras: 1,
        view_obliquity_deg: 38.0,
        trustworthy: false,
        metrics: vec![
            PoseMetric { metric: "left hip flexion".into(), mean_deg: None, coverage: 0.14 },
            PoseMetric { metric: "left knee flexion".into(), mean_deg: Some(64.0), coverage: 0.52 },
        ],
    });
    d.videos.push(Video {
        id: "vid-3".into(),
        org_id: "org-northside".into(),
        athlete_id: "ath-104".into(),
        title: "Warm-up, duplicate upload".into(),
        recorded_on: "2026-03-10".into(),
        cameras: 1,
        view_obliquity_deg: 12.0,
        trustworthy: true,
        metrics: vec![],
    });
    d
}
