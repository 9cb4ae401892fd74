// A composite written by hand, with any graph it likes.
use agents_runtime::agents_core::compose::{Composite, Flow, Graph, NodeKind};
use agents_runtime::agents_core::seal::DeclaredFlow;

pub struct Forged;

impl DeclaredFlow for Forged {}

impl Flow for Forged {
    type Input = String;
    type Output = String;
    const NODE: NodeKind = NodeKind::Forum { rounds: 1 };
}

impl Composite for Forged {
    const GRAPH: Graph = Graph {
        name: "forged",
        description: "",
        input: "String",
        output: "String",
        entry: "",
        nodes: &[],
        edges: &[],
    };
    const MANIFEST: &'static str = "{}";
    const MANIFEST_SHA256: &'static str = "";
}

fn main() {}
