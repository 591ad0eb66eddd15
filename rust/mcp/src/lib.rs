//! Chock's MCP tool server: each tool call decided, confined and logged.
