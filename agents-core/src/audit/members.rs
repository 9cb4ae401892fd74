//! A record's canonical members: every member but the four the chain decides, rendered once
//! in canonical key order, copying from the last record this thread rendered what did not
//! change.

use super::record::{AuditImport, AuditNode, AuditRecord, AuditResult};
use crate::tool::Tier;

impl AuditRecord {
    /// Renders every member except the four the chain decides (`epoch`, `hash`, `prev_hash`,
    /// `seq`), in canonical key order, split where those go.
    ///
    /// Consecutive records share most members (a run's ids; a call's arguments, tool and
    /// title), so each thread keeps the text of the last record it rendered: a member equal to
    /// the one there is copied from it, runs of such members in one piece, and only the others
    /// are written. Equal means the same text for a string (kept when it needed no escape), the
    /// same shared value for the arguments, both absent for the rest; the bytes are the same
    /// either way.
    pub(super) fn members(&self) -> Members {
        // Exhaustive on purpose: a new field must be added below, in key order, or this does
        // not compile, rather than hash something other than the record's canonical JSON.
        let AuditRecord {
            seq: _,
            ts,
            run_id,
            session_id,
            request_id,
            call_id,
            epoch: _,
            user_id,
            org_id,
            role,
            agent,
            tool,
            tier,
            status,
            reason,
            title,
            args,
            args_hash,
            result,
            import,
            manifest_sha256,
            prev_hash: _,
            hash: _,
            node,
        } = self;
        let members: [Member<'_>; MEMBERS] = [
            Member::Shared(Some(agent)),
            Member::Args(args.as_ref()),
            Member::Str(args_hash.as_deref()),
            Member::Shared(call_id.as_ref()),
            Member::Import(import.as_ref()),
            Member::Shared(Some(manifest_sha256)),
            Member::Node(node.as_ref()),
            Member::Shared(Some(org_id)),
            Member::Str(reason.as_deref()),
            Member::Shared(Some(request_id)),
            Member::Result(result.as_ref()),
            Member::Shared(Some(role)),
            Member::Shared(Some(run_id)),
            Member::Shared(Some(session_id)),
            Member::Word(Some(status.as_str())),
            Member::Word(tier.map(Tier::as_str)),
            Member::Shared(title.as_ref()),
            Member::Shared(tool.as_ref()),
            Member::Str(Some(ts)),
            Member::Shared(Some(user_id)),
        ];
        let rendered = LAST_RENDERED.try_with(|last| match last.try_borrow_mut() {
            Ok(mut last) => render_members(&members, args.as_ref(), Some(&mut last)),
            Err(_) => render_members(&members, args.as_ref(), None),
        });
        rendered.unwrap_or_else(|_| render_members(&members, args.as_ref(), None))
    }
}

/// The members a record renders besides the chain's, in canonical key order.
const MEMBERS: usize = 20;

/// Each member's key as written: its comma, the quoted name and the colon (the first member,
/// `agent`, always present, has no comma).
const KEYS: [&str; MEMBERS] = [
    "\"agent\":",
    ",\"args\":",
    ",\"args_hash\":",
    ",\"call_id\":",
    ",\"import\":",
    ",\"manifest_sha256\":",
    ",\"node\":",
    ",\"org_id\":",
    ",\"reason\":",
    ",\"request_id\":",
    ",\"result\":",
    ",\"role\":",
    ",\"run_id\":",
    ",\"session_id\":",
    ",\"status\":",
    ",\"tier\":",
    ",\"title\":",
    ",\"tool\":",
    ",\"ts\":",
    ",\"user_id\":",
];

/// Where the chain's members go: `epoch` and `hash` after `call_id`, `prev_hash` after
/// `org_id`, `seq` after `run_id` (indices into [`KEYS`]).
const CUT_AFTER: [usize; 3] = [3, 7, 12];

/// The largest members text (bytes) a thread keeps to copy unchanged members from.
const LAST_KEPT: usize = 16 * 1024;

thread_local! {
    static LAST_RENDERED: std::cell::RefCell<LastRendered> = std::cell::RefCell::new(LastRendered::default());
}

/// One member's value, as the renderer reads it.
enum Member<'a> {
    /// A string, or `null`.
    Str(Option<&'a str>),
    /// A string the records of a run or call share, or `null`.
    Shared(Option<&'a crate::SharedStr>),
    /// A name from a fixed set (a status, a tier): lowercase letters and `_`, or `null`.
    Word(Option<&'static str>),
    Args(Option<&'a crate::SharedValue>),
    Result(Option<&'a AuditResult>),
    /// Absent, not `null`, when there is none.
    Import(Option<&'a AuditImport>),
    /// Absent, not `null`, when there is none.
    Node(Option<&'a AuditNode>),
}

/// How a member's text was written, to tell whether another value writes the same.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Written {
    /// Anything else: written again.
    #[default]
    Other,
    /// `null`.
    Null,
    /// Nothing (an absent `import`).
    Absent,
    /// A string without escapes: `"`, the string, `"`.
    Verbatim,
    /// The arguments [`LastRendered::args`] holds.
    Args,
}

/// The members text of the last record this thread rendered, with where each member ends and
/// how it was written.
#[derive(Default)]
struct LastRendered {
    text: String,
    ends: [usize; MEMBERS],
    written: [Written; MEMBERS],
    /// The arguments written, shared (their allocation is what a later record's are compared
    /// with; held, so it cannot be reused for other arguments meanwhile).
    args: Option<crate::SharedValue>,
    /// The shared strings written verbatim, by member: one a later record holds a clone of is
    /// the same text without comparing it.
    shared: [Option<crate::SharedStr>; MEMBERS],
    valid: bool,
}

impl LastRendered {
    /// Whether member `i` with value `m` writes exactly the text this record has for it.
    fn same(&self, i: usize, m: &Member<'_>) -> bool {
        let written = self.written[i];
        match m {
            Member::Str(None)
            | Member::Shared(None)
            | Member::Word(None)
            | Member::Result(None)
            | Member::Args(None) => written == Written::Null,
            Member::Shared(Some(s)) => {
                written == Written::Verbatim
                    && (self.shared[i].as_ref().is_some_and(|kept| kept.ptr_eq(s)) || self.same_text(i, s))
            }
            Member::Str(Some(v)) | Member::Word(Some(v)) => written == Written::Verbatim && self.same_text(i, v),
            Member::Args(Some(a)) => written == Written::Args && self.args.as_ref().is_some_and(|b| b.ptr_eq(a)),
            Member::Import(None) | Member::Node(None) => written == Written::Absent,
            Member::Result(Some(_)) | Member::Import(Some(_)) | Member::Node(Some(_)) => false,
        }
    }

    /// Whether member `i`, written verbatim, holds the string `v`.
    fn same_text(&self, i: usize, v: &str) -> bool {
        let start = if i == 0 { OPEN } else { self.ends[i - 1] };
        // `key"value"`: the value sits between the key's colon and the last quote.
        self.text.get(start + KEYS[i].len() + 1..self.ends[i] - 1) == Some(v)
    }
}

/// Writes member `i` with its key; how it was written.
fn write_member(out: &mut String, i: usize, m: &Member<'_>) -> Written {
    let key = KEYS[i];
    match m {
        Member::Import(None) | Member::Node(None) => return Written::Absent,
        Member::Import(Some(import)) => {
            out.push_str(key);
            crate::canonical::write_to(&import.to_value(), out);
            return Written::Other;
        }
        Member::Node(Some(node)) => {
            out.push_str(key);
            crate::canonical::write_to(&node.to_value(), out);
            return Written::Other;
        }
        _ => {}
    }
    out.push_str(key);
    match m {
        Member::Str(None) | Member::Shared(None) | Member::Word(None) | Member::Result(None) | Member::Args(None) => {
            out.push_str("null");
            Written::Null
        }
        Member::Shared(Some(v)) => {
            if crate::canonical::write_string_verbatim(v, out) {
                Written::Verbatim
            } else {
                Written::Other
            }
        }
        Member::Str(Some(v)) => {
            if crate::canonical::write_string_verbatim(v, out) {
                Written::Verbatim
            } else {
                Written::Other
            }
        }
        Member::Word(Some(v)) => {
            debug_assert!(v.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{v}");
            out.push('"');
            out.push_str(v);
            out.push('"');
            Written::Verbatim
        }
        Member::Args(Some(args)) => {
            crate::canonical::write_to(args, out);
            Written::Args
        }
        Member::Result(Some(AuditResult::Sha256(digest))) => {
            // `{"sha256":"<hex>"}`, as the canonical writer renders the value.
            out.push_str("{\"sha256\":\"");
            crate::canonical::write_digest_hex(digest, out);
            out.push_str("\"}");
            Written::Other
        }
        Member::Result(Some(AuditResult::Value(value))) => {
            crate::canonical::write_to(value, out);
            Written::Other
        }
        Member::Import(_) | Member::Node(_) => unreachable!("written above"),
    }
}

/// Renders the members, copying those equal to `last`'s from its text (then keeping this
/// record's text there for the next one).
fn render_members(
    members: &[Member<'_>; MEMBERS],
    args: Option<&crate::SharedValue>,
    last: Option<&mut LastRendered>,
) -> Members {
    // Room for a call's record with small arguments and a result digest (about 600 bytes),
    // so the text is not moved while it is written.
    let mut out = String::with_capacity(1024);
    out.push('{');
    let mut ends = [0usize; MEMBERS];
    let mut written = [Written::Other; MEMBERS];
    let Some(last) = last else {
        for (i, m) in members.iter().enumerate() {
            write_member(&mut out, i, m);
            ends[i] = out.len();
        }
        return Members { text: out, cuts: CUT_AFTER.map(|i| ends[i]) };
    };
    // The range of `last.text` still to be copied: members equal to its own, contiguous there.
    let mut copy: Option<std::ops::Range<usize>> = None;
    for (i, m) in members.iter().enumerate() {
        if last.valid && last.same(i, m) {
            let start = if i == 0 { OPEN } else { last.ends[i - 1] };
            copy = Some(copy.map_or(start, |c| c.start)..last.ends[i]);
            written[i] = last.written[i];
            ends[i] = out.len() + copy.as_ref().map_or(0, |c| c.len());
        } else {
            if let Some(c) = copy.take() {
                out.push_str(&last.text[c]);
            }
            written[i] = write_member(&mut out, i, m);
            ends[i] = out.len();
        }
    }
    if let Some(c) = copy.take() {
        out.push_str(&last.text[c]);
    }
    last.keep(&out, ends, written, args, members);
    Members { text: out, cuts: CUT_AFTER.map(|i| ends[i]) }
}

impl LastRendered {
    /// Keeps a record's members text as the one the next record copies from.
    fn keep(
        &mut self,
        text: &str,
        ends: [usize; MEMBERS],
        written: [Written; MEMBERS],
        args: Option<&crate::SharedValue>,
        members: &[Member<'_>; MEMBERS],
    ) {
        if text.len() > LAST_KEPT {
            *self = LastRendered::default();
            return;
        }
        for ((kept, m), w) in self.shared.iter_mut().zip(members).zip(written) {
            match m {
                Member::Shared(Some(s)) if w == Written::Verbatim => {
                    if !kept.as_ref().is_some_and(|k| k.ptr_eq(s)) {
                        *kept = Some((*s).clone());
                    }
                }
                _ => *kept = None,
            }
        }
        self.text.clear();
        self.text.push_str(text);
        self.ends = ends;
        self.written = written;
        let same_args = matches!((&self.args, args), (Some(a), Some(b)) if a.ptr_eq(b));
        if written[1] != Written::Args {
            self.args = None;
        } else if !same_args {
            self.args = args.cloned();
        }
        self.valid = true;
    }
}

/// A record's members other than `hash`, `prev_hash` and `seq`, rendered as canonical
/// `"key":value` pairs joined by commas after the record's opening `{`, with the offsets where
/// the three chain members go. Every segment is non-empty (each holds at least one member that
/// is always present).
pub(super) struct Members {
    pub(super) text: String,
    pub(super) cuts: [usize; 3],
}

/// The members text opens with the record's `{`; its first member starts here.
const OPEN: usize = 1;
