//! What must not compile, with the message a user reads, and what must compile. Cases in a
//! topic folder (`fail/grants/`, `fail/witness/`, ...) are written as code that tries to get
//! around a guarantee would be.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.compile_fail("tests/ui/fail/*/*.rs");
    t.pass("tests/ui/pass/*.rs");
    t.pass("tests/ui/pass/*/*.rs");
}
