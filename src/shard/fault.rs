//! Fault injection for the crash tests: pauses an append between its stages
//! so that a test can kill the broker with appends in flight at a known
//! stage. Off unless the environment variable `FJORD_FAULT_APPEND_PAUSE` is
//! set to `STAGE:MS` (STAGE is `reserved`, `written` or `committed`; MS the
//! pause in milliseconds), read once at first use. When it fires, a line
//! `fault injection: append paused at STAGE` is logged at warn level before
//! the pause, which is what the tests wait for.
//!
//! `FJORD_FAULT_OPEN_HOLD=TOPIC` holds the opening of every partition of
//! TOPIC (on the shard's background thread, before its directory is
//! touched) until a file `fault-release-open-TOPIC` exists in the data
//! directory; `fault injection: open of TOPIC-P held` is logged at warn
//! level when the hold starts. A test sees the partition while it opens,
//! for as long as it likes, without relying on timing.
//!
//! [`hold_load`] likewise holds a coordinator's load of its partition
//! (`FJORD_FAULT_LOAD_HOLD`).

use std::rc::Rc;
use std::sync::OnceLock;
use std::time::Duration;

use super::partition::Partition;

/// The stages of an append (see `storage::PartitionLog::reserve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Offsets assigned; the write not started.
    Reserved,
    /// The bytes are in the file (page cache); not yet committed.
    Written,
    /// Committed (visible to readers); the producer not yet answered.
    Committed,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Reserved => "reserved",
            Stage::Written => "written",
            Stage::Committed => "committed",
        }
    }
}

fn setting() -> Option<(Stage, u64)> {
    static SETTING: OnceLock<Option<(Stage, u64)>> = OnceLock::new();
    *SETTING.get_or_init(|| {
        let v = std::env::var("FJORD_FAULT_APPEND_PAUSE").ok()?;
        let (stage, ms) = v.split_once(':')?;
        let stage = [Stage::Reserved, Stage::Written, Stage::Committed]
            .into_iter()
            .find(|s| s.name() == stage)?;
        let ms = ms.parse().ok()?;
        log::warn!(
            "fault injection on: appends pause {ms} ms at stage {}",
            stage.name()
        );
        Some((stage, ms))
    })
}

/// True when fault injection pauses appends at `stage`.
pub fn pauses_at(stage: Stage) -> bool {
    setting().is_some_and(|(at, _)| at == stage)
}

/// Pauses the append of `part` when fault injection names `stage` (only
/// for client topics, so internal topics stay usable).
pub async fn pause(stage: Stage, part: &Rc<Partition>) {
    let Some((at, ms)) = setting() else { return };
    if at != stage || part.topic().starts_with("__") {
        return;
    }
    log::warn!(
        "fault injection: append paused at {} ({}-{})",
        stage.name(),
        part.topic(),
        part.index()
    );
    glommio::timer::sleep(Duration::from_millis(ms)).await;
}

/// Holds a coordinator's load of an internal partition (`__consumer_offsets`,
/// `__transaction_state`, `__share_group_state`) while the file named by the environment variable
/// `FJORD_FAULT_LOAD_HOLD` exists, so that a test sees the coordinator
/// loading for as long as it needs (off when the variable is unset). Logs
/// `fault injection: load of TOPIC-N held` once before it waits; checks the
/// file every 10 ms.
pub async fn hold_load(part: &Partition) {
    static HOLD: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    let Some(file) = HOLD.get_or_init(|| std::env::var_os("FJORD_FAULT_LOAD_HOLD").map(Into::into))
    else {
        return;
    };
    if !file.exists() {
        return;
    }
    log::warn!(
        "fault injection: load of {}-{} held",
        part.topic(),
        part.index()
    );
    while file.exists() {
        glommio::timer::sleep(Duration::from_millis(10)).await;
    }
}

/// The topic whose partitions' opens are held (`FJORD_FAULT_OPEN_HOLD`).
fn open_hold() -> Option<&'static str> {
    static SETTING: OnceLock<Option<String>> = OnceLock::new();
    SETTING
        .get_or_init(|| {
            let topic = std::env::var("FJORD_FAULT_OPEN_HOLD").ok()?;
            log::warn!("fault injection on: opens of {topic} are held");
            Some(topic)
        })
        .as_deref()
}

/// Blocks while fault injection holds the opening of `topic`-`index` (see
/// the module docs): until `fault-release-open-<topic>` exists in
/// `data_dir`. Runs on the background thread that opens partitions, never
/// on the reactor.
pub fn hold_open(data_dir: &std::path::Path, topic: &str, index: i32) {
    if open_hold() != Some(topic) {
        return;
    }
    log::warn!("fault injection: open of {topic}-{index} held");
    let release = data_dir.join(format!("fault-release-open-{topic}"));
    while !release.exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    log::warn!("fault injection: open of {topic}-{index} released");
}
