//! A shard-local "something changed" signal, used to wake long-poll fetches
//! when a partition gets an append. Single-threaded (no locks): it lives on the
//! shard that owns the partition.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// A generation counter with wakers. [`Notify::notify_all`] bumps the
/// generation and wakes every registered waiter.
#[derive(Default, Debug)]
pub struct Notify {
    generation: Cell<u64>,
    next_id: Cell<u64>,
    wakers: RefCell<Vec<(u64, Waker)>>,
}

impl Notify {
    /// The current generation; pair it with this signal in [`any_changed`]
    /// to wait for the next one.
    pub fn generation(&self) -> u64 {
        self.generation.get()
    }

    /// Bumps the generation and wakes all waiters.
    pub fn notify_all(&self) {
        self.generation.set(self.generation.get().wrapping_add(1));
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        for (_, w) in wakers {
            w.wake();
        }
    }

    fn register(&self, slot: &mut Option<u64>, waker: &Waker) {
        let mut wakers = self.wakers.borrow_mut();
        if let Some(id) = *slot {
            if let Some(entry) = wakers.iter_mut().find(|(i, _)| *i == id) {
                entry.1.clone_from(waker);
                return;
            }
        }
        let id = self.next_id.get();
        self.next_id.set(id.wrapping_add(1));
        wakers.push((id, waker.clone()));
        *slot = Some(id);
    }

    fn unregister(&self, id: u64) {
        self.wakers.borrow_mut().retain(|(i, _)| *i != id);
    }
}

/// Resolves when any of the given signals has moved past the generation it was
/// paired with. Dropping it unregisters its wakers (no leak on timeout).
pub struct AnyChanged {
    items: Vec<(Rc<Notify>, u64, Option<u64>)>,
}

/// Waits until any `(signal, generation)` pair sees a newer generation.
/// An empty list never resolves (callers race it with a deadline).
pub fn any_changed(items: Vec<(Rc<Notify>, u64)>) -> AnyChanged {
    AnyChanged {
        items: items.into_iter().map(|(n, g)| (n, g, None)).collect(),
    }
}

impl Future for AnyChanged {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.items.iter().any(|(n, g, _)| n.generation() != *g) {
            return Poll::Ready(());
        }
        for (n, _, slot) in this.items.iter_mut() {
            n.register(slot, cx.waker());
        }
        Poll::Pending
    }
}

impl Drop for AnyChanged {
    fn drop(&mut self) {
        for (n, _, slot) in &self.items {
            if let Some(id) = slot {
                n.unregister(*id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_and_unregisters() {
        glommio::LocalExecutor::default().run(async {
            let n = Rc::new(Notify::default());
            let g = n.generation();
            let n2 = n.clone();
            let t = glommio::spawn_local(async move {
                any_changed(vec![(n2, g)]).await;
                7
            });
            glommio::yield_if_needed().await;
            glommio::timer::sleep(std::time::Duration::from_millis(1)).await;
            assert_eq!(n.wakers.borrow().len(), 1);
            n.notify_all();
            assert_eq!(t.await, 7);
            // a dropped waiter leaves nothing behind
            let g = n.generation();
            {
                let mut f = Box::pin(any_changed(vec![(n.clone(), g)]));
                let w = futures_lite::future::poll_once(&mut f).await;
                assert!(w.is_none());
                assert_eq!(n.wakers.borrow().len(), 1);
            }
            assert_eq!(n.wakers.borrow().len(), 0);
        });
    }
}
