//! The witness that a person approved this exact call ([`Approval`]).

use super::context::CallContext;
use super::error::ToolError;
use agents_core::Tool;
use std::fmt;
use std::marker::PhantomData;

/// The witness that a person approved this exact call of the tool `T`. Only the gate mints
/// one, after redeeming a confirmation token bound to the session, the tool and the arguments.
///
/// - Tied to the tool by its type: [`ActionTool::run_approved`](super::ActionTool::run_approved)
///   of `T` takes an `Approval<'_, T>`, so a witness for one tool does not type-check for
///   another.
/// - Tied to this call by its value: it carries the nonce of the gate's record of the redeemed
///   token, kept in this call's [`CallContext`]. The tool's `run_approved` compares the two
///   before the body runs and refuses on any difference, so a witness moved to another call,
///   or bytes forged with `unsafe` (`std::mem::zeroed`, `transmute`), run nothing.
///
/// No constructor is public; against `unsafe` code that reads the runtime's memory there is no
/// guarantee (see the crate docs, "Whom each guarantee holds against").
pub struct Approval<'a, T: ?Sized> {
    nonce: [u8; 16],
    _call: PhantomData<&'a CallContext>,
    _tool: PhantomData<fn() -> T>,
}

impl<T: ?Sized> fmt::Debug for Approval<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Approval")
    }
}

impl<'a, T: Tool> Approval<'a, T> {
    /// The witness of `call`'s approval, when the gate recorded one for the tool `T`.
    pub(crate) fn of_call(call: &'a CallContext) -> Result<Self, ToolError> {
        match &call.approved {
            Some(record) if record.tool == T::NAME && call.spec.name == T::NAME => {
                Ok(Approval { nonce: record.nonce, _call: PhantomData, _tool: PhantomData })
            }
            _ => Err(ToolError::new(format!(
                "`{}` was not approved for this call; nothing ran (an action tool runs only after a person approved the exact call)",
                T::NAME
            ))),
        }
    }

    /// Whether this witness is the one the gate recorded for `call`: same tool, same nonce.
    pub(crate) fn verify(&self, call: &CallContext) -> Result<(), ToolError> {
        let ok = match &call.approved {
            Some(record) => {
                record.tool == T::NAME
                    && call.spec.name == T::NAME
                    && record.nonce.iter().zip(&self.nonce).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
            }
            None => false,
        };
        if ok {
            Ok(())
        } else {
            Err(ToolError::new(format!(
                "the approval presented for `{}` does not belong to this call; nothing ran",
                T::NAME
            )))
        }
    }

    /// The id of the confirmation token the gate redeemed for this call.
    pub fn token_id<'c>(&self, call: &'c CallContext) -> Option<&'c str> {
        call.approved.as_ref().filter(|r| r.nonce == self.nonce).map(|r| r.token_id.as_str())
    }

    #[cfg(test)]
    pub(crate) fn forged(nonce: [u8; 16]) -> Self {
        Approval { nonce, _call: PhantomData, _tool: PhantomData }
    }
}
