//! The future a tool's handler returns ([`ToolFuture`]) and the conversion of a tool's
//! return value into the tool result ([`IntoToolResult`]).

use super::error::ToolError;
use serde_json::Value;
use std::fmt;

/// The future a tool's handler returns: the tool's own future, boxed once, whose output becomes
/// the tool result ([`IntoToolResult`]) when it completes.
///
/// ```
/// use agents_runtime::tool::ToolFuture;
///
/// let fut = ToolFuture::new(async { Ok::<_, String>(vec![1, 2, 3]) });
/// let result = futures::executor::block_on(fut);
/// assert_eq!(result.unwrap(), serde_json::json!([1, 2, 3]));
/// ```
#[must_use = "a future does nothing unless polled"]
pub struct ToolFuture<'a>(std::pin::Pin<Box<dyn PollResult + Send + 'a>>);

impl<'a> ToolFuture<'a> {
    /// Boxes `future`; its output is converted with [`IntoToolResult`].
    pub fn new<F>(future: F) -> Self
    where
        F: std::future::Future<Output: IntoToolResult> + Send + 'a,
    {
        ToolFuture(Box::pin(future))
    }
}

impl fmt::Debug for ToolFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ToolFuture")
    }
}

impl std::future::Future for ToolFuture<'_> {
    type Output = Result<Value, ToolError>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        self.get_mut().0.as_mut().poll_result(cx)
    }
}

/// A future polled through a trait object, its output converted to a tool result.
///
/// A trait method, implemented for the future itself: the code for each tool's future is then
/// compiled with that tool (its module), not in one shared unit that every edit of any tool
/// would make the compiler redo.
pub(crate) trait PollResult {
    fn poll_result(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Value, ToolError>>;
}

impl<F: std::future::Future<Output: IntoToolResult>> PollResult for F {
    fn poll_result(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<Value, ToolError>> {
        match self.poll(cx) {
            std::task::Poll::Ready(output) => std::task::Poll::Ready(output.into_tool_result()),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

/// Boxes a tool's own future as its handler's future (what `#[tool]` generates calls). A
/// trait method for the same reason as [`PollResult`]: each tool's instance is compiled with
/// the tool.
#[doc(hidden)]
pub trait IntoToolFuture<'a>: std::future::Future<Output: IntoToolResult> + Send + Sized + 'a {
    /// `ToolFuture::new(self)`.
    fn into_tool_future(self) -> ToolFuture<'a> {
        ToolFuture(Box::pin(self))
    }
}

impl<'a, F: std::future::Future<Output: IntoToolResult> + Send + 'a> IntoToolFuture<'a> for F {}

/// Converts a handler's return value into the tool result: what a tool's return type must be.
///
/// A tool returns `Result<T, E>` where `T` is [`ToolSuccess`] (`serde::Serialize`) and `E` is
/// [`ToolFailure`] (`Display`). `#[tool]` checks this at the function's return type, so a
/// mistake is reported there, in these words, rather than inside the expansion.
#[diagnostic::on_unimplemented(
    message = "a tool returns `Result<T, E>` where `T: Serialize` and `E: Display`; `{Self}` is not a `Result`",
    label = "a tool cannot return `{Self}`",
    note = "wrap the value: `-> Result<{Self}, String>` and return `Ok(value)`; the error's text is what the model and the person read when the tool fails"
)]
pub trait IntoToolResult {
    /// The conversion.
    fn into_tool_result(self) -> Result<Value, ToolError>;

    /// Boxes a tool's future whose output is `Self` (what `#[tool]` generates calls, at the
    /// tool's return type, so that a return type or a future that is not `Send` is reported
    /// on the user's tokens).
    #[doc(hidden)]
    fn tool_future<'a, F>(future: F) -> ToolFuture<'a>
    where
        F: std::future::Future<Output = Self> + Send + 'a,
        Self: Sized,
    {
        ToolFuture(Box::pin(future))
    }
}

/// What a tool's success value must be: it is sent to the model as JSON, so it implements
/// `serde::Serialize`. Implemented for every such type; the trait exists so the compiler says
/// this in a tool's terms.
#[diagnostic::on_unimplemented(
    message = "a tool's success value is sent to the model as JSON, but `{Self}` does not implement `serde::Serialize`",
    label = "`{Self}` is not `Serialize`",
    note = "derive it on your type: `#[derive(serde::Serialize)]`, or return a type that is (`String`, `serde_json::Value`, ...)"
)]
pub trait ToolSuccess: serde::Serialize {}

#[diagnostic::do_not_recommend]
impl<T: serde::Serialize + ?Sized> ToolSuccess for T {}

/// What a tool's error must be: the model and the person read it as text, so it implements
/// `Display`. Implemented for every such type; the trait exists so the compiler says this in
/// a tool's terms.
#[diagnostic::on_unimplemented(
    message = "a tool's error is shown to the model and the person as text, but `{Self}` does not implement `std::fmt::Display`",
    label = "`{Self}` is not `Display`",
    note = "implement `Display` for your error type (or use `thiserror`), or return `Result<T, String>` and map the error: `.map_err(|e| e.to_string())`"
)]
pub trait ToolFailure: fmt::Display {}

#[diagnostic::do_not_recommend]
impl<T: fmt::Display + ?Sized> ToolFailure for T {}

impl<T: ToolSuccess, E: ToolFailure> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<Value, ToolError> {
        match self {
            Ok(v) => {
                serde_json::to_value(v).map_err(|e| ToolError::new(format!("the result could not be serialized: {e}")))
            }
            Err(e) => Err(ToolError::new(e.to_string())),
        }
    }
}
