//! The agent's tools: thin verbs over the application's services. Every handler reads the
//! run's principal and passes it on; none adds or skips a check.
//!
//! Absent on purpose: a delete for athletes, injuries, screenings or return-to-play entries.
//! Videos are the only records the agent can destroy, and both video tools say so.

use super::perms;
use super::store::{
    Acwr, Athlete, Device, Injury, RtpEntry, Screening, ServiceError, Session, Store, Video, Vitals, Wellness,
};
use agents_runtime::{ToolContext, tool};
use serde::Serialize;
use serde_json::{Value, json};

fn store() -> &'static Store {
    Store::global()
}

/// Lists the athletes of the caller's organisation, optionally filtered by squad or by a part
/// of the name. Athlete users only ever see their own record.
///
/// # Arguments
///
/// * `squad` - only athletes of this squad, e.g. `U21`
/// * `name` - a part of the first or last name to match
/// * `include_inactive` - also list deactivated athletes (default false)
#[tool(permission = perms::athlete::read, risk = low)]
pub async fn list_athletes(
    cx: &ToolContext<'_>,
    squad: Option<String>,
    name: Option<String>,
    include_inactive: Option<bool>,
) -> Result<Vec<Athlete>, ServiceError> {
    store().list_athletes(cx.principal(), squad.as_deref(), name.as_deref(), include_inactive.unwrap_or(false))
}

/// Gets one athlete's profile by id.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id, as `list_athletes` shows it
#[tool(permission = perms::athlete::read, risk = low)]
pub async fn get_athlete(cx: &ToolContext<'_>, athlete_id: String) -> Result<Athlete, ServiceError> {
    store().get_athlete(cx.principal(), &athlete_id)
}

/// Adds a new athlete to the organisation.
///
/// # Arguments
///
/// * `first_name` - the athlete's first name
/// * `last_name` - the athlete's last name
/// * `squad` - the squad they join, e.g. `First team`
/// * `position` - their playing position, e.g. `winger`
/// * `date_of_birth` - their date of birth, `YYYY-MM-DD`
#[tool(permission = perms::athlete::write, mutating, title = "Add athlete", risk = low)]
pub async fn create_athlete(
    cx: &ToolContext<'_>,
    first_name: String,
    last_name: String,
    squad: String,
    position: String,
    date_of_birth: String,
) -> Result<Athlete, ServiceError> {
    store().create_athlete(cx.principal(), &first_name, &last_name, &squad, &position, &date_of_birth)
}

/// Changes an athlete's squad or position.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
/// * `squad` - the new squad, if it changes
/// * `position` - the new position, if it changes
#[tool(permission = perms::athlete::write, mutating, title = "Update athlete profile", risk = low)]
pub async fn update_athlete(
    cx: &ToolContext<'_>,
    athlete_id: String,
    squad: Option<String>,
    position: Option<String>,
) -> Result<Athlete, ServiceError> {
    store().update_athlete(cx.principal(), &athlete_id, squad.as_deref(), position.as_deref())
}

/// Delete or remove an athlete (player). The platform deletes athletes by soft-deleting them:
/// their historical data is preserved for audit, but they are removed from active squads and
/// lists. Use reactivate_athlete to undo.
///
/// # Arguments
///
/// * `athlete_id` - the id of the athlete to deactivate
#[tool(permission = perms::athlete::write, mutating, title = "Delete (deactivate) athlete", risk = medium)]
pub async fn deactivate_athlete(cx: &ToolContext<'_>, athlete_id: String) -> Result<Value, ServiceError> {
    let a = store().deactivate_athlete(cx.principal(), &athlete_id)?;
    Ok(json!({"deactivated": a.id, "history_preserved": true, "deactivated_on": a.deactivated_on}))
}

/// Returns a deactivated athlete to active squads and lists.
///
/// # Arguments
///
/// * `athlete_id` - the id of the deactivated athlete
#[tool(permission = perms::athlete::write, mutating, title = "Reactivate athlete", risk = low)]
pub async fn reactivate_athlete(cx: &ToolContext<'_>, athlete_id: String) -> Result<Athlete, ServiceError> {
    store().reactivate_athlete(cx.principal(), &athlete_id)
}

/// Lists an athlete's injuries (open ones, or all with include_resolved).
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
/// * `include_resolved` - also list resolved injuries (default false)
#[tool(permission = perms::injury::read, risk = low)]
pub async fn list_injuries(
    cx: &ToolContext<'_>,
    athlete_id: String,
    include_resolved: Option<bool>,
) -> Result<Vec<Injury>, ServiceError> {
    store().list_injuries(cx.principal(), &athlete_id, include_resolved.unwrap_or(false))
}

/// Gets one injury record by id.
///
/// # Arguments
///
/// * `injury_id` - the injury record's id
#[tool(permission = perms::injury::read, risk = low)]
pub async fn get_injury(cx: &ToolContext<'_>, injury_id: String) -> Result<Injury, ServiceError> {
    store().get_injury(cx.principal(), &injury_id)
}

/// Records a new injury for an athlete. side is `left`, `right` or `n/a`; grade is 1 to 3
/// when graded; onset defaults to today.
///
/// # Arguments
///
/// * `athlete_id` - the injured athlete's id
/// * `body_part` - the injured body part, e.g. `hamstring`
/// * `side` - `left`, `right` or `n/a`
/// * `description` - what happened, in the clinician's words
/// * `grade` - the grade, 1 to 3, when graded
/// * `onset` - the day it happened, `YYYY-MM-DD` (default today)
#[tool(permission = perms::injury::write, mutating, title = "Record injury", risk = medium)]
pub async fn create_injury(
    cx: &ToolContext<'_>,
    athlete_id: String,
    body_part: String,
    side: String,
    description: String,
    grade: Option<u8>,
    onset: Option<String>,
) -> Result<Injury, ServiceError> {
    store().create_injury(cx.principal(), &athlete_id, &body_part, &side, &description, grade, onset.as_deref())
}

/// Updates an injury record: its status (`active`, `rehab`, `resolved`) or its description.
/// Injury records are never deleted; a healed injury is marked resolved.
///
/// # Arguments
///
/// * `injury_id` - the injury record's id
/// * `status` - the new status: `active`, `rehab` or `resolved`
/// * `description` - the new description
#[tool(permission = perms::injury::write, mutating, title = "Update injury record", risk = medium)]
pub async fn update_injury(
    cx: &ToolContext<'_>,
    injury_id: String,
    status: Option<String>,
    description: Option<String>,
) -> Result<Injury, ServiceError> {
    store().update_injury(cx.principal(), &injury_id, status.as_deref(), description.as_deref())
}

/// Shows an athlete's recent wellness check-ins.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
#[tool(permission = perms::wellness::read, risk = low)]
pub async fn get_wellness_history(cx: &ToolContext<'_>, athlete_id: String) -> Result<Vec<Wellness>, ServiceError> {
    store().wellness_history(cx.principal(), &athlete_id)
}

/// Submits today's wellness check-in for an athlete: hours slept, soreness 1–10, mood 1–5.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
/// * `sleep_hours` - hours slept last night
/// * `soreness` - muscle soreness, 1 (none) to 10 (severe)
/// * `mood` - mood, 1 (low) to 5 (great)
/// * `note` - anything else the athlete reports
#[tool(permission = perms::wellness::write, mutating, title = "Submit wellness check-in", risk = low)]
pub async fn submit_wellness(
    cx: &ToolContext<'_>,
    athlete_id: String,
    sleep_hours: f64,
    soreness: u8,
    mood: u8,
    note: Option<String>,
) -> Result<Wellness, ServiceError> {
    store().submit_wellness(cx.principal(), &athlete_id, sleep_hours, soreness, mood, note.as_deref().unwrap_or(""))
}

/// Shows an athlete's vitals (resting heart rate, HRV) from their devices.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
#[tool(permission = perms::vitals::read, risk = low)]
pub async fn get_vitals(cx: &ToolContext<'_>, athlete_id: String) -> Result<Vec<Vitals>, ServiceError> {
    store().vitals(cx.principal(), &athlete_id)
}

/// Lists an athlete's training sessions of the last `days` days (default 28).
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
/// * `days` - how many days back to list (default 28)
#[tool(permission = perms::workload::read, risk = low)]
pub async fn list_sessions(
    cx: &ToolContext<'_>,
    athlete_id: String,
    days: Option<u32>,
) -> Result<Vec<Session>, ServiceError> {
    store().list_sessions(cx.principal(), &athlete_id, days.unwrap_or(28))
}

/// Computes an athlete's acute:chronic workload ratio (7-day load over the 28-day weekly
/// average of minutes × RPE). A description of load, not a diagnosis.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
#[tool(permission = perms::workload::read, risk = low)]
pub async fn get_workload_acwr(cx: &ToolContext<'_>, athlete_id: String) -> Result<Acwr, ServiceError> {
    store().acwr(cx.principal(), &athlete_id)
}

/// Logs a training session for an athlete (minutes, session RPE 1–10, days ago: 0 = today).
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
/// * `kind` - the kind of session, e.g. `pitch`, `gym`, `match`
/// * `minutes` - its duration in minutes
/// * `rpe` - the session's rating of perceived exertion, 1 to 10
/// * `days_ago` - when it took place, in days before today (0 = today, the default)
#[tool(permission = perms::workload::write, mutating, title = "Log training session", risk = low)]
pub async fn log_session(
    cx: &ToolContext<'_>,
    athlete_id: String,
    kind: String,
    minutes: u32,
    rpe: u32,
    days_ago: Option<u32>,
) -> Result<Session, ServiceError> {
    store().log_session(cx.principal(), &athlete_id, &kind, minutes, rpe, days_ago.unwrap_or(0))
}

/// Lists an athlete's return-to-play entries with their three sign-offs (physio, doctor,
/// coach); an athlete is cleared only when all three are present.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
#[tool(permission = perms::rtp::read, risk = low)]
pub async fn list_rtp(cx: &ToolContext<'_>, athlete_id: String) -> Result<Vec<RtpEntry>, ServiceError> {
    store().list_rtp(cx.principal(), &athlete_id)
}

/// Creates a return-to-play entry after an injury. Each sign-off flag signs as the current
/// user and needs that user's own sign-off authority.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
/// * `injury_id` - the injury the athlete returns from
/// * `stage` - the return-to-play stage reached, 1 to 6
/// * `notes` - the clinician's notes on this stage
/// * `physio_signoff` - sign off as the current user, if a physio
/// * `doctor_signoff` - sign off as the current user, if a doctor
/// * `coach_signoff` - sign off as the current user, if a coach
#[tool(permission = perms::rtp::write, mutating, title = "Create return-to-play entry", risk = high)]
#[allow(clippy::too_many_arguments)]
pub async fn create_rtp(
    cx: &ToolContext<'_>,
    athlete_id: String,
    injury_id: String,
    stage: u8,
    notes: String,
    physio_signoff: Option<bool>,
    doctor_signoff: Option<bool>,
    coach_signoff: Option<bool>,
) -> Result<RtpEntry, ServiceError> {
    store().create_rtp(
        cx.principal(),
        &athlete_id,
        &injury_id,
        stage,
        &notes,
        physio_signoff.unwrap_or(false),
        doctor_signoff.unwrap_or(false),
        coach_signoff.unwrap_or(false),
    )
}

/// Updates a return-to-play entry: stage, notes, or a sign-off. Each sign-off flag signs as
/// the current user and needs that user's own sign-off authority (physio, doctor or coach).
///
/// # Arguments
///
/// * `rtp_id` - the return-to-play entry's id
/// * `stage` - the new stage, 1 to 6
/// * `notes` - the new notes
/// * `physio_signoff` - sign off as the current user, if a physio
/// * `doctor_signoff` - sign off as the current user, if a doctor
/// * `coach_signoff` - sign off as the current user, if a coach
#[tool(permission = perms::rtp::write, mutating, title = "Update return-to-play entry", risk = high)]
pub async fn update_rtp(
    cx: &ToolContext<'_>,
    rtp_id: String,
    stage: Option<u8>,
    notes: Option<String>,
    physio_signoff: Option<bool>,
    doctor_signoff: Option<bool>,
    coach_signoff: Option<bool>,
) -> Result<RtpEntry, ServiceError> {
    store().update_rtp(
        cx.principal(),
        &rtp_id,
        stage,
        notes.as_deref(),
        physio_signoff.unwrap_or(false),
        doctor_signoff.unwrap_or(false),
        coach_signoff.unwrap_or(false),
    )
}

/// Lists an athlete's screening results (hop tests, Nordic strength, jumps).
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
#[tool(permission = perms::screening::read, risk = low)]
pub async fn list_screenings(cx: &ToolContext<'_>, athlete_id: String) -> Result<Vec<Screening>, ServiceError> {
    store().list_screenings(cx.principal(), &athlete_id)
}

/// Records a screening result for an athlete.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
/// * `test` - the screening test, e.g. `single-leg hop`
/// * `value` - the measured value
/// * `unit` - the unit of the value, e.g. `cm`, `N`
/// * `notes` - the tester's notes
#[tool(permission = perms::screening::write, mutating, title = "Record screening result", risk = low)]
pub async fn create_screening(
    cx: &ToolContext<'_>,
    athlete_id: String,
    test: String,
    value: f64,
    unit: String,
    notes: Option<String>,
) -> Result<Screening, ServiceError> {
    store().create_screening(cx.principal(), &athlete_id, &test, value, &unit, notes.as_deref().unwrap_or(""))
}

/// A video in a listing.
#[derive(Debug, Serialize)]
pub struct VideoSummary {
    id: String,
    title: String,
    recorded_on: String,
    cameras: u32,
}

/// Lists an athlete's videos.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
#[tool(permission = perms::video::read, risk = low)]
pub async fn list_videos(cx: &ToolContext<'_>, athlete_id: String) -> Result<Vec<VideoSummary>, ServiceError> {
    Ok(store()
        .list_videos(cx.principal(), &athlete_id)?
        .into_iter()
        .map(|v| VideoSummary { id: v.id, title: v.title, recorded_on: v.recorded_on, cameras: v.cameras })
        .collect())
}

/// Gets the pose metrics of a video with the conditions they were measured under: camera
/// count, view obliquity, coverage, and whether the rig is trustworthy. Report the caveats
/// first; never average configurations into one accuracy figure; an omitted angle was
/// refused by the observability gate and must not be estimated.
///
/// # Arguments
///
/// * `video_id` - the video's id, as `list_videos` shows it
#[tool(permission = perms::video::read, risk = low)]
pub async fn get_pose_metrics(cx: &ToolContext<'_>, video_id: String) -> Result<Value, ServiceError> {
    let v: Video = store().get_video(cx.principal(), &video_id)?;
    let mut caveats = Vec::new();
    if !v.trustworthy {
        caveats
            .push("the rig's refined layout has drifted from its declared one: results are not trustworthy".to_owned());
    }
    if v.cameras == 1 {
        caveats
            .push("single camera: lower agreement with 3D ground truth than a calibrated multi-camera rig".to_owned());
    }
    for m in &v.metrics {
        if m.mean_deg.is_none() {
            caveats.push(format!(
                "{}: omitted by the observability gate (coverage {:.0}%)",
                m.metric,
                m.coverage * 100.0
            ));
        } else if m.coverage < 0.6 {
            caveats.push(format!("{}: low coverage ({:.0}%)", m.metric, m.coverage * 100.0));
        }
    }
    Ok(json!({"caveats": caveats, "video": v}))
}

/// Permanently deletes one video and its pose analysis. This cannot be undone.
///
/// # Arguments
///
/// * `video_id` - the id of the video to delete for good
#[tool(permission = perms::video::delete, mutating, title = "Permanently delete video (cannot be undone)", risk = high)]
pub async fn delete_video(cx: &ToolContext<'_>, video_id: String) -> Result<Value, ServiceError> {
    let gone = store().delete_videos(cx.principal(), std::slice::from_ref(&video_id))?;
    Ok(json!({"permanently_deleted": gone}))
}

/// Permanently deletes several videos and their pose analyses. This cannot be undone.
///
/// # Arguments
///
/// * `video_ids` - the ids of the videos to delete for good
#[tool(permission = perms::video::delete, mutating, title = "Permanently delete videos (cannot be undone)", risk = critical)]
pub async fn delete_videos(cx: &ToolContext<'_>, video_ids: Vec<String>) -> Result<Value, ServiceError> {
    let gone = store().delete_videos(cx.principal(), &video_ids)?;
    Ok(json!({"permanently_deleted": gone}))
}

/// Lists the wearable devices paired to an athlete (key fingerprints only, never keys).
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
#[tool(permission = perms::device::manage, risk = low)]
pub async fn list_devices(cx: &ToolContext<'_>, athlete_id: String) -> Result<Vec<Device>, ServiceError> {
    store().list_devices(cx.principal(), &athlete_id)
}

/// Pairs a wearable device with an athlete, with the code the device shows on its screen.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
/// * `model` - the device's model, e.g. `Polar H10`
/// * `pairing_code` - the 6-digit code the device shows
#[tool(permission = perms::device::manage, mutating, title = "Pair wearable device", risk = medium)]
pub async fn pair_device(
    cx: &ToolContext<'_>,
    athlete_id: String,
    model: String,
    #[secret] pairing_code: String,
) -> Result<Device, ServiceError> {
    store().pair_device(cx.principal(), &athlete_id, &model, &pairing_code)
}

/// Rotates a device's key: a new key is issued and the old one stops working; the device
/// must be re-paired.
///
/// # Arguments
///
/// * `device_id` - the device's id, as `list_devices` shows it
#[tool(permission = perms::device::manage, mutating, title = "Rotate device key", risk = medium)]
pub async fn rotate_device_key(cx: &ToolContext<'_>, device_id: String) -> Result<Device, ServiceError> {
    store().rotate_device_key(cx.principal(), &device_id)
}

/// Generates a status report for an athlete from the records the caller can read. Sections
/// the caller's role cannot read are left out and named as such.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id
#[tool(permission = perms::report::generate, risk = low)]
pub async fn generate_report(cx: &ToolContext<'_>, athlete_id: String) -> Result<Value, ServiceError> {
    let p = cx.principal();
    let s = store();
    let athlete = s.get_athlete(p, &athlete_id)?;
    let mut report = json!({"athlete": athlete, "generated_on": super::store::TODAY});
    let mut omitted = Vec::new();
    let mut section = |name: &str, r: Result<Value, ServiceError>| match r {
        Ok(v) => report[name] = v,
        Err(ServiceError::Forbidden(_)) => omitted.push(name.to_owned()),
        Err(e) => report[name] = json!({"error": e.to_string()}),
    };
    section("injuries", s.list_injuries(p, &athlete_id, false).map(|v| json!(v)));
    section("return_to_play", s.list_rtp(p, &athlete_id).map(|v| json!(v)));
    section("workload", s.acwr(p, &athlete_id).map(|v| json!(v)));
    section("wellness", s.wellness_history(p, &athlete_id).map(|v| json!(v)));
    section("screenings", s.list_screenings(p, &athlete_id).map(|v| json!(v)));
    report["omitted_sections_without_permission"] = json!(omitted);
    Ok(report)
}

/// Opens a page of the application for the user: `athlete`, `injuries`, `rtp`, `workload`,
/// `wellness`, `videos` or `reports`, optionally for one record id.
///
/// # Arguments
///
/// * `page` - the page: `athlete`, `injuries`, `rtp`, `workload`, `wellness`, `videos` or `reports`
/// * `id` - the record to open the page on, if any
// Marked `egress`: the address goes to the user's browser, which requests it (the server's
// logs and every script on the page see it), so the runtime checks where its values came
// from, and one copied from a record waits for the user's confirmation.
#[tool(permission = public, risk = low, egress)]
pub async fn open_page(page: String, id: Option<String>) -> Result<Value, ServiceError> {
    const PAGES: &[&str] = &["athlete", "injuries", "rtp", "workload", "wellness", "videos", "reports"];
    if !PAGES.contains(&page.as_str()) {
        return Err(ServiceError::Invalid(format!("unknown page `{page}`; pages: {}", PAGES.join(", "))));
    }
    let url = match id {
        Some(id) => format!("/{page}/{id}"),
        None => format!("/{page}"),
    };
    Ok(json!({"navigate_to": url}))
}
