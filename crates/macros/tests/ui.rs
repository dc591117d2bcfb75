//! Misuse of `#[floodgate::resource]` fails to compile with a message that says what to do.

#[test]
fn misuse_is_a_compile_error() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
