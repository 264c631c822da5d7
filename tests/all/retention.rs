//! What the shared store keeps for MCP clients (request states, tasks)
//! leaves it once it can serve nothing, so the tables hold about a TTL's
//! worth. These rows exist only in a shared store: on SQLite they live in
//! the host's memory, and the tests check PostgreSQL (`make pg-test`, and
//! `make test` runs it).

use crate::harness::{ALLOW_ALL, TestHost};
use toolwarden::store::TaskWrite;
use toolwarden_tests::CALC;

fn shared_host() -> Option<TestHost> {
    let t = TestHost::new(&[CALC]).config(ALLOW_ALL);
    t.is_shared().then_some(t)
}

#[test]
fn request_states_past_their_ttl_leave_as_new_ones_come() {
    let Some(t) = shared_host() else { return };
    let host = t.controller();
    let store = host.records().store();
    store.put_request_state("old", "{}", 1_000, 0).unwrap();
    store.put_request_state("recent", "{}", 4_000, 0).unwrap();
    // Issued at 5,000 with a TTL that expires what came before 3,000.
    store.put_request_state("new", "{}", 5_000, 3_000).unwrap();
    assert_eq!(store.take_request_state("old", 0).unwrap(), None, "removed");
    assert_eq!(
        store
            .take_request_state("recent", 3_000)
            .unwrap()
            .as_deref(),
        Some("{}")
    );
    assert_eq!(
        store.take_request_state("recent", 0).unwrap(),
        None,
        "taken once"
    );
    assert_eq!(
        store.take_request_state("new", 6_000).unwrap(),
        None,
        "one issued before the caller's window is not redeemed"
    );
}

#[test]
fn tasks_past_their_ttl_leave_as_new_ones_start_and_an_ended_one_stays_ended() {
    let Some(t) = shared_host() else { return };
    let host = t.controller();
    let store = host.records().store();
    let task = |id: &'static str, terminal: bool, expires_ms: i64| TaskWrite {
        id,
        host: "h1",
        snapshot: "{}",
        terminal,
        lease_until_ms: 10_000,
        expires_ms,
    };
    assert!(store.put_task(task("done", true, 2_000), 1_000).unwrap());
    assert!(
        store
            .put_task(task("running", false, 9_000), 1_000)
            .unwrap()
    );
    assert!(store.task("done", 1_500).unwrap().is_some());
    assert_eq!(
        store.task("done", 2_500).unwrap(),
        None,
        "past its TTL, no host shows it"
    );
    // A new task's write removes what expired.
    assert!(store.put_task(task("new", false, 20_000), 3_000).unwrap());
    assert_eq!(
        store.task("done", 0).unwrap(),
        None,
        "removed, not only hidden"
    );
    assert!(store.task("running", 3_000).unwrap().is_some());
    // Another host failed `running` (its lease ran out); the running host's
    // late write cannot bring it back.
    assert!(
        store
            .fail_orphaned_task("running", "{\"failed\":1}", 11_000)
            .unwrap()
    );
    assert!(
        !store.fail_orphaned_task("running", "{}", 12_000).unwrap(),
        "once"
    );
    assert!(
        !store
            .put_task(task("running", false, 9_000), 3_100)
            .unwrap()
    );
    let row = store.task("running", 3_000).unwrap().unwrap();
    assert!(row.terminal && row.snapshot == "{\"failed\":1}", "{row:?}");
    // A renewal hands the running host what others left, once.
    assert!(store.answer_task("new", r#"{"k":1}"#, 3_000).unwrap());
    assert!(store.answer_task("new", r#"{"j":2}"#, 3_000).unwrap());
    assert!(store.cancel_task("new", 3_000).unwrap());
    let signals = store.renew_tasks("h1", 15_000).unwrap();
    assert_eq!(signals.len(), 1, "{signals:?}");
    let answers: serde_json::Value =
        serde_json::from_str(signals[0].answers.as_deref().unwrap()).unwrap();
    assert_eq!(answers, serde_json::json!({"k": 1, "j": 2}));
    assert!(signals[0].cancel_requested);
    assert_eq!(store.renew_tasks("h1", 15_000).unwrap()[0].answers, None);
    assert!(
        store.renew_tasks("h2", 15_000).unwrap().is_empty(),
        "another host's"
    );
    assert_eq!(
        store.task("new", 3_000).unwrap().unwrap().lease_until_ms,
        15_000
    );
}
