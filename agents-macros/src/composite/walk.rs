//! From a flow as written to its graph (node ids, edges) and the type checks of each join:
//! one walk, in the order the flow is written.

use super::parse::{Flow, RouterInput};
use super::plan::{Plan, Router, Step};
use crate::util::type_string;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use std::collections::BTreeMap;
use syn::Path;

/// What a walk gathers.
pub(crate) struct Walk {
    /// The path of `agents_core::compose`.
    compose: TokenStream,
    /// How many nodes start with each base id.
    used: BTreeMap<String, u32>,
    /// Each node: its id and its `NodeKind` expression.
    pub(crate) nodes: Vec<(String, TokenStream)>,
    /// Each edge: from, to, the `EdgeKind` variant.
    pub(crate) edges: Vec<(String, String, &'static str)>,
    /// Each check: a const call, spanned on the tokens it is about.
    pub(crate) checks: Vec<TokenStream>,
    /// How each walked flow runs.
    pub(crate) plan: Plan,
}

/// A walked flow: where it starts and ends in the graph, and its types.
pub(crate) struct Part {
    pub(crate) entry: String,
    pub(crate) exit: String,
    pub(crate) input: TokenStream,
    pub(crate) output: TokenStream,
    /// The closure that runs it (see [`Plan`]).
    pub(crate) run: TokenStream,
}

impl Part {
    /// The part as the plan sees it.
    pub(crate) fn step(&self) -> Step<'_> {
        Step { entry: &self.entry, input: &self.input, output: &self.output, run: &self.run }
    }
}

/// `KycReviewer` → `kyc-reviewer`.
pub(crate) fn kebab(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower = i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if i > 0 && (prev_lower || (chars[i - 1].is_uppercase() && next_lower)) {
                out.push('-');
            }
            out.extend(c.to_lowercase());
        } else if *c == '_' {
            out.push('-');
        } else {
            out.push(*c);
        }
    }
    out
}

impl Walk {
    pub(crate) fn new(compose: TokenStream, plan: Plan) -> Self {
        Walk { compose, used: BTreeMap::new(), nodes: Vec::new(), edges: Vec::new(), checks: Vec::new(), plan }
    }

    /// A fresh node id: `base`, then `base-2`, `base-3`, ...
    fn id(&mut self, base: &str) -> String {
        let n = self.used.entry(base.to_owned()).or_insert(0);
        *n += 1;
        if *n == 1 { base.to_owned() } else { format!("{base}-{n}") }
    }

    fn node(&mut self, base: &str, kind: TokenStream) -> String {
        let id = self.id(base);
        self.nodes.push((id.clone(), kind));
        id
    }

    fn check(&mut self, span: Span, name: &str, args: [&TokenStream; 2]) {
        let (c, f) = (&self.compose, syn::Ident::new(name, span));
        let [a, b] = args;
        // Every token on the user's: the error then points at the step, not the macro.
        self.checks.push(respan(quote!(#c::check::#f::<#a, #b>()), span));
    }

    /// Walks one flow.
    pub(crate) fn flow(&mut self, flow: &Flow) -> Part {
        let c = self.compose.clone();
        match flow {
            Flow::Leaf(path) => self.leaf(path),
            Flow::Then(_, steps) => self.then(steps),
            Flow::Branch { router, arms, default, .. } => self.branch(router, arms, default),
            Flow::Loop { body, max, until, .. } => {
                let id = self.node("loop", quote!(#c::NodeKind::Loop { max_iterations: #max }));
                let body = self.flow(body);
                self.edges.push((id.clone(), body.entry.clone(), "Body"));
                self.check(flow.span(), "loops_back", [&body.output, &body.input]);
                if let Some(until) = until {
                    self.check(span_of(until), "stops", [&quote!(#until), &body.output]);
                }
                let run = self.plan.looped(&id, &body.step(), *max, until.as_ref());
                Part { entry: id.clone(), exit: id, input: body.input, output: body.output, run }
            }
            Flow::Parallel { members, join, collect, .. } => {
                let policy = if *collect { quote!(Collect) } else { quote!(FailFast) };
                let name = type_string(join);
                let id = self.node(
                    "parallel",
                    quote!(#c::NodeKind::Parallel { join: #name, on_failure: #c::OnFailure::#policy }),
                );
                let walked = self.members(&id, members);
                self.check(span_of(join), "joins", [&quote!(#join), &walked[0].output]);
                let output = quote!(<#join as #c::Join>::Output);
                let steps: Vec<Step> = walked.iter().map(Part::step).collect();
                let run = self.plan.parallel(&id, &steps, join, *collect);
                let input = walked[0].input.clone();
                Part { entry: id.clone(), exit: id, input, output, run }
            }
            Flow::Forum { members, moderator, rounds, .. } => {
                let id = self.node("forum", quote!(#c::NodeKind::Forum { rounds: #rounds }));
                let walked = self.members(&id, members);
                let m = self.flow(moderator);
                self.edges.push((id.clone(), m.entry.clone(), "Moderator"));
                let answers = &walked[0].output;
                self.check(moderator.span(), "feeds", [&quote!(::std::vec::Vec<#answers>), &m.input]);
                let steps: Vec<Step> = walked.iter().map(Part::step).collect();
                let run = self.plan.forum(&id, &steps, &m.step(), *rounds);
                let input = walked[0].input.clone();
                Part { entry: id.clone(), exit: id, input, output: m.output, run }
            }
            Flow::Wrap { inner, before, after, .. } => self.wrap(inner, before, after),
        }
    }

    fn leaf(&mut self, path: &Path) -> Part {
        let c = &self.compose;
        let last = path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        let kind = quote_spanned!(span_of(path)=> <#path as #c::Flow>::NODE);
        let (input, output) = (quote!(<#path as #c::Flow>::Input), quote!(<#path as #c::Flow>::Output));
        let id = self.node(&kebab(&last), kind);
        let run = self.plan.leaf(&id, path, &input, &output);
        Part { entry: id.clone(), exit: id, input, output, run }
    }

    fn then(&mut self, steps: &[Flow]) -> Part {
        let mut parts: Vec<Part> = Vec::new();
        for step in steps {
            let part = self.flow(step);
            if let Some(before) = parts.last() {
                self.edges.push((before.exit.clone(), part.entry.clone(), "Then"));
                let before_out = before.output.clone();
                self.check(step.span(), "feeds", [&before_out, &part.input]);
            }
            parts.push(part);
        }
        let steps: Vec<Step> = parts.iter().map(Part::step).collect();
        let (first, last) = (&parts[0], &parts[parts.len() - 1]);
        let run = self.plan.then(&steps, &first.input, &last.output);
        Part {
            entry: first.entry.clone(),
            exit: last.exit.clone(),
            input: first.input.clone(),
            output: last.output.clone(),
            run,
        }
    }

    fn branch(&mut self, router: &RouterInput, arms: &[Flow], default: &Flow) -> Part {
        let c = self.compose.clone();
        let kind = match router {
            RouterInput::Code(_) => quote!(Code),
            RouterInput::Model => quote!(Model),
        };
        let id = self.node("branch", quote!(#c::NodeKind::Branch { router: #c::Router::#kind }));
        let mut walked = Vec::new();
        for arm in arms {
            let part = self.flow(arm);
            self.edges.push((id.clone(), part.entry.clone(), "Arm"));
            walked.push((arm.span(), part));
        }
        let d = self.flow(default);
        self.edges.push((id.clone(), d.entry.clone(), "Default"));
        for (span, part) in &walked {
            self.check(*span, "matches", [&part.input, &d.input]);
            self.check(*span, "matches", [&part.output, &d.output]);
        }
        let router = match router {
            RouterInput::Code(path) => {
                self.check(span_of(path), "routes", [&quote!(#path), &d.input]);
                Router::Code(path)
            }
            RouterInput::Model => {
                let described =
                    arms.iter().chain([default]).zip(walked.iter().map(|(_, p)| &p.entry).chain([&d.entry]));
                Router::Model(described.map(|(flow, entry)| (entry.clone(), self.about(flow))).collect())
            }
        };
        let steps: Vec<Step> = walked.iter().map(|(_, part)| part.step()).collect();
        let run = self.plan.branch(&id, &router, &steps, &d.step(), (&d.input, &d.output));
        Part { entry: id.clone(), exit: id, input: d.input, output: d.output, run }
    }

    /// What a model router reads about an arm: an agent's or a composite's description; an
    /// arm written as a combinator is known by its node id alone.
    fn about(&self, flow: &Flow) -> TokenStream {
        let c = &self.compose;
        match flow {
            Flow::Leaf(path) => quote!(<#path as #c::Flow>::DESCRIPTION),
            _ => quote!(""),
        }
    }

    /// Walks the members of a parallel node or a forum and checks that they match the first.
    fn members(&mut self, id: &str, members: &[Flow]) -> Vec<Part> {
        let mut walked: Vec<Part> = Vec::new();
        for member in members {
            let part = self.flow(member);
            self.edges.push((id.to_owned(), part.entry.clone(), "Member"));
            if let Some(f) = walked.first() {
                let (fi, fo) = (f.input.clone(), f.output.clone());
                self.check(member.span(), "matches", [&part.input, &fi]);
                self.check(member.span(), "matches", [&part.output, &fo]);
            }
            walked.push(part);
        }
        walked
    }

    fn wrap(&mut self, inner: &Flow, before: &[Path], after: &[Path]) -> Part {
        let c = self.compose.clone();
        let names = before.iter().chain(after).map(type_string);
        let id = self.node("wrap", quote!(#c::NodeKind::Wrap { steps: &[#(#names),*] }));
        let part = self.flow(inner);
        self.edges.push((id.clone(), part.entry.clone(), "Inner"));
        for step in before {
            self.check(span_of(step), "steps", [&quote!(#step), &part.input]);
        }
        for step in after {
            self.check(span_of(step), "steps", [&quote!(#step), &part.output]);
        }
        let run = self.plan.wrap(&id, &part.step(), before, after);
        Part { entry: id.clone(), exit: id, input: part.input, output: part.output, run }
    }
}

fn span_of(path: &Path) -> Span {
    syn::spanned::Spanned::span(path)
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let proc_macro2::TokenTree::Group(g) = &tree {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tree = proc_macro2::TokenTree::Group(group);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}
