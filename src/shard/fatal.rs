//! Stopping the broker from a shard when going on would lose data: the
//! reason is logged and kept, and the process asks itself to shut down
//! (SIGTERM to its own pid, which the boot thread waits for; a node started
//! in-process stops itself instead, `stop_with`); the shutdown
//! is orderly (logs flushed and closed) and the broker then exits with an
//! error naming the reason (`boot::run`).

use std::cell::RefCell;
use std::sync::OnceLock;

static REASON: OnceLock<String> = OnceLock::new();

thread_local! {
    /// How this shard's node stops, when not by a signal to the process.
    static STOP: RefCell<Option<Box<dyn Fn()>>> = const { RefCell::new(None) };
}

/// Makes [`stop_broker`] on this shard's thread call `stop` instead of
/// signalling the process (a node started in-process, with no thread
/// waiting for signals: `boot::start`).
pub fn stop_with(stop: impl Fn() + 'static) {
    STOP.with(|s| *s.borrow_mut() = Some(Box::new(stop)));
}

/// Takes why the broker cannot go on; logs it at error level, keeps the
/// first reason given and starts the shutdown. Later calls only log.
pub fn stop_broker(reason: String) {
    log::error!("stopping the broker: {reason}");
    // Unit tests keep the reason only: their process is no broker.
    if REASON.set(reason).is_ok() && !cfg!(test) {
        if STOP.with(|s| s.borrow().as_ref().map(|stop| stop()).is_some()) {
            return;
        }
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
