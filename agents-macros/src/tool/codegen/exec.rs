//! How the tool runs: the handler's call of the function, the execution trait of its tier
//! (`ReadTool`, `ActionTool` behind its witness, `HandoffTool`) and its registry handler
//! (`Dispatch`), bounded as the tool bounds its agent.

use crate::tool::model::{Handler, ParamKind, Tool};
use agents_core::Tier;
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Signature, Type};

/// The handler's body: unpack the arguments, call the function and convert its result.
/// Every parameter is passed by value: the function takes what the tool borrows as an owned
/// value and borrows it itself (see `function::owned_signature`), so the tool's own future
/// owns everything it uses and is the handler's future, boxed once, with no wrapper future
/// per tool.
///
/// What the runtime gives (the context, a capability handle) is `Supplied::supply(call)`:
/// the compiler picks the implementation by the parameter's type, so the context under an
/// alias is the context, and a type the runtime does not supply is refused at the parameter.
pub(super) fn invoke(tool: &Tool<'_>, rt: &TokenStream) -> TokenStream {
    let func = tool.func;
    let fn_ident = &func.sig.ident;
    if tool.emit.handler == Handler::Stub {
        // Already reported; a stub keeps the tool's impls, so its users see no follow-on errors.
        return quote! {
            let _ = (__call, &__args);
            #rt::__private::ToolFuture::new(async {
                ::core::result::Result::<#rt::__private::serde_json::Value, _>::Err("this tool failed to compile")
            })
        };
    }
    let call_args = tool.params.iter().map(|p| {
        let ident = &p.ident;
        match p.kind {
            ParamKind::Context | ParamKind::Capability(_) => {
                quote_spanned!(p.ty.span()=> #rt::tool::Supplied::supply(__call))
            }
            ParamKind::Arg => quote!(__args.#ident),
        }
    });
    let turbofish = tool.agent.map(|_| quote!(::<__A>));
    let call = quote!(#fn_ident #turbofish(#(#call_args),*));
    if let Some(ret) = nameable_return(&func.sig) {
        // Converted through the return type, spanned on it: a return type that is not
        // `Result<T: Serialize, E: Display>`, or a future that is not `Send`, is reported
        // there, in `IntoToolResult`'s words. Bound to a local first: a future that is not
        // `Send` is then named by the user's return type, not by the hidden function.
        let future = if func.sig.asyncness.is_some() { call } else { quote!(async move { #call }) };
        let convert = quote_spanned!(ret.span()=> <#ret as #rt::tool::IntoToolResult>::tool_future(__future));
        quote! {
            let __future = #future;
            #convert
        }
    } else if func.sig.asyncness.is_some() {
        quote!(#rt::__private::IntoToolFuture::into_tool_future(#call))
    } else {
        // A synchronous body runs when the future is first polled, as an async one would.
        quote!(#rt::__private::ToolFuture::new(async move { #call }))
    }
}

/// The execution impls of the tool's tier and its `Dispatch`. A non-generic tool's body is
/// compiled once, in its `ReadTool`/`ActionTool` impl, and the registry handler delegates to
/// it; only a tool generic over the agent builds its body in the handler, where the agent
/// type is known.
pub(super) fn impls(
    tool: &Tool<'_>,
    args_ident: &Ident,
    invoke: &TokenStream,
    entry_digest: &TokenStream,
    rt: &TokenStream,
) -> TokenStream {
    let fn_ident = &tool.func.sig.ident;
    let seal = quote!(#rt::__private::seal);
    let (exec_impl, handler) = match tool.tier {
        Tier::Read => read(tool, args_ident, invoke, rt),
        Tier::Action => action(tool, args_ident, invoke, rt),
        // Nothing runs, so any agent may dispatch it, whatever the tool's bounds.
        Tier::Handoff => (
            quote!(impl #seal::HandoffByToolMacro for #fn_ident {} impl #rt::HandoffTool for #fn_ident {}),
            quote!(#rt::tool::Handler::Handoff(::core::marker::PhantomData)),
        ),
        other => unreachable!("`#[tool]` gives a tool one of the three tiers, not {other}"),
    };
    let dispatch_where = if tool.tier == Tier::Handoff { quote!() } else { agent_where(tool, rt) };
    // An isolated tool's arguments cross to its worker process as JSON: the registry's parse
    // checks them as strictly as any tool's and keeps the checked value.
    let parse = tool
        .isolated
        .then(|| quote!(const PARSE: #rt::tool::ParseArgs = <Self as #rt::Dispatch<__A>>::PARSE_KEEPING_JSON;));
    quote! {
        #exec_impl
        impl #seal::DeclaredByToolMacro for #fn_ident {
            const MANIFEST_ENTRY: u128 = #entry_digest;
        }
        impl<__A> #seal::DispatchedByToolMacro<__A> for #fn_ident #dispatch_where {}
        impl<__A> #rt::Dispatch<__A> for #fn_ident #dispatch_where {
            #parse
            fn handler() -> #rt::tool::Handler<__A> {
                #handler
            }
        }
    }
}

/// A read tool: `ReadTool`, or for a tool generic over its agent, a handler that runs it.
fn read(tool: &Tool<'_>, args_ident: &Ident, invoke: &TokenStream, rt: &TokenStream) -> (TokenStream, TokenStream) {
    let fn_ident = &tool.func.sig.ident;
    let seal = quote!(#rt::__private::seal);
    if tool.agent.is_some() {
        let downcast = quote!(let __args: #args_ident = #rt::__private::downcast_args(__erased););
        return (
            quote!(impl #seal::ReadByToolMacro for #fn_ident {}),
            quote!(#rt::tool::Handler::Read(|__call, __erased| { #downcast #invoke })),
        );
    }
    let exec = quote! {
        impl #seal::ReadByToolMacro for #fn_ident {}
        impl #rt::ReadTool for #fn_ident {
            fn run<'__a>(
                __call: &'__a #rt::CallContext,
                __args: #args_ident,
            ) -> #rt::__private::ToolFuture<'__a> {
                #invoke
            }
        }
    };
    (exec, quote!(#rt::tool::Handler::Read(#rt::__private::read_handler::<#fn_ident>)))
}

/// An action tool: its body runs only with the witness of this call's approval, the one the
/// gate recorded for this very call.
fn action(tool: &Tool<'_>, args_ident: &Ident, invoke: &TokenStream, rt: &TokenStream) -> (TokenStream, TokenStream) {
    let fn_ident = &tool.func.sig.ident;
    let seal = quote!(#rt::__private::seal);
    if tool.agent.is_some() {
        let downcast = quote!(let __args: #args_ident = #rt::__private::downcast_args(__erased););
        let handler = quote!(#rt::tool::Handler::Action(|__call, __erased| {
            match #rt::__private::approval_of::<#fn_ident>(__call) {
                ::core::result::Result::Ok(_) => {}
                ::core::result::Result::Err(__e) => return #rt::__private::refused(__e),
            }
            #downcast
            #invoke
        }));
        return (quote!(impl #seal::ActionByToolMacro for #fn_ident {}), handler);
    }
    let exec = quote! {
        impl #seal::ActionByToolMacro for #fn_ident {}
        impl #rt::ActionTool for #fn_ident {
            fn run_approved<'__a>(
                __call: &'__a #rt::CallContext,
                __args: #args_ident,
                __approval: #rt::Approval<'__a, Self>,
            ) -> #rt::__private::ToolFuture<'__a> {
                if let ::core::result::Result::Err(__e) = #rt::__private::verify_approval(&__approval, __call) {
                    return #rt::__private::refused(__e);
                }
                #invoke
            }
        }
    };
    (exec, quote!(#rt::tool::Handler::Action(#rt::__private::action_handler::<#fn_ident>)))
}

/// The `where` clause of a tool generic over its agent: its bounds, written on `__A`.
fn agent_where(tool: &Tool<'_>, rt: &TokenStream) -> TokenStream {
    let Some(tp) = tool.agent else { return quote!() };
    let bounds = &tp.bounds;
    let mut preds = vec![quote!(__A: #rt::Agent)];
    if !bounds.is_empty() {
        preds.push(quote!(__A: #bounds));
    }
    if let Some(wc) = &tool.func.sig.generics.where_clause {
        preds.extend(wc.predicates.iter().map(|p| quote!(#p)));
    }
    // The bounds name the user's parameter; in the impl header it is `__A`.
    substitute_ident(quote!(where #(#preds),*), &tp.ident, &format_ident!("__A"))
}

/// The tokens with each `from` replaced by `to`, at any depth.
fn substitute_ident(tokens: TokenStream, from: &Ident, to: &Ident) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) if i == *from => proc_macro2::TokenTree::Ident(to.clone()),
            proc_macro2::TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), substitute_ident(g.stream(), from, to));
                ng.set_span(g.span());
                proc_macro2::TokenTree::Group(ng)
            }
            other => other,
        })
        .collect()
}

/// The type a tool's future yields, when the handler can name it (no `impl Trait`, no
/// lifetime or type parameter of the function's own): the handler then converts the result
/// through `<T as IntoToolResult>`, so that a return type that is not `Result<T, E>` (or a
/// future that is not `Send`) is reported on the user's return type.
fn nameable_return(sig: &Signature) -> Option<&Type> {
    let syn::ReturnType::Type(_, ty) = &sig.output else { return None };
    fn mentions(tokens: TokenStream, names: &[String]) -> bool {
        let tts: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        tts.iter().enumerate().any(|(i, tt)| match tt {
            proc_macro2::TokenTree::Ident(id) => id == "impl" || id == "Self" || names.contains(&id.to_string()),
            proc_macro2::TokenTree::Punct(p) if p.as_char() == '\'' => {
                !matches!(tts.get(i + 1), Some(proc_macro2::TokenTree::Ident(l)) if l == "static" || l == "_")
            }
            proc_macro2::TokenTree::Group(g) => mentions(g.stream(), names),
            _ => false,
        })
    }
    let params: Vec<String> = sig.generics.type_params().map(|t| t.ident.to_string()).collect();
    (!mentions(ty.to_token_stream(), &params)).then_some(&**ty)
}
