//! The program around the agent: the manifest commands, the offline demo and the chat.

use super::store::Store;
use super::{ADMIN, ATHLETE, COACH, DOCTOR, Kinetix, PHYSIO};
use crate::console::{
    Screen, provider_or_offline, read_line, send_verdict, severe_failures, short, temp_audit_path, tokio_runtime,
};
use agents_runtime::RunResultExt as _;
use agents_runtime::audit::{AuditRecord, JsonlSink, verify_jsonl_file};
use agents_runtime::events::Event;
use agents_runtime::provider::ToolOutcome;
use agents_runtime::provider::scripted::{RuleProvider, last_user_message, reply, tool_call, tool_outcomes};
use agents_runtime::{Principal, RunError, RunOutput, Runtime, Verdict};
use serde_json::{Value, json};
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

const USAGE: &str =
    "usage: clinic [--demo | chat [--as physio|doctor|coach|athlete|admin] | manifest | manifest-sha256]
  (no arguments)   the offline demo (also when stdin is not a terminal)
  chat             talk to Kinetix; set AGENTS_MODEL to use a real model, otherwise rules answer
  manifest         print the permission manifest exactly (canonical JSON, no trailing newline)
  manifest-sha256  print the manifest's SHA-256
";

/// Runs the clinic program with `args` (without the program name), writing to `out`.
///
/// `manifest` writes exactly [`Kinetix::MANIFEST`]; `manifest-sha256` writes
/// [`Kinetix::MANIFEST_SHA256`] and a newline; `chat` on a terminal talks to the agent; no
/// arguments, `--demo`, or `chat` without a terminal plays the offline demo.
pub fn main_with(args: &[String], out: &mut dyn Write) -> io::Result<()> {
    match args.first().map(String::as_str) {
        Some("manifest") => out.write_all(Kinetix::MANIFEST.as_bytes()),
        Some("manifest-sha256") => writeln!(out, "{}", Kinetix::MANIFEST_SHA256),
        Some("-h" | "--help" | "help") => out.write_all(USAGE.as_bytes()),
        Some("chat") if io::stdin().is_terminal() => {
            let role = match args.get(1).map(String::as_str) {
                Some("--as") => args.get(2).cloned().unwrap_or_else(|| PHYSIO.into()),
                _ => PHYSIO.into(),
            };
            tokio_runtime()?.block_on(chat(&role, out))
        }
        None | Some("--demo" | "demo" | "chat") => tokio_runtime()?.block_on(run_demo(out)).map(|_| ()),
        Some(other) => Err(io::Error::new(io::ErrorKind::InvalidInput, format!("unknown command `{other}`\n{USAGE}"))),
    }
}

/// The people of the demo (the application's own users; the agent has no account).
pub mod people {
    use super::*;

    /// Priya Shah, physiotherapist at Northside FC.
    pub fn priya() -> Principal {
        Principal::new("u-priya", "org-northside", PHYSIO)
    }
    /// Dr. Ngozi Okafor, club doctor at Northside FC.
    pub fn okafor() -> Principal {
        Principal::new("u-okafor", "org-northside", DOCTOR)
    }
    /// Marco Rossi, first-team coach at Northside FC.
    pub fn marco() -> Principal {
        Principal::new("u-marco", "org-northside", COACH)
    }
    /// Avery Quinn, administrator at Northside FC.
    pub fn admin() -> Principal {
        Principal::new("u-admin", "org-northside", ADMIN)
    }
    /// Jane Doe, an athlete at Northside FC, linked to her athlete record `ath-101`.
    pub fn jane() -> Principal {
        Principal::new("u-jane", "org-northside", ATHLETE).with_subject("ath-101")
    }
    /// Sam, an athlete-role login at Northside FC that nobody linked to an athlete record.
    pub fn sam_unlinked() -> Principal {
        Principal::new("u-sam", "org-northside", ATHLETE)
    }
    /// Erik Holm, physiotherapist at Harbour Rowing Club (another tenant).
    pub fn erik() -> Principal {
        Principal::new("u-erik", "org-harbour", PHYSIO)
    }
}

/// What the demo leaves behind, for checks.
#[derive(Debug)]
pub struct DemoReport {
    /// The JSONL audit log it wrote.
    pub audit_path: PathBuf,
    /// The records, read back from that file.
    pub records: Vec<AuditRecord>,
    /// Every argument value and result the session's events and cards showed.
    pub seen: Vec<serde_json::Value>,
}

/// How a person answers a confirmation prompt.
enum Decider<'a> {
    /// Scripted answers by tool name.
    Scripted(&'a dyn Fn(&str) -> Verdict),
    /// Ask on the terminal.
    Terminal,
}

async fn turn(
    rt: &Runtime,
    screen: &mut Screen<'_>,
    who: &Principal,
    label: Option<&str>,
    session: &str,
    message: &str,
    decider: Decider<'_>,
) -> io::Result<Result<RunOutput<String>, RunError>> {
    if let Some(label) = label {
        writeln!(screen.out, "\n{label}> {message}")?;
    }
    let mut run = rt.start::<Kinetix>(who.clone(), session, message.to_owned()).map_err(io::Error::other)?;
    while let Some(event) = run.events().recv().await {
        match event {
            Event::ToolCall { tool, args, .. } => {
                screen.tool_call("kinetix", &tool, args.as_ref())?;
                screen.seen.extend(args);
            }
            event @ Event::ConfirmRequired { .. } => confirm(rt, screen, who, &decider, event).await?,
            // An outcome follows its records in the log: show those first.
            Event::ToolResult { tool, status, result, .. } => {
                screen.audit()?;
                screen.seen.extend(result.clone());
                let shown = result.map(|r| format!(": {}", short(&r, 160))).unwrap_or_default();
                writeln!(screen.out, "  {tool} {status}{shown}")?;
            }
            Event::ToolDenied { tool, reason, .. } => {
                screen.audit()?;
                writeln!(screen.out, "  gate refused {tool}: {reason}")?;
            }
            Event::Handoff { record, .. } => {
                screen.audit()?;
                writeln!(screen.out, "  handed off to a person: {} (nothing ran)", record.tool)?;
            }
            Event::Message { text, .. } => {
                screen.audit()?;
                screen.message("kinetix", &text)?;
            }
            Event::Error { message, .. } => writeln!(screen.out, "  error: {message}")?,
            Event::Done { .. } => break,
            _ => {}
        }
        screen.audit()?;
    }
    let outcome = run.wait().await;
    screen.audit()?;
    Ok(outcome)
}

/// Shows a confirmation card, as the person deciding sees it, and records their answer.
async fn confirm(
    rt: &Runtime,
    screen: &mut Screen<'_>,
    who: &Principal,
    decider: &Decider<'_>,
    event: Event,
) -> io::Result<()> {
    let Event::ConfirmRequired { call_id, tool, title, args, risk, why, .. } = event else { return Ok(()) };
    screen.audit()?;
    // The event and the audit log hold the arguments masked; the person deciding is shown
    // them as the tool will receive them, values they typed included.
    let view = rt
        .pending_decisions(who)
        .await
        .ok()
        .and_then(|pending| pending.into_iter().find(|p| p.call_id == call_id).map(|p| p.decider_arguments));
    let shown = view.as_ref().map_or(&args, |view| view.as_value());
    screen.seen.push(shown.clone());
    writeln!(screen.out, "  ┌─ Confirm: {title}   [risk: {risk}]")?;
    writeln!(screen.out, "  │  {tool} {}", crate::console::canonical(shown))?;
    if shown != &args {
        writeln!(screen.out, "  │  (values the audit log masks are shown to you only)")?;
    }
    if let Some(why) = &why {
        writeln!(screen.out, "{}", crate::console::warning_line(why))?;
    }
    write!(screen.out, "  └─ Approve? [y/N] ")?;
    let verdict = answer(screen, decider, &tool).await?;
    let said = |v: Verdict| if v == Verdict::Approve { "approved" } else { "declined" };
    writeln!(screen.out, "     {} by {}", said(verdict), who.user_id)?;
    let sent =
        send_verdict(rt, screen, who, &call_id, verdict, async |s: &mut Screen<'_>| answer(s, decider, &tool).await);
    if sent.await? != verdict {
        writeln!(screen.out, "     declined at the second confirmation by {}", who.user_id)?;
    }
    Ok(())
}

/// The person's answer to the prompt about `tool`: scripted (and echoed), or typed.
async fn answer(screen: &mut Screen<'_>, decider: &Decider<'_>, tool: &str) -> io::Result<Verdict> {
    Ok(match decider {
        Decider::Scripted(f) => {
            let v = f(tool);
            writeln!(screen.out, "{}", if v == Verdict::Approve { "y" } else { "n" })?;
            v
        }
        Decider::Terminal => {
            screen.out.flush()?;
            let answer = read_line().await?.unwrap_or_default();
            if matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") {
                Verdict::Approve
            } else {
                Verdict::Reject
            }
        }
    })
}

fn open_audit(prefix: &str) -> io::Result<(Arc<JsonlSink>, PathBuf)> {
    let path = temp_audit_path(prefix);
    let sink = JsonlSink::open(&path).map_err(io::Error::other)?;
    Ok((Arc::new(sink), path))
}

/// One scene of the demo: one person's messages, in one session.
struct Scene {
    /// The heading.
    heading: &'static str,
    /// Who speaks.
    who: fn() -> Principal,
    /// How they are shown.
    label: &'static str,
    /// Their session.
    session: &'static str,
    /// What they say, one run each.
    messages: &'static [&'static str],
    /// How their confirmations are answered.
    decide: fn(&str) -> Verdict,
}

fn approve(_tool: &str) -> Verdict {
    Verdict::Approve
}

fn decline_video_delete(tool: &str) -> Verdict {
    if tool.starts_with("delete_video") { Verdict::Reject } else { Verdict::Approve }
}

/// The demo's scenes, in order.
const SCENES: &[Scene] = &[
    Scene {
        heading: "1. Priya Shah, physio at Northside FC: reads, an injury record, a doctor's sign-off",
        who: people::priya,
        label: "priya (physio)",
        session: "s-priya",
        messages: &[
            "Show me the first team squad",
            "How is Jane's ankle rehab going?",
            "What is the workload ratio for ath-104?",
            "Record an injury for ath-104: left hamstring strain, grade 1, tightness in the last sprint",
            "Sign off rtp-1 as doctor, she is ready",
        ],
        decide: approve,
    },
    Scene {
        heading: "2. Dr. Okafor, club doctor: the same sign-off with a doctor's authority",
        who: people::okafor,
        label: "dr okafor (doctor)",
        session: "s-okafor",
        messages: &["Sign off rtp-1 as doctor"],
        decide: approve,
    },
    Scene {
        heading: "3. Marco Rossi, coach: delete means deactivate; no delete for clinical records; a declined video deletion",
        who: people::marco,
        label: "marco (coach)",
        session: "s-marco",
        messages: &[
            "Delete athlete ath-105, he has left the club",
            "Delete injury inj-2 from the record",
            "Delete video vid-3",
        ],
        decide: decline_video_delete,
    },
    Scene {
        heading: "4. Jane Doe, athlete (linked to ath-101): self-scoped, no injury tools",
        who: people::jane,
        label: "jane (athlete)",
        session: "s-jane",
        messages: &[
            "How is Tom's hamstring?",
            "Show injuries for ath-102",
            "List athletes",
            "Log my wellness for ath-101: slept 7.5 hours, soreness 3, mood 4",
            "Pair my new Polar H10 for ath-101 with code 048213",
        ],
        decide: approve,
    },
    Scene {
        heading: "5. An athlete login linked to no athlete record is refused, not defaulted",
        who: people::sam_unlinked,
        label: "sam (athlete, unlinked)",
        session: "s-sam",
        messages: &["List athletes"],
        decide: approve,
    },
    Scene {
        heading: "6. Erik Holm, physio at Harbour Rowing Club: another tenant's athlete does not exist for him",
        who: people::erik,
        label: "erik (physio, harbour)",
        session: "s-erik",
        messages: &["Show injuries for ath-101"],
        decide: approve,
    },
];

/// The offline demo: several users of two clubs talk to Kinetix; confirmations are answered
/// by a script; every audit record is printed as the JSONL log receives it.
pub async fn run_demo(out: &mut dyn Write) -> io::Result<DemoReport> {
    let (sink, path) = open_audit("kinetix-demo")?;
    let rt = Runtime::builder(sink, Arc::new(clinic_model())).roles(super::roles().clone()).build();
    let mut screen = Screen::new(out, &path);
    writeln!(screen.out, "Kinetix offline demo: a rule-based model, no keys, no network.")?;
    writeln!(screen.out, "manifest sha256 {}", Kinetix::MANIFEST_SHA256)?;
    writeln!(screen.out, "audit log       {}", path.display())?;
    for scene in SCENES {
        writeln!(screen.out, "\n=== {} ===", scene.heading)?;
        let who = (scene.who)();
        for m in scene.messages {
            let decider = Decider::Scripted(&scene.decide);
            let _ = turn(&rt, &mut screen, &who, Some(scene.label), scene.session, m, decider).await?;
        }
    }
    show_records_afterwards(&mut screen)?;
    drop(rt);
    let records = screen.tail.records().to_vec();
    let seen = std::mem::take(&mut screen.seen);
    let summary = verify_jsonl_file(&path, Some(Kinetix::MANIFEST_SHA256)).map_err(io::Error::other)?;
    writeln!(
        screen.out,
        "\naudit log verified: {} records, hash chain intact, head {}",
        summary.records,
        &summary.last_hash[..16]
    )?;
    writeln!(screen.out, "severe failures computed from the audit records: {}", severe_failures(&records).len())?;
    Ok(DemoReport { audit_path: path, records, seen })
}

/// The records the demo changed, read from the store: the sign-offs of `rtp-1`, the
/// deactivated athlete, the injuries still on record.
fn show_records_afterwards(screen: &mut Screen<'_>) -> io::Result<()> {
    let store = Store::global();
    writeln!(screen.out, "\n=== State of the records afterwards ===")?;
    if let Some(r) = store.inspect_rtp("rtp-1") {
        let who = |s: &Option<super::store::SignOff>| s.as_ref().map_or("—".to_owned(), |s| s.by.clone());
        writeln!(
            screen.out,
            "rtp-1: physio {} | doctor {} | coach {} | cleared: {}",
            who(&r.physio_signoff),
            who(&r.doctor_signoff),
            who(&r.coach_signoff),
            r.cleared()
        )?;
    }
    if let Some(a) = store.inspect_athlete("ath-105") {
        writeln!(
            screen.out,
            "ath-105 {} {}: active {}, record kept (deactivated on {})",
            a.first_name,
            a.last_name,
            a.active,
            a.deactivated_on.unwrap_or_default()
        )?;
    }
    writeln!(screen.out, "injuries of Northside FC on record: {}", store.inspect_injuries("org-northside").len())?;
    Ok(())
}

async fn chat(role: &str, out: &mut dyn Write) -> io::Result<()> {
    let who = match role {
        PHYSIO => people::priya(),
        DOCTOR => people::okafor(),
        COACH => people::marco(),
        ATHLETE => people::jane(),
        ADMIN => people::admin(),
        other => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("unknown role `{other}`; roles: physio, doctor, coach, athlete, admin"),
            ));
        }
    };
    let provider = provider_or_offline(clinic_model)?;
    let (sink, path) = open_audit("kinetix-chat")?;
    let rt = Runtime::builder(sink, provider.clone()).roles(super::roles().clone()).build();
    let mut screen = Screen::new(out, &path);
    writeln!(
        screen.out,
        "Kinetix chat as {} ({}, {}); model {}:{}; audit log {}",
        who.user_id,
        who.role,
        who.org_id,
        provider.name(),
        provider.model(),
        path.display()
    )?;
    writeln!(screen.out, "Type a request, or `quit`.")?;
    while let Some(line) = screen.next_request().await? {
        let line = line.as_str();
        let outcome = turn(&rt, &mut screen, &who, None, "chat", line, Decider::Terminal).await?;
        if let Some(e) = outcome.error_text() {
            writeln!(screen.out, "(the run ended: {e})")?;
        }
    }
    Ok(())
}

// ----- the offline model -----

fn find_id(message: &str, prefix: &str) -> Option<String> {
    ids(message, prefix).into_iter().next()
}

fn ids(message: &str, prefix: &str) -> Vec<String> {
    message
        .split(|c: char| c.is_whitespace() || c == ',' || c == ':' || c == ';')
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.to_lowercase().starts_with(prefix) && w.len() > prefix.len())
        .map(str::to_lowercase)
        .collect()
}

/// A capitalised name followed by `'s` ("Jane's").
fn possessive_name(message: &str) -> Option<String> {
    message.split_whitespace().find_map(|w| {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
        let stem = w.strip_suffix("'s").or_else(|| w.strip_suffix("’s"))?;
        stem.chars().next().filter(|c| c.is_uppercase()).map(|_| stem.to_owned())
    })
}

fn number_after(message: &str, word: &str) -> Option<f64> {
    let lower = message.to_lowercase();
    let at = lower.find(word)? + word.len();
    lower[at..]
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|s| !s.is_empty())
        .and_then(|s| s.trim_end_matches('.').parse().ok())
}

/// The word after `marker` (matched case-insensitively) in `message`, as typed.
fn lower_word_after(message: &str, marker: &str) -> Option<String> {
    let at = message.to_lowercase().find(marker)? + marker.len();
    message.get(at..)?.split_whitespace().next().map(|w| w.trim_end_matches(['.', ',']).to_owned())
}

fn has(m: &str, words: &[&str]) -> bool {
    words.iter().any(|w| m.contains(w))
}

/// A tool and its arguments, or `None`.
type Intent = Option<(&'static str, Value)>;

/// What the offline model does with one user message: a tool and its arguments, or `None`.
/// Changes are read first, then reads; the first rule that matches decides.
fn intent(message: &str) -> Intent {
    let m = message.to_lowercase();
    let ath = find_id(message, "ath-");
    if has(&m, &["delete", "remove"])
        && let Some(found) = deletion(message, &ath)
    {
        return Some(found);
    }
    if m.contains("reactivate") {
        return ath.map(|a| ("reactivate_athlete", json!({"athlete_id": a})));
    }
    if has(&m, &["sign off", "sign-off", "signoff"]) {
        return signoff(message, &m);
    }
    if has(&m, &["record", "log "]) && has(&m, &["injury", "strain", "sprain"]) {
        return injury_record(message, &m, ath?);
    }
    if m.contains("wellness") && has(&m, &["log", "submit", "slept"]) {
        return wellness_checkin(&m, ath?);
    }
    if has(&m, &["injur", "rehab", "hamstring", "ankle", "knee"])
        && let Some(found) = injury_lookup(message, &ath)
    {
        return Some(found);
    }
    read_intent(message, &m, ath)
}

/// A deletion of what the message names: videos, an injury, or an athlete (deactivated).
/// This model asks for what the user said; the registry decides whether it exists.
fn deletion(message: &str, ath: &Option<String>) -> Intent {
    let videos = ids(message, "vid-");
    if videos.len() > 1 {
        return Some(("delete_videos", json!({"video_ids": videos})));
    }
    if let Some(v) = videos.first() {
        return Some(("delete_video", json!({"video_id": v})));
    }
    if let Some(i) = find_id(message, "inj-") {
        return Some(("delete_injury", json!({"injury_id": i})));
    }
    ath.as_ref().map(|a| ("deactivate_athlete", json!({"athlete_id": a})))
}

/// A return-to-play sign-off, as doctor, coach or (by default) physio.
fn signoff(message: &str, m: &str) -> Intent {
    let rtp = find_id(message, "rtp-")?;
    let field = if m.contains("doctor") {
        "doctor_signoff"
    } else if m.contains("coach") {
        "coach_signoff"
    } else {
        "physio_signoff"
    };
    Some(("update_rtp", json!({"rtp_id": rtp, field: true})))
}

/// A new injury of `athlete_id`: the body part and side named, the description after the
/// colon, the grade if given.
fn injury_record(message: &str, m: &str, athlete_id: String) -> Intent {
    let description = message.split_once(':').map_or(message, |(_, d)| d).trim().to_owned();
    let parts =
        ["hamstring", "ankle", "knee", "groin", "calf", "shoulder", "hip", "lower back", "quadriceps", "foot", "wrist"];
    let body_part = parts.iter().find(|p| m.contains(*p)).copied().unwrap_or("unspecified");
    let side = if m.contains("left") {
        "left"
    } else if m.contains("right") {
        "right"
    } else {
        "n/a"
    };
    let mut args = json!({"athlete_id": athlete_id, "body_part": body_part, "side": side, "description": description});
    if let Some(g) = number_after(m, "grade") {
        args["grade"] = json!(g as u8);
    }
    Some(("create_injury", args))
}

/// A wellness check-in of `athlete_id`, with the numbers given or middling ones.
fn wellness_checkin(m: &str, athlete_id: String) -> Intent {
    Some((
        "submit_wellness",
        json!({
            "athlete_id": athlete_id,
            "sleep_hours": number_after(m, "slept").unwrap_or(7.0),
            "soreness": number_after(m, "soreness").unwrap_or(3.0) as u8,
            "mood": number_after(m, "mood").unwrap_or(3.0) as u8,
        }),
    ))
}

/// The injuries of the athlete named by id, or first a lookup of the athlete named ("Jane's").
fn injury_lookup(message: &str, ath: &Option<String>) -> Intent {
    if let Some(a) = ath {
        return Some(("list_injuries", json!({"athlete_id": a})));
    }
    possessive_name(message).map(|name| ("list_athletes", json!({"name": name})))
}

/// A read (or a device change) about one athlete, a video or a device; a list of athletes;
/// else the athlete named.
fn read_intent(message: &str, m: &str, ath: Option<String>) -> Intent {
    let with_athlete = |tool: &'static str| ath.clone().map(|a| (tool, json!({"athlete_id": a})));
    if has(m, &["acwr", "workload"]) {
        return with_athlete("get_workload_acwr");
    }
    if has(m, &["return to play", "rtp"]) {
        return with_athlete("list_rtp");
    }
    if has(m, &["pose", "metrics", "angles"]) {
        return find_id(message, "vid-").map(|v| ("get_pose_metrics", json!({"video_id": v})));
    }
    if m.contains("video") {
        return with_athlete("list_videos");
    }
    if m.contains("screening") {
        return with_athlete("list_screenings");
    }
    if has(m, &["vitals", "heart rate", "hrv"]) {
        return with_athlete("get_vitals");
    }
    if m.contains("pair") {
        return pairing(message, m, ath);
    }
    if m.contains("rotate") {
        return find_id(message, "dev-").map(|d| ("rotate_device_key", json!({"device_id": d})));
    }
    if m.contains("device") {
        return with_athlete("list_devices");
    }
    if m.contains("report") {
        return with_athlete("generate_report");
    }
    if m.contains("wellness") {
        return with_athlete("get_wellness_history");
    }
    if has(m, &["athletes", "squad", "players", "team"]) {
        return Some(("list_athletes", squad(m).map_or(json!({}), |s| json!({"squad": s}))));
    }
    with_athlete("get_athlete")
}

/// A device to pair: "pair my Polar H10 for ath-101 with code 048213".
fn pairing(message: &str, m: &str, ath: Option<String>) -> Intent {
    let code = lower_word_after(message, "code ")?;
    let start = m.find("pair")? + "pair".len();
    let end = [" for ", " with ", " to "].iter().filter_map(|w| m[start..].find(w)).min()? + start;
    let model = message[start..end].trim().trim_start_matches("my ").trim_start_matches("a ").trim();
    let model = model.trim_start_matches("new ").trim();
    let athlete_id = ath?;
    Some(("pair_device", json!({"athlete_id": athlete_id, "model": model, "pairing_code": code})))
}

/// The squad a list of athletes is narrowed to, if the message names one.
fn squad(m: &str) -> Option<&'static str> {
    if m.contains("first team") {
        Some("First team")
    } else if has(m, &["under-19", "u19", "under 19"]) {
        Some("Under-19")
    } else {
        None
    }
}

/// What the offline model says about one tool's outcome, from the outcome only.
fn describe(outcome: &ToolOutcome<'_>) -> String {
    let value: Value = serde_json::from_str(outcome.content).unwrap_or(Value::String(outcome.content.to_owned()));
    if outcome.is_error {
        let why = value.get("error").and_then(Value::as_str).unwrap_or(outcome.content);
        return format!("I could not do that ({}): {why}", outcome.name);
    }
    match outcome.name {
        "list_athletes" => describe_athletes(&value),
        "list_injuries" => describe_injuries(&value),
        "get_workload_acwr" => format!(
            "ACWR for {}: {} (acute load {}, chronic weekly load {}); {}. This describes load, it is not a diagnosis.",
            value["athlete_id"].as_str().unwrap_or(""),
            value["ratio"],
            value["acute_load"],
            value["chronic_weekly_load"],
            value["band"].as_str().unwrap_or("")
        ),
        "create_injury" => format!(
            "Recorded {} for {}: {} {}.",
            value["id"].as_str().unwrap_or(""),
            value["athlete_id"].as_str().unwrap_or(""),
            value["side"].as_str().unwrap_or(""),
            value["body_part"].as_str().unwrap_or("")
        ),
        "update_rtp" | "create_rtp" => describe_rtp(&value),
        "submit_wellness" => format!(
            "Wellness check-in saved for {} on {}: {} h sleep, soreness {}, mood {}.",
            value["athlete_id"].as_str().unwrap_or(""),
            value["date"].as_str().unwrap_or(""),
            value["sleep_hours"],
            value["soreness"],
            value["mood"]
        ),
        "deactivate_athlete" => format!(
            "{} is deactivated: removed from active squads and lists, their history is kept.",
            value["deactivated"].as_str().unwrap_or("")
        ),
        _ => {
            let s = value.to_string();
            let shown: String = s.chars().take(400).collect();
            format!("{}: {shown}{}", outcome.name, if s.chars().count() > 400 { "…" } else { "" })
        }
    }
}

/// The athletes found, one line.
fn describe_athletes(value: &Value) -> String {
    let list = value.as_array().cloned().unwrap_or_default();
    let names: Vec<String> = list
        .iter()
        .map(|a| {
            format!(
                "{} {} ({}, {}, {})",
                a["first_name"].as_str().unwrap_or(""),
                a["last_name"].as_str().unwrap_or(""),
                a["id"].as_str().unwrap_or(""),
                a["squad"].as_str().unwrap_or(""),
                a["position"].as_str().unwrap_or("")
            )
        })
        .collect();
    format!("{} athlete(s) you can see: {}", names.len(), names.join("; "))
}

/// The injuries found, one line.
fn describe_injuries(value: &Value) -> String {
    let list = value.as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        return "No open injuries on record.".into();
    }
    let lines: Vec<String> = list
        .iter()
        .map(|i| {
            format!(
                "{} {} {} (grade {}, {}, since {}): {}",
                i["id"].as_str().unwrap_or(""),
                i["side"].as_str().unwrap_or(""),
                i["body_part"].as_str().unwrap_or(""),
                i["grade"],
                i["status"].as_str().unwrap_or(""),
                i["onset"].as_str().unwrap_or(""),
                i["description"].as_str().unwrap_or("")
            )
        })
        .collect();
    format!("From the injury records: {}", lines.join("; "))
}

/// A return-to-play entry and its sign-offs.
fn describe_rtp(value: &Value) -> String {
    let who = |k: &str| value[k]["by"].as_str().unwrap_or("—").to_owned();
    let cleared = ["physio_signoff", "doctor_signoff", "coach_signoff"].iter().all(|k| !value[*k].is_null());
    format!(
        "{} (stage {}): physio sign-off {}, doctor sign-off {}, coach sign-off {}; cleared to play: {}.",
        value["id"].as_str().unwrap_or(""),
        value["stage"],
        who("physio_signoff"),
        who("doctor_signoff"),
        who("coach_signoff"),
        if cleared { "yes" } else { "not yet" }
    )
}

/// The offline model of the demo and of the chat without `AGENTS_MODEL`: keyword rules pick
/// one tool per message and ask for it as the user put it, even when it was not offered (so
/// the gate's refusals are visible); a name ("Jane's ankle") is first looked up with
/// `list_athletes`; results are summarised from the tool results only.
pub fn clinic_model() -> RuleProvider {
    RuleProvider::new()
        .with_model("kinetix-rules")
        .when(|request| {
            let message = last_user_message(request)?;
            let done = tool_outcomes(request);
            match done.as_slice() {
                [] => {
                    let (tool, args) = intent(message)?;
                    Some(tool_call(tool, args.to_string()))
                }
                [first] if first.name == "list_athletes" && !first.is_error && intent(message).is_some_and(|(_, a)| a.get("name").is_some()) => {
                    let found: Vec<Value> = serde_json::from_str::<Value>(first.content).ok()?.as_array().cloned().unwrap_or_default();
                    let name = possessive_name(message).unwrap_or_default();
                    match found.as_slice() {
                        [one] => Some(tool_call("list_injuries", json!({"athlete_id": one["id"]}).to_string())),
                        [] => Some(reply(format!("I could not find {name} among the athletes you can see."))),
                        _ => Some(reply(format!("Several athletes match {name}; which one do you mean?"))),
                    }
                }
                _ => None,
            }
        })
        .summarize_with(|outcomes| {
            // A name lookup that led to another call is a step, not an answer.
            let shown = match outcomes {
                [first, rest @ ..] if first.name == "list_athletes" && !rest.is_empty() => rest,
                all => all,
            };
            shown.iter().map(describe).collect::<Vec<_>>().join("\n")
        })
        .fallback(
            "I am the offline rule-based model and did not recognise that. Try: \"list athletes\", \"injuries for ath-101\", \
             \"workload for ath-104\", \"record an injury for ath-104: left calf strain, grade 1\", \"sign off rtp-1 as doctor\", \
             \"delete athlete ath-105\", \"report for ath-101\". Set AGENTS_MODEL to use a real model.",
        )
}
