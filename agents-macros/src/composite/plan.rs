//! The run plan of a composite: for each flow the walk visits, the code that runs it, as a
//! closure `move |tree, input| -> BoxFuture<Result<Out, NodeFailure>>` that captures nothing
//! (so it is `Copy`, and a forum can run its members again). The combinators' logic lives in
//! the runtime (`agents_runtime::compose`); the plan only wires the nodes in the flow's order,
//! under the node ids the graph manifest names.
//!
//! Values cross from one node to the next through `compose::pass`: the types are checked
//! equal at compile time by the graph's checks (`agents_core::compose::check`), whose
//! messages teach; the plan never adds a second type error of its own.

use proc_macro2::TokenStream;
use quote::quote;

/// What the plan's code names: the runtime's `__private` paths and the composite's graph.
pub(crate) struct Plan {
    /// `<runtime>::__private`.
    private: TokenStream,
    /// The composite's `GRAPH` const.
    graph: TokenStream,
    /// Every agent or composite a node names, once each: whose orphaned proposals the
    /// composite's resumption settles.
    leaves: Vec<syn::Path>,
}

/// Who chooses a branch's arm, as the plan calls it.
pub(crate) enum Router<'a> {
    /// The application's `Route` type.
    Code(&'a syn::Path),
    /// The model: each arm's node id (the default's last) and the expression of what the model
    /// reads about it.
    Model(Vec<(String, TokenStream)>),
}

/// One walked flow as the plan sees it: its entry node id, its types and its closure.
pub(crate) struct Step<'a> {
    pub(crate) entry: &'a str,
    pub(crate) input: &'a TokenStream,
    pub(crate) output: &'a TokenStream,
    pub(crate) run: &'a TokenStream,
}

impl Plan {
    pub(crate) fn new(rt: &TokenStream, graph: TokenStream) -> Self {
        Plan { private: quote!(#rt::__private), graph, leaves: Vec::new() }
    }

    /// A closure from `input` to `output` whose async body is `body` (with `__tree` and
    /// `__input` in scope; `body` ends in a `Result`).
    fn closure(&self, input: &TokenStream, output: &TokenStream, body: TokenStream) -> TokenStream {
        let p = &self.private;
        quote! {
            move |__tree: #p::compose::Tree, __input: #input|
                -> #p::BoxFuture<'static, ::core::result::Result<#output, #p::compose::NodeFailure>> {
                #p::Box::pin(async move {
                    let __result: ::core::result::Result<#output, #p::compose::NodeFailure> = { #body };
                    __result
                })
            }
        }
    }

    /// `value` (an expression of `from`) as `to`, or the node's failure.
    fn pass(&self, value: TokenStream, from: &TokenStream, to: &TokenStream) -> TokenStream {
        let p = &self.private;
        quote!(#p::compose::pass::<#from, #to>(#value, __tree.path())?)
    }

    /// Runs `step` on `value` (of type `from`), giving its output as `to`.
    fn call(&self, step: &Step, value: TokenStream, from: &TokenStream, to: &TokenStream) -> TokenStream {
        let (run, (input, output)) = (step.run, (step.input, step.output));
        let value = self.pass(value, from, input);
        let out = self.pass(quote!(__out), output, to);
        quote!({ let __out = (#run)(__tree.clone(), #value).await?; #out })
    }

    /// An agent or composite, by its path.
    pub(crate) fn leaf(
        &mut self,
        id: &str,
        path: &syn::Path,
        input: &TokenStream,
        output: &TokenStream,
    ) -> TokenStream {
        if !self.leaves.contains(path) {
            self.leaves.push(path.clone());
        }
        let p = &self.private;
        self.closure(input, output, quote!(<#path as #p::compose::RunNode>::run_node(__tree, #id, __input).await))
    }

    /// `then(a, b, ...)`: each output is the next step's input.
    pub(crate) fn then(&self, steps: &[Step], input: &TokenStream, output: &TokenStream) -> TokenStream {
        let mut body = quote!(let __value = __input;);
        let mut ty = input;
        for step in steps {
            let call = self.call(step, quote!(__value), ty, step.output);
            body.extend(quote!(let __value = #call;));
            ty = step.output;
        }
        let last = self.pass(quote!(__value), ty, output);
        self.closure(input, output, quote!(#body ::core::result::Result::Ok(#last)))
    }

    /// `branch(router, [arms], default = d)`: the arm the router names, the default otherwise.
    pub(crate) fn branch(
        &self,
        id: &str,
        router: &Router,
        arms: &[Step],
        default: &Step,
        types: (&TokenStream, &TokenStream),
    ) -> TokenStream {
        let (input, output, graph) = (types.0, types.1, &self.graph);
        let choose = match router {
            Router::Code(r) => quote!(__tree.route::<#r, #input>(&#graph, #id, &__input).await?),
            Router::Model(described) => {
                let (ids, about): (Vec<&String>, Vec<&TokenStream>) = described.iter().map(|(i, a)| (i, a)).unzip();
                quote!(__tree.model_route::<#input>(&#graph, #id, &__input, &[#((#ids, #about)),*]).await?)
            }
        };
        let arms = arms.iter().map(|arm| {
            let (entry, call) = (arm.entry, self.call(arm, quote!(__input), input, output));
            quote!(#entry => #call,)
        });
        let default = self.call(default, quote!(__input), input, output);
        let body = quote! {
            let __arm: &'static str = #choose;
            ::core::result::Result::Ok(match __arm { #(#arms)* _ => #default })
        };
        self.closure(input, output, body)
    }

    /// `loop(body, max = N, until = S)`: the body at most `max` times, until `S` holds.
    pub(crate) fn looped(&self, id: &str, body: &Step, max: u32, until: Option<&syn::Path>) -> TokenStream {
        let (run, input, output) = (body.run, body.input, body.output);
        let stop = until.map(|s| quote!(if __tree.stop::<#s, #output>(#id, &__out).await? { __done = true; }));
        let back = self.pass(quote!(__out), output, input);
        let code = quote! {
            let mut __value = __input;
            let mut __done = false;
            let mut __round: u32 = 0;
            while !__done && __round < #max {
                __round += 1;
                let __out = (#run)(__tree.clone(), __value).await?;
                #stop
                __value = #back;
            }
            ::core::result::Result::Ok(__value)
        };
        self.closure(input, input, code)
    }

    /// The members of a parallel node or a forum, each on a copy of `__input`, as a `Vec`
    /// of members giving `item`.
    fn members(&self, members: &[Step], input: &TokenStream, item: &TokenStream) -> TokenStream {
        let p = &self.private;
        let each = members.iter().map(|m| {
            let call = self.call(m, quote!(__copy), input, item);
            quote! {{
                let __copy: #input = ::core::clone::Clone::clone(&__input);
                let __member: #p::compose::Member<#item> = #p::Box::new(move |__tree: #p::compose::Tree| {
                    #p::Box::pin(async move {
                        let __result: ::core::result::Result<#item, #p::compose::NodeFailure> =
                            ::core::result::Result::Ok(#call);
                        __result
                    })
                });
                __member
            }}
        });
        quote!(::std::vec![#(#each),*])
    }

    /// `parallel([members], join = J, on_failure = ...)`.
    pub(crate) fn parallel(&self, id: &str, members: &[Step], join: &syn::Path, collect: bool) -> TokenStream {
        let (first, p) = (&members[0], &self.private);
        let (input, item) = (first.input, first.output);
        let list = self.members(members, input, item);
        let output = quote!(<#join as #p::compose::Join>::Output);
        let joined = quote!(<#join as #p::compose::Join>::Item);
        let fail_fast = !collect;
        let body = quote! {
            let __members = #list;
            let __results = __tree.members(#id, #fail_fast, __members).await?;
            let __path = __tree.path().to_owned();
            let __items = __results
                .into_iter()
                .map(|r| r.and_then(|v| #p::compose::pass::<#item, #joined>(v, &__path).map_err(|f| f.to_string())))
                .collect();
            __tree.join::<#join>(#id, __items).await
        };
        self.closure(input, &output, body)
    }

    /// `forum([members], moderator = m, rounds = N)`.
    pub(crate) fn forum(&self, id: &str, members: &[Step], moderator: &Step, rounds: u32) -> TokenStream {
        let (first, p) = (&members[0], &self.private);
        let (input, item) = (first.input, first.output);
        let list = self.members(members, input, item);
        let answers = quote!(::std::vec::Vec<#item>);
        let decided = moderator.output;
        let decide = self.call(moderator, quote!(__input), &answers, decided);
        let body = quote! {
            let __members = || #list;
            let __moderator = move |__tree: #p::compose::Tree, __input: #answers| -> #p::BoxFuture<'static, ::core::result::Result<#decided, #p::compose::NodeFailure>> {
                #p::Box::pin(async move { ::core::result::Result::Ok(#decide) })
            };
            __tree.forum(#id, #rounds, __members, __moderator).await
        };
        self.closure(input, moderator.output, body)
    }

    /// `wrap(inner, before = [..], after = [..])`.
    pub(crate) fn wrap(&self, id: &str, inner: &Step, before: &[syn::Path], after: &[syn::Path]) -> TokenStream {
        let (run, input, output) = (inner.run, inner.input, inner.output);
        let before = before.iter().map(|s| quote!(let __value = __tree.step::<#s, #input>(#id, __value).await?;));
        let after = after.iter().map(|s| quote!(let __value = __tree.step::<#s, #output>(#id, __value).await?;));
        let body = quote! {
            let __value = __input;
            #(#before)*
            let __value = (#run)(__tree.clone(), __value).await?;
            #(#after)*
            ::core::result::Result::Ok(__value)
        };
        self.closure(input, output, body)
    }

    /// The `RunComposite` and `RunNode` impls of composite `ident` whose root flow is `root`.
    pub(crate) fn impls(&self, ident: &syn::Ident, root: &Step, types: (&syn::Type, &syn::Type)) -> TokenStream {
        let p = &self.private;
        let (input, output) = (types.0, types.1);
        let (input_ts, output_ts) = (quote!(#input), quote!(#output));
        let call = self.call(root, quote!(__input), &input_ts, &output_ts);
        let leaves = &self.leaves;
        quote! {
            #[allow(clippy::redundant_closure_call, clippy::let_and_return, unused_braces)]
            impl #p::compose::RunComposite for #ident {
                fn run(__tree: #p::compose::Tree, __input: #input)
                    -> #p::BoxFuture<'static, ::core::result::Result<#output, #p::compose::NodeFailure>> {
                    #p::Box::pin(async move {
                        let __result: ::core::result::Result<#output, #p::compose::NodeFailure> =
                            ::core::result::Result::Ok(#call);
                        __result
                    })
                }
                fn resume_nodes(__runtime: &#p::Runtime) -> #p::compose::Resumption<'_> {
                    #p::Box::pin(async move {
                        let mut __done = ::std::vec::Vec::new();
                        #( __done.extend(<#leaves as #p::compose::RunNode>::resume_node(__runtime).await?); )*
                        ::core::result::Result::Ok(__done)
                    })
                }
            }
            impl #p::compose::RunNode for #ident {
                fn run_node(__tree: #p::compose::Tree, __id: &'static str, __input: #input)
                    -> #p::BoxFuture<'static, ::core::result::Result<#output, #p::compose::NodeFailure>> {
                    <#ident as #p::compose::RunComposite>::run(__tree.enter(__id), __input)
                }
                fn resume_node(__runtime: &#p::Runtime) -> #p::compose::Resumption<'_> {
                    <#ident as #p::compose::RunComposite>::resume_nodes(__runtime)
                }
            }
        }
    }
}
