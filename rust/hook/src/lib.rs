//! Agent hooks: decide the tool calls of Claude Code, Cursor, Gemini CLI and Codex; wire hooks, git hooks and CI.
