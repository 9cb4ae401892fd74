// The generated code's way to a handle, called with a call context of one's own.
#![allow(dead_code)]

fn forge(cx: &agents_runtime::CallContext) -> agents_runtime::FsAccess {
    let _ = cx;
    agents_runtime::__private::fs_access(&agents_runtime::CallContext::default())
}

fn main() {}
