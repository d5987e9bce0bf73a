//! With `UNICOMPUTE_CRASH_BACKTRACE=1` (the GPU bundle's runner sets it), a test process
//! that crashes (SIGSEGV, SIGBUS, SIGABRT from glibc's heap checks) first prints the crashing
//! thread's stack to stderr, shared libraries' frames included: a crash inside a driver that
//! does not happen under a debugger still names where it was.

use std::ffi::{c_int, c_void};
use std::sync::Once;

extern "C" {
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
    fn backtrace_symbols_fd(buffer: *const *mut c_void, size: c_int, fd: c_int);
}

/// Installs the handler as the test process starts, before any test runs (glibc calls the
/// functions of `.init_array` before `main`).
#[used]
#[link_section = ".init_array"]
static INSTALL_AT_START: extern "C" fn() = at_start;

extern "C" fn at_start() {
    install();
}

/// Installs the handler once per process, if asked for.
pub fn install() {
    static ONCE: Once = Once::new();
    if std::env::var("UNICOMPUTE_CRASH_BACKTRACE").as_deref() != Ok("1") {
        return;
    }
    ONCE.call_once(|| {
        let mut frames = [std::ptr::null_mut(); 1];
        // SAFETY: a valid buffer; the first call loads the unwinder, which a handler must not.
        unsafe { backtrace(frames.as_mut_ptr(), 1) };
        for signal in [libc::SIGSEGV, libc::SIGBUS, libc::SIGABRT] {
            // SAFETY: a zeroed sigaction with a handler of the right type; the handler resets
            // to the default action and raises the signal again.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_crash as extern "C" fn(c_int) as usize;
                action.sa_flags = libc::SA_RESETHAND | libc::SA_ONSTACK;
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    });
}

/// Writes the signal and the thread's frames to stderr without allocating, then re-raises.
extern "C" fn on_crash(signal: c_int) {
    let mut frames = [std::ptr::null_mut(); 64];
    let note = b"\n== crash: this thread's stack (signal number follows)\n";
    // SAFETY: writes of valid buffers to stderr, and glibc's backtrace functions, which do
    // not allocate once loaded; then the default action of the signal.
    unsafe {
        libc::write(2, note.as_ptr().cast(), note.len());
        let digits = [
            b'0' + (signal / 10) as u8,
            b'0' + (signal % 10) as u8,
            b'\n',
        ];
        libc::write(2, digits.as_ptr().cast(), digits.len());
        let n = backtrace(frames.as_mut_ptr(), frames.len() as c_int);
        backtrace_symbols_fd(frames.as_ptr(), n, 2);
        libc::raise(signal);
    }
}
