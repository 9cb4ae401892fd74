//! Kinetix: an assistant inside a clinical system for sports teams (athletes, injuries,
//! wellness, workload, return to play, screenings, videos, reports).
//!
//! What it shows:
//!
//! - **Authority is inherited.** The run carries the caller's
//!   [`Principal`](agents_runtime::Principal); every tool passes it to the application's own
//!   services ([`store`]), which scope by organisation, narrow an athlete-role user to their
//!   own record (an unlinked athlete account is refused), and gate each return-to-play
//!   signature on its own permission (`rtp.signoff_physio`, `rtp.signoff_doctor`,
//!   `rtp.signoff_coach`). The agent adds no checks and no authority.
//! - **Two fields carry the safety argument.** A tool's permission decides whether the model
//!   is ever offered it (the athlete role holds exactly four permissions: `athlete.read`,
//!   `wellness.write`, `vitals.read`, `device.manage`, so no injury tool exists for them);
//!   `mutating` makes the run stop for a person, who reads the tool's title
//!   ("Delete (deactivate) athlete").
//! - **The decider sees what they approve.** `pair_device` takes the pairing code the athlete
//!   types as a `#[secret]`: the run's events and the audit log hold it masked, and the
//!   confirmation card shows it to the person deciding, as the tool will receive it
//!   ([`PendingDecision::decider_arguments`](agents_runtime::run::PendingDecision)).
//! - **Absences.** There is no delete for any clinical record: athletes are deactivated,
//!   injuries resolved. `delete_video` and `delete_videos` are the only hard deletes, declared
//!   high and critical risk.
//! - **A reviewable manifest.** `cargo run -p examples --example clinic -- manifest` prints
//!   [`Kinetix::MANIFEST`] exactly; `-- manifest-sha256` prints its hash.
//!
//! The demo ([`main_with`] without arguments) runs offline with a rule-based model and prints
//! the conversation, the confirmation prompts and decisions, and each audit record as the
//! JSONL audit log receives it.

pub mod app;
pub mod store;
pub mod tools;

pub use app::main_with;

use agents_runtime::{RoleMap, agent, permissions};
use std::sync::LazyLock;
use tools::*;

permissions! {
    /// The clinical application's permissions.
    pub mod perms {
        athlete.read,
        athlete.write,
        injury.read,
        injury.write,
        wellness.read,
        wellness.write,
        vitals.read,
        device.manage,
        workload.read,
        workload.write,
        rtp.read,
        rtp.write,
        rtp.signoff_physio,
        rtp.signoff_doctor,
        rtp.signoff_coach,
        screening.read,
        screening.write,
        video.read,
        video.delete,
        report.generate,
    }
}

/// The athlete role's name.
pub const ATHLETE: &str = "athlete";
/// The physiotherapist role's name.
pub const PHYSIO: &str = "physio";
/// The doctor role's name.
pub const DOCTOR: &str = "doctor";
/// The coach role's name.
pub const COACH: &str = "coach";
/// The administrator role's name.
pub const ADMIN: &str = "admin";

/// The application's role map: the same document that answers "what can this user do"
/// with or without the assistant.
pub fn roles() -> &'static RoleMap {
    static ROLES: LazyLock<RoleMap> = LazyLock::new(build_roles);
    &ROLES
}

fn build_roles() -> RoleMap {
    use perms::*;
    RoleMap::new()
        .role(ATHLETE, [athlete::read::NAME, wellness::write::NAME, vitals::read::NAME, device::manage::NAME])
        .role(
            PHYSIO,
            [
                athlete::read::NAME,
                injury::read::NAME,
                injury::write::NAME,
                wellness::read::NAME,
                wellness::write::NAME,
                vitals::read::NAME,
                workload::read::NAME,
                workload::write::NAME,
                rtp::read::NAME,
                rtp::write::NAME,
                rtp::signoff_physio::NAME,
                screening::read::NAME,
                screening::write::NAME,
                video::read::NAME,
                report::generate::NAME,
            ],
        )
        .role(
            DOCTOR,
            [
                athlete::read::NAME,
                injury::read::NAME,
                injury::write::NAME,
                wellness::read::NAME,
                vitals::read::NAME,
                workload::read::NAME,
                rtp::read::NAME,
                rtp::write::NAME,
                rtp::signoff_doctor::NAME,
                screening::read::NAME,
                screening::write::NAME,
                video::read::NAME,
                report::generate::NAME,
            ],
        )
        .role(
            COACH,
            [
                athlete::read::NAME,
                athlete::write::NAME,
                wellness::read::NAME,
                workload::read::NAME,
                workload::write::NAME,
                rtp::read::NAME,
                rtp::write::NAME,
                rtp::signoff_coach::NAME,
                video::read::NAME,
                video::delete::NAME,
                report::generate::NAME,
            ],
        )
        .role(
            ADMIN,
            [
                athlete::read::NAME,
                athlete::write::NAME,
                device::manage::NAME,
                video::read::NAME,
                video::delete::NAME,
                report::generate::NAME,
            ],
        )
}

agent! {
    /// Kinetix, the assistant in the corner of every page: it looks things up and, after a
    /// person approves, changes records, always as the user it acts for. It serves every page,
    /// so a run may need any of its tools: it declares no skills (one implicit skill holding
    /// every tool).
    pub struct Kinetix;
    audit: { values: full },
    name: "kinetix",
    tools: [
        list_athletes, get_athlete, create_athlete, update_athlete, deactivate_athlete, reactivate_athlete,
        list_injuries, get_injury, create_injury, update_injury,
        get_wellness_history, submit_wellness, get_vitals,
        list_sessions, get_workload_acwr, log_session,
        list_rtp, create_rtp, update_rtp,
        list_screenings, create_screening,
        list_videos, get_pose_metrics, delete_video, delete_videos,
        list_devices, pair_device, rotate_device_key,
        generate_report, open_page,
    ],
    ceiling: [
        perms::athlete::read, perms::athlete::write, perms::injury::read, perms::injury::write,
        perms::wellness::read, perms::wellness::write, perms::vitals::read, perms::device::manage,
        perms::workload::read, perms::workload::write, perms::rtp::read, perms::rtp::write,
        perms::rtp::signoff_physio, perms::rtp::signoff_doctor, perms::rtp::signoff_coach,
        perms::screening::read, perms::screening::write, perms::video::read, perms::video::delete,
        perms::report::generate,
    ],
    limits: { max_iterations: 12 },
    models: [
        offline, openai("gpt-4o-mini"), anthropic("claude-sonnet-4-5"),
        openai_compatible("llama3.2", host = "localhost"),
    ],
    budget: { tokens_per_run: 400_000, usd_per_run: 0.50 },
}
