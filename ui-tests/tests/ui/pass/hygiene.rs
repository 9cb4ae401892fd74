// The user's scope shadows the prelude and the crates the generated code relies on.
#![allow(dead_code, non_camel_case_types)]

type Result = ();
struct Option;
struct String;
struct Box;
struct Vec;
struct Some;
struct None;
struct Ok;
struct Err;
struct Default;
struct Value;
mod serde {}
mod schemars {}
mod inventory {}
mod futures {}
mod core {}
mod std {}

use ::agents_runtime::{Agent, Grants, Registry, ToolContext, agent, permissions, tool};

permissions! {
    pub mod perms {
        athlete.read,
        injury.write,
    }
}

/// Lists athletes visible to the caller.
#[tool(permission = perms::athlete::read, risk = low)]
async fn list_athletes(
    squad: ::std::option::Option<::std::string::String>,
    name: &str,
) -> ::std::result::Result<::std::vec::Vec<::std::string::String>, ::std::string::String> {
    ::std::result::Result::Ok(::std::vec![::std::format!("{squad:?}:{name}")])
}

/// Records an injury.
///
/// # Arguments
///
/// * `athlete_id` - the athlete id
/// * `note` - the note
#[tool(permission = perms::injury::write, mutating, title = "Record injury")]
async fn create_injury(
    athlete_id: u64,
    #[secret] note: ::std::string::String,
) -> ::std::result::Result<u64, ::std::string::String> {
    let _ = note;
    ::std::result::Result::Ok(athlete_id)
}

/// Resets a password: a person at the service desk does this.
#[tool(permission = public, handoff)]
fn reset_password(user: ::std::string::String);

/// Summarises the squad through `list_athletes`.
#[tool(permission = perms::athlete::read)]
async fn summary<A: Grants<list_athletes>>(
    cx: &ToolContext<'_, A>,
) -> ::std::result::Result<::std::string::String, ::std::string::String> {
    let _ = cx;
    ::std::result::Result::Ok(::std::string::String::new())
}

agent! {
    /// Helps clinicians.
    pub struct Clinic;
    tools: [list_athletes, create_injury, reset_password, summary],
    skills: { intake: [create_injury] },
    ceiling: [perms::athlete::read, perms::injury::write],
    limits: { max_iterations: 8 },
}

fn main() {
    ::std::assert_eq!(<Clinic as Agent>::tools().len(), 4);
    ::std::assert!(<Clinic as Registry>::entry("summary").is_some());
    ::std::assert!(Clinic::MANIFEST.contains("\"reset_password\""));
}
