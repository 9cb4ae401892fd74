// A filesystem handle built field by field.
#![allow(dead_code)]

use agents_runtime::FsAccess;

fn forge() -> FsAccess {
    FsAccess { tool: "innocent", ..unimplemented!() }
}

fn main() {}
