//! The audit records of a run: the fields every record repeats, the parts that vary, what
//! builds the records of one call, and the time stamp.

use crate::audit::{AuditImport, AuditNode, AuditRecord, AuditResult, AuditStatus};
use crate::tool::Registry;
use agents_core::{Principal, SharedStr, SharedValue, Tier};

/// The largest buffer (bytes) a thread keeps for the canonical text of results it hashes.
pub(super) const RESULT_TEXT_KEPT: usize = 64 * 1024;

/// The fields every audit record of one run repeats.
#[derive(Clone)]
pub(super) struct RecordIds {
    pub(super) run_id: SharedStr,
    pub(super) session_id: SharedStr,
    pub(super) request_id: SharedStr,
    pub(super) user_id: SharedStr,
    pub(super) org_id: SharedStr,
    pub(super) role: SharedStr,
    pub(super) agent: SharedStr,
    pub(super) manifest_sha256: SharedStr,
    /// Where the run sits in a composite's run tree (`None` for a run of its own).
    pub(super) node: Option<AuditNode>,
}

impl RecordIds {
    /// The same ids under another run's id (a proposal's records name the run that made it).
    pub(super) fn of_run(&self, run_id: &str) -> Self {
        RecordIds { run_id: run_id.into(), ..self.clone() }
    }

    /// A record of this run with the parts that vary.
    pub(super) fn record(&self, f: RecordFields) -> AuditRecord {
        AuditRecord {
            seq: 0,
            ts: now_rfc3339(),
            run_id: self.run_id.clone(),
            session_id: self.session_id.clone(),
            request_id: self.request_id.clone(),
            call_id: f.call_id,
            epoch: None,
            user_id: self.user_id.clone(),
            org_id: self.org_id.clone(),
            role: self.role.clone(),
            agent: self.agent.clone(),
            tool: f.tool,
            tier: f.tier,
            status: f.status,
            reason: f.reason,
            title: f.title,
            args: f.args,
            args_hash: f.args_hash,
            result: f.result,
            import: f.import.map(|i| *i),
            manifest_sha256: self.manifest_sha256.clone(),
            prev_hash: String::new(),
            hash: String::new(),
            node: self.node.clone(),
        }
    }

    pub(super) fn new<A: Registry>(run_id: &str, session_id: &str, request_id: &str, principal: &Principal) -> Self {
        let (agent, manifest_sha256) = (shared_static(A::SPEC.name), shared_static(A::MANIFEST_SHA256));
        Self::with_names(run_id, session_id, request_id, principal, agent, manifest_sha256)
    }

    pub(super) fn from_parts(
        run_id: &str,
        session_id: &str,
        request_id: &str,
        principal: &Principal,
        agent: &str,
        manifest_sha256: &str,
    ) -> Self {
        Self::with_names(run_id, session_id, request_id, principal, agent.into(), manifest_sha256.into())
    }

    fn with_names(
        run_id: &str,
        session_id: &str,
        request_id: &str,
        principal: &Principal,
        agent: SharedStr,
        manifest_sha256: SharedStr,
    ) -> Self {
        RecordIds {
            run_id: run_id.into(),
            session_id: session_id.into(),
            request_id: request_id.into(),
            user_id: principal.user_id.as_str().into(),
            org_id: principal.org_id.as_str().into(),
            role: principal.role.as_str().into(),
            agent,
            manifest_sha256,
            node: None,
        }
    }
}

/// One shared copy of a text the program holds for as long as it runs (an agent's name, its
/// manifest's hash, a tool's name and title), made on its first use: the records of every run
/// share it, instead of each run holding its own.
pub(super) fn shared_static(text: &'static str) -> SharedStr {
    static SHARED: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<&'static str, SharedStr>>> =
        std::sync::LazyLock::new(Default::default);
    super::sync::lock(&SHARED).entry(text).or_insert_with(|| text.into()).clone()
}

/// The parts of an audit record that vary; call id, tool and title are shared between the
/// records of one call.
pub(super) struct RecordFields {
    pub(super) call_id: Option<SharedStr>,
    pub(super) tool: Option<SharedStr>,
    pub(super) tier: Option<Tier>,
    pub(super) status: AuditStatus,
    pub(super) reason: Option<String>,
    pub(super) title: Option<SharedStr>,
    pub(super) args: Option<SharedValue>,
    pub(super) args_hash: Option<String>,
    pub(super) result: Option<AuditResult>,
    /// For a tool imported from an MCP server: the server, its tool, and the pin checked.
    pub(super) import: Option<Box<AuditImport>>,
}

impl RecordFields {
    pub(super) fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    pub(super) fn new(status: AuditStatus) -> Self {
        RecordFields {
            call_id: None,
            tool: None,
            tier: None,
            status,
            reason: None,
            title: None,
            args: None,
            args_hash: None,
            result: None,
            import: None,
        }
    }
}

/// What builds the records of one call from a status and its (redacted) arguments (see
/// [`Checked::base`](super::gate::Checked::base)).
pub(super) trait RecordOf: Fn(AuditStatus, SharedValue) -> RecordFields {}

impl<F: Fn(AuditStatus, SharedValue) -> RecordFields> RecordOf for F {}

/// Now, in UTC, as RFC 3339 (fraction without trailing zeros, `Z`): what [`rfc3339`] writes,
/// written directly from the clock (every record carries one, so it is on every call's path).
/// Each thread keeps the text of the last whole second it wrote, so only the fraction is
/// written again within one second.
pub(super) fn now_rfc3339() -> String {
    thread_local! {
        static LAST: std::cell::Cell<(u64, [u8; 19])> = const { std::cell::Cell::new((u64::MAX, [0; 19])) };
    }
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let written = since_epoch.ok().and_then(|d| {
        let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
        let (last, whole) = LAST.get();
        if last == secs {
            // The whole second, the fraction and `Z`, written once into one allocation.
            let mut text = [0u8; 30];
            text[..19].copy_from_slice(&whole);
            let end = 19 + write_fraction(&mut text[19..], nanos);
            return Some(std::str::from_utf8(&text[..end]).expect("written as ASCII").to_owned());
        }
        let text = unix_rfc3339(secs, nanos)?;
        let mut whole = [0u8; 19];
        whole.copy_from_slice(&text.as_bytes()[..19]);
        LAST.set((secs, whole));
        Some(text)
    });
    written.unwrap_or_else(|| rfc3339(time::OffsetDateTime::now_utc()))
}

/// Writes `.` and the nanoseconds without trailing zeros (nothing for none), then `Z`, into
/// `out` (at least 11 bytes); how many bytes it wrote.
fn write_fraction(out: &mut [u8], nanos: u32) -> usize {
    if nanos == 0 {
        out[0] = b'Z';
        return 1;
    }
    out[0] = b'.';
    let mut v = nanos;
    for d in out[1..10].iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    let mut end = 10;
    while out[end - 1] == b'0' {
        end -= 1;
    }
    out[end] = b'Z';
    end + 1
}

/// `.` and the nanoseconds without trailing zeros (nothing for none), then `Z`.
fn push_fraction(text: &mut String, nanos: u32) {
    let mut fraction = [0u8; 11];
    let n = write_fraction(&mut fraction, nanos);
    text.push_str(std::str::from_utf8(&fraction[..n]).expect("digits"));
}

/// `secs` seconds and `nanos` nanoseconds after 1970-01-01T00:00:00Z as RFC 3339, exactly as
/// [`rfc3339`] writes it; `None` from the year 10000 on.
fn unix_rfc3339(secs: u64, nanos: u32) -> Option<String> {
    // 10000-01-01T00:00:00Z.
    const END: u64 = 253_402_300_800;
    if secs >= END || nanos >= 1_000_000_000 {
        return None;
    }
    let (days, in_day) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's `civil_from_days`, years >= 1970).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    let mut out = [0u8; 19];
    let mut put = |at: usize, value: u64, width: usize| {
        let mut v = value;
        for i in (0..width).rev() {
            out[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, in_day / 3600, 2);
    put(14, in_day / 60 % 60, 2);
    put(17, in_day % 60, 2);
    let [dash1, dash2, t, colon1, colon2] = [4, 7, 10, 13, 16];
    (out[dash1], out[dash2], out[t], out[colon1], out[colon2]) = (b'-', b'-', b'T', b':', b':');
    let mut text = String::with_capacity(30);
    text.push_str(std::str::from_utf8(&out[..19]).expect("digits and ASCII separators"));
    push_fraction(&mut text, nanos);
    Some(text)
}

/// `t` as RFC 3339; empty outside the years RFC 3339 can write (0000 to 9999).
pub(super) fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_keep_their_fraction_and_zone() {
        let at = |nanos: i128| rfc3339(time::OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap());
        assert_eq!(at(1_796_036_645_120_000_000), "2026-11-30T11:04:05.12Z");
        assert_eq!(at(1_796_036_645_999_999_999), "2026-11-30T11:04:05.999999999Z");
        assert_eq!(at(1_796_036_646_000_000_000), "2026-11-30T11:04:06Z");
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(7), "1970-01-01T00:00:00.000000007Z");
        assert_eq!(at(-1), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(at(253_402_300_799_000_000_000), "9999-12-31T23:59:59Z");
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_direct_writer_writes_what_the_time_crate_writes(
            secs in 0u64..253_402_300_800,
            nanos in prop_oneof![0u32..1_000_000_000, (0u32..1000).prop_map(|n| n * 1_000_000), Just(0)],
        ) {
            let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(secs) * 1_000_000_000 + i128::from(nanos)).unwrap();
            prop_assert_eq!(unix_rfc3339(secs, nanos), Some(rfc3339(t)));
        }
    }

    #[test]
    fn the_direct_writer_stops_at_the_year_ten_thousand() {
        assert_eq!(unix_rfc3339(253_402_300_799, 999_999_999).as_deref(), Some("9999-12-31T23:59:59.999999999Z"));
        assert_eq!(unix_rfc3339(253_402_300_800, 0), None);
        assert_eq!(unix_rfc3339(951_782_400, 0).as_deref(), Some("2000-02-29T00:00:00Z"));
    }

    #[test]
    fn the_clock_reads_as_rfc3339_now() {
        let before = time::OffsetDateTime::now_utc();
        let text = now_rfc3339();
        let after = time::OffsetDateTime::now_utc();
        let read = time::OffsetDateTime::parse(&text, &time::format_description::well_known::Rfc3339).unwrap();
        assert!(before <= read && read <= after, "{before} <= {text} <= {after}");
    }
}
