//! `composite! { ... }`: declares a composite, in steps: [`parse`] reads the declaration as
//! written, [`walk`] turns its flow into a graph (node ids, edges) and the type checks of each
//! join, and [`expand`] emits the type, its `Flow` and `Composite` impls (sealed), its graph
//! as a const, and the checks. The graph manifest and its hash are computed by const
//! evaluation (they name the nodes' consts, which the macro cannot see), kept small: a node
//! is its name, its manifest's hash and its capability summary.

mod parse;
mod plan;
mod walk;

use crate::crate_path;
use crate::util::{doc_string, type_string};
use parse::CompositeInput;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use walk::{Walk, kebab};

/// The expansion of `composite!`.
pub(crate) fn expand(tokens: TokenStream) -> TokenStream {
    let parsed: CompositeInput = match syn::parse2(tokens) {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    let rt = crate_path::runtime();
    let CompositeInput { attrs, vis, ident, input, output, flow } = &parsed;
    let strukt = quote! {
        #(#attrs)*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        #vis struct #ident;
    };
    let Some(description) = doc_string(attrs) else {
        let msg =
            format!("composite `{ident}` has no description: add a doc comment (`/// ...`) above `struct {ident}`");
        let err = syn::Error::new(ident.span(), msg).to_compile_error();
        return quote!(#err #strukt);
    };
    let graph = quote!(<#ident as #rt::agents_core::compose::Composite>::GRAPH);
    let mut walk = Walk::new(quote!(#rt::agents_core::compose), plan::Plan::new(&rt, graph));
    let root = walk.flow(flow);
    let run = walk.plan.impls(ident, &root.step(), (input, output));
    let decl = Declared { ident, input, output, name: kebab(&ident.to_string()), description };
    let impls = impls(&decl, &walk, &root, &rt);
    let c = quote!(#rt::agents_core::compose);
    let (root_in, root_out) = (&root.input, &root.output);
    let checks = &walk.checks;
    let manifest_doc = format!("The graph manifest of `{}`: canonical JSON, exactly these bytes.", decl.name);
    let hash_doc = format!("Lowercase hex SHA-256 of exactly the [`{ident}::MANIFEST`] bytes.");
    quote! {
        #strukt

        impl #ident {
            #[doc = #manifest_doc]
            pub const MANIFEST: &'static str = <#ident as #c::Composite>::MANIFEST;
            #[doc = #hash_doc]
            pub const MANIFEST_SHA256: &'static str = <#ident as #c::Composite>::MANIFEST_SHA256;
        }

        const _: () = {
            #impls
            #run
            // Evaluated at every build: a graph that is not one, or a join of two types that
            // differ, does not compile. The manifest and its hash (const SHA-256 is slow: about
            // a second per 4 KB) are evaluated only where they are used.
            const _: () = #c::text::check(&<#ident as #c::Composite>::GRAPH);
            const _: () = {
                #c::check::feeds::<#input, #root_in>();
                #c::check::feeds::<#root_out, #output>();
                #(#checks;)*
            };
        };
    }
}

/// The declaration's names.
struct Declared<'a> {
    ident: &'a syn::Ident,
    input: &'a syn::Type,
    output: &'a syn::Type,
    name: String,
    description: String,
}

/// The sealed `Flow` and `Composite` impls: the graph as a const, its manifest and hash.
fn impls(d: &Declared, walk: &Walk, root: &walk::Part, rt: &TokenStream) -> TokenStream {
    let Declared { ident, input, output, name, description } = d;
    let core = quote!(#rt::agents_core);
    let c = quote!(#core::compose);
    let seal = quote!(#rt::__private::seal);
    let nodes = walk.nodes.iter().map(|(id, kind)| quote!(#c::Node { id: #id, kind: #kind }));
    let edges = walk.edges.iter().map(|(from, to, kind)| {
        let kind = format_ident!("{kind}");
        quote!(#c::Edge { from: #from, to: #to, kind: #c::EdgeKind::#kind })
    });
    let (in_name, out_name, entry) = (type_string(input), type_string(output), &root.entry);
    quote! {
        impl #seal::DeclaredFlow for #ident {}
        impl #seal::DeclaredByCompositeMacro for #ident {}
        impl #c::Flow for #ident {
            type Input = #input;
            type Output = #output;
            const NODE: #c::NodeKind = #c::NodeKind::CompositeNode {
                composite: #name,
                manifest_sha256: <#ident as #c::Composite>::MANIFEST_SHA256,
                graph: &<#ident as #c::Composite>::GRAPH,
            };
            const DESCRIPTION: &'static str = #description;
        }
        impl #c::Composite for #ident {
            const GRAPH: #c::Graph = #c::Graph {
                name: #name,
                description: #description,
                input: #in_name,
                output: #out_name,
                entry: #entry,
                nodes: &[#(#nodes),*],
                edges: &[#(#edges),*],
            };
            const MANIFEST: &'static str = #core::composite_manifest!(&<#ident as #c::Composite>::GRAPH);
            const MANIFEST_SHA256: &'static str = #core::const_sha256_hex!(<#ident as #c::Composite>::MANIFEST);
        }
    }
}
