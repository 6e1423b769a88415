//! Link options of libferrodat.so.

fn main() {
    // libdat2 dlcloses a provider when its last IA closes. Handles the consumer still
    // holds, and threads still inside a call, would then reach unmapped code instead of
    // the provider's handle checks; the library stays mapped once loaded, as the
    // handles' design assumes (see `provider.rs`).
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
