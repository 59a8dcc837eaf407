//! The producer id reservation file (`<data dir>/__cluster_metadata/producer-ids`):
//! the first producer id the controller may
//! hand out. Producer id blocks themselves are metadata-log records
//! (ProducerIdsRecord, applied into `MetadataImage::next_producer_id`); this
//! file only carries a reservation into the log: partitions imported from
//! another broker's data directory name producer ids that broker allocated,
//! and [`reserve_through`] makes sure none of them is handed out again. The
//! quorum turns the file into a ReserveProducerIds request at start-up
//! ([`reserved`]).

use std::path::Path;

use crate::cluster::controller::write_atomic;

/// The reservation file's name, in the metadata directory.
pub const RESERVATION_FILE: &str = "producer-ids";

/// The first producer id the reservation in `dir` allows (every id below it
/// is taken); None when there is no readable reservation.
pub fn reserved(dir: &Path) -> Option<i64> {
    std::fs::read_to_string(dir.join(RESERVATION_FILE))
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok())
}

/// Makes sure the reservation persisted in `dir` covers `id` and every id
/// below it (after importing partitions whose producer state names ids
/// another broker allocated). Only moves the persisted value forward.
/// Errors with the I/O error of reading or writing the file.
pub fn reserve_through(dir: &Path, id: i64) -> std::io::Result<()> {
    let current = match std::fs::read_to_string(dir.join(RESERVATION_FILE)) {
        Ok(s) => s.trim().parse().unwrap_or(0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e),
    };
    if id < current {
        return Ok(());
    }
    write_atomic(
        &dir.join(RESERVATION_FILE),
        format!("{}\n", id + 1).as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_only_moves_forward() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(reserved(dir.path()), None);
        reserve_through(dir.path(), 4711).unwrap();
        reserve_through(dir.path(), 12).unwrap(); // never moves back
        assert_eq!(reserved(dir.path()), Some(4712));
    }
}
