//! The seeded organisations, athletes and records every store starts from.

use super::records::*;

/// The seeded data: two organisations, their athletes, and each athlete's records.
pub(super) fn seed() -> Data {
    let mut d = Data { next_id: 1000, ..Data::default() };
    seed_organisations(&mut d);
    seed_athletes(&mut d);
    seed_injuries(&mut d);
    seed_return_to_play(&mut d);
    seed_monitoring(&mut d);
    seed_screenings(&mut d);
    seed_videos(&mut d);
    d
}

/// The two organisations (tenants).
fn seed_organisations(d: &mut Data) {
    d.orgs = vec![
        Organisation { id: "org-northside".into(), name: "Northside FC".into() },
        Organisation { id: "org-harbour".into(), name: "Harbour Rowing Club".into() },
    ];
}

/// Five footballers of Northside FC and three rowers of Harbour Rowing Club.
fn seed_athletes(d: &mut Data) {
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
}

/// Four injuries, one of them resolved.
fn seed_injuries(d: &mut Data) {
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
}

/// Two return-to-play entries, one with the physio's sign-off.
fn seed_return_to_play(d: &mut Data) {
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
}

/// Each athlete's training sessions of the last four weeks, a wellness check-in, vitals and a
/// paired device.
fn seed_monitoring(d: &mut Data) {
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
}

/// Three screening results.
fn seed_screenings(d: &mut Data) {
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
}

/// Three videos: a trustworthy three-camera test, an oblique phone recording, and a duplicate
/// upload.
fn seed_videos(d: &mut Data) {
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
}
