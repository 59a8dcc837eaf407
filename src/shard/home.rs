//! Answers from other threads, delivered on the shard's own thread.
//!
//! A shard task waits for work done elsewhere: a write on the shard's I/O
//! thread, a call run on another shard, a job on a worker thread. Waking
//! the waiting task straight from that other thread is what glommio 0.9
//! allows, but it is not safe there: a waker woken or dropped on a foreign
//! thread ends by bringing the task's reference count down and then, when
//! it reached zero, takes a new reference to send the task home. If the
//! task has completed (or was cancelled) and its `Task` handle is dropped on
//! the shard between those two steps, the shard sees no reference left and
//! frees the task, and the foreign thread then writes into freed memory (a
//! segmentation fault in a later, unrelated allocation).
//!
//! So no other thread wakes a task that holds a `Task` handle. A [`Reply`]
//! made on a shard remembers the shard's *home queue*; answered (or dropped)
//! on another thread, it hands the answer to that queue, and one task of the
//! shard, started by [`install`], detached and alive as long as the shard,
//! delivers it on the shard's thread, where waking is an ordinary local
//! wake. The tasks still woken from other threads are detached when they
//! are spawned, before any waker of theirs exists: this one (which never
//! completes while the shard runs), the bodies of cross-shard calls (woken
//! by a Fetch's or ShareFetch's cancel signal from the calling shard) and
//! the boot thread's driver of `on_shard` calls. Made or answered on a
//! thread without a home queue (a test, a helper thread), a `Reply` is a
//! plain oneshot sender.

use std::cell::RefCell;
use std::thread::ThreadId;

use futures_channel::{mpsc, oneshot};
use futures_lite::StreamExt;

/// Work to run on the home shard's thread (an answer to deliver).
type Delivery = Box<dyn FnOnce() + Send>;

/// A shard's home queue: where other threads leave answers for it.
#[derive(Clone)]
struct Home {
    thread: ThreadId,
    queue: mpsc::UnboundedSender<Delivery>,
}

thread_local! {
    static HOME: RefCell<Option<Home>> = const { RefCell::new(None) };
}

/// Starts this shard's home queue and the task that delivers what other
/// threads leave in it. Call once on the shard's thread, inside its
/// executor, before any [`reply_channel`] that another thread answers.
pub fn install() {
    let (queue, mut deliveries) = mpsc::unbounded::<Delivery>();
    HOME.with(|h| {
        *h.borrow_mut() = Some(Home {
            thread: std::thread::current().id(),
            queue,
        })
    });
    glommio::spawn_local(crate::stall::watch("home queue", async move {
        while let Some(deliver) = deliveries.next().await {
            deliver();
        }
    }))
    .detach();
}

/// The sending half of an answer for a task of the shard that made it; see
/// the module docs. Answering or dropping it on another thread delivers on
/// the home shard's thread.
pub struct Reply<T: Send + 'static> {
    tx: Option<oneshot::Sender<T>>,
    home: Option<Home>,
}

/// A oneshot channel whose sender may be answered from any thread: the
/// receiver is awaited on this thread (a shard), and the answer is always
/// delivered here. The receiver sees `Canceled` when the `Reply` is dropped
/// unanswered.
pub fn reply_channel<T: Send + 'static>() -> (Reply<T>, oneshot::Receiver<T>) {
    let (tx, rx) = oneshot::channel();
    let home = HOME.with(|h| h.borrow().clone());
    (Reply { tx: Some(tx), home }, rx)
}

impl<T: Send + 'static> Reply<T> {
    /// Sends the answer (dropped when the receiver is gone).
    pub fn send(mut self, value: T) {
        if let Some(tx) = self.tx.take() {
            self.deliver(move || {
                let _ = tx.send(value);
            });
        }
    }

    fn deliver(&self, f: impl FnOnce() + Send + 'static) {
        match &self.home {
            Some(home) if home.thread != std::thread::current().id() => {
                if let Err(e) = home.queue.unbounded_send(Box::new(f)) {
                    // The shard has stopped delivering (it is shutting down):
                    // running or dropping `f` here would wake its task from
                    // this thread, so it is left undone.
                    std::mem::forget(e.into_inner());
                }
            }
            _ => f(),
        }
    }
}

impl<T: Send + 'static> Drop for Reply<T> {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            self.deliver(move || drop(tx));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_from_another_thread_arrives_on_the_shard() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                install();
                let shard = std::thread::current().id();
                let (reply, rx) = reply_channel::<ThreadId>();
                let (dropped, gone) = reply_channel::<()>();
                std::thread::spawn(move || {
                    drop(dropped);
                    reply.send(std::thread::current().id());
                });
                let other = rx.await.expect("answered");
                assert_ne!(other, shard);
                assert!(gone.await.is_err(), "a dropped reply cancels");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn without_a_home_queue_a_reply_is_a_plain_sender() {
        let (reply, rx) = reply_channel::<u32>();
        std::thread::spawn(move || reply.send(7)).join().unwrap();
        assert_eq!(futures_lite::future::block_on(rx), Ok(7));
    }
}
