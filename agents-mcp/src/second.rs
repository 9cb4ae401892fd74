//! The second elicitation of a proposal the application's policy asks a second confirmation of
//! (see `agents_runtime::untrusted`): after the person's first approval, a form whose one
//! required field is the acknowledgement, a choice with one value, the sentence that names the
//! flagged argument and where its value came from. Only an answer that accepts the form with
//! exactly that sentence approves; anything else runs nothing.

use agents_runtime::run::ConfirmRequest;
use agents_runtime::untrusted::Acknowledgement;
use rmcp::model::{ElicitationSchema, EnumSchema, PrimitiveSchemaDefinition};
use serde_json::Value;
use std::collections::BTreeMap;

/// The field of the second form.
pub(crate) const ACKNOWLEDGE_FIELD: &str = "acknowledge";

/// The text of the second elicitation: the warning first, then `card` (the first form's text).
pub(crate) fn message(request: &ConfirmRequest, ack: &Acknowledgement, card: &str) -> String {
    format!(
        "Second confirmation: {}\n\nYou approved this once. Before it runs, check this warning: {}.\n\n{card}\n\nChoose \"{}\" in \"{ACKNOWLEDGE_FIELD}\" to run it once; anything else and nothing runs.",
        request.title,
        ack.warning,
        ack.phrase()
    )
}

/// The second form: one required field whose only value is the acknowledgement's sentence.
pub(crate) fn schema(ack: &Acknowledgement) -> ElicitationSchema {
    let choice = EnumSchema::builder(vec![ack.phrase()])
        .title("Acknowledge")
        .description("Confirm that you checked where this value came from")
        .untitled()
        .build();
    let mut props = BTreeMap::new();
    props.insert(ACKNOWLEDGE_FIELD.to_owned(), PrimitiveSchemaDefinition::Enum(choice));
    ElicitationSchema::new(props).with_required(vec![ACKNOWLEDGE_FIELD.to_owned()])
}

/// Whether an accepted second form acknowledges `ack`: its field holds exactly the sentence.
pub(crate) fn acknowledged(content: Option<&Value>, ack: &Acknowledgement) -> bool {
    content.and_then(|c| c.get(ACKNOWLEDGE_FIELD)).and_then(Value::as_str) == Some(ack.phrase().as_str())
}
