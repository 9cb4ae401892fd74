//! `agent! { ... }`: declares an agent, in steps: [`parse`] reads the input as written; the
//! tools' manifest entries are gathered through the chain of hidden macros that `#[tool]`
//! generates next to each tool (see [`crate::chain`]); [`model`] checks the agent against them
//! and computes `MANIFEST` and its SHA-256 natively, leaving const evaluation nothing
//! expensive to do; [`codegen`] emits the items.

mod audit;
mod capabilities;
mod codegen;
mod expose;
mod granting;
mod handoffs;
mod knowledge;
mod model;
mod parse;
mod skill_enum;
mod skill_io;
mod skill_types;
mod subagents;
mod surface;

use crate::chain;
use crate::context::Errors;
use crate::crate_path;
use crate::util::doc_string;
use parse::AgentInput;
use proc_macro2::TokenStream;
use quote::quote;

/// The expansion of `agent!`: the agent's type, and the call of the chain that ends in
/// [`finish`].
pub(crate) fn expand(tokens: TokenStream) -> TokenStream {
    let parsed: AgentInput = match syn::parse2(tokens.clone()) {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    let rt = crate_path::runtime();
    let AgentInput { attrs, vis, ident, .. } = &parsed;
    // A second declaration of the type is refused alone: emitting it would add a conflicting
    // impl for each of the first's (see `source`).
    if crate::source::earlier_agent(ident) {
        return syn::Error::new(
            ident.span(),
            format!(
                "agent `{ident}` is declared twice in this module: an earlier `agent!` declares `struct {ident}` already\nhelp: give this agent a type name of its own (and its own `name: \"...\"`), or remove one of the two declarations"
            ),
        )
        .to_compile_error();
    }
    let errors = Errors::default();
    for e in &parsed.errors {
        errors.push(e.clone());
    }
    if doc_string(attrs).is_none() {
        errors.spanned(
            ident,
            format!("agent `{ident}` has no description: add a doc comment (`/// ...`) above `struct {ident}`"),
        );
    }
    subagents::check_not_itself(&parsed, &errors);
    let strukt = quote! {
        #(#attrs)*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        #vis struct #ident;
    };
    if !errors.is_empty() {
        let errs = errors.into_tokens();
        return quote!(#errs #strukt);
    }
    // The tools' links first, then the granted agents' (see `subagents`).
    let links: Vec<syn::Path> = parsed.tools.iter().chain(&parsed.agents).cloned().collect();
    let chain = chain::start(&links, &tokens, &quote!(#rt::tool::agent_manifest));
    quote! { #strukt #chain }
}

/// The last step of the chain: the agent's input read again, checked against the tools'
/// entries, and its items.
pub(crate) fn finish(tokens: TokenStream) -> TokenStream {
    let finished: chain::Finished = match syn::parse2(tokens) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error(),
    };
    let agent: AgentInput = match syn::parse2(finished.state.clone()) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error(),
    };
    let rt = crate_path::runtime();
    let finish = quote!(#rt::tool::agent_manifest);
    let refused = handoffs::refuse_self_handoffs(&agent, &finished.links);
    if let Some(more) = handoffs::continue_chain(&agent, &finished.state, &finished.links, &finish) {
        return quote!(#refused #more);
    }
    let errors = Errors::default();
    let items = match model::build(agent, &finished.links, &errors) {
        Some(m) if errors.is_empty() => codegen::emit(&m, &rt),
        _ => errors.into_tokens(),
    };
    quote!(#refused #items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agents_core::manifest::{PolicyEntry, ToolEntry};
    use agents_core::{Risk, Tier};

    fn entry(name: &str, permission: &str, uses: &[&str]) -> String {
        let e = ToolEntry {
            name: name.to_owned(),
            title: None,
            description: format!("The {name} tool."),
            permission: permission.to_owned(),
            tier: Tier::Read,
            mutating: false,
            risk: Risk::Low,
            policy: PolicyEntry::default(),
            parameters: Vec::new(),
            uses: uses.iter().map(|u| (*u).to_owned()).collect(),
            import: None,
            handoff: None,
        };
        serde_json::to_string(&e).unwrap()
    }

    #[test]
    fn uses_name_tools_as_the_manifest_does_even_when_renamed() {
        let (a, s) = (entry("athletes", "athlete.read", &[]), entry("summary", "athlete.read", &["list_athletes"]));
        let out = finish(quote! {
            []
            { #[doc = "Helps."] pub struct Clinic; tools: [list_athletes, summary], }
            { "list_athletes" #a "summary" #s }
        })
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains(r#"\"uses\":[\"athletes\"]"#), "{out}");
    }

    #[test]
    fn a_tool_outside_the_ceiling_is_named_with_its_permission() {
        let (a, w) = (entry("list_athletes", "athlete.read", &[]), entry("create_injury", "injury.write", &[]));
        let out = finish(quote! {
            []
            { #[doc = "Helps."] pub struct Clinic; tools: [list_athletes, create_injury], ceiling: [perms::athlete::read], }
            { "list_athletes" #a "create_injury" #w }
        })
        .to_string();
        assert!(
            out.contains("tool `create_injury` requires the permission `injury.write`, which lies outside the ceiling of agent `Clinic` (`athlete.read`)"),
            "{out}"
        );
    }

    #[test]
    fn a_skill_may_name_a_tool_by_its_last_segment() {
        let a = entry("list_athletes", "athlete.read", &[]);
        let out = finish(quote! {
            []
            { #[doc = "Helps."] pub struct Clinic; tools: [tools::list_athletes], skills: { read: [list_athletes] }, }
            { "list_athletes" #a }
        })
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains(r#"\"skills\":[{\"name\":\"read\",\"tools\":[\"list_athletes\"]}]"#), "{out}");
    }

    #[test]
    fn a_typed_skill_names_its_types_in_the_manifest_and_an_untyped_one_writes_no_key() {
        let (a, w) = (entry("list_athletes", "athlete.read", &[]), entry("create_injury", "injury.write", &[]));
        let out = finish(quote! {
            []
            { #[doc = "Helps."] pub struct Clinic; tools: [list_athletes, create_injury],
              skills: { read: [list_athletes], record(crate::Injury -> Vec<u32>): [create_injury] }, }
            { "list_athletes" #a "create_injury" #w }
        })
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains(r#"{\"name\":\"read\",\"tools\":[\"list_athletes\"]}"#), "{out}");
        let typed = r#"{\"io\":{\"input\":\"crate::Injury\",\"output\":\"Vec<u32>\"},\"name\":\"record\",\"tools\":[\"create_injury\"]}"#;
        assert!(out.contains(typed), "{out}");
    }

    #[test]
    fn a_skill_whose_types_are_not_input_arrow_output_is_refused_with_the_form() {
        let a = entry("list_athletes", "athlete.read", &[]);
        for bad in [
            quote!(skills: { read(String): [list_athletes] },),
            quote!(skills: { read(String -> u8 u8): [list_athletes] },),
        ] {
            let out = finish(quote! {
                []
                { #[doc = "Helps."] pub struct Clinic; tools: [list_athletes], #bad }
                { "list_athletes" #a }
            })
            .to_string();
            assert!(out.contains("compile_error"), "{out}");
            assert!(out.contains("review(Request -> Decision)"), "{out}");
        }
    }

    #[test]
    fn a_skill_must_offer_the_tools_its_tools_invoke() {
        let (a, s) =
            (entry("list_athletes", "athlete.read", &[]), entry("summary", "athlete.read", &["list_athletes"]));
        let expand = |skills: proc_macro2::TokenStream| {
            finish(quote! {
                []
                { #[doc = "Helps."] pub struct Clinic; tools: [list_athletes, summary], #skills }
                { "list_athletes" #a "summary" #s }
            })
            .to_string()
        };
        let out = expand(quote!(skills: { brief: [summary] },));
        assert!(
            out.contains(
                "skill `brief` lists `summary`, which invokes `list_athletes`, a tool the skill does not offer"
            ),
            "{out}"
        );
        for ok in [
            quote!(skills: { brief: [summary, list_athletes] },),
            quote!(skills: { brief: [summary] }, unskilled: shared,),
        ] {
            let out = expand(ok);
            assert!(!out.contains("compile_error"), "{out}");
        }
        // Shared, but listed by another skill: not offered under `brief`.
        let out = expand(quote!(skills: { brief: [summary], roster: [list_athletes] }, unskilled: shared,));
        assert!(out.contains("which invokes `list_athletes`"), "{out}");
    }

    #[test]
    fn knowledge_is_read_at_expansion_and_its_hash_is_in_the_manifest() {
        let a = entry("list_athletes", "athlete.read", &[]);
        let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
        let sha = agents_core::canonical::sha256_hex(&bytes);
        let out = finish(quote! {
            []
            { #[doc = "Helps."] pub struct Clinic; tools: [list_athletes], knowledge: [embedded("Cargo.toml", name = "cargo"), dir("src/agent")], }
            { "list_athletes" #a }
        })
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        let entry =
            format!(r#"{{\"bytes\":{},\"name\":\"cargo\",\"path\":\"embedded\",\"sha256\":\"{sha}\"}}"#, bytes.len());
        assert!(out.contains(&entry), "{out}");
        assert!(out.contains("include_bytes"), "{out}");
        assert!(out.contains(r#"\"path\":\"src/agent\""#), "{out}");
    }

    #[test]
    fn a_knowledge_source_that_cannot_be_read_is_a_compile_error_naming_it() {
        let a = entry("list_athletes", "athlete.read", &[]);
        let out = finish(quote! {
            []
            { #[doc = "Helps."] pub struct Clinic; tools: [list_athletes], knowledge: [file("policies/missing.md"), folder("x")], }
            { "list_athletes" #a }
        })
        .to_string();
        assert!(out.contains("cannot read knowledge source"), "{out}");
        assert!(out.contains("policies/missing.md"), "{out}");
        assert!(out.contains("unknown kind of knowledge source `folder`"), "{out}");
    }
}
