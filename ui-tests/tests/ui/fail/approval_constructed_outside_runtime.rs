use agents_runtime::Approval;
use std::marker::PhantomData;

fn forge<'a>() -> Approval<'a> {
    Approval { _token: PhantomData, _private: () }
}

fn main() {}
