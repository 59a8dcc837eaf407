//! Scenarios run in-process (`harness`): a whole broker with two shards in
//! this test process, driven through the owners' operations and the
//! coordinators, without a client or a child process. Each was a process
//! test before; the client-visible behaviour stays covered by the
//! compatibility runners and the process tests that need a real client.

// Integration tests: a failed unwrap, expect or panic is a failed test, which
// is what it should be here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;

/// Records appended through the owner from the other shard are read back
/// in order, and are still there after a clean restart.
#[test]
fn appends_cross_shards_and_survive_a_restart() {
    let mut node = Node::start(&[]);
    node.create_topic("t", 4, &[]);
    let ts = now_ms();
    for p in 0..4 {
        for round in 0..3 {
            let a = node.produce(1, "t", p, batch(-1, -1, -1, 5, ts, false), None);
            assert!(a.error.is_none(), "{:?}", a.error);
            assert_eq!(a.base_offset, round * 5);
        }
    }
    node.restart();
    for p in 0..4 {
        let (read, bytes) = node.fetch("t", p, 0, 0);
        assert!(read.error.is_none(), "{:?}", read.error);
        assert_eq!(read.high_watermark, 15);
        let recs = records(&bytes);
        assert_eq!(recs.len(), 15);
        assert!(recs.iter().enumerate().all(|(i, (o, _))| *o == i as i64));
    }
}
