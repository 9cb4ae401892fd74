//! The routes and their handlers.

use crate::Shared;
use crate::audit::{AuditQuery, MAX_PAGE, Selection};
use crate::error::{ApiError, json_refusals};
use crate::runs::{RunEntry, StartRefusal};
use crate::sessions::SessionScope;
use crate::sse::{StreamSlot, record_event, run_events, run_records};
use agents_runtime::audit::{AuditRecord, AuditStatus};
use agents_runtime::run::{DecisionError, StartError};
use agents_runtime::{Principal, Verdict};
use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;

type St = State<Arc<Shared>>;

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let limits = shared.limits.clone();
    Router::new()
        .route("/v1/agents", get(agents))
        .route("/v1/runs", post(start_run).get(list_runs))
        .route("/v1/runs/{run_id}", get(get_run))
        .route("/v1/runs/{run_id}/events", get(events))
        .route("/v1/runs/{run_id}/stop", post(stop_run))
        .route("/v1/decisions", get(pending))
        .route("/v1/decisions/{call_id}", post(decide))
        .route("/v1/sessions/{session_id}", axum::routing::delete(end_session))
        .route("/v1/audit", get(audit_query))
        .route("/v1/audit/verify", get(audit_verify))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint") })
        .with_state(shared)
        .layer(DefaultBodyLimit::disable())
        .layer(RequestBodyLimitLayer::new(limits.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, limits.request_timeout))
        .layer(axum::middleware::map_response(json_refusals))
}

/// The authenticated principal of a request.
pub(crate) struct Caller(pub(crate) Principal);

impl FromRequestParts<Arc<Shared>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, shared: &Arc<Shared>) -> Result<Self, ApiError> {
        let principal = shared.auth.authenticate(parts).await?;
        // An authenticator's principal is checked like every principal the runtime takes.
        principal.validate().map_err(|e| crate::auth::unauthorized("invalid_principal", e.to_string()))?;
        Ok(Caller(principal))
    }
}

/// A JSON body: `application/json`, strict JSON (no duplicate keys, no integers beyond
/// 2^53), within the body limit.
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<T: DeserializeOwned> FromRequest<Arc<Shared>> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, shared: &Arc<Shared>) -> Result<Self, ApiError> {
        let is_json =
            req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
                v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            });
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send the body as application/json",
            ));
        }
        let bytes = axum::body::Bytes::from_request(req, shared).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    format!("the body is larger than {} bytes", shared.limits.max_body_bytes),
                )
            } else {
                ApiError::invalid("the body could not be read")
            }
        })?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", "the body is not UTF-8"))?;
        let value = agents_core::strict::parse_args(text).map_err(|e| {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", format!("the body is not strict JSON: {e}"))
        })?;
        serde_json::from_value(value)
            .map(JsonBody)
            .map_err(|e| ApiError::invalid(format!("the body does not fit: {e}")))
    }
}

/// Records a refused request on someone else's state: `denied`, with the principal who sent
/// it. A refusal the log does not take is logged; the request is refused either way.
async fn audit_refusal(
    shared: &Shared,
    caller: &Principal,
    entry: Option<&RunEntry>,
    call_id: Option<&str>,
    reason: String,
) {
    let (agent, manifest) = match entry {
        Some(e) => (e.agent, e.manifest_sha256),
        None => match shared.agents.values().next() {
            Some(kind) => (kind.name(), kind.manifest_sha256()),
            None => return,
        },
    };
    let record = service_record(caller, agent, manifest, call_id, AuditStatus::Denied, reason);
    if let Err(e) = shared.audit_sink.append(record).await {
        tracing::error!(error = %e, "a refusal could not be audited");
    }
}

fn service_record(
    who: &Principal,
    agent: &str,
    manifest: &str,
    call_id: Option<&str>,
    status: AuditStatus,
    reason: String,
) -> AuditRecord {
    let id = uuid::Uuid::new_v4().to_string();
    AuditRecord {
        seq: 0,
        ts: time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
        run_id: id.as_str().into(),
        session_id: "http".into(),
        request_id: id.as_str().into(),
        call_id: call_id.map(Into::into),
        epoch: None,
        user_id: who.user_id.as_str().into(),
        org_id: who.org_id.as_str().into(),
        role: who.role.as_str().into(),
        agent: agent.into(),
        tool: None,
        tier: None,
        status,
        reason: Some(reason),
        title: None,
        args: None,
        args_hash: None,
        result: None,
        import: None,
        manifest_sha256: manifest.into(),
        prev_hash: String::new(),
        hash: String::new(),
        node: None,
    }
}

/// The run `run_id` if `caller` may see it; otherwise 404, audited when it exists.
async fn owned_run(shared: &Shared, caller: &Principal, run_id: &str, action: &str) -> Result<Arc<RunEntry>, ApiError> {
    let entry = shared.runs.get(run_id).ok_or_else(|| ApiError::not_found("run"))?;
    if !entry.owned_by(caller) {
        audit_refusal(
            shared,
            caller,
            Some(&entry),
            None,
            format!("refused: {action} of run {run_id}, which acts for another principal"),
        )
        .await;
        return Err(ApiError::not_found("run"));
    }
    Ok(entry)
}

async fn agents(State(shared): St, Caller(_): Caller) -> Response {
    let list: Vec<Value> = shared
        .agents
        .values()
        .map(|k| {
            let kind = if k.is_composite() { "composite" } else { "agent" };
            json!({"name": k.name(), "manifest_sha256": k.manifest_sha256(), "kind": kind})
        })
        .collect();
    axum::Json(json!({ "agents": list })).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartBody {
    agent: String,
    input: Value,
    session_id: Option<String>,
}

async fn start_run(
    State(shared): St,
    Caller(caller): Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<StartBody>,
) -> Result<Response, ApiError> {
    // Read before anything starts: a bad `wait` starts nothing.
    let wait = crate::answer::requested_wait(&headers, &shared.limits)?;
    let kind = shared.agents.get(body.agent.as_str()).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_agent",
            format!("no agent `{}` is served here; GET /v1/agents lists them", body.agent),
        )
    })?;
    let session_id = match body.session_id {
        Some(s) if s.is_empty() || s.len() > 128 || s.chars().any(|c| c.is_control() || c.is_whitespace()) => {
            return Err(ApiError::invalid(
                "`session_id` must be 1 to 128 characters without spaces or control characters",
            ));
        }
        Some(s) => s,
        None => uuid::Uuid::new_v4().to_string(),
    };
    let limits = (shared.limits.journal_events.max(1), shared.limits.journal_bytes);
    // The caller's own namespace: another principal's `abc` is a different session.
    let stored = SessionScope::of(&caller).stored(&session_id);
    let entry = match kind.start(caller.clone(), &stored, &session_id, body.input, limits) {
        Ok(entry) => entry,
        Err(StartRefusal::Input(m)) => return Err(ApiError::invalid(m)),
        Err(StartRefusal::Start(e)) => {
            if matches!(e, StartError::SessionNotYours(_)) {
                audit_refusal(
                    &shared,
                    &caller,
                    None,
                    None,
                    format!("refused: a run in session {session_id}, which belongs to another principal"),
                )
                .await;
            }
            return Err(start_error(e));
        }
    };
    shared.runs.insert(entry.clone());
    // Held from here on by the service, not by this request: dropping the wait drops no run.
    if let Some(secs) = wait
        && let Some(summary) = crate::answer::answer(&entry, std::time::Duration::from_secs(secs)).await
    {
        let applied = [(crate::answer::PREFERENCE_APPLIED, crate::answer::applied(secs))];
        return Ok((StatusCode::CREATED, applied, axum::Json(summary)).into_response());
    }
    let body = json!({
        "run_id": entry.run_id,
        "session_id": entry.session_id,
        "agent": entry.agent,
        "events": format!("/v1/runs/{}/events", entry.run_id),
    });
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

fn start_error(e: StartError) -> ApiError {
    let message = e.to_string();
    match e {
        StartError::TooManyRuns(_) => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "too_many_runs", message),
        StartError::SessionNotYours(_) => ApiError::not_found("session"),
        StartError::Input(_) => ApiError::invalid(message),
        StartError::InvalidPrincipal(_) => ApiError::new(StatusCode::UNAUTHORIZED, "invalid_principal", message),
        StartError::AuditUnavailable => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "audit_unavailable", message),
        StartError::StateUnavailable(_) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "state_unavailable", message),
        other => ApiError::internal("starting the run", other),
    }
}

async fn list_runs(State(shared): St, Caller(caller): Caller) -> Response {
    let mut runs: Vec<_> = shared.runs.of(&caller).iter().map(|e| e.summary()).collect();
    runs.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    axum::Json(json!({ "runs": runs })).into_response()
}

async fn get_run(State(shared): St, Caller(caller): Caller, Path(run_id): Path<String>) -> Result<Response, ApiError> {
    let entry = owned_run(&shared, &caller, &run_id, "reading the status").await?;
    Ok(axum::Json(entry.summary()).into_response())
}

async fn stop_run(State(shared): St, Caller(caller): Caller, Path(run_id): Path<String>) -> Result<Response, ApiError> {
    let entry = owned_run(&shared, &caller, &run_id, "stopping").await?;
    entry.stop.cancel();
    Ok((StatusCode::ACCEPTED, axum::Json(json!({ "run_id": run_id, "stopping": true }))).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventsQuery {
    last_event_id: Option<String>,
}

fn parse_last_id(text: &str) -> Result<u64, ApiError> {
    text.trim().parse::<u64>().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_last_event_id",
            "Last-Event-ID must be an event id this service sent (a number)",
        )
    })
}

async fn events(
    State(shared): St,
    Caller(caller): Caller,
    Path(run_id): Path<String>,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::invalid(e.body_text()))?;
    let cursor = match (headers.get("last-event-id"), query.last_event_id.as_deref()) {
        (Some(h), _) => parse_last_id(h.to_str().unwrap_or("x"))?,
        (None, Some(q)) => parse_last_id(q)?,
        (None, None) => 0,
    };
    let key = (caller.org_id.clone(), caller.user_id.clone());
    let max = shared.limits.max_streams_per_user;
    let keep_alive = KeepAlive::new().interval(shared.limits.sse_keep_alive);
    if let Some(entry) = shared.runs.get(&run_id) {
        if !entry.owned_by(&caller) {
            audit_refusal(
                &shared,
                &caller,
                Some(&entry),
                None,
                format!("refused: the events of run {run_id}, which acts for another principal"),
            )
            .await;
            return Err(ApiError::not_found("run"));
        }
        let slot = StreamSlot::take(&shared, key, max).ok_or_else(|| too_many_streams(max))?;
        return Ok(Sse::new(run_events(shared.clone(), entry, cursor, slot)).keep_alive(keep_alive).into_response());
    }
    // Not held here (ended long ago, or the service restarted): the durable records.
    let records = run_records(&shared, &run_id).await.map_err(|e| ApiError::internal("reading the audit log", e))?;
    let Some(first) = records.first() else { return Err(ApiError::not_found("run")) };
    if *first.user_id != *caller.user_id || *first.org_id != *caller.org_id {
        let reason = format!("refused: the records of run {run_id}, which acts for another principal");
        audit_refusal(&shared, &caller, None, None, reason).await;
        return Err(ApiError::not_found("run"));
    }
    let slot = StreamSlot::take(&shared, key, max).ok_or_else(|| too_many_streams(max))?;
    let mut out: Vec<Result<SseEvent, std::convert::Infallible>> =
        records.iter().map(|r| Ok(record_event(r))).collect();
    out.push(Ok(SseEvent::default().event("end").data(
        json!({"code": "run_not_live", "message": "this service does not hold the run (it ended a while ago, or the service restarted); these are its audit records"}).to_string(),
    )));
    let stream = futures::StreamExt::map(futures::stream::iter(out), move |e| {
        let _held = &slot;
        e
    });
    Ok(Sse::new(stream).keep_alive(keep_alive).into_response())
}

fn too_many_streams(max: usize) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_streams",
        format!("you already hold {max} event streams; close one, then reconnect"),
    )
}

async fn pending(State(shared): St, Caller(caller): Caller) -> Result<Response, ApiError> {
    // From the runtimes' state stores: also what a slow event stream missed, and (with a
    // durable store) what was proposed before a restart.
    let mut decisions: BTreeMap<String, Value> = BTreeMap::new();
    let scope = SessionScope::of(&caller);
    for kind in shared.agents.values() {
        let listed = kind.runtime().pending_decisions(&caller).await.map_err(|e| {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "state_unavailable", format!("{e}; try again"))
        })?;
        for p in listed {
            let mut value = serde_json::to_value(&p).map_err(|e| ApiError::internal("listing decisions", e))?;
            let node = shared.runs.node_asking(&p.call_id);
            // The caller is the principal the run acts for (the runtime lists no one else's):
            // their card shows the arguments they are bound by, secret values included.
            if let Value::Object(fields) = &mut value {
                fields.insert("decider_arguments".into(), p.decider_arguments.as_value().clone());
                // The session as the caller named it, so a reply continues the same one.
                if let Some(client) = p.session_id.as_deref().and_then(|s| scope.client(s)) {
                    fields.insert("session_id".into(), Value::String(client.to_owned()));
                }
                // A node of a run tree this service holds: its path (`kyc-pipeline/kyc-reviewer`).
                if let Some(node) = node {
                    fields.insert("node".into(), Value::String(node));
                }
            }
            decisions.insert(p.call_id, value);
        }
    }
    let decisions: Vec<Value> = decisions.into_values().collect();
    Ok(axum::Json(json!({ "decisions": decisions })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
enum VerdictBody {
    Approve,
    Reject,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecideBody {
    verdict: VerdictBody,
    reason: Option<String>,
    /// The second approval of a proposal that needs a second confirmation: the digest the
    /// first approval's answer gave (`acknowledgement.digest`).
    acknowledge: Option<String>,
}

async fn decide(
    State(shared): St,
    Caller(caller): Caller,
    Path(call_id): Path<String>,
    JsonBody(body): JsonBody<DecideBody>,
) -> Result<Response, ApiError> {
    let verdict = match body.verdict {
        VerdictBody::Approve => Verdict::Approve,
        VerdictBody::Reject => Verdict::Reject,
    };
    if body.acknowledge.is_some() && verdict != Verdict::Approve {
        return Err(ApiError::invalid("an acknowledgement is given only with `approve`; a rejection needs none"));
    }
    if let Some(reason) = &body.reason {
        if verdict == Verdict::Approve {
            return Err(ApiError::invalid("a reason is given only with `reject`"));
        }
        if reason.trim().is_empty() || reason.chars().count() > shared.limits.max_reason_chars {
            return Err(ApiError::invalid(format!(
                "the reason must be 1 to {} characters",
                shared.limits.max_reason_chars
            )));
        }
    }
    // The run that asked, when this service holds it; otherwise every runtime is asked.
    let asking = shared.runs.waiting_on(&call_id);
    let kinds: Vec<_> = match &asking {
        Some(entry) => shared.agents.get(entry.agent).cloned().into_iter().collect(),
        None => shared.agents.values().cloned().collect(),
    };
    for kind in kinds {
        let rt = kind.runtime();
        let decided = match &body.acknowledge {
            Some(digest) => rt.acknowledge(&call_id, &caller, digest).await,
            None => rt.decide_async(&call_id, &caller, verdict, body.reason.as_deref()).await,
        };
        match decided {
            Ok(()) => {
                // The reason is kept with the decision and written in the call's `rejected` record.
                let shown = if verdict == Verdict::Approve { "approve" } else { "reject" };
                return Ok(axum::Json(json!({ "call_id": call_id, "verdict": shown })).into_response());
            }
            Err(DecisionError::NotYourRun) => {
                let reason = format!("refused: a decision on call {call_id}, which waits for another principal");
                audit_refusal(&shared, &caller, asking.as_deref(), Some(&call_id), reason).await;
                return Err(ApiError::not_found("pending decision"));
            }
            Err(DecisionError::Unavailable(e)) => {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "state_unavailable",
                    format!("the decision could not be recorded ({e}); try again"),
                ));
            }
            // The run's user was deactivated or holds another role: the proposal ended.
            Err(e @ DecisionError::AuthorityChanged(_)) => {
                return Err(ApiError::new(StatusCode::FORBIDDEN, "authority_changed", e.to_string()));
            }
            Err(e @ (DecisionError::AcknowledgementRequired(_) | DecisionError::AcknowledgementMismatch(_))) => {
                return Ok(second_confirmation(e));
            }
            Err(_) => {}
        }
    }
    Err(ApiError::not_found("pending decision"))
}

/// 409 for a proposal that needs a second confirmation: `acknowledgement_required` after its
/// first approval, with the acknowledgement (the warning, the sentence the person affirms and
/// the digest the second approval carries back as `acknowledge`); `acknowledgement_mismatch`
/// for a digest that is not this proposal's. Neither approved anything.
fn second_confirmation(e: DecisionError) -> Response {
    let message = e.to_string();
    let (code, acknowledgement) = match e {
        DecisionError::AcknowledgementRequired(ack) => {
            let phrase = ack.phrase();
            let mut value = serde_json::to_value(*ack).unwrap_or_default();
            value["phrase"] = Value::String(phrase);
            ("acknowledgement_required", Some(value))
        }
        _ => ("acknowledgement_mismatch", None),
    };
    let mut body = ApiError::new(StatusCode::CONFLICT, code, message).body();
    if let Some(ack) = acknowledgement {
        body["acknowledgement"] = ack;
    }
    (StatusCode::CONFLICT, axum::Json(body)).into_response()
}

/// Ends one of the caller's conversation sessions on every node sharing the state store: its
/// history is dropped, its tokens revoked, its waiting proposals end with their final records.
/// Another principal's session is not found (and the attempt is audited).
async fn end_session(
    State(shared): St,
    Caller(caller): Caller,
    Path(session_id): Path<String>,
) -> Result<Response, ApiError> {
    let mut ended = false;
    // The caller's namespace: another principal's id is, here, an unused one of the caller.
    let stored = SessionScope::of(&caller).stored(&session_id);
    for kind in shared.agents.values() {
        match kind.runtime().end_session_async(&caller, &stored).await {
            Ok(found) => ended |= found,
            Err(StartError::SessionNotYours(_)) => {
                let reason = format!("refused: ending session {session_id}, which belongs to another principal");
                audit_refusal(&shared, &caller, None, None, reason).await;
                return Err(ApiError::not_found("session"));
            }
            Err(StartError::StateUnavailable(e)) => {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "state_unavailable",
                    format!("the session could not be ended ({e}); try again"),
                ));
            }
            Err(e) => return Err(ApiError::invalid(e.to_string())),
        }
    }
    if !ended {
        return Err(ApiError::not_found("session"));
    }
    Ok(axum::Json(json!({ "session_id": session_id, "ended": true })).into_response())
}

fn is_reviewer(shared: &Shared, caller: &Principal) -> bool {
    shared.reviewer_roles.contains(&caller.role)
}

async fn audit_query(
    State(shared): St,
    Caller(caller): Caller,
    query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(mut query) = query.map_err(|e| ApiError::invalid(e.body_text()))?;
    // A session as the log stores it, or as the caller named one of their own.
    let sessions: Option<[String; 2]> = query.session.take().map(|s| [SessionScope::of(&caller).stored(&s), s]);
    let selection = Selection::parse(query).map_err(ApiError::invalid)?;
    let reviewer = is_reviewer(&shared, &caller);
    let reader = shared.audit_reader.clone();
    let page = tokio::task::spawn_blocking(move || {
        let mut page: Vec<AuditRecord> = Vec::new();
        let mut more = false;
        let limit = selection.limit.min(MAX_PAGE);
        reader
            .scan(&mut |r| {
                let visible = *r.org_id == *caller.org_id && (reviewer || *r.user_id == *caller.user_id);
                let in_session = sessions.as_ref().is_none_or(|ids| ids.iter().any(|id| **id == *r.session_id));
                if !visible || !in_session || !selection.selects(r) {
                    return ControlFlow::Continue(());
                }
                if page.len() == limit {
                    more = true;
                    return ControlFlow::Break(());
                }
                page.push(r.clone());
                ControlFlow::Continue(())
            })
            .map(|()| (page, more))
    })
    .await
    .map_err(|e| ApiError::internal("reading the audit log", e))?
    .map_err(|e| ApiError::internal("reading the audit log", e))?;
    let (records, more) = page;
    let next_after = if more { records.last().map(|r| r.seq) } else { None };
    // The records as written (each still verifies on its own); beside them, the `seq` of each
    // whose arguments are names and keyed digests only.
    let omitted: Vec<u64> = records.iter().filter(|r| r.values_omitted()).map(|r| r.seq).collect();
    let records: Vec<Value> = records.iter().filter_map(|r| serde_json::from_str(&r.to_line()).ok()).collect();
    Ok(axum::Json(json!({ "records": records, "next_after": next_after, "values_omitted": omitted })).into_response())
}

/// Verifies the whole chain (a chain is checked whole or not at all) and answers for the
/// caller's organisation only: the verdict, how many of the organisation's records it covers,
/// the organisation's latest record (`head`: its `seq` and `hash`, sealed in the chain the
/// verdict covers) and the organisation's severe failures. Nothing of another organisation
/// shows: not its records, failures or count, nor the whole log's head or where a break lies.
async fn audit_verify(State(shared): St, Caller(caller): Caller) -> Result<Response, ApiError> {
    if !is_reviewer(&shared, &caller) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "reviewer_only",
            "verifying the whole chain is for reviewer roles; ask a reviewer",
        ));
    }
    let reader = shared.audit_reader.clone();
    let org = caller.org_id.clone();
    // One pass: the chain verifier sees every record, the severe finder the organisation's.
    let (verdict, ours) = tokio::task::spawn_blocking(move || {
        let mut ours = OrgView::default();
        let verdict = reader.verify_each(&mut |record| {
            if *record.org_id == *org {
                ours.record(record);
            }
        })?;
        Ok::<_, crate::audit::AuditReadError>((verdict, ours))
    })
    .await
    .map_err(|e| ApiError::internal("verifying the audit log", e))?
    .map_err(|e| ApiError::internal("verifying the audit log", e))?;
    let head = ours.head.as_ref().map(|(seq, hash)| json!({ "seq": seq, "hash": hash }));
    let mut body = match verdict {
        Ok(summary) => json!({
            "ok": true,
            "org": caller.org_id,
            "records": ours.records,
            "head": head,
            "guarantee": summary.guarantee(),
        }),
        // Where the chain breaks (a position in the whole log) and why (which may quote
        // another organisation's record) stay with the operator.
        Err(e) => json!({
            "ok": false,
            "org": caller.org_id,
            "kind": e.kind(),
            "message": format!(
                "the audit log's chain is broken ({}); an operator verifies the whole log with `agents audit verify` to find where",
                e.kind()
            ),
        }),
    };
    body["severe"] = ours.severe.into_json();
    Ok(axum::Json(body).into_response())
}

/// What a verification shows of one organisation: its records, its latest, its failures.
#[derive(Default)]
struct OrgView {
    records: usize,
    head: Option<(u64, String)>,
    severe: Severe,
}

impl OrgView {
    fn record(&mut self, record: &AuditRecord) {
        self.records += 1;
        self.head = Some((record.seq, record.hash.clone()));
        self.severe.record(record);
    }
}

/// The most severe failures the verdict lists one by one; the counts cover them all.
const SEVERE_LISTED: usize = 100;

/// The log's severe failures by the one definition the CLI's `audit stats` uses
/// ([`SevereFinder`](agents_runtime::agents_core::audit::severe::SevereFinder)): their total,
/// counts by rule, and the first [`SEVERE_LISTED`] with their record. `position` counts only
/// the records this finder is shown.
#[derive(Default)]
struct Severe {
    finder: agents_runtime::agents_core::audit::severe::SevereFinder,
    position: usize,
    total: usize,
    by_kind: serde_json::Map<String, Value>,
    listed: Vec<Value>,
}

impl Severe {
    fn record(&mut self, record: &agents_runtime::audit::AuditRecord) {
        self.position += 1;
        for failure in self.finder.record(self.position, record) {
            self.total += 1;
            let count = self.by_kind.entry(failure.kind.as_str()).or_insert(json!(0));
            *count = json!(count.as_u64().unwrap_or(0) + 1);
            if self.listed.len() < SEVERE_LISTED {
                self.listed.push(json!({
                    "kind": failure.kind.as_str(),
                    "position": failure.position,
                    "seq": failure.seq,
                    "run_id": &*failure.run_id,
                    "call_id": failure.call_id.as_deref(),
                    "tool": failure.tool.as_deref(),
                    "detail": failure.detail,
                }));
            }
        }
    }

    fn into_json(self) -> Value {
        json!({ "total": self.total, "by_kind": self.by_kind, "failures": self.listed })
    }
}
