//! The `.drv` ATerm: `Derive([outputs],[inputDrvs],[inputSrcs],platform,builder,[args],[env])`.
//!
//! The printer writes exactly what Nix 2.8 writes (sorted maps, its
//! escaping), so parsing a file Nix wrote and printing it gives the same
//! bytes. The parser accepts what Nix's parser accepts, refuses with the byte
//! offset of the problem, and never panics.

use std::collections::{BTreeMap, BTreeSet};

use super::{Derivation, DerivationError, DerivationOutput, hash_for_output, split_method_algo};
use crate::store_path::{self, StorePath};

/// Inputs of the modulo form: hex hash of an input derivation → its output names.
pub type ModuloInputs = BTreeMap<String, BTreeSet<String>>;

impl Derivation {
    /// The ATerm Nix writes to the `.drv` file.
    pub fn to_aterm(&self) -> String {
        let mut out = String::with_capacity(self.estimated_len());
        self.write_aterm(&mut out, false, None);
        out
    }

    fn estimated_len(&self) -> usize {
        let env: usize = self.env.iter().map(|(k, v)| k.len() + v.len() + 8).sum();
        let args: usize = self.args.iter().map(|a| a.len() + 3).sum();
        256 + env + args + (self.input_drvs.len() + self.input_srcs.len() + self.outputs.len()) * 96
    }

    /// Writes the ATerm; with `mask_outputs` output paths and the env entries
    /// named after outputs are blanked, and `modulo_inputs` replaces the
    /// input derivations (both as hashDerivationModulo needs).
    pub(crate) fn write_aterm(
        &self,
        out: &mut String,
        mask_outputs: bool,
        modulo_inputs: Option<&ModuloInputs>,
    ) {
        out.push_str("Derive([");
        for (i, (name, output)) in self.outputs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let (path, algo, hash) = self.output_fields(name, output);
            out.push('(');
            push_unquoted(out, name);
            out.push(',');
            push_unquoted(out, if mask_outputs { "" } else { &path });
            out.push(',');
            push_unquoted(out, &algo);
            out.push(',');
            push_unquoted(out, &hash);
            out.push(')');
        }
        out.push_str("],[");
        match modulo_inputs {
            Some(inputs) => push_input_list(out, inputs.iter().map(|(k, v)| (k.as_str(), v))),
            None => {
                let mut first = true;
                for (path, outputs) in &self.input_drvs {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    out.push_str("(\"");
                    out.push_str(store_path::STORE_DIR);
                    out.push('/');
                    out.push_str(path.base_name());
                    out.push_str("\",");
                    push_unquoted_list(out, outputs.iter().map(String::as_str));
                    out.push(')');
                }
            }
        }
        out.push_str("],[");
        let mut first = true;
        for src in &self.input_srcs {
            if !first {
                out.push(',');
            }
            first = false;
            out.push('"');
            out.push_str(store_path::STORE_DIR);
            out.push('/');
            out.push_str(src.base_name());
            out.push('"');
        }
        out.push_str("],");
        push_unquoted(out, &self.platform);
        out.push(',');
        push_escaped(out, &self.builder);
        out.push_str(",[");
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_escaped(out, arg);
        }
        out.push_str("],[");
        for (i, (key, value)) in self.env.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('(');
            push_escaped(out, key);
            out.push(',');
            let masked = mask_outputs && self.outputs.contains_key(key);
            push_escaped(out, if masked { "" } else { value });
            out.push(')');
        }
        out.push_str("])");
    }

    /// The three strings after an output's name in its tuple.
    pub(crate) fn output_fields(
        &self,
        name: &str,
        output: &DerivationOutput,
    ) -> (String, String, String) {
        match output {
            DerivationOutput::InputAddressed(p) => (p.to_string(), String::new(), String::new()),
            DerivationOutput::CaFixed(f) => {
                let path = f
                    .store_path(&store_path::output_path_name(&self.name, name))
                    .map(|p| p.to_string())
                    .unwrap_or_default();
                (path, f.method_algo(), f.hash.to_base16())
            }
            DerivationOutput::CaFloating { method, algo } => (
                String::new(),
                format!("{}{algo}", method.prefix()),
                String::new(),
            ),
            DerivationOutput::Deferred => (String::new(), String::new(), String::new()),
            DerivationOutput::Impure { method, algo } => (
                String::new(),
                format!("{}{algo}", method.prefix()),
                "impure".to_owned(),
            ),
        }
    }

    /// Parses the ATerm of a derivation named `name` (the `.drv` file's name
    /// without `.drv`).
    pub fn parse(text: &str, name: &str) -> Result<Derivation, DerivationError> {
        Parser { text, pos: 0, name }.derivation()
    }
}

fn push_input_list<'a>(
    out: &mut String,
    inputs: impl Iterator<Item = (&'a str, &'a BTreeSet<String>)>,
) {
    for (i, (key, outputs)) in inputs.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('(');
        push_unquoted(out, key);
        out.push(',');
        push_unquoted_list(out, outputs.iter().map(String::as_str));
        out.push(')');
    }
}

fn push_unquoted_list<'a>(out: &mut String, items: impl Iterator<Item = &'a str>) {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_unquoted(out, item);
    }
    out.push(']');
}

/// `printUnquotedString`: quotes, no escaping (Nix trusts these fields).
fn push_unquoted(out: &mut String, s: &str) {
    out.push('"');
    out.push_str(s);
    out.push('"');
}

/// `printString`: escapes `"`, `\`, LF, CR and TAB; every other byte raw.
fn push_escaped(out: &mut String, s: &str) {
    out.push('"');
    let mut rest = s;
    while let Some(i) = rest.find(['"', '\\', '\n', '\r', '\t']) {
        out.push_str(&rest[..i]);
        let escaped = match rest.as_bytes()[i] {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            _ => "\\t",
        };
        out.push_str(escaped);
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    out.push('"');
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    name: &'a str,
}

impl<'a> Parser<'a> {
    fn error(&self, expected: &'static str) -> DerivationError {
        DerivationError::Syntax {
            name: self.name.to_owned(),
            offset: self.pos,
            expected,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn expect(&mut self, literal: &'static str) -> Result<(), DerivationError> {
        if self
            .text
            .get(self.pos..)
            .is_some_and(|r| r.starts_with(literal))
        {
            self.pos += literal.len();
            Ok(())
        } else {
            Err(self.error(literal))
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// A quoted string with Nix's escapes (`\n`, `\r`, `\t`, and `\X` = X).
    fn string(&mut self) -> Result<String, DerivationError> {
        if !self.eat(b'"') {
            return Err(self.error("a string starting with \""));
        }
        let bytes = self.text.as_bytes();
        let start = self.pos;
        let mut out = String::new();
        let mut chunk_start = start;
        loop {
            let Some(&c) = bytes.get(self.pos) else {
                return Err(self.error("a closing \""));
            };
            match c {
                b'"' => {
                    let last = &self.text[chunk_start..self.pos];
                    self.pos += 1;
                    if out.is_empty() && chunk_start == start {
                        return Ok(last.to_owned());
                    }
                    out.push_str(last);
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(&self.text[chunk_start..self.pos]);
                    self.pos += 1;
                    let Some(escaped) = self.text.get(self.pos..).and_then(|r| r.chars().next())
                    else {
                        return Err(self.error("a character after \\"));
                    };
                    out.push(match escaped {
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        other => other,
                    });
                    self.pos += escaped.len_utf8();
                    chunk_start = self.pos;
                }
                _ => self.pos += 1,
            }
        }
    }

    /// A string in a field Nix writes without escaping (`printUnquotedString`:
    /// output names, paths, hash algorithms and hashes, the platform): one
    /// holding a `\` or an escaped `"` could not be written back as it was
    /// read, so it is refused rather than read as something else.
    fn unquoted(&mut self) -> Result<String, DerivationError> {
        let at = self.pos;
        let s = self.string()?;
        if self
            .text
            .get(at..self.pos)
            .is_some_and(|raw| raw.contains('\\'))
        {
            self.pos = at;
            return Err(self.error("a string with no \\ (Nix writes this field unescaped)"));
        }
        Ok(s)
    }

    /// A string that must be an absolute path, then a store path.
    fn store_path(&mut self) -> Result<StorePath, DerivationError> {
        let at = self.pos;
        let s = self.string()?;
        if !s.starts_with('/') {
            self.pos = at;
            return Err(self.error("an absolute path"));
        }
        StorePath::from_absolute_path(&s).map_err(|source| DerivationError::BadPath {
            name: self.name.to_owned(),
            source,
        })
    }

    /// `[item,item,...]`.
    fn list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T, DerivationError>,
    ) -> Result<Vec<T>, DerivationError> {
        self.expect("[")?;
        let mut items = Vec::new();
        if self.eat(b']') {
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            if self.eat(b']') {
                return Ok(items);
            }
            if !self.eat(b',') {
                return Err(self.error(", or ]"));
            }
        }
    }

    fn derivation(mut self) -> Result<Derivation, DerivationError> {
        if self.text.starts_with("DrvWithVersion(") {
            return Err(DerivationError::Versioned {
                name: self.name.to_owned(),
            });
        }
        self.expect("Derive(")?;
        let mut drv = Derivation::new(self.name);
        let outputs = self.list(|p| {
            p.expect("(")?;
            let name = p.unquoted()?;
            p.expect(",")?;
            let path_at = p.pos;
            let path = p.unquoted()?;
            p.expect(",")?;
            let algo = p.unquoted()?;
            p.expect(",")?;
            let hash = p.unquoted()?;
            p.expect(")")?;
            if !path.is_empty() && !path.starts_with('/') {
                p.pos = path_at;
                return Err(p.error("an absolute path"));
            }
            Ok((name, path, algo, hash))
        })?;
        for (output, path, algo, hash) in outputs {
            let parsed = parse_output(self.name, &output, &path, &algo, &hash)?;
            drv.outputs.insert(output, parsed);
        }
        self.expect(",")?;
        let input_drvs = self.list(|p| {
            p.expect("(")?;
            let path = p.store_path()?;
            p.expect(",")?;
            let outputs = p.list(Parser::unquoted)?;
            p.expect(")")?;
            Ok((path, outputs))
        })?;
        for (path, outputs) in input_drvs {
            drv.input_drvs.insert(path, outputs.into_iter().collect());
        }
        self.expect(",")?;
        drv.input_srcs = self.list(Parser::store_path)?.into_iter().collect();
        self.expect(",")?;
        drv.platform = self.unquoted()?;
        self.expect(",")?;
        drv.builder = self.string()?;
        self.expect(",")?;
        drv.args = self.list(Parser::string)?;
        self.expect(",")?;
        let env = self.list(|p| {
            p.expect("(")?;
            let key = p.string()?;
            p.expect(",")?;
            let value = p.string()?;
            p.expect(")")?;
            Ok((key, value))
        })?;
        drv.env = env.into_iter().collect();
        self.expect(")")?;
        if self.pos != self.text.len() {
            return Err(DerivationError::TrailingData {
                name: self.name.to_owned(),
                offset: self.pos,
            });
        }
        Ok(drv)
    }
}

/// One output tuple, read the way Nix 2.8's `parseDerivationOutput` reads it.
fn parse_output(
    name: &str,
    output: &str,
    path: &str,
    algo: &str,
    hash: &str,
) -> Result<DerivationOutput, DerivationError> {
    let bad = |problem: &str| DerivationError::BadOutput {
        name: name.to_owned(),
        output: output.to_owned(),
        problem: problem.to_owned(),
    };
    let bad_path = |source| DerivationError::BadPath {
        name: name.to_owned(),
        source,
    };
    if algo.is_empty() {
        if !hash.is_empty() {
            return Err(bad("it has a hash but no hash algorithm"));
        }
        if path.is_empty() {
            return Ok(DerivationOutput::Deferred);
        }
        return Ok(DerivationOutput::InputAddressed(
            StorePath::from_absolute_path(path).map_err(bad_path)?,
        ));
    }
    if hash == "impure" || hash.is_empty() {
        if !path.is_empty() {
            return Err(bad("a floating or impure output must not state a path"));
        }
        let (method, algo) = split_method_algo(name, output, algo)?;
        return Ok(if hash.is_empty() {
            DerivationOutput::CaFloating { method, algo }
        } else {
            DerivationOutput::Impure { method, algo }
        });
    }
    let fixed = hash_for_output(name, output, algo, hash)?;
    let stated = StorePath::from_absolute_path(path).map_err(bad_path)?;
    let computed = fixed
        .store_path(&store_path::output_path_name(name, output))
        .map_err(bad_path)?;
    if stated != computed {
        return Err(DerivationError::WrongFixedPath {
            name: name.to_owned(),
            output: output.to_owned(),
            stated: stated.to_string(),
            computed: computed.to_string(),
        });
    }
    Ok(DerivationOutput::CaFixed(fixed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::{Hash, HashAlgo};
    use crate::store_path::{FileIngestionMethod, FixedOutputHash};
    use proptest::prelude::*;

    const V7_OUT: &str = "/nix/store/a00d5f71k0vp5a6klkls0mvr1f7sx6ch-bar";
    const V7_HASH: &str = "f3f3c4763037e059b4d834eaf68595bbc02ba19f6d2a500dce06d124e2cd99bb";

    fn v7_text() -> String {
        format!(
            "Derive([(\"out\",\"{V7_OUT}\",\"sha256\",\"{V7_HASH}\")],[],[],\"x86_64-linux\",\"none\",[],[(\"builder\",\"none\"),(\"name\",\"bar\"),(\"out\",\"{V7_OUT}\"),(\"outputHash\",\"{V7_HASH}\"),(\"outputHashAlgo\",\"sha256\"),(\"outputHashMode\",\"flat\"),(\"system\",\"x86_64-linux\")])"
        )
    }

    /// Found by the `aterm` fuzz target: an escape in a field Nix writes
    /// unescaped was read, and the derivation then wrote an ATerm that did
    /// not read back.
    #[test]
    fn an_escape_in_a_field_written_unescaped_is_refused() {
        for (from, to) in [
            ("(\"out\",", "(\"o\\\"ut\","),
            ("\"x86_64-linux\",\"none\"", "\"x86\\\\64\",\"none\""),
            ("\"sha256\",\"f3", "\"sha\\256\",\"f3"),
        ] {
            let text = v7_text().replacen(from, to, 1);
            assert_ne!(text, v7_text(), "{from}");
            let error = Derivation::parse(&text, "bar")
                .expect_err(&text)
                .to_string();
            assert!(error.contains("unescaped"), "{error}");
        }
        let escaped_arg = v7_text().replacen("\"none\",[]", "\"none\",[\"a\\\"b\"]", 1);
        let drv = Derivation::parse(&escaped_arg, "bar").expect("an escape in an argument is fine");
        assert_eq!(drv.args, ["a\"b"]);
    }

    #[test]
    fn v7_round_trip_and_drv_path() {
        let text = v7_text();
        let drv = Derivation::parse(&text, "bar").unwrap();
        assert_eq!(drv.to_aterm(), text);
        assert_eq!(
            drv.drv_path().unwrap().to_string(),
            "/nix/store/ymsf5zcqr9wlkkqdjwhqllgwa97rff5i-bar.drv"
        );
        assert_eq!(
            drv.fixed_output(),
            Some(&FixedOutputHash {
                method: FileIngestionMethod::Flat,
                hash: Hash::decode(HashAlgo::Sha256, V7_HASH).unwrap(),
            })
        );
        assert_eq!(drv.output_path("out").unwrap().unwrap().to_string(), V7_OUT);
    }

    #[test]
    fn escaping_is_nix_escaping() {
        let mut drv = Derivation::new("esc");
        drv.outputs.insert("out".into(), DerivationOutput::Deferred);
        drv.builder = "a\"b\\c\nd\re\tf\u{1}g é".into();
        drv.args = vec!["".into(), "\\n".into()];
        drv.env.insert("k\"".into(), "v\n".into());
        let text = drv.to_aterm();
        assert_eq!(
            text,
            "Derive([(\"out\",\"\",\"\",\"\")],[],[],\"\",\"a\\\"b\\\\c\\nd\\re\\tf\u{1}g é\",[\"\",\"\\\\n\"],[(\"k\\\"\",\"v\\n\")])"
        );
        assert_eq!(Derivation::parse(&text, "esc").unwrap(), drv);
        // `\X` for any other X is X, as in Nix's parser.
        let odd = text.replace("\\\"b", "\\q\\\"b");
        assert_eq!(
            Derivation::parse(&odd, "esc").unwrap().builder,
            "aq\"b\\c\nd\re\tf\u{1}g é"
        );
    }

    #[test]
    fn refusals_name_the_offset() {
        let text = v7_text();
        for (bad, expected) in [
            (text.replacen("Derive(", "Derive (", 1), "Derive("),
            (text.replacen("[(", "[", 1), "("),
            (format!("{text} "), "trailing"),
            (text[..text.len() - 3].to_owned(), "closing"),
        ] {
            let err = Derivation::parse(&bad, "bar").unwrap_err().to_string();
            assert!(err.contains("bar"), "{err}");
            if expected == "trailing" {
                assert!(err.contains("trailing data"), "{err}");
            } else {
                assert!(err.contains("at byte"), "{err}");
            }
        }
        let wrong_path = text.replacen(
            "a00d5f71k0vp5a6klkls0mvr1f7sx6ch",
            "b00d5f71k0vp5a6klkls0mvr1f7sx6ch",
            1,
        );
        assert!(matches!(
            Derivation::parse(&wrong_path, "bar"),
            Err(DerivationError::WrongFixedPath { .. })
        ));
        let versioned = "DrvWithVersion(\"xp-dyn-drv\",[])";
        assert!(matches!(
            Derivation::parse(versioned, "x"),
            Err(DerivationError::Versioned { .. })
        ));
        let relative = text.replacen(&format!("\"{V7_OUT}\",\"sha"), "\"nix/store\",\"sha", 1);
        assert!(Derivation::parse(&relative, "bar").is_err());
        let bad_algo = text.replacen("\"sha256\",\"f3", "\"sha3\",\"f3", 1);
        assert!(matches!(
            Derivation::parse(&bad_algo, "bar"),
            Err(DerivationError::BadHashAlgo { .. })
        ));
    }

    #[test]
    fn every_output_form_round_trips() {
        let text = "Derive([(\"a\",\"\",\"r:sha256\",\"\"),(\"b\",\"\",\"sha1\",\"impure\"),(\"c\",\"\",\"\",\"\")],[(\"/nix/store/q4mzjdlh5px6977h7v5fdsk1p33yg583-source.drv\",[\"dev\",\"out\"])],[\"/nix/store/i00sflxqsj37lfmf95m8mn0grv615hpj-source\"],\"x\",\"/bin/sh\",[\"-c\",\"true\"],[])";
        let drv = Derivation::parse(text, "forms").unwrap();
        assert_eq!(drv.to_aterm(), text);
        assert!(drv.kind().is_err(), "mixed kinds are refused");
    }

    fn string_strategy() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just('"'),
                Just('\\'),
                Just('\n'),
                Just('\r'),
                Just('\t'),
                any::<char>()
            ],
            0..12,
        )
        .prop_map(|c| c.into_iter().collect())
    }

    proptest! {
        #[test]
        fn printed_derivations_parse_back(
            builder in string_strategy(),
            args in proptest::collection::vec(string_strategy(), 0..4),
            env in proptest::collection::btree_map(string_strategy(), string_strategy(), 0..6),
        ) {
            let mut drv = Derivation::new("p");
            drv.outputs.insert("out".into(), DerivationOutput::Deferred);
            drv.builder = builder;
            drv.args = args;
            drv.env = env;
            let text = drv.to_aterm();
            let back = Derivation::parse(&text, "p").unwrap();
            prop_assert_eq!(&back, &drv);
            prop_assert_eq!(back.to_aterm(), text);
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,200}") {
            let _ = Derivation::parse(&text, "x");
        }

        #[test]
        fn mutations_of_a_real_drv_never_panic(cut in 0usize..400, byte in any::<u8>()) {
            let text = v7_text();
            let mut bytes = text.into_bytes();
            let at = cut % bytes.len();
            bytes[at] = byte;
            if let Ok(s) = String::from_utf8(bytes) {
                let _ = Derivation::parse(&s, "bar");
            }
        }
    }
}
