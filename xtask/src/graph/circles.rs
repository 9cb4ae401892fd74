//! Circles in a directed graph: its strongly connected components of more than one node
//! (Tarjan's algorithm).

/// The strongly connected components of more than one node of the graph whose node `n` has
/// the edges `edges[n]`; each component's nodes sorted, the components in order of their
/// first node.
pub(crate) fn circles(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut walk = Tarjan {
        edges,
        index: vec![None; edges.len()],
        low: vec![0; edges.len()],
        on_stack: vec![false; edges.len()],
        ..Tarjan::default()
    };
    for node in 0..edges.len() {
        if walk.index[node].is_none() {
            walk.visit(node);
        }
    }
    let mut found: Vec<Vec<usize>> = walk.components.into_iter().filter(|c| c.len() > 1).collect();
    found.iter_mut().for_each(|c| c.sort_unstable());
    found.sort();
    found
}

#[derive(Default)]
struct Tarjan<'a> {
    edges: &'a [Vec<usize>],
    /// The order in which each node was first reached.
    index: Vec<Option<usize>>,
    /// The smallest index reachable from each node through the nodes still on the stack.
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    next: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, node: usize) {
        self.index[node] = Some(self.next);
        self.low[node] = self.next;
        self.next += 1;
        self.stack.push(node);
        self.on_stack[node] = true;
        for &to in &self.edges[node] {
            match self.index[to] {
                None => {
                    self.visit(to);
                    self.low[node] = self.low[node].min(self.low[to]);
                }
                Some(seen) if self.on_stack[to] => self.low[node] = self.low[node].min(seen),
                Some(_) => {}
            }
        }
        if Some(self.low[node]) == self.index[node] {
            let mut component = Vec::new();
            while let Some(top) = self.stack.pop() {
                self.on_stack[top] = false;
                component.push(top);
                if top == node {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}
