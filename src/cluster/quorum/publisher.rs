//! The one path by which this node's metadata images reach its shards.
//!
//! Images come from the state machine (a stored snapshot opened at start,
//! committed entries applied, a snapshot installed, a broker-only node's
//! fetched log) and from changes of the active controller. [`Publisher`]
//! gives each a publication version, one above the last, and hands them to
//! the shards one publication at a time, newest first: a publication in
//! flight ends before the next starts, so every shard receives images in
//! version order, and the log offset they reflect never goes back (an image
//! behind the last one is refused with an error line; nothing publishes
//! it). A caller's future ends once every shard holds its image or a newer
//! one.
//!
//! Start-up order ([`super::Quorum::start`]): the publisher starts held.
//! The stored snapshot's image (or the empty one) is given to it before
//! openraft starts; openraft then re-applies the committed entries after the
//! snapshot (in chunks of 64, each an image) and, once elected or told by
//! the leader, the rest of what was committed. None of those images reaches
//! a shard: as Kafka's metadata loader, the node publishes nothing until it
//! has caught up with what it had before ([`Publisher::release`], called by
//! [`super::Quorum::wait_recovered`]), so no shard ever opens or drops a
//! partition on an image of the past. From then on every image is
//! published as it is applied.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use futures_channel::oneshot;

use super::state_machine::Publish;
use crate::cluster::metadata::MetadataImage;

/// Publishes images in order (see the module docs).
pub struct Publisher {
    /// The newest image given a version (delivered or about to be).
    latest: RefCell<Arc<MetadataImage>>,
    /// The version every shard holds (0: none delivered yet).
    delivered: Cell<u64>,
    /// Whether a publication is in flight.
    busy: Cell<bool>,
    /// Callers waiting for the publication in flight to end.
    waiters: RefCell<Vec<oneshot::Sender<()>>>,
    /// While set, images are taken (versioned, kept as the latest) and not
    /// delivered: the node is replaying its metadata log at start-up.
    held: Cell<bool>,
    sink: Publish,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = self.latest.borrow();
        f.debug_struct("Publisher")
            .field("offset", &l.offset)
            .field("version", &l.version)
            .field("delivered", &self.delivered.get())
            .finish()
    }
}

/// Ends a publication (also when its future is dropped): the next one may
/// start, and its waiters look again.
struct InFlight<'a>(&'a Publisher);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.busy.set(false);
        for w in self.0.waiters.borrow_mut().drain(..) {
            let _ = w.send(());
        }
    }
}

impl Publisher {
    /// A publisher whose shards hold `initial` (its version and offset are
    /// the floor of what follows); `sink` hands one image to every shard
    /// and ends once all applied it.
    pub fn new(initial: MetadataImage, sink: Publish) -> Publisher {
        Publisher {
            delivered: Cell::new(initial.version),
            latest: RefCell::new(Arc::new(initial)),
            busy: Cell::new(false),
            waiters: RefCell::new(Vec::new()),
            held: Cell::new(false),
            sink,
        }
    }

    /// [`Publisher::new`], held: nothing is delivered until
    /// [`Publisher::release`].
    pub fn held(initial: MetadataImage, sink: Publish) -> Publisher {
        let p = Publisher::new(initial, sink);
        p.held.set(true);
        p
    }

    /// Ends the hold: delivers the latest image (what the node caught up
    /// to) and everything after it as it comes. Ends once the shards hold it.
    pub async fn release(&self) {
        if !self.held.replace(false) {
            return;
        }
        let latest = self.latest();
        log::info!(
            "metadata: caught up to offset {}; publishing to the shards",
            latest.offset
        );
        self.deliver(latest.version).await;
    }

    /// Whether images are held back (start-up replay).
    pub fn is_held(&self) -> bool {
        self.held.get()
    }

    /// The newest image given a version.
    pub fn latest(&self) -> Arc<MetadataImage> {
        self.latest.borrow().clone()
    }

    /// Publishes an image the state machine applied (its `offset` is the
    /// last log entry in it), with the active controller known here. An
    /// image behind the latest one is refused (logged; Fjord never acts on
    /// older metadata) and the call ends at once.
    pub async fn applied(&self, image: Arc<MetadataImage>) {
        let version = {
            let latest = self.latest.borrow();
            if image.offset < latest.offset {
                log::error!(
                    "metadata: an image at offset {} came after the one at offset {}; not published",
                    image.offset,
                    latest.offset
                );
                return;
            }
            latest.version + 1
        };
        let mut next = (*image).clone();
        next.version = version;
        next.controller_id = self.latest.borrow().controller_id;
        self.latest.replace(Arc::new(next));
        self.deliver(version).await;
    }

    /// Publishes the latest image again with `id` as the active controller
    /// (-1: none known); nothing when that is already the one it names.
    pub async fn controller(&self, id: i32) {
        let version = {
            let latest = self.latest.borrow();
            if latest.controller_id == id {
                return;
            }
            latest.version + 1
        };
        let mut next = (**self.latest.borrow()).clone();
        next.version = version;
        next.controller_id = id;
        self.latest.replace(Arc::new(next));
        self.deliver(version).await;
    }

    /// Waits until every shard holds version `version` or a newer one,
    /// publishing the latest image whenever no publication is in flight.
    async fn deliver(&self, version: u64) {
        loop {
            if self.held.get() {
                return;
            }
            if self.delivered.get() >= version {
                return;
            }
            if self.busy.get() {
                let (tx, rx) = oneshot::channel();
                self.waiters.borrow_mut().push(tx);
                let _ = rx.await;
                continue;
            }
            self.busy.set(true);
            let _in_flight = InFlight(self);
            let image = self.latest();
            (self.sink)(image.clone()).await;
            self.delivered.set(self.delivered.get().max(image.version));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;
    use std::time::Duration;

    fn image(offset: u64) -> Arc<MetadataImage> {
        let mut i = MetadataImage::empty("c".into());
        i.offset = offset;
        Arc::new(i)
    }

    /// A sink that records what it was given and takes `pause` per image,
    /// so publications overlap unless the publisher orders them.
    /// What a sink saw: (offset, version, controller id) per image.
    type Seen = Rc<RefCell<Vec<(u64, u64, i32)>>>;

    fn recording(pause: Duration) -> (Publish, Seen) {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s = seen.clone();
        let sink: Publish = Rc::new(move |img: Arc<MetadataImage>| {
            let s = s.clone();
            Box::pin(async move {
                glommio::timer::sleep(pause).await;
                s.borrow_mut()
                    .push((img.offset, img.version, img.controller_id));
            })
        });
        (sink, seen)
    }

    #[test]
    fn overlapping_publications_reach_the_shards_in_order() {
        let ex = glommio::LocalExecutor::default();
        ex.run(async {
            let (sink, seen) = recording(Duration::from_millis(5));
            let p = Rc::new(Publisher::new(MetadataImage::empty("c".into()), sink));
            let mut tasks = Vec::new();
            for (i, offset) in [1u64, 2, 3, 3, 5].into_iter().enumerate() {
                let p = p.clone();
                tasks.push(glommio::spawn_local(async move {
                    if i == 3 {
                        p.controller(7).await;
                    } else {
                        p.applied(image(offset)).await;
                    }
                    p.delivered.get()
                }));
            }
            // An image behind the latest is refused.
            let late = {
                let p = p.clone();
                glommio::spawn_local(async move { p.applied(image(2)).await })
            };
            for t in tasks {
                t.await;
            }
            late.await;
            let seen = seen.borrow().clone();
            assert!(!seen.is_empty());
            for w in seen.windows(2) {
                assert!(w[1].0 >= w[0].0, "offsets went back: {seen:?}");
                assert!(w[1].1 > w[0].1, "versions not increasing: {seen:?}");
            }
            let last = *seen.last().unwrap();
            assert_eq!(
                (last.0, last.2),
                (5, 7),
                "the newest image, with the controller"
            );
            assert_eq!(p.latest().offset, 5);
        });
    }

    #[test]
    fn a_held_publisher_delivers_only_the_image_it_caught_up_to() {
        let ex = glommio::LocalExecutor::default();
        ex.run(async {
            let (sink, seen) = recording(Duration::from_millis(1));
            let p = Publisher::held(MetadataImage::empty("c".into()), sink);
            // The replay: snapshot, then chunks of entries.
            for offset in [0u64, 64, 128, 150] {
                p.applied(image(offset)).await;
            }
            p.controller(1).await;
            assert!(
                seen.borrow().is_empty(),
                "nothing reaches a shard while held"
            );
            p.release().await;
            assert_eq!(seen.borrow().clone(), [(150, 5, 1)]);
            p.applied(image(151)).await;
            assert_eq!(seen.borrow().last().map(|s| s.0), Some(151));
        });
    }

    #[test]
    fn a_caller_returns_once_its_image_or_a_newer_one_is_delivered() {
        let ex = glommio::LocalExecutor::default();
        ex.run(async {
            let (sink, seen) = recording(Duration::from_millis(20));
            let p = Rc::new(Publisher::new(MetadataImage::empty("c".into()), sink));
            let first = {
                let p = p.clone();
                glommio::spawn_local(async move { p.applied(image(1)).await })
            };
            glommio::timer::sleep(Duration::from_millis(2)).await;
            // Offsets 2 and 3 arrive while 1 is in flight: one publication
            // of 3 serves both.
            let p2 = p.clone();
            let second = glommio::spawn_local(async move { p2.applied(image(2)).await });
            let p3 = p.clone();
            let third = glommio::spawn_local(async move { p3.applied(image(3)).await });
            first.await;
            second.await;
            third.await;
            let offsets: Vec<u64> = seen.borrow().iter().map(|s| s.0).collect();
            assert_eq!(offsets, [1, 3]);
        });
    }
}
