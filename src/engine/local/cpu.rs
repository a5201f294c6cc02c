//! What ggml's CPU back-end was compiled with, and ggml's AMX kernels kept
//! out of use.
//!
//! On AMX CPUs (Intel Sapphire Rapids and later), a ggml built with AMX
//! repacks the weights into its AMX buffer type and the first decode
//! segfaults in `ggml_backend_amx_mul_mat` (upstream llama.cpp issue 20824).
//! The build never compiles those kernels (`.cargo/config.toml`); where a
//! loaded CPU back-end has them anyway (a `dynamic-backends` build picks
//! ggml's `sapphirerapids` variant on such a CPU, or a build made with other
//! flags), every weight is placed in the plain CPU buffer type instead, so
//! the AMX kernels never run. That costs the weight repacking of the other
//! extra buffer types too: slower, never a crash.

use std::ffi::{c_char, CStr};

/// The compiled features of ggml's CPU back-end (`AVX2`, `AVX512`,
/// `AMX_INT8`, …), as ggml lists them; empty when no CPU back-end is
/// registered.
pub fn features() -> Vec<String> {
    // SAFETY: ggml's registry is filled once the back-end is initialised and
    // never shrinks; the names and feature strings are static in the
    // back-end's module, which stays loaded for the life of the process.
    unsafe {
        let reg = llama_cpp_sys_2::ggml_backend_reg_by_name(c"CPU".as_ptr());
        if reg.is_null() {
            return Vec::new();
        }
        let proc = llama_cpp_sys_2::ggml_backend_reg_get_proc_address(reg, c"ggml_backend_get_features".as_ptr());
        if proc.is_null() {
            return Vec::new();
        }
        let get: unsafe extern "C" fn(
            llama_cpp_sys_2::ggml_backend_reg_t,
        ) -> *const llama_cpp_sys_2::ggml_backend_feature = std::mem::transmute(proc);
        let mut out = Vec::new();
        let mut feature = get(reg);
        while !feature.is_null() && !(*feature).name.is_null() {
            out.push(text((*feature).name));
            feature = feature.add(1);
        }
        out
    }
}

/// The CPU variant ggml chose where its back-ends are modules (the portable
/// build, `dynamic-backends`): `zen4` for `libggml-cpu-zen4.so` mapped into
/// this process. None where the CPU back-end is linked in, or the process's
/// maps cannot be read (not Linux).
pub fn variant() -> Option<String> {
    variant_in(&std::fs::read_to_string("/proc/self/maps").ok()?)
}

/// The variant of the first `libggml-cpu-<variant>.so` in a maps listing.
fn variant_in(maps: &str) -> Option<String> {
    maps.lines()
        .filter_map(|line| line.rsplit('/').next())
        .find_map(|file| file.strip_prefix("libggml-cpu-")?.strip_suffix(".so"))
        .map(str::to_owned)
}

/// # Safety
/// `p` is a NUL-terminated string that outlives the call.
unsafe fn text(p: *const c_char) -> String {
    // SAFETY: as the caller promises.
    unsafe { CStr::from_ptr(p).to_string_lossy().into_owned() }
}

/// Whether a CPU back-end with these features would run ggml's AMX kernels
/// on weights placed in its extra buffer types.
pub fn has_amx(features: &[String]) -> bool {
    features.iter().any(|f| f.starts_with("AMX"))
}

/// What a load does about ggml's AMX kernels.
#[derive(Debug, PartialEq, Eq)]
pub enum AmxGuard {
    /// The CPU back-end has none.
    None,
    /// Every weight goes to the plain CPU buffer type.
    KeepOut,
    /// Layers are offloaded to a GPU, and the weights stay where llama.cpp
    /// puts them: the override would pull the offloaded ones back too.
    Warn,
}

/// The guard for a load asking `gpu_layers` layers of a GPU. Without a GPU
/// back-end (`gpu_offload` false) every layer stays on the CPU, whatever
/// was asked: a portable build asks for all layers by default and may find
/// no GPU.
pub fn amx_guard(features: &[String], gpu_offload: bool, gpu_layers: u32) -> AmxGuard {
    if !has_amx(features) {
        AmxGuard::None
    } else if gpu_offload && gpu_layers > 0 {
        AmxGuard::Warn
    } else {
        AmxGuard::KeepOut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variant_is_the_mapped_cpu_module() {
        let maps = "7f1e2a000000-7f1e2a010000 r--p 00000000 08:01 123 /opt/x/bin/libggml-base.so.0\n\
                    7f1e2b000000-7f1e2b100000 r-xp 00010000 08:01 124 /opt/x/bin/libggml-cpu-zen4.so\n\
                    7f1e2c000000-7f1e2c010000 r--p 00000000 08:01 125 /usr/lib/libc.so.6\n";
        assert_eq!(variant_in(maps).as_deref(), Some("zen4"));
        assert_eq!(
            variant_in("7f1e2c000000-7f1e2c010000 r--p 00000000 08:01 125 /usr/lib/libc.so.6\n"),
            None
        );
        // A native build maps no module; this test binary is one.
        if cfg!(not(feature = "dynamic-backends")) {
            assert_eq!(variant(), None);
        }
    }

    #[test]
    fn amx_is_any_amx_feature() {
        let list = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(!has_amx(&list(&["SSE3", "AVX2", "AVX512", "AVX512_VNNI", "REPACK"])));
        assert!(has_amx(&list(&["AVX512", "AMX_INT8"])));
        assert!(has_amx(&list(&["AMX_TILE"])));
    }

    #[test]
    fn amx_weights_are_kept_out_unless_layers_go_to_a_gpu() {
        let amx = vec!["AVX512".to_string(), "AMX_INT8".to_string()];
        let plain = vec!["AVX512".to_string()];
        assert_eq!(amx_guard(&plain, false, 999), AmxGuard::None);
        assert_eq!(amx_guard(&amx, false, 0), AmxGuard::KeepOut);
        // All layers asked, no GPU back-end: all on the CPU.
        assert_eq!(amx_guard(&amx, false, 999), AmxGuard::KeepOut);
        assert_eq!(amx_guard(&amx, true, 0), AmxGuard::KeepOut);
        assert_eq!(amx_guard(&amx, true, 999), AmxGuard::Warn);
    }
}
