//! Ports for test brokers that are started again on the same port.
//!
//! A port the kernel hands out for `bind(0)` comes from its ephemeral range
//! (`net.ipv4.ip_local_port_range`), the same range outgoing connections
//! take their local ports from. While a killed node is down, any outgoing
//! connection on the machine may take its port, and the node cannot listen
//! there again until that connection closes. Ports below the ephemeral range
//! are never given to outgoing connections, so a restarted node gets its
//! port back.

use std::sync::atomic::{AtomicU32, Ordering};

/// Lowest port handed out; below it are well-known services.
const LOWEST: u32 = 20_000;

/// Next candidate offset; seeded from the process id so two test binaries
/// running at once start apart.
static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);

/// First port of the kernel's ephemeral range (32768 when unreadable).
fn ephemeral_low() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|p| p.parse().ok()))
        .filter(|low: &u32| *low > LOWEST + 1_000)
        .unwrap_or(32_768)
}

/// A loopback port below the ephemeral range that nothing listens on now;
/// each call in this process gives another one.
pub fn free_port() -> u16 {
    let span = ephemeral_low() - LOWEST;
    let _ = NEXT.compare_exchange(
        u32::MAX,
        (std::process::id().wrapping_mul(7_919)) % span,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..span {
        let offset = NEXT.fetch_add(1, Ordering::SeqCst) % span;
        let port = (LOWEST + offset) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port below the ephemeral range");
}
