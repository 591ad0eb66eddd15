//! Test plugins, written in WAT and made components of Chock's world in
//! the test itself: no compiler target and no network needed.

/// The core module `wat` made a component of `wit/plugin.wit`'s world.
pub fn component(wat: &str) -> Vec<u8> {
    let mut module = wat::parse_str(wat).expect("the WAT parses");
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve
        .push_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/wit"))
        .expect("the world parses");
    let world = resolve
        .select_world(&[package], Some("plugin"))
        .expect("the world is there");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .expect("metadata embeds");
    wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("the module is read")
        .validate(true)
        .encode()
        .expect("the component encodes")
}

/// A plugin whose `call` runs `body` (WAT instructions leaving the return
/// area's address), beside `imports`. The prelude gives it a memory, a bump
/// `cabi_realloc`, and `$answer (discriminant, ptr, len) -> retarea`. The
/// input's pointer and length are locals 2 and 3.
pub fn plugin(imports: &str, data: &str, body: &str) -> Vec<u8> {
    component(&format!(
        r#"(module
  {imports}
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 65536))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    (local.set $at
      (i32.and
        (i32.add (global.get $heap) (i32.sub (local.get 2) (i32.const 1)))
        (i32.sub (i32.const 0) (local.get 2))))
    (global.set $heap (i32.add (local.get $at) (local.get 3)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then
        (drop (memory.grow
          (i32.add (i32.const 1)
            (i32.div_u (i32.sub (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
              (i32.const 65536)))))))
    (local.get $at))
  (func $answer (param $err i32) (param $ptr i32) (param $len i32) (result i32)
    (i32.store8 (i32.const 1024) (local.get $err))
    (i32.store (i32.const 1028) (local.get $ptr))
    (i32.store (i32.const 1032) (local.get $len))
    (i32.const 1024))
  {data}
  (func (export "chock:plugin/tool@0.1.0#call") (param i32 i32 i32 i32) (result i32)
    {body}))"#
    ))
}

/// Passes a capability's error (a result at `at`) on as the tool's.
pub fn on_error(at: u32) -> String {
    format!(
        "(if (i32.load8_u (i32.const {at})) (then (return (call $answer (i32.const 1) (i32.load (i32.const {p})) (i32.load (i32.const {l}))))))",
        p = at + 4,
        l = at + 8
    )
}
