//! Stopping the broker from a shard when going on would lose data: the
//! reason is logged and kept, and the process asks itself to shut down
//! (SIGTERM to its own pid, which the boot thread waits for); the shutdown
//! is orderly (logs flushed and closed) and the broker then exits with an
//! error naming the reason (`boot::run`).

use std::sync::OnceLock;

static REASON: OnceLock<String> = OnceLock::new();

/// Takes why the broker cannot go on; logs it at error level, keeps the
/// first reason given and starts the shutdown. Later calls only log.
pub fn stop_broker(reason: String) {
    log::error!("stopping the broker: {reason}");
    // Unit tests keep the reason only: their process is no broker.
    if REASON.set(reason).is_ok() && !cfg!(test) {
        // SAFETY: kill(2) on this process's own pid; the signal is blocked
        // in every thread and taken by the boot thread's sigwait.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGTERM);
        }
    }
}

/// The reason the broker was stopped with, if [`stop_broker`] was called.
pub fn reason() -> Option<&'static str> {
    REASON.get().map(String::as_str)
}
