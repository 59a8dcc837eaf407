//! The transaction state machine with a fake clock: every state × every
//! request (table), then the transitions, fencing, epoch exhaustion,
//! timeouts and expiry step by step.

use super::*;
use crate::error::KafkaCode;

const PID: i64 = 1000;
const EPOCH: i16 = 5;
const START: i64 = 1_000;
const TIMEOUT: i32 = 60_000;

/// A clock the tests move by hand (ms since the epoch).
struct Clock(i64);

impl Clock {
    fn now(&self) -> i64 {
        self.0
    }
    fn advance(&mut self, ms: i64) {
        self.0 += ms;
    }
}

fn cfg() -> TxnConfig {
    TxnConfig::default()
}

fn tp(t: &str, p: i32) -> (String, i32) {
    (t.to_string(), p)
}

/// The metadata of an id in `status`, as this coordinator leaves it there.
fn meta(status: TxnStatus) -> TxnMetadata {
    let open = matches!(
        status,
        TxnStatus::Ongoing
            | TxnStatus::PrepareCommit
            | TxnStatus::PrepareAbort
            | TxnStatus::PrepareEpochFence
    );
    TxnMetadata {
        value: TxnLogValue {
            producer_id: PID,
            producer_epoch: EPOCH,
            timeout_ms: TIMEOUT,
            status,
            partitions: if open {
                [tp("t", 0)].into_iter().collect()
            } else {
                BTreeSet::new()
            },
            last_update_ms: START,
            start_ms: if status == TxnStatus::Empty {
                -1
            } else {
                START
            },
        },
        last_epoch: -1,
    }
}

fn err(e: &TxnError) -> String {
    format!("err {}", e.code())
}

fn init_outcome(r: Result<InitDecision, TxnError>) -> String {
    match r {
        Ok(InitDecision::Persist(t)) => format!(
            "persist {} e{} p{}",
            t.value.status.name(),
            t.value.producer_epoch,
            t.value.producer_id
        ),
        Ok(InitDecision::NewProducerId) => "new pid".into(),
        Ok(InitDecision::AbortOngoing(plan)) => format!(
            "fence {} e{}",
            plan.prepare.value.status.name(),
            plan.prepare.value.producer_epoch
        ),
        Err(e) => err(&e),
    }
}

fn end_outcome(r: Result<EndDecision, TxnError>) -> String {
    match r {
        Ok(EndDecision::AlreadyDone) => "done".into(),
        Ok(EndDecision::End(plan)) => format!(
            "{} e{}",
            plan.prepare.value.status.name(),
            plan.prepare.value.producer_epoch
        ),
        Err(e) => err(&e),
    }
}

fn add_outcome(r: Result<Option<Transition>, TxnError>) -> String {
    match r {
        Ok(None) => "ok".into(),
        Ok(Some(t)) => format!("persist {}", t.value.status.name()),
        Err(e) => err(&e),
    }
}

const REQUESTS: [&str; 10] = [
    "InitProducerId",
    "InitProducerId(pid, epoch)",
    "AddPartitionsToTxn",
    "AddOffsetsToTxn",
    "EndTxn(commit)",
    "EndTxn(abort)",
    "DescribeTransactions",
    "transaction timeout",
    "id expiration",
    "verify partition",
];

/// The answer of an id in state `m` to request number `req` of [`REQUESTS`].
fn answer(m: Option<&TxnMetadata>, req: usize) -> String {
    let c = cfg();
    let now = START + 1_000;
    match req {
        0 => init_outcome(init_producer_id(
            m,
            &InitRequest::new(30_000, -1, -1),
            now,
            &c,
        )),
        1 => init_outcome(init_producer_id(
            m,
            &InitRequest::new(30_000, PID, EPOCH),
            now,
            &c,
        )),
        2 => add_outcome(add_partitions(
            m,
            PID,
            EPOCH,
            &[tp("t", 0), tp("t", 1)],
            now,
        )),
        3 => add_outcome(add_partitions(
            m,
            PID,
            EPOCH,
            &[tp("__consumer_offsets", 7)],
            now,
        )),
        4 => end_outcome(end_txn(m, PID, EPOCH, true, now)),
        5 => end_outcome(end_txn(m, PID, EPOCH, false, now)),
        6 => {
            let d = describe("tx", m);
            match d.error {
                Some(e) => err(&e),
                None => d.state.to_string(),
            }
        }
        7 => match m.and_then(|m| timeout_abort(m, START + TIMEOUT as i64 + 1)) {
            Some(plan) => format!(
                "{} e{}",
                plan.prepare.value.status.name(),
                plan.prepare.value.producer_epoch
            ),
            None => "keep".into(),
        },
        8 => match m.map(|m| expired(m, START + c.id_expiration_ms + 1, &c)) {
            Some(true) => "expire".into(),
            Some(false) | None => "keep".into(),
        },
        9 => match verify_partition(m, PID, EPOCH, &tp("t", 0)) {
            Ok(()) => "ok".into(),
            Err(e) => err(&e),
        },
        _ => unreachable!(),
    }
}

/// Every state (and no metadata) × every request, with Kafka's answers:
/// 49 INVALID_PRODUCER_ID_MAPPING, 48 INVALID_TXN_STATE, 51
/// CONCURRENT_TRANSACTIONS, 105 TRANSACTIONAL_ID_NOT_FOUND.
#[test]
fn every_state_answers_every_request() {
    use TxnStatus::*;
    let bump = "persist Empty e6 p1000";
    let table: [(Option<TxnStatus>, [&str; 10]); 9] = [
        (
            None,
            [
                "new pid", "new pid", "err 49", "err 49", "err 49", "err 49", "err 105", "keep",
                "keep", "err 49",
            ],
        ),
        (
            Some(Empty),
            [
                bump,
                bump,
                "persist Ongoing",
                "persist Ongoing",
                "err 48",
                "err 48",
                "Empty",
                "keep",
                "expire",
                "err 48",
            ],
        ),
        (
            Some(Ongoing),
            [
                "fence PrepareAbort e6",
                "fence PrepareAbort e6",
                "persist Ongoing",
                "persist Ongoing",
                "PrepareCommit e5",
                "PrepareAbort e5",
                "Ongoing",
                "PrepareAbort e6",
                "keep",
                "ok",
            ],
        ),
        (
            Some(PrepareCommit),
            [
                "err 51",
                "err 51",
                "err 51",
                "err 51",
                "err 51",
                "err 48",
                "PrepareCommit",
                "keep",
                "keep",
                "err 48",
            ],
        ),
        (
            Some(PrepareAbort),
            [
                "err 51",
                "err 51",
                "err 51",
                "err 51",
                "err 48",
                "err 51",
                "PrepareAbort",
                "keep",
                "keep",
                "err 48",
            ],
        ),
        (
            Some(CompleteCommit),
            [
                bump,
                bump,
                "persist Ongoing",
                "persist Ongoing",
                "done",
                "err 48",
                "CompleteCommit",
                "keep",
                "expire",
                "err 48",
            ],
        ),
        (
            Some(CompleteAbort),
            [
                bump,
                bump,
                "persist Ongoing",
                "persist Ongoing",
                "err 48",
                "done",
                "CompleteAbort",
                "keep",
                "expire",
                "err 48",
            ],
        ),
        (
            Some(PrepareEpochFence),
            [
                "err 51",
                "err 51",
                "err 51",
                "err 51",
                "err 48",
                "err 48",
                "PrepareEpochFence",
                "keep",
                "keep",
                "err 48",
            ],
        ),
        (
            Some(Dead),
            [
                bump, bump, "err 48", "err 48", "err 48", "err 48", "err 105", "keep", "keep",
                "err 48",
            ],
        ),
    ];
    let mut pairs = 0;
    for (status, want) in table {
        let m = status.map(meta);
        for (req, want) in want.iter().enumerate() {
            assert_eq!(
                answer(m.as_ref(), req),
                *want,
                "state {:?}, request {}",
                status,
                REQUESTS[req]
            );
            pairs += 1;
        }
    }
    assert_eq!(pairs, 90);
}

#[test]
fn a_transaction_from_init_to_commit_and_the_next_to_abort() {
    let c = cfg();
    let mut clock = Clock(10_000);
    let req = InitRequest::new(TIMEOUT, -1, -1);
    assert_eq!(
        init_producer_id(None, &req, clock.now(), &c),
        Ok(InitDecision::NewProducerId)
    );
    let t = with_new_producer_id(PID, &req, clock.now());
    assert_eq!(t.value.status, TxnStatus::Empty);
    assert_eq!((t.value.producer_id, t.value.producer_epoch), (PID, 0));
    assert_eq!((t.value.start_ms, t.value.last_update_ms), (-1, 10_000));
    let m = t.metadata();

    clock.advance(5);
    let t = add_partitions(Some(&m), PID, 0, &[tp("a", 0)], clock.now())
        .unwrap()
        .unwrap();
    assert_eq!(t.value.status, TxnStatus::Ongoing);
    assert_eq!(t.value.start_ms, 10_005);
    let m = t.metadata();
    // A second partition keeps the start time; a repeated one writes nothing.
    clock.advance(5);
    let t = add_partitions(Some(&m), PID, 0, &[tp("b", 1)], clock.now())
        .unwrap()
        .unwrap();
    assert_eq!(t.value.start_ms, 10_005);
    assert_eq!(t.value.last_update_ms, 10_010);
    assert_eq!(t.value.partitions.len(), 2);
    let m = t.metadata();
    assert_eq!(
        add_partitions(Some(&m), PID, 0, &[tp("a", 0)], clock.now()),
        Ok(None)
    );
    assert_eq!(verify_partition(Some(&m), PID, 0, &tp("b", 1)), Ok(()));
    assert_eq!(
        verify_partition(Some(&m), PID, 0, &tp("c", 0)).map_err(|e| e.code()),
        Err(48)
    );

    clock.advance(5);
    let EndDecision::End(plan) = end_txn(Some(&m), PID, 0, true, clock.now()).unwrap() else {
        panic!("an open transaction ends")
    };
    assert_eq!(plan.prepare.value.status, TxnStatus::PrepareCommit);
    assert_eq!(plan.prepare.value.last_update_ms, 10_015);
    assert_eq!(
        plan.markers,
        Markers {
            producer_id: PID,
            producer_epoch: 0,
            commit: true,
            partitions: [tp("a", 0), tp("b", 1)].into_iter().collect(),
        }
    );
    assert_eq!(
        pending_markers(&plan.prepare.value),
        Some(plan.markers.clone())
    );
    let prepared = plan.prepare.metadata();
    assert!(still_prepared(Some(&prepared), &plan.prepare.value));
    clock.advance(5);
    let done = complete(&plan.prepare, true, clock.now());
    assert_eq!(done.value.status, TxnStatus::CompleteCommit);
    assert!(done.value.partitions.is_empty());
    assert_eq!(done.value.start_ms, 10_005, "the start time stays");
    assert_eq!(done.value.last_update_ms, 10_020);
    assert!(!still_prepared(Some(&done.metadata()), &plan.prepare.value));
    assert!(!still_prepared(None, &plan.prepare.value));
    assert_eq!(pending_markers(&done.value), None);
    let m = done.metadata();
    // A retried commit is answered again; an abort now is invalid.
    assert_eq!(
        end_txn(Some(&m), PID, 0, true, clock.now()),
        Ok(EndDecision::AlreadyDone)
    );

    // The next transaction starts afresh, then aborts.
    clock.advance(100);
    let t = add_partitions(Some(&m), PID, 0, &[tp("c", 2)], clock.now())
        .unwrap()
        .unwrap();
    assert_eq!(t.value.start_ms, 10_120);
    assert_eq!(
        t.value.partitions,
        [tp("c", 2)].into_iter().collect::<BTreeSet<_>>()
    );
    let m = t.metadata();
    let EndDecision::End(plan) = end_txn(Some(&m), PID, 0, false, clock.now()).unwrap() else {
        panic!("an open transaction ends")
    };
    assert!(!plan.markers.commit);
    let m = complete(&plan.prepare, false, clock.now()).metadata();
    assert_eq!(m.value.status, TxnStatus::CompleteAbort);

    // A new producer with the same id bumps the epoch.
    let Ok(InitDecision::Persist(t)) = init_producer_id(Some(&m), &req, clock.now(), &c) else {
        panic!("a completed id is bumped")
    };
    assert_eq!((t.value.producer_id, t.value.producer_epoch), (PID, 1));
    assert_eq!(t.value.status, TxnStatus::Empty);
    assert_eq!(t.value.start_ms, -1);
}

#[test]
fn a_new_producer_fences_the_open_transaction_of_the_old_one() {
    let c = cfg();
    let clock = Clock(START + 10);
    let m = meta(TxnStatus::Ongoing);
    let req = InitRequest::new(TIMEOUT, -1, -1);
    let Ok(InitDecision::AbortOngoing(plan)) = init_producer_id(Some(&m), &req, clock.now(), &c)
    else {
        panic!("an open transaction is aborted first")
    };
    assert_eq!(plan.prepare.value.status, TxnStatus::PrepareAbort);
    assert_eq!(plan.prepare.value.producer_epoch, EPOCH + 1);
    assert_eq!(plan.prepare.last_epoch, EPOCH, "the fenced epoch is kept");
    assert_eq!(plan.markers.producer_epoch, EPOCH + 1);
    assert!(!plan.markers.commit);
    let fenced = plan.prepare.metadata();
    // While the abort is written, the old producer is fenced.
    assert_eq!(
        end_txn(Some(&fenced), PID, EPOCH, true, clock.now()).map_err(|e| e.code()),
        Err(90)
    );
    assert_eq!(
        add_partitions(Some(&fenced), PID, EPOCH, &[tp("t", 0)], clock.now()).map_err(|e| e.code()),
        Err(90)
    );
    assert_eq!(
        verify_partition(Some(&fenced), PID, EPOCH, &tp("t", 0)).map_err(|e| e.code()),
        Err(47),
        "verification answers INVALID_PRODUCER_EPOCH"
    );
    let aborted = complete(&plan.prepare, false, clock.now()).metadata();
    assert_eq!(aborted.last_epoch, EPOCH);
    // Decided again (the pair was checked): the new producer gets epoch + 2.
    let Ok(InitDecision::Persist(t)) = init_producer_id(Some(&aborted), &req, clock.now(), &c)
    else {
        panic!("the aborted id is bumped")
    };
    assert_eq!(t.value.producer_epoch, EPOCH + 2);
    assert_eq!(t.last_epoch, -1);
    // KIP-360: the fenced producer may re-initialise with its old pair…
    let again = InitRequest::new(TIMEOUT, PID, EPOCH);
    assert!(matches!(
        init_producer_id(Some(&aborted), &again, clock.now(), &c),
        Ok(InitDecision::Persist(_))
    ));
    // …but not with an older epoch or another producer id.
    for (pid, epoch) in [(PID, EPOCH - 1), (PID + 1, EPOCH + 1)] {
        let stale = InitRequest::new(TIMEOUT, pid, epoch);
        assert_eq!(
            init_producer_id(Some(&aborted), &stale, clock.now(), &c),
            Err(TxnError::ProducerFenced {
                producer_id: pid,
                epoch,
                current_epoch: EPOCH + 1
            })
        );
    }
}

#[test]
fn an_exhausted_epoch_rotates_the_producer_id() {
    let c = cfg();
    let req = InitRequest::new(TIMEOUT, -1, -1);
    let mut m = meta(TxnStatus::CompleteCommit);
    m.value.producer_epoch = MAX_HANDED_OUT_EPOCH - 1;
    let Ok(InitDecision::Persist(t)) = init_producer_id(Some(&m), &req, 1, &c) else {
        panic!("bumped")
    };
    assert_eq!(t.value.producer_epoch, MAX_HANDED_OUT_EPOCH);
    let m = t.metadata();
    assert_eq!(
        init_producer_id(Some(&m), &req, 2, &c),
        Ok(InitDecision::NewProducerId)
    );
    let t = with_new_producer_id(PID + 1, &req, 2);
    assert_eq!((t.value.producer_id, t.value.producer_epoch), (PID + 1, 0));
    // Fencing at the last handed-out epoch still bumps (to i16::MAX), then
    // the retry rotates the producer id.
    let mut m = meta(TxnStatus::Ongoing);
    m.value.producer_epoch = MAX_HANDED_OUT_EPOCH;
    let Ok(InitDecision::AbortOngoing(plan)) = init_producer_id(Some(&m), &req, 3, &c) else {
        panic!("fenced")
    };
    assert_eq!(plan.prepare.value.producer_epoch, i16::MAX);
    let aborted = complete(&plan.prepare, false, 4).metadata();
    assert_eq!(
        init_producer_id(Some(&aborted), &req, 5, &c),
        Ok(InitDecision::NewProducerId)
    );
}

#[test]
fn the_transaction_timeout_aborts_with_a_fencing_epoch() {
    let mut clock = Clock(START);
    let m = meta(TxnStatus::Ongoing);
    clock.advance(TIMEOUT as i64);
    assert_eq!(
        timeout_abort(&m, clock.now()),
        None,
        "not past the timeout yet"
    );
    clock.advance(1);
    let plan = timeout_abort(&m, clock.now()).unwrap();
    assert_eq!(plan.prepare.value.status, TxnStatus::PrepareAbort);
    assert_eq!(plan.prepare.value.producer_epoch, EPOCH + 1);
    assert_eq!(plan.prepare.value.last_update_ms, clock.now());
    assert_eq!(plan.prepare.last_epoch, EPOCH);
    assert!(!plan.markers.commit);
    let aborted = complete(&plan.prepare, false, clock.now()).metadata();
    // The timed-out producer's commit is fenced.
    assert_eq!(
        end_txn(Some(&aborted), PID, EPOCH, true, clock.now()).map_err(|e| e.code()),
        Err(90)
    );
    // An Ongoing state without a start time never times out.
    let mut no_start = meta(TxnStatus::Ongoing);
    no_start.value.start_ms = -1;
    assert_eq!(timeout_abort(&no_start, i64::MAX), None);
}

#[test]
fn an_idle_id_expires_after_the_expiration_time() {
    let c = cfg();
    let mut clock = Clock(START);
    let m = meta(TxnStatus::CompleteAbort);
    clock.advance(c.id_expiration_ms);
    assert!(!expired(&m, clock.now(), &c));
    clock.advance(1);
    assert!(expired(&m, clock.now(), &c));
    assert!(!expired(&meta(TxnStatus::Ongoing), clock.now(), &c));
}

#[test]
fn the_transaction_timeout_must_be_within_the_maximum() {
    let c = cfg();
    for (timeout, ok) in [(0, false), (-1, false), (1, true), (c.max_timeout_ms, true)] {
        let r = init_producer_id(None, &InitRequest::new(timeout, -1, -1), 0, &c);
        assert_eq!(r.is_ok(), ok, "{timeout}");
    }
    let over = c.max_timeout_ms + 1;
    assert_eq!(
        init_producer_id(
            Some(&meta(TxnStatus::Empty)),
            &InitRequest::new(over, -1, -1),
            0,
            &c
        ),
        Err(TxnError::InvalidTransactionTimeout {
            timeout_ms: over,
            max_timeout_ms: c.max_timeout_ms
        })
    );
}

#[test]
fn another_producer_id_is_an_invalid_mapping() {
    let m = meta(TxnStatus::Ongoing);
    let mapping = Err(TxnError::InvalidProducerIdMapping {
        producer_id: PID + 1,
        current: Some(PID),
    });
    assert_eq!(
        add_partitions(Some(&m), PID + 1, EPOCH, &[tp("t", 0)], 0).map(|_| ()),
        mapping
    );
    assert_eq!(
        end_txn(Some(&m), PID + 1, EPOCH, true, 0).map(|_| ()),
        mapping
    );
    assert_eq!(
        verify_partition(Some(&m), PID + 1, EPOCH, &tp("t", 0)),
        mapping
    );
}

#[test]
fn list_filters_by_state_producer_and_duration() {
    let m = meta(TxnStatus::Ongoing);
    let now = START + 500;
    assert!(list_matches(&m, &[], &[], -1, now));
    assert!(list_matches(&m, &["Ongoing".into()], &[PID], 500, now));
    assert!(!list_matches(&m, &["Empty".into()], &[], -1, now));
    assert!(!list_matches(&m, &[], &[PID + 1], -1, now));
    assert!(!list_matches(&m, &[], &[], 501, now));
    assert!(!list_matches(&meta(TxnStatus::Empty), &[], &[], 0, now));
    let d = summary("tx", &meta(TxnStatus::Dead));
    assert_eq!((d.state, d.error), ("Dead", None));
}
