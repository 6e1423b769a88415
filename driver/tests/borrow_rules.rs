//! Compile-fail tests: the borrow rules that keep registered memory safe while the device
//! may use it (the expected compiler errors are in `tests/compile_fail/*.stderr`).

#[test]
fn registered_memory_borrow_rules() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}
