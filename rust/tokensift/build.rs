//! Links libtokensift (built by CMake; see docs/rust.md).
//!
//! TOKENSIFT_LIB_DIR names the directory holding libtokensift.so; it defaults
//! to ../../build/default/src relative to this crate (what `scripts/test.sh`
//! builds).  A relative TOKENSIFT_LIB_DIR is taken relative to this crate.
//! The test, example and bench binaries of this crate get an rpath to that
//! directory so they run without LD_LIBRARY_PATH; binaries of crates that
//! depend on this one do not (see docs/rust.md, "Linking").

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=TOKENSIFT_LIB_DIR");

    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let lib_dir = match env::var_os("TOKENSIFT_LIB_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                manifest_dir.join(dir)
            }
        }
        _ => manifest_dir.join("../../build/default/src"),
    };
    // Absolute and without `..`, so the rpath and the search path are stable.
    let lib_dir = lib_dir.canonicalize().unwrap_or(lib_dir);

    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let lib_file = match target_os.as_str() {
        "macos" | "ios" => "libtokensift.dylib",
        "windows" => "tokensift.lib",
        _ => "libtokensift.so",
    };
    if !lib_dir.join(lib_file).exists() {
        println!(
            "cargo:warning=tokensift: {} not found in {}; build the library first \
             (cmake --preset cpu -B build/rust-cpu && cmake --build build/rust-cpu --target tokensift) \
             and set TOKENSIFT_LIB_DIR to its src/ directory",
            lib_file,
            lib_dir.display()
        );
    }

    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib=tokensift");
    // Metadata for dependents' build scripts: DEP_TOKENSIFT_LIB_DIR.
    println!("cargo:lib_dir={}", lib_dir.display());

    if target_os != "windows" {
        add_rpath(&lib_dir);
    }
}

/// rustc-link-arg reaches every binary this package links (unit tests,
/// integration tests, examples, benches), never the rlib or its dependents.
fn add_rpath(dir: &Path) {
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
}
