//! NVRTC: CUDA C to a cubin for one GPU architecture, cached on disk so that a second process
//! start does not compile again. The cache key covers the source, the options (definitions
//! and architecture), the NVRTC version and this crate's version.

use std::collections::hash_map::DefaultHasher;
use std::ffi::CString;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudarc::nvrtc::{result, sys};

/// Environment variable naming the directory of compiled kernels (default:
/// `$XDG_CACHE_HOME/unicompute/cuda`, else `~/.cache/unicompute/cuda`).
pub const CACHE_DIR_ENV: &str = "UNICOMPUTE_CUDA_CACHE";

/// A CUDA C file of op kernels.
pub(crate) type CudaSource = crate::hal::ProgramSource;

/// One specialised op kernel: file, entry point and `-D` definitions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Specialisation {
    pub source: &'static CudaSource,
    pub entry: &'static str,
    pub defines: Vec<(&'static str, String)>,
    /// CUDA C prepended to the file (an op's epilogue functions); empty for most kernels.
    pub prelude: &'static str,
    /// CUDA C generated at run time for this launch (a chain's straight-line code), placed
    /// between the prelude and the file; the caches key on its text.
    pub generated: Option<std::sync::Arc<str>>,
}

impl Specialisation {
    /// The source NVRTC compiles: the shared parts the file needs, the prelude, the generated
    /// code, then the file.
    pub(crate) fn source(&self) -> String {
        format!(
            "{}\n{}\n{}\n{}",
            self.source.preludes.join("\n"),
            self.prelude,
            self.generated.as_deref().unwrap_or(""),
            self.source.text
        )
    }

    /// File name NVRTC reports in its log.
    pub(crate) fn name(&self) -> &'static str {
        self.source.name
    }

    /// NVRTC options for `arch` (e.g. `sm_90`).
    pub(crate) fn options(&self, arch: &str) -> Vec<String> {
        let mut options = base_options(arch);
        options.extend(self.defines.iter().map(|(k, v)| format!("-D{k}={v}")));
        options
    }
}

/// The `--gpu-architecture` for a device of compute capability `[major, minor]`: `sm_XY`
/// (a cubin) when NVRTC can build for it, else `compute_XY` PTX for the newest architecture
/// NVRTC knows that the device runs, which the driver compiles when loading.
pub(crate) fn target_arch([major, minor]: [u32; 2]) -> String {
    let device = (major * 10 + minor) as i32;
    let supported = supported_archs();
    if supported.is_empty() || supported.contains(&device) {
        return format!("sm_{device}");
    }
    match supported.iter().copied().filter(|&a| a <= device).max() {
        Some(a) => format!("compute_{a}"),
        None => format!("sm_{device}"),
    }
}

/// Architectures NVRTC can compile for (e.g. 75, 80, 90, 120); empty if it cannot tell.
fn supported_archs() -> Vec<i32> {
    if nvrtc_version().is_err() {
        return Vec::new();
    }
    let mut n = 0;
    // SAFETY: out-parameters sized by NVRTC's own count.
    unsafe {
        if sys::nvrtcGetNumSupportedArchs(&mut n).result().is_err() || n <= 0 {
            return Vec::new();
        }
        let mut archs = vec![0; n as usize];
        if sys::nvrtcGetSupportedArchs(archs.as_mut_ptr())
            .result()
            .is_err()
        {
            return Vec::new();
        }
        archs
    }
}

/// Options of every compilation for `arch`. No contraction of `a * b + c` into fused
/// multiply-adds, so results agree with the other backends (kernels call `fmaf` where they
/// want one).
pub(crate) fn base_options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        "--fmad=false".into(),
    ]
}

/// Why a compilation produced no cubin.
#[derive(Debug)]
pub(crate) enum CompileFailure {
    /// NVRTC is missing or failed outside the source (the text says what happened).
    Nvrtc(String),
    /// The source does not compile: NVRTC's log.
    Source(String),
}

/// Compilations done by NVRTC, and cubins found on disk instead, in this process.
pub(crate) static COMPILED: AtomicUsize = AtomicUsize::new(0);
pub(crate) static DISK_HITS: AtomicUsize = AtomicUsize::new(0);

/// NVRTC's version, or why NVRTC cannot be used.
pub(crate) fn nvrtc_version() -> Result<(i32, i32), String> {
    let probe = std::panic::catch_unwind(|| {
        // SAFETY: only checks whether the library can be loaded.
        if !unsafe { sys::is_culib_present() } {
            let names = super::library_names("nvrtc");
            return Err(format!(
                "NVRTC library libnvrtc.so not found (searched {names}); install the CUDA toolkit \
                    or the PyPI wheel `nvidia-cuda-nvrtc` and put its lib directory on \
                    LD_LIBRARY_PATH"
            ));
        }
        let (mut major, mut minor) = (0, 0);
        // SAFETY: plain out-parameters.
        unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .map_err(|e| format!("nvrtcVersion failed: {e:?}"))?;
        Ok((major, minor))
    });
    probe.unwrap_or_else(|_| Err("loading NVRTC failed (a symbol is missing from libnvrtc)".into()))
}

/// Directory of the disk cache, if one can be used.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(CACHE_DIR_ENV) {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("unicompute").join("cuda"))
}

/// A cubin (or PTX, for a `compute_XY` target) of `source` compiled with `options`, from the
/// disk cache in `dir` when present.
pub(crate) fn cubin(
    source: &str,
    name: &str,
    options: &[String],
    dir: Option<&PathBuf>,
) -> Result<Vec<u8>, CompileFailure> {
    let version = nvrtc_version().map_err(CompileFailure::Nvrtc)?;
    let mut hasher = DefaultHasher::new();
    (source, options, version, env!("CARGO_PKG_VERSION")).hash(&mut hasher);
    let file = dir.map(|d| d.join(format!("{:016x}.cubin", hasher.finish())));
    if let Some(bytes) = file
        .as_ref()
        .and_then(|f| std::fs::read(f).ok())
        .filter(|b| !b.is_empty())
    {
        DISK_HITS.fetch_add(1, Ordering::Relaxed);
        return Ok(bytes);
    }
    let bytes = compile(source, name, options)?;
    if let (Some(dir), Some(file)) = (dir, &file) {
        // The cache only saves time: failing to write it is not an error. Write then
        // rename, so a concurrent process never reads half a file.
        static WRITES: AtomicUsize = AtomicUsize::new(0);
        let tmp = file.with_extension(format!(
            "tmp{}-{}",
            std::process::id(),
            WRITES.fetch_add(1, Ordering::Relaxed)
        ));
        if std::fs::create_dir_all(dir).is_ok() && std::fs::write(&tmp, &bytes).is_ok() {
            let _ = std::fs::rename(&tmp, file);
        }
    }
    Ok(bytes)
}

/// Drop a cached cubin that the driver refused to load.
pub(crate) fn forget(source: &str, options: &[String], dir: Option<&PathBuf>) {
    if let (Ok(version), Some(dir)) = (nvrtc_version(), dir) {
        let mut hasher = DefaultHasher::new();
        (source, options, version, env!("CARGO_PKG_VERSION")).hash(&mut hasher);
        let _ = std::fs::remove_file(dir.join(format!("{:016x}.cubin", hasher.finish())));
    }
}

/// Run NVRTC.
pub(crate) fn compile(
    source: &str,
    name: &str,
    options: &[String],
) -> Result<Vec<u8>, CompileFailure> {
    let nvrtc =
        |what: &str, e: result::NvrtcError| CompileFailure::Nvrtc(format!("{what} failed: {e:?}"));
    // cudarc panics on a call into a library it cannot load: say why instead.
    nvrtc_version().map_err(CompileFailure::Nvrtc)?;
    let src = CString::new(source)
        .map_err(|_| CompileFailure::Source(format!("{name}: the source contains a NUL byte")))?;
    let cname = CString::new(name)
        .map_err(|_| CompileFailure::Nvrtc("kernel name contains a NUL byte".into()))?;
    let prog =
        result::create_program(&src, Some(&cname)).map_err(|e| nvrtc("nvrtcCreateProgram", e))?;
    COMPILED.fetch_add(1, Ordering::Relaxed);
    // SAFETY: `prog` is a live program; it is destroyed once below, whatever happens.
    let out = unsafe {
        match result::compile_program(prog, options) {
            Err(e) => {
                let log = result::get_program_log(prog)
                    .map(|l| {
                        l.iter()
                            .take_while(|&&c| c != 0)
                            .map(|&c| c as u8 as char)
                            .collect::<String>()
                    })
                    .unwrap_or_else(|_| format!("{e:?} (no log)"));
                Err(CompileFailure::Source(log.trim().to_string()))
            }
            Ok(())
                if options
                    .iter()
                    .any(|o| o.starts_with("--gpu-architecture=compute_")) =>
            {
                // PTX (NUL-terminated, as the driver's loader expects).
                result::get_ptx(prog)
                    .map(|p| p.into_iter().map(|c| c as u8).collect())
                    .map_err(|e| nvrtc("nvrtcGetPTX", e))
            }
            Ok(()) => {
                let mut size = 0usize;
                match sys::nvrtcGetCUBINSize(prog, &mut size).result() {
                    Err(e) => Err(nvrtc("nvrtcGetCUBINSize", e)),
                    Ok(()) => {
                        let mut bytes = vec![0u8; size];
                        sys::nvrtcGetCUBIN(prog, bytes.as_mut_ptr().cast())
                            .result()
                            .map(|()| bytes)
                            .map_err(|e| nvrtc("nvrtcGetCUBIN", e))
                    }
                }
            }
        }
    };
    // SAFETY: destroyed once.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

/// The first error of an NVRTC log such as `k.cu(12): error: ...`.
pub(crate) fn first_error(log: &str) -> Option<LogError<'_>> {
    log.lines().find_map(|l| {
        let (head, message) = l.split_once("): error")?;
        let (file, line) = head.rsplit_once('(')?;
        let message = message.trim_start_matches(':').trim();
        Some(LogError {
            file,
            line: line.parse().ok()?,
            message,
        })
    })
}

/// One error of an NVRTC log: the file (as `#line` last named it), the line, the message.
pub(crate) struct LogError<'a> {
    pub file: &'a str,
    pub line: u32,
    pub message: &'a str,
}

/// NVRTC must be present when `UNICOMPUTE_REQUIRE_NVRTC=1` (CI installs it from PyPI);
/// otherwise compile checks are skipped with the reason printed.
#[cfg(test)]
pub(crate) fn nvrtc_or_skip() -> bool {
    match nvrtc_version() {
        Ok(_) => true,
        Err(why) if std::env::var("UNICOMPUTE_REQUIRE_NVRTC").is_ok_and(|v| v == "1") => {
            panic!("UNICOMPUTE_REQUIRE_NVRTC=1 but {why}")
        }
        Err(why) => {
            eprintln!("skipping the CUDA compile check: {why}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-kernel source for the compiler's own tests.
    static TEST: CudaSource = CudaSource {
        name: "test.cu",
        text: "extern \"C\" __global__ void fill_main(float* x) { x[threadIdx.x] = 1.0f; }",
        preludes: &[],
    };

    fn test_kernel() -> Specialisation {
        Specialisation {
            source: &TEST,
            entry: "fill_main",
            defines: vec![],
            prelude: "",
            generated: None,
        }
    }

    #[test]
    fn unknown_architectures_fall_back_to_ptx() {
        if !nvrtc_or_skip() {
            return;
        }
        assert_eq!(target_arch([9, 0]), "sm_90");
        // No NVRTC builds cubins for compute capability 99.9: PTX for the newest it knows.
        let fallback = target_arch([99, 9]);
        assert!(fallback.starts_with("compute_"), "{fallback}");
        let k = test_kernel();
        let ptx = compile(&k.source(), k.name(), &k.options(&fallback)).unwrap();
        assert!(
            String::from_utf8_lossy(&ptx).contains(&format!(".entry {}", k.entry)),
            "PTX text"
        );
        assert_eq!(ptx.last(), Some(&0), "NUL-terminated");
    }

    #[test]
    fn disk_cache_is_written_then_reused() {
        if !nvrtc_or_skip() {
            return;
        }
        let dir =
            std::env::temp_dir().join(format!("unicompute-cuda-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let k = test_kernel();
        let (source, options) = (k.source(), k.options("sm_80"));
        let hits = DISK_HITS.load(Ordering::Relaxed);
        let first = cubin(&source, k.name(), &options, Some(&dir)).unwrap();
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "one cubin written"
        );
        let second = cubin(&source, k.name(), &options, Some(&dir)).unwrap();
        assert_eq!(first, second);
        assert!(
            DISK_HITS.load(Ordering::Relaxed) > hits,
            "the second lookup came from disk"
        );
        // Other options are another entry.
        cubin(&source, k.name(), &k.options("sm_90"), Some(&dir)).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn compile_errors_carry_the_log_and_line() {
        if !nvrtc_or_skip() {
            return;
        }
        let src = "extern \"C\" __global__ void k(float* x) {\n    x[0] = y;\n}\n";
        let Err(CompileFailure::Source(log)) = compile(src, "user.cu", &base_options("sm_80"))
        else {
            panic!("expected a compile error")
        };
        let error = first_error(&log).unwrap_or_else(|| panic!("no error line in {log:?}"));
        assert_eq!((error.file, error.line), ("user.cu", 2), "{log}");
        assert!(error.message.contains("\"y\""), "{}", error.message);
    }
}
