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

/// The manifest of [`copier`]: the plugin `notes` and its one tool `copy`,
/// which declares `fs.read` and `fs.write`.
pub const COPIER_MANIFEST: &str = r#".{
    .id = "notes",
    .version = "0.1.0",
    .tools = .{
        .{
            .name = "copy",
            .description = "Copies the file its input names to out.txt",
            .input_schema = .{ .type = "object", .properties = .{ .path = .{ .type = "string" } } },
            .capabilities = .{ "fs.read", "fs.write" },
        },
    },
}
"#;

/// The tool `copy`: reads the file its input `{"path":"..."}` names (the
/// text between the input's 10th byte and its last two), writes it to
/// `out.txt` and answers `"copied"`; a capability's error is its own.
pub fn copier() -> Vec<u8> {
    let body = format!(
        "(call $read (i32.add (local.get 2) (i32.const 9)) (i32.sub (local.get 3) (i32.const 11)) (i32.const 256))
         {}
         (call $write (i32.const 32) (i32.const 7) (i32.load (i32.const 260)) (i32.load (i32.const 264)) (i32.const 300))
         {}
         (call $answer (i32.const 0) (i32.const 48) (i32.const 8))",
        on_error(256),
        on_error(300),
    );
    plugin(
        r#"(import "chock:plugin/fs-read@0.1.0" "read" (func $read (param i32 i32 i32)))
           (import "chock:plugin/fs-write@0.1.0" "write" (func $write (param i32 i32 i32 i32 i32)))"#,
        r#"(data (i32.const 32) "out.txt") (data (i32.const 48) "\"copied\"")"#,
        &body,
    )
}
