//! Store round trips (written next).
fn main() {}
