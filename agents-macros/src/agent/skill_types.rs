//! The skill types of an agent with skills: one zero-sized type per skill,
//! `<Agent><Skill>Skill` (`review` of `KycReviewer` → `KycReviewerReviewSkill`), implementing
//! `agents_core::TypedSkill` with the skill's own input and output types (the agent's when
//! the skill declares none), so `Runtime::start_skill::<S>` takes `S::Input` and a run
//! started with another input type does not compile.

use super::model::Model;
use crate::util::camel;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Type;

/// The types and their `TypedSkill` impls; nothing for an agent without skills.
pub(crate) fn emit(m: &Model, rt: &TokenStream) -> TokenStream {
    let (ident, vis) = (&m.agent.ident, &m.agent.vis);
    let seal = quote!(#rt::__private::seal);
    let agent_input: Type = m.agent.input.clone().unwrap_or_else(|| syn::parse_quote!(::std::string::String));
    let agent_output: Type = m.agent.output.clone().unwrap_or_else(|| syn::parse_quote!(::std::string::String));
    let types = m.agent.skills.iter().zip(&m.agent.skill_io).map(|((skill, _), io)| {
        let s = skill.to_string();
        let name = format_ident!("{ident}{}Skill", camel(&s), span = skill.span());
        let (input, output, doc) = match io {
            Some(t) => (&t.input, &t.output, format!("Skill `{s}` of [`{ident}`], with its own input and output.")),
            None => (
                &agent_input,
                &agent_output,
                format!("Skill `{s}` of [`{ident}`]: it takes and returns the agent's input and output."),
            ),
        };
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
            #[allow(dead_code, reason = "an application names the skills it starts runs in, not necessarily all")]
            #vis struct #name;

            impl #seal::DeclaredByAgentMacro for #name {}

            impl #rt::agents_core::TypedSkill for #name {
                type Agent = #ident;
                type Input = #input;
                type Output = #output;
                const NAME: &'static str = #s;
            }
        }
    });
    quote!(#(#types)*)
}

/// `Agent::SKILL_SCHEMAS` for the typed skills: how the reviewed document builds each one's
/// input and output schemas; nothing when no skill is typed (the trait's default, empty).
pub(crate) fn schemas(m: &Model, rt: &TokenStream) -> TokenStream {
    let core = quote!(#rt::agents_core);
    let entries: Vec<TokenStream> = m
        .agent
        .skills
        .iter()
        .zip(&m.agent.skill_io)
        .filter_map(|((skill, _), io)| {
            let (s, t) = (skill.to_string(), io.as_ref()?);
            let (input, output) = (&t.input, &t.output);
            Some(quote! {
                #core::agent::SkillSchemas {
                    name: #s,
                    input: #core::reviewed::schema_of::<#input>,
                    output: #core::reviewed::schema_of::<#output>,
                }
            })
        })
        .collect();
    if entries.is_empty() {
        return TokenStream::new();
    }
    quote!(const SKILL_SCHEMAS: &'static [#core::agent::SkillSchemas] = &[#(#entries),*];)
}

/// The agent spec's `SkillSpec`s, from the manifest's entries (a typed skill's type names
/// as the manifest writes them).
pub(crate) fn specs(m: &Model, rt: &TokenStream) -> Vec<TokenStream> {
    let specs = m.manifest.agent.skills.iter().map(|s| {
        let (n, t) = (&s.name, &s.tools);
        let io = match &s.io {
            Some(io) => {
                let (i, o) = (&io.input, &io.output);
                quote!(::core::option::Option::Some((#i, #o)))
            }
            None => quote!(::core::option::Option::None),
        };
        quote!(#rt::SkillSpec { name: #n, tools: &[#(#t),*], io: #io })
    });
    specs.collect()
}
