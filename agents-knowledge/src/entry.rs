//! What the permission manifest carries of a knowledge source: [`SourceEntry`], the
//! manifest's own [`KnowledgeEntry`](agents_core::knowledge::KnowledgeEntry), so that the
//! entry `agent!` computes when the agent is built and the entry a run computes at start are
//! one type computed by one function.

pub use agents_core::knowledge::{EMBEDDED, KnowledgeEntry as SourceEntry};
