//! The skill enum of an agent with skills: `<Agent>Skill`, one variant per skill
//! (`decide_case` → `DecideCase`), implementing `agents_core::Skill`, so the
//! application names the skill a run works within and a name the agent does not declare does
//! not compile.

use super::model::Model;
use crate::util::camel;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The enum and its `Skill` impl; nothing for an agent without skills.
pub(crate) fn emit(m: &Model, rt: &TokenStream) -> TokenStream {
    let (ident, vis) = (&m.agent.ident, &m.agent.vis);
    if m.agent.skills.is_empty() {
        return TokenStream::new();
    }
    let name = format_ident!("{ident}Skill", span = ident.span());
    let variants: Vec<_> = m
        .agent
        .skills
        .iter()
        .map(|(skill, _)| {
            let s = skill.to_string();
            let tools =
                m.manifest.agent.skills.iter().find(|e| e.name == s).map(|e| e.tools.join("`, `")).unwrap_or_default();
            let doc = if tools.is_empty() {
                format!("Skill `{s}` (it lists no tool).")
            } else {
                format!("Skill `{s}`: `{tools}`.")
            };
            (format_ident!("{}", camel(&s), span = skill.span()), s, doc)
        })
        .collect();
    let decls = variants.iter().map(|(v, _, doc)| quote!(#[doc = #doc] #v));
    let arms = variants.iter().map(|(v, s, _)| quote!(#name::#v => #s));
    let doc = format!(
        "The skills of [`{ident}`]: a run works within one (`Runtime::start_in_skill`), and only the tools it offers are offered to the model."
    );
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(dead_code, reason = "an application names the skills it starts runs in, not necessarily all")]
        #vis enum #name {
            #(#decls,)*
        }

        impl #rt::agents_core::Skill for #name {
            type Agent = #ident;
            fn name(self) -> &'static str {
                match self {
                    #(#arms,)*
                }
            }
        }
    }
}
