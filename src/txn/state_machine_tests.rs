//! The transaction state machine with a fake clock: every state × every
//! request (table), then the transitions, fencing, epoch exhaustion,
//! timeouts and expiry step by step.

use super::*;
use crate::error::KafkaCode;
use crate::txn::records::{TxnLogTagged, TxnVersion};

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
            tagged: TxnLogTagged::default(),
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
        Ok(EndDecision::AlreadyDone { .. }) => "done".into(),
        Ok(EndDecision::NewProducerId) => "new pid".into(),
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

/// Number of columns of the table: every [`TxnStatus`] and no metadata.
const N: usize = 9;

/// The columns of the table, in the order of [`column`].
const STATES: [Option<TxnStatus>; N] = [
    None,
    Some(TxnStatus::Empty),
    Some(TxnStatus::Ongoing),
    Some(TxnStatus::PrepareCommit),
    Some(TxnStatus::PrepareAbort),
    Some(TxnStatus::CompleteCommit),
    Some(TxnStatus::CompleteAbort),
    Some(TxnStatus::PrepareEpochFence),
    Some(TxnStatus::Dead),
];

/// The column of `state` (`None`: no metadata). An exhaustive match: a new
/// `TxnStatus` does not compile until it is given a column, and a column
/// past `N` does not compile until every row of the table has an answer
/// for it ([`column_answer`] indexes the rows by a constant).
fn column(state: Option<TxnStatus>) -> usize {
    match state {
        None => 0,
        Some(TxnStatus::Empty) => 1,
        Some(TxnStatus::Ongoing) => 2,
        Some(TxnStatus::PrepareCommit) => 3,
        Some(TxnStatus::PrepareAbort) => 4,
        Some(TxnStatus::CompleteCommit) => 5,
        Some(TxnStatus::CompleteAbort) => 6,
        Some(TxnStatus::PrepareEpochFence) => 7,
        Some(TxnStatus::Dead) => 8,
    }
}

/// The answer of `row` for `state`.
fn column_answer(row: &[&'static str; N], state: Option<TxnStatus>) -> &'static str {
    match state {
        None => row[0],
        Some(TxnStatus::Empty) => row[1],
        Some(TxnStatus::Ongoing) => row[2],
        Some(TxnStatus::PrepareCommit) => row[3],
        Some(TxnStatus::PrepareAbort) => row[4],
        Some(TxnStatus::CompleteCommit) => row[5],
        Some(TxnStatus::CompleteAbort) => row[6],
        Some(TxnStatus::PrepareEpochFence) => row[7],
        Some(TxnStatus::Dead) => row[8],
    }
}

#[test]
fn every_txn_state_is_a_column() {
    const NAMES: [&str; N] = ["0", "1", "2", "3", "4", "5", "6", "7", "8"];
    for (i, state) in STATES.iter().enumerate() {
        assert_eq!(column(*state), i, "{state:?}");
        assert_eq!(column_answer(&NAMES, *state), NAMES[i], "{state:?}");
    }
    // Every status byte the log may hold has its column.
    for b in i8::MIN..=i8::MAX {
        if let Some(s) = TxnStatus::from_i8(b) {
            assert_eq!(STATES[column(Some(s))], Some(s), "status byte {b}");
        }
    }
}

/// An id's answer to one request of the table.
type Request = fn(Option<&TxnMetadata>) -> String;

/// Declares the rows of the table: each request as an enum variant with
/// its name, how to send it and the answer per column. The enum, its list
/// and the exhaustive matches are written once here.
macro_rules! requests {
    ($($req:ident: $name:literal, $run:expr, $want:expr;)*) => {
        /// A request of the table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        enum Req {
            $($req,)*
        }

        impl Req {
            const ALL: &'static [Req] = &[$(Req::$req,)*];

            fn name(self) -> &'static str {
                match self {
                    $(Req::$req => $name,)*
                }
            }

            fn send(self, m: Option<&TxnMetadata>) -> String {
                match self {
                    $(Req::$req => {
                        let run: Request = $run;
                        run(m)
                    })*
                }
            }

            /// The answer in each column.
            fn expected(self) -> [&'static str; N] {
                match self {
                    $(Req::$req => $want,)*
                }
            }
        }
    };
}

/// When the table's requests arrive: after the fixtures' last update.
const NOW: i64 = START + 1_000;

/// ListTransactions' answer: whether the id is listed ("absent" when there
/// is no metadata, which no listing can show).
fn listed(m: Option<&TxnMetadata>, states: &[String], min_duration_ms: i64) -> String {
    match m {
        None => "absent".into(),
        Some(m) if list_matches(m, states, &[], min_duration_ms, NOW) => "listed".into(),
        Some(_) => "not listed".into(),
    }
}

/// The table's answer to the transaction timeout.
fn timeout_outcome(m: Option<&TxnMetadata>) -> String {
    match m.and_then(|m| timeout_abort(m, START + TIMEOUT as i64 + 1)) {
        Some(plan) => format!(
            "{} e{}",
            plan.prepare.value.status.name(),
            plan.prepare.value.producer_epoch
        ),
        None => "keep".into(),
    }
}

/// The coordinator's completion of a transaction found in a Prepare state
/// (`resume`, or a marker retry): the markers still owed, then the
/// Complete state once they are written ("none" when nothing is owed).
fn markers_written(m: Option<&TxnMetadata>) -> String {
    let Some((m, markers)) = m.and_then(|m| pending_markers(&m.value).map(|mk| (m, mk))) else {
        return "none".into();
    };
    let prepare = Transition {
        value: m.value.clone(),
        last_epoch: m.last_epoch,
    };
    assert!(still_prepared(Some(m), &prepare.value));
    assert_eq!(markers.partitions, m.value.partitions);
    let done = complete(&prepare, markers.commit, NOW);
    assert!(done.value.partitions.is_empty());
    format!(
        "{} {} e{}",
        if markers.commit { "COMMIT" } else { "ABORT" },
        done.value.status.name(),
        markers.producer_epoch
    )
}

// Kafka's answers: 49 INVALID_PRODUCER_ID_MAPPING, 48 INVALID_TXN_STATE, 51
// CONCURRENT_TRANSACTIONS, 90 PRODUCER_FENCED, 105 TRANSACTIONAL_ID_NOT_FOUND. Columns: no
// metadata, Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
// CompleteAbort, PrepareEpochFence, Dead.
requests! {
    InitProducerId: "InitProducerId",
        |m| init_outcome(init_producer_id(m, &InitRequest::new(30_000, -1, -1), NOW, &cfg())),
        ["new pid", BUMP, "fence PrepareAbort e6", "err 51", "err 51", BUMP, BUMP, "err 51", BUMP];
    InitProducerIdWithPair: "InitProducerId(pid, epoch)",
        |m| init_outcome(init_producer_id(m, &InitRequest::new(30_000, PID, EPOCH), NOW, &cfg())),
        ["new pid", BUMP, "fence PrepareAbort e6", "err 51", "err 51", BUMP, BUMP, "err 51", BUMP];
    AddPartitionsToTxn: "AddPartitionsToTxn",
        |m| add_outcome(add_partitions(m, PID, EPOCH, &[tp("t", 0), tp("t", 1)], TxnVersion::Tv0, NOW)),
        ["err 49", "persist Ongoing", "persist Ongoing", "err 51", "err 51", "persist Ongoing",
         "persist Ongoing", "err 51", "err 48"];
    AddOffsetsToTxn: "AddOffsetsToTxn",
        |m| add_outcome(add_partitions(m, PID, EPOCH, &[tp("__consumer_offsets", 7)], TxnVersion::Tv0, NOW)),
        ["err 49", "persist Ongoing", "persist Ongoing", "err 51", "err 51", "persist Ongoing",
         "persist Ongoing", "err 51", "err 48"];
    EndTxnCommit: "EndTxn(commit)",
        |m| end_outcome(end_txn(m, PID, EPOCH, true, TxnVersion::Tv0, None, NOW)),
        ["err 49", "err 48", "PrepareCommit e5", "err 51", "err 48", "done", "err 48", "err 48",
         "err 48"];
    EndTxnAbort: "EndTxn(abort)",
        |m| end_outcome(end_txn(m, PID, EPOCH, false, TxnVersion::Tv0, None, NOW)),
        ["err 49", "err 48", "PrepareAbort e5", "err 48", "err 51", "err 48", "done", "err 48",
         "err 48"];
    DescribeTransactions: "DescribeTransactions",
        |m| {
            let d = describe("tx", m);
            d.error.map_or_else(|| d.state.to_string(), |e| err(&e))
        },
        ["err 105", "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
         "CompleteAbort", "PrepareEpochFence", "err 105"];
    ListTransactions: "ListTransactions",
        |m| listed(m, &[], -1),
        ["absent", "listed", "listed", "listed", "listed", "listed", "listed", "listed", "listed"];
    ListTransactionsOwnState: "ListTransactions(the id's state)",
        |m| listed(m, &[m.map_or("", |m| m.value.status.name()).to_string()], -1),
        ["absent", "listed", "listed", "listed", "listed", "listed", "listed", "listed", "listed"];
    ListTransactionsOngoing: "ListTransactions(Ongoing, PrepareCommit)",
        |m| listed(m, &["Ongoing".into(), "PrepareCommit".into()], -1),
        ["absent", "not listed", "listed", "listed", "not listed", "not listed", "not listed",
         "not listed", "not listed"];
    ListTransactionsMinDuration: "ListTransactions(open 1000 ms)",
        |m| listed(m, &[], NOW - START),
        ["absent", "not listed", "listed", "listed", "listed", "listed", "listed", "listed",
         "listed"];
    TransactionTimeout: "transaction timeout",
        timeout_outcome,
        ["keep", "keep", "PrepareAbort e6", "keep", "keep", "keep", "keep", "keep", "keep"];
    IdExpiration: "id expiration",
        |m| match m.map(|m| expired(m, START + cfg().id_expiration_ms + 1, &cfg())) {
            Some(true) => "expire".into(),
            Some(false) | None => "keep".into(),
        },
        ["keep", "expire", "keep", "keep", "keep", "expire", "expire", "keep", "keep"];
    VerifyPartition: "verify partition",
        |m| verify_partition(m, PID, EPOCH, &tp("t", 0)).map_or_else(|e| err(&e), |()| "ok".into()),
        ["err 49", "err 120", "ok", "err 51", "err 51", "err 120", "err 120", "err 120",
         "err 120"];
    EndTxnV2Commit: "EndTxn v5(commit)",
        |m| end_outcome(end_txn(m, PID, EPOCH, true, TxnVersion::Tv2, None, NOW)),
        ["err 49", "err 48", "PrepareCommit e6", "err 90", "err 90", "err 48", "err 48", "err 48",
         "err 48"];
    EndTxnV2Abort: "EndTxn v5(abort)",
        |m| end_outcome(end_txn(m, PID, EPOCH, false, TxnVersion::Tv2, None, NOW)),
        ["err 49", "PrepareAbort e6", "PrepareAbort e6", "err 90", "err 90", "PrepareAbort e6",
         "PrepareAbort e6", "err 48", "err 48"];
    EndTxnV2CommitRetry: "EndTxn v5(commit) one epoch below",
        |m| end_outcome(end_txn(m, PID, EPOCH - 1, true, TxnVersion::Tv2, None, NOW)),
        ["err 49", "err 90", "err 90", "err 51", "err 48", "done", "err 48", "err 90", "err 90"];
    EndTxnV2AbortRetry: "EndTxn v5(abort) one epoch below",
        |m| end_outcome(end_txn(m, PID, EPOCH - 1, false, TxnVersion::Tv2, None, NOW)),
        ["err 49", "err 90", "err 90", "err 48", "err 51", "err 48", "done", "err 90", "err 90"];
    EndTxnV2OtherProducer: "EndTxn v5 of another producer id",
        |m| end_outcome(end_txn(m, PID + 1, EPOCH, true, TxnVersion::Tv2, None, NOW)),
        ["err 49", "err 49", "err 49", "err 49", "err 49", "err 49", "err 49", "err 49", "err 49"];
    MarkersWritten: "markers owed, then written",
        markers_written,
        ["none", "none", "none", "COMMIT CompleteCommit e5", "ABORT CompleteAbort e5", "none",
         "none", "ABORT CompleteAbort e5", "none"];
}

/// An epoch bump of a completed (or Empty, or Dead) id.
const BUMP: &str = "persist Empty e6 p1000";

/// Every state (and no metadata) × every request, with Kafka's answers.
#[test]
fn every_state_answers_every_request() {
    let mut pairs = 0;
    for req in Req::ALL {
        let want = req.expected();
        for state in STATES {
            let m = state.map(meta);
            assert_eq!(
                req.send(m.as_ref()),
                column_answer(&want, state),
                "state {state:?}, request {}",
                req.name()
            );
            pairs += 1;
        }
    }
    assert_eq!(pairs, Req::ALL.len() * N);
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
    let t = add_partitions(
        Some(&m),
        PID,
        0,
        &[tp("a", 0)],
        TxnVersion::Tv0,
        clock.now(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(t.value.status, TxnStatus::Ongoing);
    assert_eq!(t.value.start_ms, 10_005);
    let m = t.metadata();
    // A second partition keeps the start time; a repeated one writes nothing.
    clock.advance(5);
    let t = add_partitions(
        Some(&m),
        PID,
        0,
        &[tp("b", 1)],
        TxnVersion::Tv0,
        clock.now(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(t.value.start_ms, 10_005);
    assert_eq!(t.value.last_update_ms, 10_010);
    assert_eq!(t.value.partitions.len(), 2);
    let m = t.metadata();
    assert_eq!(
        add_partitions(
            Some(&m),
            PID,
            0,
            &[tp("a", 0)],
            TxnVersion::Tv0,
            clock.now()
        ),
        Ok(None)
    );
    assert_eq!(verify_partition(Some(&m), PID, 0, &tp("b", 1)), Ok(()));
    assert_eq!(
        verify_partition(Some(&m), PID, 0, &tp("c", 0)).map_err(|e| e.code()),
        Err(120)
    );

    clock.advance(5);
    let EndDecision::End(plan) =
        end_txn(Some(&m), PID, 0, true, TxnVersion::Tv0, None, clock.now()).unwrap()
    else {
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
        end_txn(Some(&m), PID, 0, true, TxnVersion::Tv0, None, clock.now()),
        Ok(EndDecision::AlreadyDone {
            producer_id: PID,
            producer_epoch: 0
        })
    );

    // The next transaction starts afresh, then aborts.
    clock.advance(100);
    let t = add_partitions(
        Some(&m),
        PID,
        0,
        &[tp("c", 2)],
        TxnVersion::Tv0,
        clock.now(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(t.value.start_ms, 10_120);
    assert_eq!(
        t.value.partitions,
        [tp("c", 2)].into_iter().collect::<BTreeSet<_>>()
    );
    let m = t.metadata();
    let EndDecision::End(plan) =
        end_txn(Some(&m), PID, 0, false, TxnVersion::Tv0, None, clock.now()).unwrap()
    else {
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
        end_txn(
            Some(&fenced),
            PID,
            EPOCH,
            true,
            TxnVersion::Tv0,
            None,
            clock.now()
        )
        .map_err(|e| e.code()),
        Err(90)
    );
    assert_eq!(
        add_partitions(
            Some(&fenced),
            PID,
            EPOCH,
            &[tp("t", 0)],
            TxnVersion::Tv0,
            clock.now()
        )
        .map_err(|e| e.code()),
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
        end_txn(
            Some(&aborted),
            PID,
            EPOCH,
            true,
            TxnVersion::Tv0,
            None,
            clock.now()
        )
        .map_err(|e| e.code()),
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
        add_partitions(Some(&m), PID + 1, EPOCH, &[tp("t", 0)], TxnVersion::Tv0, 0).map(|_| ()),
        mapping
    );
    assert_eq!(
        end_txn(Some(&m), PID + 1, EPOCH, true, TxnVersion::Tv0, None, 0).map(|_| ()),
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

/// Transactions v2: every EndTxn bumps the epoch (Prepare and markers at
/// epoch + 1, the answer the bumped pair), a retry one epoch below is
/// answered again, the old epoch is fenced, and an abort right after a
/// commit is an empty transaction of its own.
#[test]
fn transactions_v2_bump_the_epoch_at_every_end() {
    let mut clock = Clock(10_000);
    let m = meta(TxnStatus::Empty);
    let t = add_partitions(
        Some(&m),
        PID,
        EPOCH,
        &[tp("a", 0)],
        TxnVersion::Tv2,
        clock.now(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(t.value.tagged.client_tv, TxnVersion::Tv2);
    let m = t.metadata();
    clock.advance(5);
    let Ok(EndDecision::End(plan)) = end_txn(
        Some(&m),
        PID,
        EPOCH,
        true,
        TxnVersion::Tv2,
        None,
        clock.now(),
    ) else {
        panic!("an open transaction ends")
    };
    assert_eq!(plan.prepare.value.status, TxnStatus::PrepareCommit);
    assert_eq!(plan.prepare.value.producer_epoch, EPOCH + 1);
    assert_eq!(plan.prepare.last_epoch, EPOCH);
    assert_eq!(plan.markers.producer_epoch, EPOCH + 1);
    assert_eq!(plan.prepare.value.tagged.next_producer_id, -1);
    // Retried while the markers are written: CONCURRENT_TRANSACTIONS.
    let prepared = plan.prepare.metadata();
    let retry = end_txn(
        Some(&prepared),
        PID,
        EPOCH,
        true,
        TxnVersion::Tv2,
        None,
        clock.now(),
    );
    assert_eq!(retry.map_err(|e| e.code()), Err(51));
    let done = complete(&plan.prepare, true, clock.now());
    assert_eq!(
        (done.value.producer_id, done.value.producer_epoch),
        (PID, EPOCH + 1)
    );
    let m = done.metadata();
    // Retried after: the same answer, nothing written.
    assert_eq!(
        end_txn(
            Some(&m),
            PID,
            EPOCH,
            true,
            TxnVersion::Tv2,
            None,
            clock.now()
        ),
        Ok(EndDecision::AlreadyDone {
            producer_id: PID,
            producer_epoch: EPOCH + 1
        })
    );
    // A zombie two epochs below is fenced.
    assert_eq!(
        end_txn(
            Some(&m),
            PID,
            EPOCH - 1,
            true,
            TxnVersion::Tv2,
            None,
            clock.now()
        )
        .map_err(|e| e.code()),
        Err(90)
    );
    // The old epoch may not add partitions any more.
    assert_eq!(
        add_partitions(
            Some(&m),
            PID,
            EPOCH,
            &[tp("a", 0)],
            TxnVersion::Tv2,
            clock.now()
        )
        .map_err(|e| e.code()),
        Err(90)
    );
    // An abort with the new epoch right after the commit: an empty
    // transaction, started now, aborted at the next epoch.
    clock.advance(5);
    let Ok(EndDecision::End(plan)) = end_txn(
        Some(&m),
        PID,
        EPOCH + 1,
        false,
        TxnVersion::Tv2,
        None,
        clock.now(),
    ) else {
        panic!("an empty abort after a commit is accepted")
    };
    assert_eq!(plan.prepare.value.status, TxnStatus::PrepareAbort);
    assert_eq!(plan.prepare.value.producer_epoch, EPOCH + 2);
    assert_eq!(plan.prepare.value.start_ms, clock.now());
    assert!(plan.markers.partitions.is_empty());
    let m = complete(&plan.prepare, false, clock.now()).metadata();
    assert_eq!(m.value.status, TxnStatus::CompleteAbort);
    assert_eq!(m.value.producer_epoch, EPOCH + 2);
}

/// Transactions v2 at the exhausted epoch: a producer id is allocated
/// before the Prepare state (recorded as NextProducerId), the markers carry
/// i16::MAX, the Complete state switches to (new id, 0) keeping the old id
/// as PreviousProducerId, and a retry with the old pair is recognised.
#[test]
fn transactions_v2_rotate_the_producer_id_when_the_epoch_is_exhausted() {
    let mut m = meta(TxnStatus::Ongoing);
    m.value.producer_epoch = MAX_HANDED_OUT_EPOCH;
    m.value.tagged.client_tv = TxnVersion::Tv2;
    let e = MAX_HANDED_OUT_EPOCH;
    assert_eq!(
        end_txn(Some(&m), PID, e, true, TxnVersion::Tv2, None, NOW),
        Ok(EndDecision::NewProducerId)
    );
    let Ok(EndDecision::End(plan)) =
        end_txn(Some(&m), PID, e, true, TxnVersion::Tv2, Some(PID + 7), NOW)
    else {
        panic!("ends once the id is allocated")
    };
    assert_eq!(plan.prepare.value.producer_id, PID);
    assert_eq!(plan.prepare.value.producer_epoch, i16::MAX);
    assert_eq!(plan.prepare.value.tagged.next_producer_id, PID + 7);
    assert_eq!(
        (plan.markers.producer_id, plan.markers.producer_epoch),
        (PID, i16::MAX)
    );
    // A retry during the markers is told apart by its epoch.
    let prepared = plan.prepare.metadata();
    assert_eq!(
        end_txn(Some(&prepared), PID, e, true, TxnVersion::Tv2, None, NOW).map_err(|e| e.code()),
        Err(51)
    );
    assert!(still_prepared(Some(&prepared), &plan.prepare.value));
    let done = complete(&plan.prepare, true, NOW);
    assert_eq!(
        (done.value.producer_id, done.value.producer_epoch),
        (PID + 7, 0)
    );
    assert_eq!(done.value.tagged.previous_producer_id, PID);
    assert_eq!(done.value.tagged.next_producer_id, -1);
    let m = done.metadata();
    // The overflow retry (old id, exhausted epoch) gets the new pair.
    assert_eq!(
        end_txn(Some(&m), PID, e, true, TxnVersion::Tv2, None, NOW),
        Ok(EndDecision::AlreadyDone {
            producer_id: PID + 7,
            producer_epoch: 0
        })
    );
    // The old id at another epoch is not the producer any more.
    assert_eq!(
        end_txn(Some(&m), PID, e - 1, true, TxnVersion::Tv2, None, NOW).map_err(|e| e.code()),
        Err(49)
    );
    // The new pair goes on: the next transaction bumps to epoch 1.
    let t = add_partitions(Some(&m), PID + 7, 0, &[tp("a", 0)], TxnVersion::Tv2, NOW)
        .unwrap()
        .unwrap();
    let Ok(EndDecision::End(plan)) = end_txn(
        Some(&t.metadata()),
        PID + 7,
        0,
        false,
        TxnVersion::Tv2,
        None,
        NOW,
    ) else {
        panic!("the rotated producer ends its transaction")
    };
    assert_eq!(plan.prepare.value.producer_epoch, 1);
}

/// A transactions-v1 EndTxn keeps the epoch, even on an id whose last
/// transaction was v2 (Kafka decides per request), and the timeout abort of
/// a v2 transaction fences with one bump.
#[test]
fn transactions_v1_and_v2_requests_on_one_id() {
    let mut m = meta(TxnStatus::Ongoing);
    m.value.tagged.client_tv = TxnVersion::Tv2;
    let Ok(EndDecision::End(plan)) =
        end_txn(Some(&m), PID, EPOCH, true, TxnVersion::Tv0, None, NOW)
    else {
        panic!("ends")
    };
    assert_eq!(plan.prepare.value.producer_epoch, EPOCH);
    assert_eq!(plan.prepare.value.tagged.client_tv, TxnVersion::Tv0);
    let plan = timeout_abort(&m, START + TIMEOUT as i64 + 1).unwrap();
    assert_eq!(plan.prepare.value.producer_epoch, EPOCH + 1);
    assert_eq!(plan.prepare.value.tagged.client_tv, TxnVersion::Tv2);
    let aborted = complete(&plan.prepare, false, NOW).metadata();
    // The timed-out producer's next add is fenced.
    assert_eq!(
        add_partitions(
            Some(&aborted),
            PID,
            EPOCH,
            &[tp("t", 0)],
            TxnVersion::Tv2,
            NOW
        )
        .map_err(|e| e.code()),
        Err(90)
    );
}
