//! Reads a ZON file the way the Zig compiler does (`std.zig.Ast` in ZON mode,
//! then `ZonGen`) and prints the value as JSON, so a test can compare what
//! Zig read with the data Nix meant to write.
//!
//! JSON shapes: a struct is an object, a tuple an array, `.{}` an empty array
//! (ZON cannot tell an empty struct from an empty tuple), an enum literal
//! `{"enum": "name"}`, an integer a number. Strings are printed byte for byte
//! with only `"`, `\` and control bytes escaped, so the comparison sees
//! exactly the bytes Zig decoded.
//!
//! Usage: zig run checks/zon-dump.zig -- FILE.zon
//! Exit 1 with Zig's own messages on stderr when the file is not valid ZON.

const std = @import("std");
const Zoir = std.zig.Zoir;

pub fn main(init: std.process.Init) !void {
    const io = init.io;
    const arena = init.arena.allocator();
    const args = try init.minimal.args.toSlice(arena);
    if (args.len != 2) {
        std.debug.print("usage: zon-dump FILE.zon\n", .{});
        std.process.exit(2);
    }

    const source = try std.Io.Dir.cwd().readFileAllocOptions(io, args[1], arena, .limited(1 << 20), .of(u8), 0);
    const tree = try std.zig.Ast.parse(arena, source, .{ .mode = .zon });
    if (tree.errors.len > 0) {
        std.debug.print("{s}: {d} syntax error(s)\n", .{ args[1], tree.errors.len });
        std.process.exit(1);
    }
    const zoir = try std.zig.ZonGen.generate(arena, tree, .{});
    if (zoir.hasCompileErrors()) {
        for (zoir.compile_errors) |err| {
            std.debug.print("{s}: {s}\n", .{ args[1], err.msg.get(&zoir) });
        }
        std.process.exit(1);
    }

    var buffer: [4096]u8 = undefined;
    var stdout_writer = std.Io.File.stdout().writer(io, &buffer);
    const out = &stdout_writer.interface;
    try dump(out, arena, &zoir, .root);
    try out.writeAll("\n");
    try out.flush();
}

fn dump(out: *std.Io.Writer, arena: std.mem.Allocator, zoir: *const Zoir, index: Zoir.Node.Index) !void {
    switch (index.get(zoir)) {
        .true => try out.writeAll("true"),
        .false => try out.writeAll("false"),
        .null => try out.writeAll("null"),
        .int_literal => |int| switch (int) {
            .small => |n| try out.print("{d}", .{n}),
            .big => |n| try out.writeAll(try n.toStringAlloc(arena, 10, .lower)),
        },
        .string_literal => |s| try string(out, s),
        .enum_literal => |name| {
            try out.writeAll("{\"enum\":");
            try string(out, name.get(zoir));
            try out.writeAll("}");
        },
        .empty_literal => try out.writeAll("[]"),
        .array_literal => |range| {
            try out.writeAll("[");
            for (0..range.len) |i| {
                if (i > 0) try out.writeAll(",");
                try dump(out, arena, zoir, range.at(@intCast(i)));
            }
            try out.writeAll("]");
        },
        .struct_literal => |s| {
            try out.writeAll("{");
            for (s.names, 0..) |name, i| {
                if (i > 0) try out.writeAll(",");
                try string(out, name.get(zoir));
                try out.writeAll(":");
                try dump(out, arena, zoir, s.vals.at(@intCast(i)));
            }
            try out.writeAll("}");
        },
        // Nix never writes these; print something no Nix value equals.
        .pos_inf, .neg_inf, .nan, .float_literal, .char_literal => try out.writeAll("{\"unexpected\":true}"),
    }
}

fn string(out: *std.Io.Writer, bytes: []const u8) !void {
    try out.writeAll("\"");
    for (bytes) |b| switch (b) {
        '"' => try out.writeAll("\\\""),
        '\\' => try out.writeAll("\\\\"),
        0...0x1f, 0x7f => try out.print("\\u{x:0>4}", .{b}),
        else => try out.writeByte(b),
    };
    try out.writeAll("\"");
}
