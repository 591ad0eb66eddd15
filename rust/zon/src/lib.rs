//! ZON (Zig Object Notation) reader as a serde Deserializer, and a writer, with file:line:col diagnostics.
