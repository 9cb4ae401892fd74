//! The application's records, and the data that holds them.

use serde::Serialize;

/// The application's "today", fixed so the seeded data and the demo read the same every run.
pub const TODAY: &str = "2026-03-16";

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
    pub(super) fn full_name(&self) -> String {
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
pub(super) struct Data {
    pub(super) orgs: Vec<Organisation>,
    pub(super) athletes: Vec<Athlete>,
    pub(super) injuries: Vec<Injury>,
    pub(super) wellness: Vec<Wellness>,
    pub(super) vitals: Vec<Vitals>,
    pub(super) sessions: Vec<Session>,
    pub(super) rtp: Vec<RtpEntry>,
    pub(super) screenings: Vec<Screening>,
    pub(super) videos: Vec<Video>,
    pub(super) devices: Vec<Device>,
    pub(super) next_id: u32,
}
