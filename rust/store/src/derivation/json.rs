//! The JSON `nix show-derivation` prints (Nix 2.8): an object from `.drv`
//! path to `{outputs, inputSrcs, inputDrvs, system, builder, args, env}`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{Derivation, DerivationError, DerivationOutput};
use crate::store_path::StorePath;

/// The JSON for `derivations`, pretty-printed with keys in Nix's order.
pub fn show_derivation_json(
    derivations: &BTreeMap<StorePath, Derivation>,
) -> Result<String, DerivationError> {
    let mut out = Vec::with_capacity(derivations.len() * 1024);
    write_show_derivation_json(derivations, &mut out)?;
    String::from_utf8(out).map_err(|_| DerivationError::NotUtf8 {
        path: "(the JSON output)".to_owned(),
    })
}

/// Streams the same JSON to `out`, a derivation at a time, so a closure
/// of thousands never sits in memory twice.
pub fn write_show_derivation_json(
    derivations: &BTreeMap<StorePath, Derivation>,
    out: &mut dyn std::io::Write,
) -> Result<(), DerivationError> {
    let mut chunk = String::with_capacity(128 * 1024);
    chunk.push('{');
    for (i, (path, drv)) in derivations.iter().enumerate() {
        if i > 0 {
            chunk.push(',');
        }
        chunk.push_str("\n  ");
        push_json_path(&mut chunk, path);
        chunk.push_str(": ");
        write_one(&mut chunk, drv)?;
        if chunk.len() >= 64 * 1024 {
            out.write_all(chunk.as_bytes())
                .map_err(DerivationError::Output)?;
            chunk.clear();
        }
    }
    chunk.push_str(if derivations.is_empty() { "}" } else { "\n}" });
    out.write_all(chunk.as_bytes())
        .map_err(DerivationError::Output)
}

fn write_one(out: &mut String, drv: &Derivation) -> Result<(), DerivationError> {
    out.push_str("{\n    \"outputs\": {");
    for (i, (name, output)) in drv.outputs.iter().enumerate() {
        out.push_str(if i > 0 { ",\n      " } else { "\n      " });
        push_json_string(out, name);
        out.push_str(": {");
        let mut fields: Vec<(&str, String)> = Vec::new();
        match output {
            DerivationOutput::InputAddressed(p) => {
                fields.push(("path", json_string(&p.to_string())))
            }
            DerivationOutput::CaFixed(f) => {
                let path = drv
                    .output_path(name)?
                    .map(|p| p.to_string())
                    .unwrap_or_default();
                fields.push(("path", json_string(&path)));
                fields.push(("hashAlgo", json_string(&f.method_algo())));
                fields.push(("hash", json_string(&f.hash.to_base16())));
            }
            DerivationOutput::CaFloating { method, algo } => {
                fields.push((
                    "hashAlgo",
                    json_string(&format!("{}{algo}", method.prefix())),
                ));
            }
            DerivationOutput::Deferred => {}
            DerivationOutput::Impure { method, algo } => {
                fields.push((
                    "hashAlgo",
                    json_string(&format!("{}{algo}", method.prefix())),
                ));
                fields.push(("impure", "true".to_owned()));
            }
        }
        for (j, (key, value)) in fields.iter().enumerate() {
            out.push_str(if j > 0 { ", " } else { "" });
            let _ = write!(out, "\"{key}\": {value}");
        }
        out.push('}');
    }
    out.push_str("\n    },\n    \"inputSrcs\": [");
    for (i, src) in drv.input_srcs.iter().enumerate() {
        out.push_str(if i > 0 { ",\n      " } else { "\n      " });
        push_json_path(out, src);
    }
    out.push_str("],\n    \"inputDrvs\": {");
    for (i, (path, outputs)) in drv.input_drvs.iter().enumerate() {
        out.push_str(if i > 0 { ",\n      " } else { "\n      " });
        push_json_path(out, path);
        out.push_str(": [");
        push_list(out, outputs.iter().map(String::as_str), "");
        out.push(']');
    }
    out.push_str("\n    },\n    \"system\": ");
    push_json_string(out, &drv.platform);
    out.push_str(",\n    \"builder\": ");
    push_json_string(out, &drv.builder);
    out.push_str(",\n    \"args\": [");
    push_list(out, drv.args.iter().map(String::as_str), "\n      ");
    out.push_str("],\n    \"env\": {");
    for (i, (key, value)) in drv.env.iter().enumerate() {
        out.push_str(if i > 0 { ",\n      " } else { "\n      " });
        push_json_string(out, key);
        out.push_str(": ");
        push_json_string(out, value);
    }
    out.push_str("\n    }\n  }");
    Ok(())
}

fn push_list<'a>(out: &mut String, items: impl Iterator<Item = &'a str>, separator: &str) {
    for (i, item) in items.enumerate() {
        out.push_str(if i > 0 { "," } else { "" });
        out.push_str(separator);
        push_json_string(out, item);
    }
}

/// A store path as a JSON string (store paths never need escaping).
fn push_json_path(out: &mut String, path: &StorePath) {
    out.push('"');
    out.push_str(crate::store_path::STORE_DIR);
    out.push('/');
    out.push_str(path.base_name());
    out.push('"');
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_string(&mut out, s);
    out
}

/// JSON string escaping as Nix's writer does it: `"` and `\`, the named
/// control escapes, `\u00XX` for the rest below 0x20, everything else raw.
fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    let mut rest = s;
    while let Some(i) = rest
        .bytes()
        .position(|b| b == b'"' || b == b'\\' || b < b' ')
    {
        out.push_str(&rest[..i]);
        let c = rest.as_bytes()[i];
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            _ => {
                let _ = write!(out, "\\u{c:04x}");
            }
        }
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Hash;
    use crate::store_path::{FileIngestionMethod, FixedOutputHash};

    #[test]
    fn json_is_valid_and_complete() {
        let mut d = Derivation::new("bar");
        d.platform = "x86_64-linux".into();
        d.builder = "/bin/sh".into();
        d.args = vec!["-c".into(), "echo \"\u{1}\"\n".into()];
        d.env.insert("k".into(), "v\\".into());
        let out = d
            .set_fixed_output(FixedOutputHash {
                method: FileIngestionMethod::Flat,
                hash: Hash::sha256("mycontent\n"),
            })
            .unwrap();
        let path = d.drv_path().unwrap();
        let text = show_derivation_json(&[(path.clone(), d)].into()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let drv = &v[path.to_string()];
        assert_eq!(drv["outputs"]["out"]["path"], out.to_string());
        assert_eq!(drv["outputs"]["out"]["hashAlgo"], "sha256");
        assert_eq!(drv["args"][1], "echo \"\u{1}\"\n");
        assert_eq!(drv["env"]["k"], "v\\");
        assert_eq!(drv["inputDrvs"], serde_json::json!({}));
        assert_eq!(show_derivation_json(&BTreeMap::new()).unwrap(), "{}");
    }
}
