//! openraft's `AsyncRuntime` on a glommio executor: the metadata quorum's
//! tasks (RaftCore, replication streams, the state-machine worker) run on
//! the shard that created the `Raft` (shard 0), with glommio's timers.
//! The channels and the mutex are tokio's runtime-free `sync` primitives
//! (they need no tokio executor). openraft is built with its
//! `single-threaded` feature, so nothing here has to be `Send`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_lite::FutureExt;
use openraft::rt::mpsc::{SendError, TryRecvError};
use openraft::rt::watch::{RecvError, SendError as WatchSendError};
use openraft::rt::{self, AsyncRuntime, OptionalSend, OptionalSync};

/// The glommio runtime of the metadata quorum.
#[derive(Debug, Default)]
pub struct GlommioRuntime;

/// A quorum task ended without its result: it panicked or was cancelled.
#[derive(Debug)]
pub struct TaskLost;

impl fmt::Display for TaskLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the metadata quorum task panicked or was cancelled")
    }
}

/// A detached glommio task (dropping the handle does not cancel it, as
/// openraft expects).
pub struct JoinHandle<T>(glommio::task::JoinHandle<Option<T>>);

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, TaskLost>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.0).poll(cx) {
            Poll::Ready(Some(Some(v))) => Poll::Ready(Ok(v)),
            Poll::Ready(_) => Poll::Ready(Err(TaskLost)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A deadline passed before the future finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline elapsed")
    }
}

/// `fut` raced against a glommio timer.
pub struct Timeout<F> {
    fut: Pin<Box<F>>,
    timer: glommio::timer::Timer,
}

impl<R, F: Future<Output = R>> Future for Timeout<F> {
    type Output = Result<R, Elapsed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(v) = self.fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(&mut self.timer).poll(cx) {
            Poll::Ready(_) => Poll::Ready(Err(Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    }
}

fn until(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

impl AsyncRuntime for GlommioRuntime {
    type JoinError = TaskLost;
    type JoinHandle<T: OptionalSend + 'static> = JoinHandle<T>;
    type Sleep = Pin<Box<dyn Future<Output = ()>>>;
    type Instant = Instant;
    type TimeoutError = Elapsed;
    type Timeout<R, T: Future<Output = R> + OptionalSend> = Timeout<T>;
    type ThreadLocalRng = rand::rngs::ThreadRng;
    type Mpsc = TokioMpsc;
    type Watch = TokioWatch;
    type Oneshot = TokioOneshot;
    type Mutex<T: OptionalSend + 'static> = TokioMutex<T>;

    fn spawn<T>(future: T) -> Self::JoinHandle<T::Output>
    where
        T: Future + OptionalSend + 'static,
        T::Output: OptionalSend + 'static,
    {
        // A panic inside openraft ends its task, not the shard.
        let fut = std::panic::AssertUnwindSafe(future).catch_unwind();
        let task = crate::stall::spawn_local("metadata quorum", async move {
            match fut.await {
                Ok(v) => Some(v),
                Err(_) => {
                    log::error!(
                        "a metadata quorum task panicked (a bug; see the panic message above)"
                    );
                    None
                }
            }
        });
        JoinHandle(task.detach())
    }

    fn sleep(duration: Duration) -> Self::Sleep {
        Box::pin(async move {
            glommio::timer::sleep(duration).await;
        })
    }

    fn sleep_until(deadline: Self::Instant) -> Self::Sleep {
        Self::sleep(until(deadline))
    }

    fn timeout<R, F: Future<Output = R> + OptionalSend>(
        duration: Duration,
        future: F,
    ) -> Self::Timeout<R, F> {
        Timeout {
            fut: Box::pin(future),
            timer: glommio::timer::Timer::new(duration),
        }
    }

    fn timeout_at<R, F: Future<Output = R> + OptionalSend>(
        deadline: Self::Instant,
        future: F,
    ) -> Self::Timeout<R, F> {
        Self::timeout(until(deadline), future)
    }

    fn is_panic(_: &Self::JoinError) -> bool {
        true
    }

    fn thread_rng() -> Self::ThreadLocalRng {
        rand::rng()
    }

    fn new(_threads: usize) -> Self {
        GlommioRuntime
    }

    fn block_on<F, T>(&mut self, future: F) -> T
    where
        F: Future<Output = T>,
    {
        // Tests only (openraft's runtime suite): a fresh executor on this thread.
        match glommio::LocalExecutorBuilder::default().make() {
            Ok(ex) => ex.run(future),
            Err(e) => {
                log::error!("cannot start a glommio executor: {e}");
                std::process::abort()
            }
        }
    }
}

/// Bounded MPSC channels: tokio's.
pub struct TokioMpsc;

/// Sending half.
pub struct MpscSender<T>(tokio::sync::mpsc::Sender<T>);
/// Receiving half.
pub struct MpscReceiver<T>(tokio::sync::mpsc::Receiver<T>);
/// Weak sending half.
pub struct MpscWeakSender<T>(tokio::sync::mpsc::WeakSender<T>);

impl<T> Clone for MpscSender<T> {
    fn clone(&self) -> Self {
        MpscSender(self.0.clone())
    }
}

impl<T> Clone for MpscWeakSender<T> {
    fn clone(&self) -> Self {
        MpscWeakSender(self.0.clone())
    }
}

impl rt::Mpsc for TokioMpsc {
    type Sender<T: OptionalSend> = MpscSender<T>;
    type Receiver<T: OptionalSend> = MpscReceiver<T>;
    type WeakSender<T: OptionalSend> = MpscWeakSender<T>;

    fn channel<T: OptionalSend>(buffer: usize) -> (Self::Sender<T>, Self::Receiver<T>) {
        let (tx, rx) = tokio::sync::mpsc::channel(buffer.max(1));
        (MpscSender(tx), MpscReceiver(rx))
    }
}

impl<T: OptionalSend> rt::MpscSender<TokioMpsc, T> for MpscSender<T> {
    fn send(&self, msg: T) -> impl Future<Output = Result<(), SendError<T>>> + OptionalSend {
        let tx = self.0.clone();
        async move { tx.send(msg).await.map_err(|e| SendError(e.0)) }
    }

    fn downgrade(&self) -> MpscWeakSender<T> {
        MpscWeakSender(self.0.downgrade())
    }
}

impl<T: OptionalSend> rt::MpscReceiver<T> for MpscReceiver<T> {
    fn recv(&mut self) -> impl Future<Output = Option<T>> + OptionalSend {
        self.0.recv()
    }

    fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.0.try_recv().map_err(|e| match e {
            tokio::sync::mpsc::error::TryRecvError::Empty => TryRecvError::Empty,
            tokio::sync::mpsc::error::TryRecvError::Disconnected => TryRecvError::Disconnected,
        })
    }
}

impl<T: OptionalSend> rt::MpscWeakSender<TokioMpsc, T> for MpscWeakSender<T> {
    fn upgrade(&self) -> Option<MpscSender<T>> {
        self.0.upgrade().map(MpscSender)
    }
}

/// Watch channels: tokio's.
pub struct TokioWatch;

/// Sending half.
pub struct WatchSender<T>(std::rc::Rc<tokio::sync::watch::Sender<T>>);
/// Receiving half.
pub struct WatchReceiver<T>(tokio::sync::watch::Receiver<T>);

impl<T> Clone for WatchSender<T> {
    fn clone(&self) -> Self {
        WatchSender(self.0.clone())
    }
}

impl<T> Clone for WatchReceiver<T> {
    fn clone(&self) -> Self {
        WatchReceiver(self.0.clone())
    }
}

impl rt::Watch for TokioWatch {
    type Sender<T: OptionalSend + OptionalSync> = WatchSender<T>;
    type Receiver<T: OptionalSend + OptionalSync> = WatchReceiver<T>;
    type Ref<'a, T: OptionalSend + 'a> = tokio::sync::watch::Ref<'a, T>;

    fn channel<T: OptionalSend + OptionalSync>(init: T) -> (Self::Sender<T>, Self::Receiver<T>) {
        let (tx, rx) = tokio::sync::watch::channel(init);
        (WatchSender(std::rc::Rc::new(tx)), WatchReceiver(rx))
    }
}

impl<T: OptionalSend + OptionalSync> rt::WatchSender<TokioWatch, T> for WatchSender<T> {
    fn send(&self, value: T) -> Result<(), WatchSendError<T>> {
        self.0.send(value).map_err(|e| WatchSendError(e.0))
    }

    fn send_if_modified<F>(&self, modify: F) -> bool
    where
        F: FnOnce(&mut T) -> bool,
    {
        self.0.send_if_modified(modify)
    }

    fn borrow_watched(&self) -> tokio::sync::watch::Ref<'_, T> {
        self.0.borrow()
    }

    fn subscribe(&self) -> WatchReceiver<T> {
        WatchReceiver(self.0.subscribe())
    }
}

impl<T: OptionalSend + OptionalSync> rt::WatchReceiver<TokioWatch, T> for WatchReceiver<T> {
    async fn changed(&mut self) -> Result<(), RecvError> {
        self.0.changed().await.map_err(|_| RecvError(()))
    }

    fn borrow_watched(&self) -> tokio::sync::watch::Ref<'_, T> {
        self.0.borrow()
    }

    fn borrow_and_update(&mut self) -> tokio::sync::watch::Ref<'_, T> {
        self.0.borrow_and_update()
    }
}

/// One-shot channels: tokio's.
pub struct TokioOneshot;

/// Sending half.
pub struct OneshotSender<T>(tokio::sync::oneshot::Sender<T>);

impl rt::Oneshot for TokioOneshot {
    type Sender<T: OptionalSend> = OneshotSender<T>;
    type Receiver<T: OptionalSend> = tokio::sync::oneshot::Receiver<T>;
    type ReceiverError = tokio::sync::oneshot::error::RecvError;

    fn channel<T: OptionalSend>() -> (Self::Sender<T>, Self::Receiver<T>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (OneshotSender(tx), rx)
    }
}

impl<T: OptionalSend> rt::OneshotSender<T> for OneshotSender<T> {
    fn send(self, t: T) -> Result<(), T> {
        self.0.send(t)
    }
}

/// The async mutex: tokio's.
pub struct TokioMutex<T>(tokio::sync::Mutex<T>);

impl<T: OptionalSend + 'static> rt::Mutex<T> for TokioMutex<T> {
    type Guard<'a> = tokio::sync::MutexGuard<'a, T>;

    fn new(value: T) -> Self {
        TokioMutex(tokio::sync::Mutex::new(value))
    }

    fn lock(&self) -> impl Future<Output = Self::Guard<'_>> + OptionalSend {
        self.0.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// openraft's own conformance suite for runtimes.
    #[test]
    fn openraft_runtime_suite() {
        openraft::rt::testing::Suite::<GlommioRuntime>::test_all();
    }
}
