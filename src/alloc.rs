//! Guard against allocations sized by counts read off the wire.
//!
//! The protocol crate decodes an array by reserving `count` elements before
//! reading them, with `count` taken from the request. A frame of a few bytes
//! claiming 2^31 elements would ask for hundreds of GiB; the system allocator
//! would refuse and Rust would abort the whole broker. This global allocator
//! serves every allocation of [`HUGE`] bytes or more with an `mmap` of
//! `MAP_NORESERVE` address space: nothing is committed until touched, so such
//! a reservation costs no memory, and the decode then fails on the missing
//! bytes and frees it. Normal allocations go to the system allocator
//! unchanged. (The frame itself is bounded by `socket.request.max.bytes`.)

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations at or above this size (1 GiB) use the reserve-only path.
pub const HUGE: usize = 1 << 30;

/// The broker's global allocator (see the module docs).
pub struct WireSafeAlloc;

unsafe impl GlobalAlloc for WireSafeAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= HUGE && layout.align() <= 4096 {
            // SAFETY: anonymous private mapping, no fd; checked for failure.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    layout.size(),
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            return if p == libc::MAP_FAILED {
                std::ptr::null_mut()
            } else {
                p as *mut u8
            };
        }
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= HUGE && layout.align() <= 4096 {
            // Fresh anonymous mappings are zero-filled.
            return unsafe { self.alloc(layout) };
        }
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= HUGE && layout.align() <= 4096 {
            // SAFETY: `ptr` came from our mmap of exactly this size.
            unsafe { libc::munmap(ptr as *mut libc::c_void, layout.size()) };
            return;
        }
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old_huge = layout.size() >= HUGE && layout.align() <= 4096;
        let new_huge = new_size >= HUGE && layout.align() <= 4096;
        if !old_huge && !new_huge {
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: layout of the new size with the old alignment is valid
        // (GlobalAlloc's contract for realloc).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_reservation_costs_nothing_and_frees() {
        let layout = Layout::from_size_align(512 << 30, 8).unwrap();
        let a = WireSafeAlloc;
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null());
            *p = 1;
            a.dealloc(p, layout);
        }
    }
}
