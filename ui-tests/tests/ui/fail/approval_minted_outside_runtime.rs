use agents_runtime::Approval;

fn forge<'a>() -> Approval<'a> {
    Approval::mint()
}

fn main() {}
