//! A parameter's description in the schema sent to the model comes from the tool's doc comment
//! (`# Arguments`), and nothing stands in for a missing one (a read tool may leave one out; an
//! action tool may not, which `ui-tests` shows).

use agents_runtime::{Tool, tool};

/// Records an injury for an athlete.
///
/// # Arguments
///
/// * `athlete_id` - the athlete's id, as the squad list shows it
/// * `side` - `left`, `right` or `n/a`;
///   `n/a` for a midline injury
#[tool(permission = public)]
async fn record_injury(athlete_id: String, side: String, note: Option<String>) -> Result<String, String> {
    Ok(format!("{athlete_id} {side} {note:?}"))
}

#[test]
fn each_parameter_is_described_by_its_arguments_item() {
    let schema = record_injury::input_schema();
    let props = &schema["properties"];
    assert_eq!(props["athlete_id"]["description"], "the athlete's id, as the squad list shows it", "{schema}");
    assert_eq!(props["side"]["description"], "`left`, `right` or `n/a`; `n/a` for a midline injury", "{schema}");
}

#[test]
fn an_undescribed_parameter_gets_no_placeholder() {
    let schema = record_injury::input_schema();
    assert!(schema["properties"]["note"].get("description").is_none(), "{schema}");
    assert!(!schema.to_string().contains("parameter."), "{schema}");
}

#[test]
fn the_tool_description_leaves_the_arguments_section_to_the_schema() {
    let spec = <record_injury as Tool>::SPEC;
    assert_eq!(spec.description, "Records an injury for an athlete.");
}

#[test]
fn required_and_optional_parameters_are_told_apart() {
    let schema = record_injury::input_schema();
    assert_eq!(schema["required"], serde_json::json!(["athlete_id", "side"]), "{schema}");
    assert_eq!(schema["additionalProperties"], serde_json::json!(false), "{schema}");
}
