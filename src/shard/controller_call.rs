//! Running a change on the controller: the cluster controller lives on
//! shard 0; [`with_controller`] runs a closure there and publishes the
//! resulting metadata image to every shard before it returns.

use std::rc::Rc;
use std::sync::Arc;

use crate::cluster::controller::Controller;
use crate::cluster::metadata::MetadataImage;
use crate::error::ShardError;

use super::Shard;

/// Runs `f` on the controller (shard 0), then publishes the resulting image
/// to every shard before returning, so a client that gets a successful
/// CreateTopics response can produce at once on any connection.
pub async fn with_controller<R, F>(shard: &Rc<Shard>, f: F) -> Result<R, ShardError>
where
    R: Send + 'static,
    F: FnOnce(&mut Controller) -> R + Send + 'static,
{
    shard
        .invoke_on(0, move |s| async move {
            let (r, image, changed): (R, Arc<MetadataImage>, bool) = {
                let Some(c) = s.controller.as_ref() else {
                    return Err(ShardError::Unavailable(0));
                };
                let mut c = c.borrow_mut();
                let before = c.image().version;
                let r = f(&mut c);
                let image = c.image();
                let changed = image.version != before;
                (r, image, changed)
            };
            if changed {
                s.publish_metadata(image).await?;
            }
            Ok(r)
        })
        .await?
}
