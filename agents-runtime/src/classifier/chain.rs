//! Several classifiers composed: a reply reads as the strictest of their readings.

use super::reading::{Classification, ConfirmationClassifier, ProposalSummary};
use crate::BoxFuture;
use crate::budget::{MeteredCalls, Unmetered};
use std::sync::Arc;

/// Several classifiers read one reply; it reads as the strictest of their readings (see the
/// [module docs](super)): it confirms only when every one of them confirms.
///
/// The classifiers are asked in order; once one reads `Cancel` (the strictest reading) the
/// rest are not asked, since they cannot change the result.
///
/// ```
/// use agents_runtime::classifier::{Chain, Classification, ConfirmationClassifier, KeywordClassifier, ProposalSummary};
///
/// let chain = Chain::new(KeywordClassifier).then(KeywordClassifier);
/// let proposal = ProposalSummary { tool: "t".into(), title: "T".into(), args: serde_json::json!({}) };
/// let reading = futures::executor::block_on(chain.classify(&proposal, "yes please"));
/// assert_eq!(reading, Classification::Confirm);
/// ```
#[derive(Clone)]
pub struct Chain {
    classifiers: Vec<Arc<dyn ConfirmationClassifier>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chain({} classifiers)", self.classifiers.len())
    }
}

impl Chain {
    /// A chain of one classifier.
    pub fn new(first: impl ConfirmationClassifier + 'static) -> Self {
        Chain { classifiers: vec![Arc::new(first)] }
    }

    /// Adds a classifier; it can only make confirming harder.
    pub fn then(mut self, next: impl ConfirmationClassifier + 'static) -> Self {
        self.classifiers.push(Arc::new(next));
        self
    }
}

impl ConfirmationClassifier for Chain {
    fn classify<'a>(&'a self, proposal: &'a ProposalSummary, reply: &'a str) -> BoxFuture<'a, Classification> {
        self.classify_metered(proposal, reply, &Unmetered)
    }

    fn classify_metered<'a>(
        &'a self,
        proposal: &'a ProposalSummary,
        reply: &'a str,
        calls: &'a dyn MeteredCalls,
    ) -> BoxFuture<'a, Classification> {
        Box::pin(async move {
            let mut reading = Classification::Confirm;
            for c in &self.classifiers {
                reading = reading.strictest(c.classify_metered(proposal, reply, calls).await);
                if reading == Classification::Cancel {
                    break;
                }
            }
            reading
        })
    }
}
