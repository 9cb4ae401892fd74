//! Every classification rule of `agents_core::diff`, one change at a time.

use agents_core::diff::{ChangeKind, ManifestDiff, Rule, diff};
use agents_core::manifest::{AgentEntry, Manifest, ParamEntry, PolicyEntry, SkillEntry, ToolEntry};
use agents_core::{Risk, Tier};

fn tool(name: &str, tier: Tier) -> ToolEntry {
    ToolEntry {
        name: name.into(),
        title: (tier == Tier::Action).then(|| format!("Run {name}")),
        description: format!("The {name} tool."),
        permission: "desk.use".into(),
        tier,
        mutating: tier == Tier::Action,
        risk: Risk::Medium,
        policy: PolicyEntry::default(),
        parameters: vec![
            ParamEntry { name: "id".into(), rust_type: "u64".into(), secret: false },
            ParamEntry { name: "token".into(), rust_type: "String".into(), secret: true },
        ],
        uses: vec![],
        import: None,
        handoff: None,
    }
}

fn agent() -> AgentEntry {
    AgentEntry {
        input: "Question".into(),
        output: "Answer".into(),
        skills: vec![SkillEntry { name: "desk".into(), tools: vec!["lookup".into(), "submit".into()], io: None }],
        ceiling: Some(vec!["desk.use".into(), "public".into()]),
        ..AgentEntry::new("helpdesk", "Answers staff questions.")
    }
}

fn base_tools() -> Vec<ToolEntry> {
    let mut lookup = tool("lookup", Tier::Read);
    lookup.policy.fs.read = vec!["/srv/desk/*.json".into()];
    lookup.policy.net.hosts = vec!["api.example.com:443".into()];
    lookup.policy.env.vars = vec!["DESK_REGION".into()];
    let mut submit = tool("submit", Tier::Action);
    submit.policy.fs.write = vec!["/srv/desk/out/*.json".into()];
    submit.uses = vec!["lookup".into()];
    vec![lookup, submit, tool("reset_password", Tier::Handoff)]
}

fn base() -> Manifest {
    Manifest::from_entries(agent(), base_tools()).unwrap()
}

/// The base manifest with one change applied. `Manifest::from_entries` normalizes, which
/// would re-derive `mutating` from the tier; edits are applied after it so each rule can be
/// exercised alone.
fn edited(edit: impl FnOnce(&mut Manifest)) -> Manifest {
    let mut m = base();
    edit(&mut m);
    m
}

fn tool_mut<'a>(m: &'a mut Manifest, name: &str) -> &'a mut ToolEntry {
    m.tools.iter_mut().find(|t| t.name == name).unwrap()
}

/// The only change between `old` and `new`, asserting its rule and kind.
fn only(old: &Manifest, new: &Manifest, rule: Rule, kind: ChangeKind) -> ManifestDiff {
    let d = diff(old, new);
    assert_eq!(d.changes.len(), 1, "expected one change, got:\n{d}");
    assert_eq!(d.changes[0].rule, rule, "{d}");
    assert_eq!(d.changes[0].kind, kind, "{d}");
    assert_eq!(d.has_widening(), kind == ChangeKind::Widening);
    assert!(!d.changes[0].reason.is_empty());
    d
}

/// `edit` is a widening under `widen`, and undoing it is a narrowing under `narrow`.
fn both_ways(edit: impl FnOnce(&mut Manifest), widen: Rule, narrow: Rule) {
    let (a, b) = (base(), edited(edit));
    only(&a, &b, widen, ChangeKind::Widening);
    only(&b, &a, narrow, ChangeKind::Narrowing);
}

#[test]
fn identical_manifests_have_no_changes() {
    let d = diff(&base(), &base());
    assert!(d.is_empty());
    assert!(!d.has_widening());
    assert_eq!(d.old_sha256, d.new_sha256);
    assert_eq!(d.to_string().trim(), "no capability or description differences");
}

#[test]
fn a_new_tool_widens_and_a_removed_tool_narrows() {
    let old = base();
    let mut tools = base_tools();
    tools.push(tool("delete_ticket", Tier::Action));
    let new = Manifest::from_entries(agent(), tools).unwrap();
    let d = only(&old, &new, Rule::ToolAdded, ChangeKind::Widening);
    assert_eq!(d.changes[0].tool.as_deref(), Some("delete_ticket"));
    assert!(d.changes[0].reason.contains("tier action"), "{}", d.changes[0].reason);
    assert_eq!(d.widened_tools().into_iter().collect::<Vec<_>>(), ["delete_ticket"]);
    only(&new, &old, Rule::ToolRemoved, ChangeKind::Narrowing);
}

#[test]
fn a_changed_permission_widens_unless_it_leaves_public() {
    both_ways(|m| tool_mut(m, "lookup").permission = "public".into(), Rule::PermissionChanged, Rule::PermissionChanged);
    // Between two named permissions the roles holding them may differ: always a widening.
    let (a, b) = (base(), edited(|m| tool_mut(m, "lookup").permission = "desk.admin".into()));
    only(&a, &b, Rule::PermissionChanged, ChangeKind::Widening);
    only(&b, &a, Rule::PermissionChanged, ChangeKind::Widening);
}

#[test]
fn mutating_removed_widens_and_added_narrows() {
    both_ways(|m| tool_mut(m, "submit").mutating = false, Rule::MutatingRemoved, Rule::MutatingAdded);
}

#[test]
fn isolation_removed_widens_and_added_narrows() {
    let (plain, isolated) = (base(), edited(|m| tool_mut(m, "lookup").policy.isolated = true));
    only(&isolated, &plain, Rule::IsolationRemoved, ChangeKind::Widening);
    only(&plain, &isolated, Rule::IsolationAdded, ChangeKind::Narrowing);
    // Written only when set: a manifest without isolated tools keeps its bytes and its hash.
    assert!(!plain.to_canonical_string().contains("isolated"));
    let text = isolated.to_canonical_string();
    assert!(text.contains(r#""isolated":true"#), "{text}");
    assert_eq!(Manifest::parse(&text).unwrap(), isolated);
}

#[test]
fn egress_removed_widens_and_added_narrows() {
    let (plain, egress) = (base(), edited(|m| tool_mut(m, "lookup").policy.egress = true));
    only(&egress, &plain, Rule::EgressRemoved, ChangeKind::Widening);
    only(&plain, &egress, Rule::EgressAdded, ChangeKind::Narrowing);
    // Written only when set: a manifest without egress tools keeps its bytes and its hash.
    assert!(!plain.to_canonical_string().contains("egress"));
    let text = egress.to_canonical_string();
    assert!(text.contains(r#""egress":true"#), "{text}");
    assert_eq!(Manifest::parse(&text).unwrap(), egress);
}

#[test]
fn tier_towards_read_widens() {
    both_ways(|m| tool_mut(m, "submit").tier = Tier::Read, Rule::TierLowered, Rule::TierRaised);
    both_ways(|m| tool_mut(m, "reset_password").tier = Tier::Action, Rule::TierLowered, Rule::TierRaised);
    both_ways(|m| tool_mut(m, "reset_password").tier = Tier::Read, Rule::TierLowered, Rule::TierRaised);
}

#[test]
fn a_real_action_to_read_change_reports_tier_and_mutating() {
    let old = base();
    let mut tools = base_tools();
    tools[1].tier = Tier::Read;
    let new = Manifest::from_entries(agent(), tools).unwrap();
    let d = diff(&old, &new);
    let rules: Vec<Rule> = d.changes.iter().map(|c| c.rule).collect();
    assert_eq!(rules, [Rule::TierLowered, Rule::MutatingRemoved], "{d}");
    assert_eq!(d.count(ChangeKind::Widening), 2);
}

#[test]
fn risk_lowered_widens() {
    both_ways(|m| tool_mut(m, "submit").risk = Risk::Low, Rule::RiskLowered, Rule::RiskRaised);
}

#[test]
fn glob_added_or_broadened_widens() {
    both_ways(
        |m| tool_mut(m, "lookup").policy.fs.read.push("/etc/desk.conf".into()),
        Rule::PolicyAdded,
        Rule::PolicyRemoved,
    );
    both_ways(
        |m| tool_mut(m, "lookup").policy.fs.read = vec!["/srv/desk/**".into()],
        Rule::PolicyBroadened,
        Rule::PolicyNarrowed,
    );
    both_ways(
        |m| tool_mut(m, "submit").policy.fs.write = vec!["/srv/desk/out/*".into()],
        Rule::PolicyBroadened,
        Rule::PolicyNarrowed,
    );
    let d = diff(&base(), &edited(|m| tool_mut(m, "submit").policy.fs.write = vec!["/srv/**".into()]));
    let c = &d.changes[0];
    assert_eq!(c.field, "policy.fs.write");
    assert_eq!(c.old.as_deref(), Some("/srv/desk/out/*.json"));
    assert_eq!(c.new.as_deref(), Some("/srv/**"));
    assert!(c.reason.contains("broadened"), "{}", c.reason);
}

#[test]
fn a_glob_that_is_not_certainly_covered_counts_as_added() {
    // `*` never crosses `/`: `/srv/desk/*.json` does not cover `/srv/desk/*/*.json`, and the
    // other way round is not certain either, so the new glob is an addition.
    let d = diff(&base(), &edited(|m| tool_mut(m, "lookup").policy.fs.read = vec!["/srv/desk/*/*.json".into()]));
    let rules: Vec<Rule> = d.changes.iter().map(|c| c.rule).collect();
    assert_eq!(rules, [Rule::PolicyAdded, Rule::PolicyRemoved], "{d}");
    assert!(d.has_widening());
}

#[test]
fn an_entry_already_covered_is_neutral() {
    let old = edited(|m| tool_mut(m, "lookup").policy.fs.read = vec!["/srv/**".into()]);
    let new = edited(|m| tool_mut(m, "lookup").policy.fs.read = vec!["/srv/**".into(), "/srv/desk/x.json".into()]);
    only(&old, &new, Rule::PolicyCovered, ChangeKind::Neutral);
    only(&new, &old, Rule::PolicyCovered, ChangeKind::Neutral);
}

#[test]
fn host_added_or_broadened_widens() {
    both_ways(
        |m| tool_mut(m, "lookup").policy.net.hosts.push("evil.example.net".into()),
        Rule::PolicyAdded,
        Rule::PolicyRemoved,
    );
    // Dropping the port allows every port.
    both_ways(
        |m| tool_mut(m, "lookup").policy.net.hosts = vec!["api.example.com".into()],
        Rule::PolicyBroadened,
        Rule::PolicyNarrowed,
    );
    both_ways(
        |m| tool_mut(m, "lookup").policy.net.hosts = vec!["*.example.com".into()],
        Rule::PolicyBroadened,
        Rule::PolicyNarrowed,
    );
}

/// `*` (any host) added to a tool without network hosts, or in place of a declared host, is
/// a widening that names it; nothing narrower covers it.
#[test]
fn any_host_added_widens_and_says_so() {
    let d = only(
        &base(),
        &edited(|m| tool_mut(m, "lookup").policy.net.hosts.push("*".into())),
        Rule::PolicyAdded,
        ChangeKind::Widening,
    );
    assert!(d.changes[0].reason.contains("`*` added (any host"), "{d}");
    let d = only(
        &base(),
        &edited(|m| tool_mut(m, "lookup").policy.net.hosts = vec!["*".into()]),
        Rule::PolicyBroadened,
        ChangeKind::Widening,
    );
    assert!(d.changes[0].reason.contains("to `*` (any host"), "{d}");
    both_ways(
        |m| tool_mut(m, "lookup").policy.net.hosts = vec!["*:443".into()],
        Rule::PolicyBroadened,
        Rule::PolicyNarrowed,
    );
    // A tool that had no network hosts at all.
    let without = edited(|m| tool_mut(m, "lookup").policy.net.hosts.clear());
    let with = edited(|m| tool_mut(m, "lookup").policy.net.hosts = vec!["*".into()]);
    only(&without, &with, Rule::PolicyAdded, ChangeKind::Widening);
    // Going back from `*` to a list is a narrowing.
    only(&with, &base(), Rule::PolicyNarrowed, ChangeKind::Narrowing);
}

#[test]
fn env_var_added_or_broadened_widens() {
    both_ways(
        |m| tool_mut(m, "lookup").policy.env.vars.push("AWS_SECRET_ACCESS_KEY".into()),
        Rule::PolicyAdded,
        Rule::PolicyRemoved,
    );
    // The runtime grants variables by exact name: an entry that reads like a pattern covers
    // nothing but itself, so replacing `DESK_REGION` by it adds one and removes the other.
    let d = diff(&base(), &edited(|m| tool_mut(m, "lookup").policy.env.vars = vec!["DESK_*".into()]));
    let rules: Vec<_> = d.changes.iter().map(|c| (c.rule, c.kind)).collect();
    assert_eq!(rules, [(Rule::PolicyAdded, ChangeKind::Widening), (Rule::PolicyRemoved, ChangeKind::Narrowing)], "{d}");
}

#[test]
fn secret_flag_removed_widens() {
    let d = diff(&base(), &edited(|m| tool_mut(m, "lookup").parameters[1].secret = false));
    assert_eq!(d.changes.len(), 1, "{d}");
    assert_eq!((d.changes[0].rule, d.changes[0].kind), (Rule::SecretRemoved, ChangeKind::Widening));
    assert_eq!(d.changes[0].field, "parameters.token.secret");
    both_ways(|m| tool_mut(m, "lookup").parameters[1].secret = false, Rule::SecretRemoved, Rule::SecretAdded);
}

#[test]
fn parameter_added_or_retyped_widens_and_reorder_is_neutral() {
    both_ways(
        |m| {
            tool_mut(m, "submit").parameters.push(ParamEntry {
                name: "amount".into(),
                rust_type: "u32".into(),
                secret: false,
            })
        },
        Rule::ParameterAdded,
        Rule::ParameterRemoved,
    );
    let (a, b) = (base(), edited(|m| tool_mut(m, "submit").parameters[0].rust_type = "String".into()));
    only(&a, &b, Rule::ParameterTypeChanged, ChangeKind::Widening);
    // Even a change that reads as narrower is a widening: the manifest holds type names only.
    let (a, b) = (base(), edited(|m| tool_mut(m, "submit").parameters[0].rust_type = "u8".into()));
    only(&a, &b, Rule::ParameterTypeChanged, ChangeKind::Widening);
    let (a, b) = (base(), edited(|m| tool_mut(m, "submit").parameters.reverse()));
    only(&a, &b, Rule::ParametersReordered, ChangeKind::Neutral);
}

#[test]
fn secrecy_by_type_counts_as_secret() {
    // `token: Secret<String>` without `#[secret]` is masked all the same; turning it into a
    // plain `String` unmasks it, exactly as removing the attribute does.
    let by_type = |m: &mut Manifest| {
        let p = &mut tool_mut(m, "lookup").parameters[1];
        (p.secret, p.rust_type) = (false, "Secret<String>".into());
    };
    let plain = |m: &mut Manifest| {
        let p = &mut tool_mut(m, "lookup").parameters[1];
        (p.secret, p.rust_type) = (false, "String".into());
    };
    let d = diff(&edited(by_type), &edited(plain));
    let rules: Vec<_> = d.changes.iter().map(|c| (c.rule, c.kind)).collect();
    assert_eq!(
        rules,
        [(Rule::SecretRemoved, ChangeKind::Widening), (Rule::ParameterTypeChanged, ChangeKind::Widening)],
        "{d}"
    );
    // Moving secrecy from the attribute to the type changes the type, but not the masking.
    let d = diff(&base(), &edited(by_type));
    assert!(d.changes.iter().all(|c| c.rule != Rule::SecretRemoved), "{d}");
}

#[test]
fn uses_added_widens() {
    both_ways(|m| tool_mut(m, "lookup").uses.push("submit".into()), Rule::UsesAdded, Rule::UsesRemoved);
}

#[test]
fn description_and_title_changes_are_neutral_but_shown() {
    let (a, b) = (base(), edited(|m| tool_mut(m, "lookup").description = "Looks a ticket up.".into()));
    let d = only(&a, &b, Rule::DescriptionChanged, ChangeKind::Neutral);
    let text = d.to_string();
    assert!(text.contains("NEUTRAL") && text.contains("Looks a ticket up."), "{text}");
    assert_eq!(d.changes[0].old.as_deref(), Some("The lookup tool."));

    let (a, b) = (base(), edited(|m| tool_mut(m, "submit").title = Some("Submit the ticket".into())));
    only(&a, &b, Rule::TitleChanged, ChangeKind::Neutral);

    let (a, b) = (base(), edited(|m| m.agent.description = "Helps.".into()));
    only(&a, &b, Rule::AgentDescriptionChanged, ChangeKind::Neutral);
    let (a, b) = (base(), edited(|m| m.agent.output = "Reply".into()));
    only(&a, &b, Rule::IoTypeChanged, ChangeKind::Neutral);
    let (a, b) = (base(), edited(|m| m.agent.name = "desk".into()));
    only(&a, &b, Rule::AgentRenamed, ChangeKind::Neutral);
    let (a, b) = (
        base(),
        edited(|m| {
            m.agent.skills[0].tools.pop();
        }),
    );
    only(&a, &b, Rule::SkillsChanged, ChangeKind::Neutral);
}

#[test]
fn ceiling_raised_or_removed_widens() {
    both_ways(|m| m.agent.ceiling.as_mut().unwrap().push("hr.write".into()), Rule::CeilingRaised, Rule::CeilingLowered);
    both_ways(|m| m.agent.ceiling = None, Rule::CeilingRemoved, Rule::CeilingAdded);
}

#[test]
fn limit_raised_widens() {
    both_ways(|m| m.agent.limits.max_iterations = 50, Rule::LimitRaised, Rule::LimitLowered);
    both_ways(|m| m.agent.limits.token_ttl_secs = 3600, Rule::LimitRaised, Rule::LimitLowered);
    both_ways(|m| m.agent.limits.max_concurrent_runs = 10, Rule::LimitRaised, Rule::LimitLowered);
    let d = diff(&base(), &edited(|m| m.agent.limits.provider_timeout_secs = 300));
    assert_eq!(d.changes[0].field, "limits.provider_timeout_secs");
    assert_eq!(d.changes[0].tool, None);
}

#[test]
fn display_groups_by_kind_and_json_round_trips() {
    let old = base();
    let new = edited(|m| {
        tool_mut(m, "lookup").policy.fs.read = vec!["/srv/**".into()];
        tool_mut(m, "submit").risk = Risk::High;
        tool_mut(m, "lookup").description = "Finds things.".into();
    });
    let d = diff(&old, &new);
    assert_eq!(d.summary(), "1 widening, 1 narrowing, 1 neutral");
    let text = d.to_string();
    let w = text.find("WIDENING").unwrap();
    let n = text.find("NARROWING").unwrap();
    let u = text.find("NEUTRAL").unwrap();
    assert!(w < n && n < u, "{text}");
    assert!(text.contains("tool `lookup` policy.fs.read: filesystem read glob broadened"), "{text}");

    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["changes"][0]["kind"], "widening");
    assert_eq!(json["changes"][0]["rule"], "policy_broadened");
    let back: ManifestDiff = serde_json::from_value(json).unwrap();
    assert_eq!(back, d);
}

#[test]
fn changes_are_ordered_agent_first_then_tools_by_name() {
    let new = edited(|m| {
        tool_mut(m, "submit").risk = Risk::Low;
        tool_mut(m, "lookup").risk = Risk::Low;
        m.agent.limits.max_iterations = 13;
    });
    let d = diff(&base(), &new);
    let subjects: Vec<Option<&str>> = d.changes.iter().map(|c| c.tool.as_deref()).collect();
    assert_eq!(subjects, [None, Some("lookup"), Some("submit")]);
}

#[test]
fn a_re_pinned_import_widens_and_shows_both_pins() {
    use agents_core::manifest::ImportEntry;
    let pinned = |sha: &str| ImportEntry {
        server: "tracker".into(),
        tool: "lookup".into(),
        sha256: sha.into(),
        own_server: None,
        endpoint: Some("stdio: tracker-mcp".into()),
    };
    let old = edited(|m| tool_mut(m, "lookup").import = Some(pinned("aaa")));
    let new = edited(|m| tool_mut(m, "lookup").import = Some(pinned("bbb")));
    let d = only(&old, &new, Rule::ImportChanged, ChangeKind::Widening);
    assert_eq!(d.changes[0].old.as_deref(), Some("tracker/lookup pin aaa"));
    assert_eq!(d.changes[0].new.as_deref(), Some("tracker/lookup pin bbb"));
    assert_ne!(old.sha256(), new.sha256(), "the pin is part of the manifest's hash");
    // A tool that becomes imported (its text now comes from elsewhere) is a widening too, and
    // so is the server it now comes from.
    let d = diff(&base(), &old);
    let rules: Vec<(Rule, ChangeKind)> = d.changes.iter().map(|c| (c.rule, c.kind)).collect();
    assert_eq!(rules, [(Rule::McpServerAdded, ChangeKind::Widening), (Rule::ImportChanged, ChangeKind::Widening)]);
    // A manifest without imports keeps its bytes: no `import` key is written.
    assert!(!base().to_canonical_string().contains("\"import\""));
    // And the manifest with a pin reads back.
    assert_eq!(Manifest::parse(&old.to_canonical_string()).unwrap(), old);
}

#[test]
fn an_import_declared_the_applications_own_server_widens_by_its_egress_and_names_the_reason() {
    use agents_core::manifest::ImportEntry;
    let pin = ImportEntry {
        server: "tracker".into(),
        tool: "lookup".into(),
        sha256: "aaa".into(),
        own_server: None,
        endpoint: Some("stdio: tracker-mcp".into()),
    };
    let third_party = edited(|m| {
        let t = tool_mut(m, "lookup");
        t.import = Some(pin.clone());
        t.policy.egress = true;
    });
    let own = edited(|m| {
        let t = tool_mut(m, "lookup");
        t.import = Some(ImportEntry { own_server: Some("our tracker, in our network".into()), ..pin.clone() });
        t.policy.egress = false;
    });
    // The same pin: only the egress changes, and the diff says why the tool no longer asks.
    let d = only(&third_party, &own, Rule::EgressRemoved, ChangeKind::Widening);
    assert!(d.changes[0].reason.contains("our tracker, in our network"), "{}", d.changes[0].reason);
    only(&own, &third_party, Rule::EgressAdded, ChangeKind::Narrowing);
    // The reason is in the manifest the reviewer reads, and in its hash.
    assert!(own.to_canonical_string().contains(r#""own_server":"our tracker, in our network""#));
    assert_ne!(own.sha256(), third_party.sha256());
    assert_eq!(Manifest::parse(&own.to_canonical_string()).unwrap(), own);
}

/// `lookup` imported from `server` at `endpoint`, and `submit` from the same server when
/// `both` (each tool's entry names its server's endpoint).
fn imported(server: &str, endpoint: &str, both: bool) -> Manifest {
    use agents_core::manifest::ImportEntry;
    let entry = |tool: &str| ImportEntry {
        server: server.into(),
        tool: tool.into(),
        sha256: "aaa".into(),
        own_server: None,
        endpoint: Some(endpoint.into()),
    };
    edited(|m| {
        tool_mut(m, "lookup").import = Some(entry("lookup"));
        if both {
            tool_mut(m, "submit").import = Some(entry("submit"));
        }
    })
}

#[test]
fn a_server_reached_at_another_endpoint_widens_and_a_new_host_is_named() {
    let wiki = imported("wiki", "http: https://wiki.example.com/mcp", true);
    // Another host: one change for the server, however many tools it serves.
    let moved = imported("wiki", "http: https://wiki.example.net/mcp", true);
    let d = only(&wiki, &moved, Rule::McpEndpointChanged, ChangeKind::Widening);
    assert!(d.changes[0].reason.contains("a new host, `wiki.example.net`"), "{}", d.changes[0].reason);
    assert_eq!(d.changes[0].field, "mcp_servers.wiki");
    assert_eq!(d.changes[0].new.as_deref(), Some("http: https://wiki.example.net/mcp"));
    // The same host over plain HTTP, or another path: still a widening, not a new host.
    for elsewhere in ["http: http://wiki.example.com/mcp", "http: https://wiki.example.com/other"] {
        let d = only(&wiki, &imported("wiki", elsewhere, true), Rule::McpEndpointChanged, ChangeKind::Widening);
        assert!(d.changes[0].reason.contains("another program or address"), "{}", d.changes[0].reason);
    }
    // Another program behind a stdio server.
    only(
        &imported("desk", "stdio: desk-server", false),
        &imported("desk", "stdio: other-server", false),
        Rule::McpEndpointChanged,
        ChangeKind::Widening,
    );
    // The endpoint is in the manifest's bytes and reads back.
    assert_ne!(wiki.sha256(), moved.sha256());
    assert!(wiki.to_canonical_string().contains(r#""endpoint":"http: https://wiki.example.com/mcp""#));
    assert_eq!(Manifest::parse(&wiki.to_canonical_string()).unwrap(), wiki);
}

#[test]
fn a_server_added_widens_and_one_removed_narrows() {
    let a = imported("wiki", "http: https://wiki.example.com/mcp", false);
    let mut b = a.clone();
    tool_mut(&mut b, "submit").import = Some(agents_core::manifest::ImportEntry {
        server: "tracker".into(),
        tool: "submit".into(),
        sha256: "bbb".into(),
        own_server: None,
        endpoint: Some("stdio: tracker-mcp".into()),
    });
    let d = diff(&a, &b);
    let added: Vec<_> = d.changes.iter().filter(|c| c.rule == Rule::McpServerAdded).collect();
    assert_eq!(added.len(), 1, "{d}");
    assert_eq!(added[0].kind, ChangeKind::Widening);
    assert!(added[0].reason.contains("`tracker` added (stdio: tracker-mcp)"), "{}", added[0].reason);
    let d = diff(&b, &a);
    let removed: Vec<_> = d.changes.iter().filter(|c| c.rule == Rule::McpServerRemoved).collect();
    assert_eq!(removed.len(), 1, "{d}");
    assert_eq!(removed[0].kind, ChangeKind::Narrowing);
}

#[test]
fn two_endpoints_for_one_server_are_refused() {
    let mut m = imported("wiki", "http: https://wiki.example.com/mcp", true);
    tool_mut(&mut m, "submit").import.as_mut().unwrap().endpoint = Some("http: https://evil.example/mcp".into());
    let e = Manifest::parse(&m.to_canonical_string()).unwrap_err();
    assert!(
        matches!(&e, agents_core::manifest::ManifestError::ServerEndpoints { server, .. } if server == "wiki"),
        "{e}"
    );
    assert!(e.to_string().contains("agents mcp pin"), "{e}");
}
