//! The portable build (`--features dynamic-backends`, see
//! docs/performance.md) ships llama.cpp's libraries and back-end modules
//! beside the binary: its run path names the binary's own directory, as
//! DT_RPATH so that the libraries' own dependencies and the modules loaded
//! at start are found there too.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dynamic = std::env::var_os("CARGO_FEATURE_DYNAMIC_BACKENDS").is_some();
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if dynamic && target_os == "linux" {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN,--disable-new-dtags");
    }
}
