//! Producer id allocation (InitProducerId). Ids are handed out from blocks of
//! [`BLOCK`]; the end of the current block is persisted before any id in it is
//! given, so ids are never reused after a restart (Kafka's ProducerIdManager
//! does the same with blocks of 1000 in its metadata log).

use std::path::{Path, PathBuf};

use crate::cluster::controller::write_atomic;

/// Ids reserved per persisted block.
pub const BLOCK: i64 = 1000;

/// Allocator of producer ids, owned by the controller shard.
#[derive(Debug)]
pub struct ProducerIdManager {
    path: PathBuf,
    next: i64,
    block_end: i64,
}

impl ProducerIdManager {
    /// Opens the allocator persisted at `<dir>/producer-ids`.
    pub fn open(dir: &Path) -> std::io::Result<ProducerIdManager> {
        let path = dir.join("producer-ids");
        let next = match std::fs::read_to_string(&path) {
            Ok(s) => s.trim().parse().unwrap_or(0),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        Ok(ProducerIdManager {
            path,
            next,
            block_end: next,
        })
    }

    /// A fresh producer id.
    pub fn allocate(&mut self) -> std::io::Result<i64> {
        if self.next >= self.block_end {
            let end = self.next + BLOCK;
            write_atomic(&self.path, format!("{end}\n").as_bytes())?;
            self.block_end = end;
        }
        let id = self.next;
        self.next += 1;
        Ok(id)
    }
}

/// Makes sure the allocator persisted in `dir` never hands out `id` or any
/// id below it (after importing partitions whose producer state names ids
/// another broker allocated). Only moves the persisted value forward.
pub fn reserve_through(dir: &Path, id: i64) -> std::io::Result<()> {
    let path = dir.join("producer-ids");
    let current = match std::fs::read_to_string(&path) {
        Ok(s) => s.trim().parse().unwrap_or(0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e),
    };
    if id < current {
        return Ok(());
    }
    write_atomic(&path, format!("{}\n", id + 1).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_never_reused_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = ProducerIdManager::open(dir.path()).unwrap();
        let a = m.allocate().unwrap();
        let b = m.allocate().unwrap();
        assert_eq!((a, b), (0, 1));
        drop(m);
        let mut m = ProducerIdManager::open(dir.path()).unwrap();
        assert!(m.allocate().unwrap() >= BLOCK);
    }

    #[test]
    fn reserved_ids_are_never_allocated() {
        let dir = tempfile::tempdir().unwrap();
        reserve_through(dir.path(), 4711).unwrap();
        reserve_through(dir.path(), 12).unwrap(); // never moves back
        let mut m = ProducerIdManager::open(dir.path()).unwrap();
        assert_eq!(m.allocate().unwrap(), 4712);
    }
}
