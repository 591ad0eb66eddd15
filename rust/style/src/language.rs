//! The languages a rule parses: each grammar, the extensions that name it,
//! and which of its nodes count as a level of nesting or a function.

use std::path::Path;

/// A language with a grammar compiled into this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Nix,
    Go,
}

impl Language {
    pub const ALL: [Language; 7] = [
        Language::Rust,
        Language::Python,
        Language::TypeScript,
        Language::Tsx,
        Language::JavaScript,
        Language::Nix,
        Language::Go,
    ];

    /// The name a rule's `.language` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::JavaScript => "javascript",
            Language::Nix => "nix",
            Language::Go => "go",
        }
    }

    pub fn from_name(name: &str) -> Option<Language> {
        Language::ALL.into_iter().find(|l| l.name() == name)
    }

    /// Every name, for a sentence that lists them.
    pub fn names() -> String {
        Language::ALL.map(Language::name).join(", ")
    }

    /// The known name closest to a misspelt one, when one is close.
    pub fn nearest(name: &str) -> Option<&'static str> {
        chock_zon::nearest(name, &Language::ALL.map(Language::name))
    }

    /// The language a file's extension names, if any.
    pub fn of_path(path: &Path) -> Option<Language> {
        let extension = path.extension()?.to_str()?;
        Some(match extension {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "nix" => Language::Nix,
            "go" => Language::Go,
            _ => return None,
        })
    }

    pub(crate) fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::Nix => tree_sitter_nix::LANGUAGE.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }

    /// The nodes that open a level of nesting: a block of statements, or
    /// in Nix (which has none) a set, a list or a `let`.
    pub(crate) fn nesting_kinds(self) -> &'static [&'static str] {
        match self {
            Language::Rust => &["block", "match_block"],
            Language::Python => &["block"],
            Language::TypeScript | Language::Tsx | Language::JavaScript => {
                &["statement_block", "switch_body", "class_body"]
            }
            Language::Nix => &[
                "attrset_expression",
                "rec_attrset_expression",
                "let_attrset_expression",
                "let_expression",
                "list_expression",
            ],
            Language::Go => &["block"],
        }
    }

    /// The nodes that are a function, whose lines function_length counts.
    pub(crate) fn function_kinds(self) -> &'static [&'static str] {
        match self {
            Language::Rust => &["function_item", "closure_expression"],
            Language::Python => &["function_definition", "lambda"],
            Language::TypeScript | Language::Tsx | Language::JavaScript => &[
                "function_declaration",
                "function_expression",
                "generator_function_declaration",
                "arrow_function",
                "method_definition",
            ],
            Language::Nix => &["function_expression"],
            Language::Go => &["function_declaration", "method_declaration", "func_literal"],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_kind_named_is_one_its_grammar_has() {
        for language in Language::ALL {
            let grammar = language.grammar();
            for kind in language
                .nesting_kinds()
                .iter()
                .chain(language.function_kinds())
            {
                assert_ne!(
                    grammar.id_for_node_kind(kind, true),
                    0,
                    "{} has no node `{kind}`",
                    language.name()
                );
            }
        }
    }

    #[test]
    fn names_and_extensions() {
        for language in Language::ALL {
            assert_eq!(Language::from_name(language.name()), Some(language));
        }
        assert_eq!(Language::nearest("pyton"), Some("python"));
        assert_eq!(Language::nearest("cobol"), None);
        assert_eq!(Language::of_path(Path::new("a/b.tsx")), Some(Language::Tsx));
        assert_eq!(Language::of_path(Path::new("Makefile")), None);
    }
}
