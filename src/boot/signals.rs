//! The signals that stop the broker (SIGTERM, SIGINT, SIGHUP), blocked on
//! every thread and taken by the boot thread alone with `sigwait`.

/// Blocks SIGTERM, SIGINT and SIGHUP on this thread (and the threads it
/// starts afterwards); gives the set, or None when the mask cannot be set.
pub(super) fn block_signals() -> Option<libc::sigset_t> {
    // SAFETY: plain libc signal-mask calls on a local sigset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        // A closed terminal or `kill -HUP`: the JVM runs Kafka's shutdown
        // hook on SIGHUP too, so the broker shuts down cleanly on it.
        libc::sigaddset(&mut set, libc::SIGHUP);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return None;
        }
        Some(set)
    }
}

/// Waits for one signal of `set` (blocked beforehand).
pub(super) fn wait_for_signal(set: &libc::sigset_t) {
    let mut sig: libc::c_int = 0;
    // SAFETY: `set` is initialised; sigwait writes the signal number.
    unsafe {
        libc::sigwait(set, &mut sig);
    }
}
