//! Shared helpers: fixture manifests, audit chains, running the binary.

#![allow(dead_code, unreachable_pub)]

use agents_core::audit::{AuditRecord, AuditStatus, GENESIS_HASH};
use agents_core::manifest::{AgentEntry, Manifest, ParamEntry, PolicyEntry, SkillEntry, ToolEntry};
use agents_core::{Risk, Tier};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Path of a committed fixture.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Runs `agents` with arguments.
pub fn agents<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_agents")).args(args).output().expect("the agents binary runs")
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The exit code.
pub fn code(o: &Output) -> i32 {
    o.status.code().expect("the process exited normally")
}

fn param(name: &str, ty: &str, secret: bool) -> ParamEntry {
    ParamEntry { name: name.into(), rust_type: ty.into(), secret }
}

fn tool(name: &str, tier: Tier, permission: &str, risk: Risk, description: &str) -> ToolEntry {
    ToolEntry {
        name: name.into(),
        title: None,
        description: description.into(),
        permission: permission.into(),
        tier,
        mutating: tier == Tier::Action,
        risk,
        policy: PolicyEntry::default(),
        parameters: vec![],
        uses: vec![],
        import: None,
        handoff: None,
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// The helpdesk agent of the DeskLoop seed, version 1.
pub fn helpdesk_v1() -> Manifest {
    let mut lookup = tool(
        "lookup_policy",
        Tier::Read,
        "public",
        Risk::Low,
        "Looks up an HR or IT policy by topic and returns the matching paragraphs.",
    );
    lookup.policy.fs.read = strings(&["/srv/helpdesk/policies/*.md"]);
    lookup.parameters = vec![param("topic", "String", false)];

    let mut balance = tool(
        "get_leave_balance",
        Tier::Read,
        "leave.read",
        Risk::Low,
        "Returns the calling employee's leave balance in days.",
    );
    balance.parameters = vec![param("year", "u16", false)];

    let mut submit = tool(
        "submit_leave",
        Tier::Action,
        "leave.write",
        Risk::Medium,
        "Submits a leave request for the calling employee.",
    );
    submit.title = Some("Submit a leave request".into());
    submit.parameters = vec![param("start", "NaiveDate", false), param("days", "u32", false)];
    submit.uses = strings(&["get_leave_balance"]);

    let mut ticket = tool(
        "open_ticket",
        Tier::Action,
        "ticket.write",
        Risk::Medium,
        "Opens an IT ticket with a severity and a summary.",
    );
    ticket.title = Some("Open an IT ticket".into());
    ticket.parameters = vec![param("severity", "u8", false), param("summary", "String", false)];
    ticket.policy.net.hosts = strings(&["tickets.internal.example:443"]);
    ticket.policy.env.vars = strings(&["TICKETS_API_TOKEN", "TICKETS_QUEUE"]);

    let mut reset = tool(
        "reset_password",
        Tier::Handoff,
        "identity.admin",
        Risk::Critical,
        "Hands a password reset to the identity team; never executed by the agent.",
    );
    reset.parameters = vec![param("account", "String", false), param("otp", "String", true)];

    let agent = AgentEntry {
        input: "HelpdeskRequest".into(),
        output: "HelpdeskReply".into(),
        skills: vec![
            SkillEntry { name: "leave".into(), tools: strings(&["get_leave_balance", "submit_leave"]), io: None },
            SkillEntry { name: "tickets".into(), tools: strings(&["lookup_policy", "open_ticket"]), io: None },
        ],
        ceiling: Some(strings(&["identity.admin", "leave.read", "leave.write", "public", "ticket.write"])),
        ..AgentEntry::new("helpdesk", "IT and HR helpdesk for employees: policies, leave, tickets.")
    };
    Manifest::from_entries(agent, vec![lookup, balance, submit, ticket, reset]).unwrap()
}

/// Version 2: widens (a new tool, a broader glob, a lower risk, a secret flag removed, a
/// raised ceiling), narrows (an environment variable removed) and rewords a description.
pub fn helpdesk_v2() -> Manifest {
    let v1 = helpdesk_v1();
    let mut tools = v1.tools.clone();
    let get = |tools: &[ToolEntry], n: &str| -> usize { tools.iter().position(|t| t.name == n).unwrap() };
    let i = get(&tools, "lookup_policy");
    tools[i].policy.fs.read = strings(&["/srv/helpdesk/**"]);
    let i = get(&tools, "submit_leave");
    tools[i].risk = Risk::Low;
    let i = get(&tools, "open_ticket");
    tools[i].policy.env.vars = strings(&["TICKETS_API_TOKEN"]);
    tools[i].description = "Opens an IT ticket with a severity (1-4) and a one-line summary.".into();
    let i = get(&tools, "reset_password");
    tools[i].parameters[1].secret = false;
    let mut export = tool(
        "export_directory",
        Tier::Read,
        "directory.read",
        Risk::High,
        "Exports the staff directory <b>with</b> \"personal\" phone numbers & addresses.",
    );
    export.policy.net.hosts = strings(&["*.directory.example"]);
    tools.push(export);
    let mut agent = v1.agent.clone();
    agent.ceiling.as_mut().unwrap().push("directory.read".into());
    agent.skills[1].tools.push("export_directory".into());
    Manifest::from_entries(agent, tools).unwrap()
}

/// A fresh temporary directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Writes text to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A manifest hash used by crafted audit records.
pub fn manifest_hash() -> String {
    helpdesk_v1().sha256()
}

/// A record template; `seal_chain` sets `seq`, `prev_hash` and `hash`.
pub fn record(status: AuditStatus) -> AuditRecord {
    AuditRecord {
        seq: 0,
        ts: "2026-05-27T10:00:00Z".into(),
        run_id: "run-1".into(),
        session_id: "sess-1".into(),
        request_id: "req-1".into(),
        call_id: None,
        epoch: None,
        user_id: "u-42".into(),
        org_id: "org-1".into(),
        role: "employee".into(),
        agent: "helpdesk".into(),
        tool: None,
        tier: None,
        status,
        reason: None,
        title: None,
        args: None,
        args_hash: None,
        result: None,
        import: None,
        manifest_sha256: manifest_hash().into(),
        prev_hash: String::new(),
        hash: String::new(),
        node: None,
    }
}

/// A record about one tool call.
pub fn call(status: AuditStatus, tool: &str, tier: Tier, call_id: &str, args_hash: &str) -> AuditRecord {
    let mut r = record(status);
    r.tool = Some(tool.into());
    r.tier = Some(tier);
    r.call_id = Some(call_id.into());
    r.args_hash = Some(args_hash.into());
    r
}

/// Seals records into a valid chain and returns the JSONL text (newline-terminated).
pub fn seal_chain(mut records: Vec<AuditRecord>) -> String {
    let mut prev = GENESIS_HASH.to_owned();
    let mut out = String::new();
    for (i, r) in records.iter_mut().enumerate() {
        r.seal(i as u64 + 1, &prev);
        prev = r.hash.clone();
        out.push_str(&r.to_line());
        out.push('\n');
    }
    out
}

/// A normal run: a read, an approved action, a rejected action, a handoff, a denial.
pub fn normal_run() -> Vec<AuditRecord> {
    let mut v = vec![record(AuditStatus::RunStarted)];
    v.push(call(AuditStatus::Proposed, "get_leave_balance", Tier::Read, "c1", "h1"));
    v.push(call(AuditStatus::Executed, "get_leave_balance", Tier::Read, "c1", "h1"));
    v.push(call(AuditStatus::Proposed, "submit_leave", Tier::Action, "c2", "h2"));
    v.push(call(AuditStatus::Confirmed, "submit_leave", Tier::Action, "c2", "h2"));
    v.push(call(AuditStatus::Executed, "submit_leave", Tier::Action, "c2", "h2"));
    v.push(call(AuditStatus::Proposed, "open_ticket", Tier::Action, "c3", "h3"));
    v.push(call(AuditStatus::Rejected, "open_ticket", Tier::Action, "c3", "h3"));
    v.push(call(AuditStatus::HandedOff, "reset_password", Tier::Handoff, "c4", "h4"));
    let mut denied = call(AuditStatus::Denied, "export_directory", Tier::Read, "c5", "h5");
    denied.reason = Some("`export_directory` is not available to role `employee`".into());
    v.push(denied);
    let mut fin = record(AuditStatus::RunFinished);
    fin.reason = Some("completed".into());
    v.push(fin);
    for (i, r) in v.iter_mut().enumerate() {
        r.ts = format!("2026-05-27T10:00:{:02}Z", i * 5);
    }
    v
}

/// Markup in a manifest's text: closing the element or the attribute it lands in, opening
/// a script, an image with a handler, a comment.
pub const MARKUP: &str = "\"' onmouseover='alert(1)' x=\"</code></td></title></style><img src=x onerror=alert(2)><script>alert(3)</script><!--";

/// `helpdesk_v2` with `extra` appended to every text the report shows (names, description,
/// permissions, titles, parameters, types, file globs, uses, skills, the agent's own fields).
pub fn marked_up(extra: &str) -> Manifest {
    let base = helpdesk_v2();
    let mut agent = base.agent.clone();
    for s in [&mut agent.name, &mut agent.description, &mut agent.input, &mut agent.output] {
        s.push_str(extra);
    }
    let mut tools = base.tools.clone();
    for t in &mut tools {
        for s in [&mut t.name, &mut t.description, &mut t.permission] {
            s.push_str(extra);
        }
        if let Some(title) = &mut t.title {
            title.push_str(extra);
        }
        for p in &mut t.parameters {
            p.name.push_str(extra);
            p.rust_type.push_str(extra);
        }
        for s in &mut t.uses {
            s.push_str(extra);
        }
        // A glob's text (hosts and variable names are refused unless plain).
        t.policy.fs.read.push(format!("/data/r{extra}"));
        t.policy.fs.write.push(format!("/data/w{extra}"));
    }
    for skill in &mut agent.skills {
        skill.name.push_str(extra);
        for t in &mut skill.tools {
            t.push_str(extra);
        }
    }
    Manifest::from_entries(agent, tools).unwrap()
}
