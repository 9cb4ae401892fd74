//! What the finished chain and the agent's input make: the checked model of an agent that
//! code generation reads. Each step checks one rule and reports at the user's token.

use super::parse::AgentInput;
use super::skill_io::SkillTypes;
use crate::chain::Link;
use crate::context::Errors;
use crate::util::{camel, doc_string, permission_name, type_string};
use agents_core::Limits;
use agents_core::manifest::{AgentEntry, LimitsEntry, Manifest, SkillEntry, ToolEntry};
use proc_macro2::Literal;

/// A granted tool: the path `tools` names it by, its manifest entry and the digest of the
/// entry its link gave.
pub(crate) struct Granted {
    pub(crate) path: syn::Path,
    pub(crate) entry: ToolEntry,
    pub(crate) digest: Literal,
}

/// An agent, checked: what code generation reads.
pub(crate) struct Model {
    pub(crate) agent: AgentInput,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) limits: Limits,
    /// In `tools` order, each tool name once.
    pub(crate) tools: Vec<Granted>,
    pub(crate) manifest: Manifest,
    pub(crate) manifest_text: String,
    pub(crate) manifest_hash: String,
    /// The knowledge sources, read at expansion time.
    pub(crate) knowledge: Vec<super::knowledge::ReadSource>,
    /// The granted agents, in `agents` order.
    pub(crate) agents: Vec<super::subagents::GrantedAgent>,
    /// The handoff tools that name their target, in `tools` order.
    pub(crate) handoffs: Vec<super::handoffs::Handoff>,
}

/// Builds the model, or reports every mistake found.
pub(crate) fn build(agent: AgentInput, links: &[Link], errors: &Errors) -> Option<Model> {
    let ident = &agent.ident;
    if links.len() < agent.tools.len() + agent.agents.len() {
        errors.spanned(ident, "internal: the chain's links do not match the tools and agents lists");
        return None;
    }
    let (links, rest) = links.split_at(agent.tools.len());
    let (agent_links, target_links) = rest.split_at(agent.agents.len());
    let mut entries = read_entries(links, errors)?;
    if entries.len() != agent.tools.len() {
        errors.spanned(ident, "internal: tool entries do not match the tools list");
        return None;
    }
    let ceiling = ceiling_names(&agent, errors);
    let handoffs = super::handoffs::read(&agent, links, &mut entries, target_links, ceiling.as_deref(), errors);
    let entries = attribute_uses(entries, links, ident, errors);
    let tools = unique_tools(&agent, entries, links, errors);
    let skills = skills(&agent, &tools, errors);
    check_skill_names(&agent, errors);
    check_skill_uses(&agent, &skills, &tools, errors);
    if let Some(names) = &ceiling {
        check_ceiling(ident, names, &tools, errors);
    }
    let tool_names: Vec<&str> = tools.iter().map(|t| t.entry.name.as_str()).collect();
    let agents = super::subagents::read(&agent, agent_links, &tool_names, ceiling.as_deref(), errors);
    let name = agent.name.as_ref().map(syn::LitStr::value).unwrap_or_else(|| ident.to_string());
    let description = doc_string(&agent.attrs).unwrap_or_default();
    let limits = agent.limits();
    let knowledge = super::knowledge::read_sources(&agent.knowledge, errors);
    let entry = AgentEntry {
        name: name.clone(),
        description: description.clone(),
        input: agent.input.as_ref().map(type_string).unwrap_or_else(|| "String".into()),
        output: agent.output.as_ref().map(type_string).unwrap_or_else(|| "String".into()),
        skills,
        ceiling,
        limits: LimitsEntry::from(limits),
        models: agent.models.clone(),
        budget: agent.budget,
        unskilled: agent.unskilled.as_ref().map(|(_, u)| *u).unwrap_or_default(),
        knowledge: knowledge.iter().map(|k| k.entry().clone()).collect(),
        audit_values: agent.audit_values,
        expose: agents_core::expose::ExposeEntry { mcp: agent.expose_mcp.clone() },
        agents: agents.iter().map(|g| g.entry.clone()).collect(),
    };
    if !errors.is_empty() || !super::handoffs::resolved(tools.iter().map(|t| &t.entry)) {
        return None;
    }
    let manifest = Manifest::from_entries(entry, tools.iter().map(|t| t.entry.clone()).collect())
        .map_err(|e| errors.spanned(ident, e.to_string()))
        .ok()?;
    let manifest_text = manifest.to_canonical_string();
    let manifest_hash = agents_core::canonical::sha256_hex(manifest_text.as_bytes());
    Some(Model {
        agent,
        name,
        description,
        limits,
        tools,
        manifest,
        manifest_text,
        manifest_hash,
        knowledge,
        agents,
        handoffs,
    })
}

/// Each link's entry, read back.
fn read_entries(links: &[Link], errors: &Errors) -> Option<Vec<ToolEntry>> {
    let mut entries = Vec::new();
    for link in links {
        match serde_json::from_str::<ToolEntry>(&link.entry.value()) {
            Ok(e) => entries.push(e),
            Err(e) => errors.spanned(&link.entry, format!("internal: unreadable tool entry: {e}")),
        }
    }
    (entries.len() == links.len()).then_some(entries)
}

/// A tool names what it invokes by function name (`Grants<list_athletes>`); the manifest lists
/// tool names, which `name = "..."` may change. The agent grants every tool a granted tool
/// invokes (a type-level check), so each function name is among its tools'. Two granted tools
/// may share a function name (in different modules): the name then does not say which one is
/// invoked, and the manifest refuses to guess. Each attribution is also confirmed against the
/// resolved types (see `codegen`).
fn attribute_uses(entries: Vec<ToolEntry>, links: &[Link], ident: &syn::Ident, errors: &Errors) -> Vec<ToolEntry> {
    let by_function: Vec<(String, String)> =
        links.iter().map(|l| l.function.value()).zip(entries.iter().map(|e| e.name.clone())).collect();
    let attribute = |tool: &str, used: &mut String| {
        let found: Vec<&String> = by_function.iter().filter(|(f, _)| f == used).map(|(_, n)| n).collect();
        match found.as_slice() {
            [name] => used.clone_from(name),
            [] => {}
            several => errors.spanned(
                ident,
                format!(
                    "tool `{tool}` invokes `{used}`, but agent `{ident}` grants several tools whose function is named `{used}` ({}); the manifest cannot tell which one is invoked: give the functions distinct names",
                    several.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                ),
            ),
        }
    };
    entries
        .into_iter()
        .map(|mut e| {
            let tool = e.name.clone();
            for u in &mut e.uses {
                attribute(&tool, u);
            }
            e.normalized()
        })
        .collect()
}

/// Pairs each path with its entry; refuses two tools of one name.
fn unique_tools(agent: &AgentInput, entries: Vec<ToolEntry>, links: &[Link], errors: &Errors) -> Vec<Granted> {
    let mut tools: Vec<Granted> = Vec::new();
    for ((path, entry), link) in agent.tools.iter().zip(entries).zip(links) {
        if tools.iter().any(|t| t.entry.name == entry.name) {
            errors.spanned(
                path,
                format!("agent `{}` has two tools named `{}`; tool names must be unique within an agent (remove one, or give one `name = \"...\"`)", agent.ident, entry.name),
            );
            continue;
        }
        tools.push(Granted { path: path.clone(), entry, digest: link.digest() });
    }
    tools
}

/// The skills, each tool by its name. A skill may name a tool by another path than `tools`
/// does (`list_athletes` for `tools::list_athletes`): the whole path is matched, else the one
/// granted tool with that last segment. A type-level check (see `codegen`) confirms that the
/// agent grants what the skill names.
fn skills(agent: &AgentInput, tools: &[Granted], errors: &Errors) -> Vec<SkillEntry> {
    let last = |p: &syn::Path| p.segments.last().map(|s| s.ident.to_string());
    let name_of = |p: &syn::Path| -> Result<String, usize> {
        let key = type_string(p);
        if let Some(t) = tools.iter().find(|t| type_string(&t.path) == key) {
            return Ok(t.entry.name.clone());
        }
        let same: Vec<&Granted> = tools.iter().filter(|t| last(&t.path) == last(p)).collect();
        match same.as_slice() {
            [one] => Ok(one.entry.name.clone()),
            more => Err(more.len()),
        }
    };
    let ident = &agent.ident;
    let mut skills = Vec::new();
    for ((skill, paths), io) in agent.skills.iter().zip(&agent.skill_io) {
        let mut names = Vec::new();
        for p in paths {
            match name_of(p) {
                Ok(n) => names.push(n),
                Err(0) => errors.spanned(p, format!("skill `{skill}` lists `{}`, which agent `{ident}` does not grant; add it to `tools` first", type_string(p))),
                Err(_) => errors.spanned(p, format!("skill `{skill}` lists `{}`, which matches several granted tools; write its path as `tools` does", type_string(p))),
            }
        }
        skills.push(SkillEntry { name: skill.to_string(), tools: names, io: io.as_ref().map(SkillTypes::entry) });
    }
    skills
}

/// Each skill's name given once and making a variant of the skill enum of its own
/// (`decide_case` → `DecideCase`); `unskilled` only beside skills.
fn check_skill_names(agent: &AgentInput, errors: &Errors) {
    let ident = &agent.ident;
    for (i, (skill, _)) in agent.skills.iter().enumerate() {
        let variant = camel(&skill.to_string());
        if variant.is_empty() {
            errors.spanned(skill, format!("skill `{skill}` needs a name with a letter, e.g. `triage`"));
        } else if let Some((other, _)) = agent.skills[..i].iter().find(|(o, _)| camel(&o.to_string()) == variant) {
            errors.spanned(
                skill,
                format!("skill `{skill}` of agent `{ident}` clashes with skill `{other}`: both become `{ident}Skill::{variant}`; give each skill a name of its own"),
            );
        }
    }
    if let Some((u, _)) = &agent.unskilled
        && agent.skills.is_empty()
    {
        errors.spanned(
            u,
            format!("`unskilled` says what happens to the tools no skill lists, but agent `{ident}` declares no skills: remove `unskilled`, or declare `skills: {{ ... }}`"),
        );
    }
}

/// Each tool a skill lists invokes only tools the skill offers: its calls of them pass the
/// same gate, which denies a tool outside the run's skill.
fn check_skill_uses(agent: &AgentInput, skills: &[SkillEntry], tools: &[Granted], errors: &Errors) {
    let unskilled = agent.unskilled.as_ref().map(|(_, u)| *u).unwrap_or_default();
    let listed = |s: &SkillEntry, t: &str| s.tools.iter().any(|n| n == t);
    for ((ident, _), skill) in agent.skills.iter().zip(skills) {
        for t in tools.iter().filter(|t| listed(skill, &t.entry.name)) {
            for used in &t.entry.uses {
                let in_any = skills.iter().any(|s| listed(s, used));
                if !agents_core::skill::offers(listed(skill, used), in_any, unskilled) {
                    errors.spanned(
                        ident,
                        format!(
                            "skill `{ident}` lists `{}`, which invokes `{used}`, a tool the skill does not offer (its call would be denied outside the skill): add `{used}` to skill `{ident}`",
                            t.entry.name
                        ),
                    );
                }
            }
        }
    }
}

/// The ceiling's permission names (`public` is always within), `None` without a ceiling.
fn ceiling_names(agent: &AgentInput, errors: &Errors) -> Option<Vec<String>> {
    let ceiling = agent.ceiling.as_ref()?;
    let mut names = Vec::new();
    for p in ceiling.iter().filter(|p| !p.is_ident("public")) {
        match permission_name(p) {
            Some(n) => names.push(n),
            None => {
                errors.spanned(p, "write a ceiling permission as its `area::action` path, e.g. `perms::athlete::read`")
            }
        }
    }
    Some(names)
}

/// The ceiling, checked by name so the message can name the tool and its permission; the
/// type-level check (see `codegen`) stays as the guarantee (names are tied to types by const
/// asserts).
fn check_ceiling(ident: &syn::Ident, names: &[String], tools: &[Granted], errors: &Errors) {
    let within = if names.is_empty() {
        "it is empty: public tools only".to_owned()
    } else {
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    };
    for t in tools.iter().filter(|t| t.entry.permission != "public" && !names.contains(&t.entry.permission)) {
        errors.spanned(
            &t.path,
            format!(
                "tool `{}` requires the permission `{}`, which lies outside the ceiling of agent `{ident}` ({within}); remove the tool from `tools`, or add its permission (the path ending in `{}`) to `ceiling`, a widening reviewers see in the manifest",
                t.entry.name,
                t.entry.permission,
                t.entry.permission.replace('.', "::"),
            ),
        );
    }
}
