//! The host's bounds: a trivial tool answers; a loop, an allocation
//! without end and a 100 MB answer are each stopped at their bound.

mod common;

use chock_plugins::{Bounds, Grants, Host, PluginError, Reach};
use serde_json::json;

fn host(bounds: Bounds) -> Host {
    Host::new(bounds).expect("the engine starts")
}

fn call(bounds: Bounds, wasm: &[u8]) -> Result<serde_json::Value, PluginError> {
    let loaded = host(bounds)
        .load(wasm, Grants::default(), Reach::default())
        .expect("the plugin loads");
    loaded.call("t", &json!({}))
}

#[test]
fn a_trivial_tool_answers_json() {
    let wasm = common::plugin(
        "",
        r#"(data (i32.const 16) "{\"ok\":true}")"#,
        "(call $answer (i32.const 0) (i32.const 16) (i32.const 11))",
    );
    let answer = call(Bounds::default(), &wasm).expect("the tool answers");
    assert_eq!(answer, json!({"ok": true}));
}

#[test]
fn the_tool_is_given_its_name_and_input() {
    // Answers its input back.
    let wasm = common::plugin(
        "",
        "",
        "(call $answer (i32.const 0) (local.get 2) (local.get 3))",
    );
    let loaded = host(Bounds::default())
        .load(&wasm, Grants::default(), Reach::default())
        .expect("the plugin loads");
    let input = json!({"path": "a.txt", "n": [1, 2]});
    assert_eq!(loaded.call("t", &input).expect("answers"), input);
    // Answers its name, which is no JSON.
    let wasm = common::plugin(
        "",
        "",
        "(call $answer (i32.const 0) (local.get 0) (local.get 1))",
    );
    let loaded = host(Bounds::default())
        .load(&wasm, Grants::default(), Reach::default())
        .expect("the plugin loads");
    assert!(matches!(
        loaded.call("greet", &json!(null)),
        Err(PluginError::NotJson(_))
    ));
}

#[test]
fn a_tool_error_is_its_text() {
    let wasm = common::plugin(
        "",
        r#"(data (i32.const 16) "no such thing")"#,
        "(call $answer (i32.const 1) (i32.const 16) (i32.const 13))",
    );
    match call(Bounds::default(), &wasm) {
        Err(PluginError::Tool(text)) => assert_eq!(text, "no such thing"),
        other => panic!("expected the tool's error, got {other:?}"),
    }
}

#[test]
fn a_tool_that_loops_forever_is_stopped_at_its_fuel() {
    let wasm = common::plugin("", "", "(loop $again (br $again)) (unreachable)");
    let bounds = Bounds {
        fuel: 50_000_000,
        ..Bounds::default()
    };
    let started = std::time::Instant::now();
    match call(bounds, &wasm) {
        Err(PluginError::OutOfFuel { fuel }) => assert_eq!(fuel, 50_000_000),
        other => panic!("expected out of fuel, got {other:?}"),
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn a_tool_that_allocates_without_end_is_stopped_at_its_memory() {
    let wasm = common::plugin(
        "",
        "",
        "(loop $again (drop (memory.grow (i32.const 16))) (br $again)) (unreachable)",
    );
    let bounds = Bounds {
        memory_bytes: 8 << 20,
        ..Bounds::default()
    };
    match call(bounds, &wasm) {
        Err(PluginError::OutOfMemory { limit }) => assert_eq!(limit, 8 << 20),
        other => panic!("expected out of memory, got {other:?}"),
    }
}

#[test]
fn a_tool_that_answers_100_mb_is_refused_at_its_output_bound() {
    // 1600 pages more than its one: 100 MB of zeros after the first page.
    let wasm = common::plugin(
        "",
        "",
        "(drop (memory.grow (i32.const 1600))) (call $answer (i32.const 0) (i32.const 65536) (i32.const 100000000))",
    );
    let bounds = Bounds {
        memory_bytes: 256 << 20,
        output_bytes: 1 << 20,
        ..Bounds::default()
    };
    match call(bounds, &wasm) {
        Err(PluginError::OutputTooLarge { size, limit }) => {
            assert_eq!((size, limit), (100_000_000, 1 << 20));
        }
        other => panic!("expected the answer refused, got {other:?}"),
    }
}

#[test]
fn what_is_no_component_is_refused() {
    let loaded =
        host(Bounds::default()).load(b"\0asm nonsense", Grants::default(), Reach::default());
    assert!(matches!(loaded, Err(PluginError::Compile(_))));
}
