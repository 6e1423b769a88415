//! Compile-time layout assertions used by every struct of this crate.

/// `layout!(Type, size = N, field @ offset, ...)` fails the build if `Type` is not `N` bytes
/// wide or a listed field is not at its offset. The values are the C layout on LP64 Linux;
/// `tests/c_layout.rs` checks them (and more) against the system headers.
macro_rules! layout {
    ($t:ty, size = $size:expr $(, $field:ident @ $off:expr)* $(,)?) => {
        const _: () = {
            assert!(::core::mem::size_of::<$t>() == $size);
            $( assert!(::core::mem::offset_of!($t, $field) == $off); )*
        };
    };
}
pub(crate) use layout;
