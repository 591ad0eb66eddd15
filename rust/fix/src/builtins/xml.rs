//! `toXML`: the XML Nix writes (`nix-instantiate --eval --xml`), two-space
//! indented, attributes of an element in name order.

use super::primop;
use crate::error::Result;
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::symbol::known;
use crate::syntax::ir::Param;
use crate::value::{Attrs, PrimOp, Value};
use rustc_hash::FxHashSet;

pub static PRIMOPS: &[PrimOp] = &[primop!("toXML", 1, to_xml_op)];

fn to_xml_op<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let outer = std::mem::take(&mut ev.json_context);
    let result = to_xml(ev, &args[0], pos, false, true);
    let context = std::mem::replace(&mut ev.json_context, outer).finish();
    Ok(Value::String(crate::value::NixString::with_context(
        &result?, context,
    )))
}

struct Writer {
    out: Vec<u8>,
    depth: usize,
    /// Force what is not evaluated yet (`toXML`, `--strict`); otherwise
    /// it is written as `<unevaluated />`.
    strict: bool,
    location: bool,
}

impl Writer {
    fn indent(&mut self) {
        self.out.extend(std::iter::repeat_n(b' ', self.depth * 2));
    }

    fn attrs(&mut self, attrs: &mut [(&str, Vec<u8>)]) {
        attrs.sort_by(|a, b| a.0.cmp(b.0));
        for (name, value) in attrs.iter() {
            self.out.push(b' ');
            self.out.extend_from_slice(name.as_bytes());
            self.out.extend_from_slice(b"=\"");
            for &c in value {
                match c {
                    b'"' => self.out.extend_from_slice(b"&quot;"),
                    b'<' => self.out.extend_from_slice(b"&lt;"),
                    b'>' => self.out.extend_from_slice(b"&gt;"),
                    b'&' => self.out.extend_from_slice(b"&amp;"),
                    b'\n' => self.out.extend_from_slice(b"&#xA;"),
                    c => self.out.push(c),
                }
            }
            self.out.push(b'"');
        }
    }

    fn empty(&mut self, name: &str, mut attrs: Vec<(&str, Vec<u8>)>) {
        self.indent();
        self.out.push(b'<');
        self.out.extend_from_slice(name.as_bytes());
        self.attrs(&mut attrs);
        self.out.extend_from_slice(b" />\n");
    }

    fn open(&mut self, name: &str, mut attrs: Vec<(&str, Vec<u8>)>) {
        self.indent();
        self.out.push(b'<');
        self.out.extend_from_slice(name.as_bytes());
        self.attrs(&mut attrs);
        self.out.extend_from_slice(b">\n");
        self.depth += 1;
    }

    fn close(&mut self, name: &str) {
        self.depth -= 1;
        self.indent();
        self.out.extend_from_slice(b"</");
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b">\n");
    }
}

/// The whole document. `location` adds source positions of attributes and
/// functions (`--xml` without `--no-location`).
pub fn to_xml<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    location: bool,
    strict: bool,
) -> Result<Vec<u8>> {
    let mut w = Writer {
        out: b"<?xml version='1.0' encoding='utf-8'?>\n".to_vec(),
        depth: 0,
        strict,
        location,
    };
    w.open("expr", Vec::new());
    let mut drvs_seen = FxHashSet::default();
    let forced = ev.force(v)?;
    value(ev, &forced, pos, &mut w, &mut drvs_seen)?;
    w.close("expr");
    Ok(w.out)
}

fn pos_attrs<'a>(ev: &Evaluator<'a>, pos: Pos, into: &mut Vec<(&'static str, Vec<u8>)>) {
    if let Some(loc) = ev.sources.resolve(pos) {
        if let Some(path) = loc.file.origin.path() {
            into.push(("path", path.display().to_string().into_bytes()));
        }
        into.push(("line", loc.line.to_string().into_bytes()));
        into.push(("column", loc.column.to_string().into_bytes()));
    }
}

fn show_attrs<'a>(
    ev: &mut Evaluator<'a>,
    attrs: &Attrs<'a>,
    w: &mut Writer,
    drvs_seen: &mut FxHashSet<Vec<u8>>,
) -> Result<()> {
    let sorted: Vec<_> = attrs
        .lexicographic(&ev.symbols)
        .into_iter()
        .cloned()
        .collect();
    for a in sorted {
        let mut xml_attrs = vec![("name", ev.symbols.bytes(a.name).to_vec())];
        if w.location {
            pos_attrs(ev, a.pos, &mut xml_attrs);
        }
        w.open("attr", xml_attrs);
        value(ev, &a.value, a.pos, w, drvs_seen)?;
        w.close("attr");
    }
    Ok(())
}

fn value<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    w: &mut Writer,
    drvs_seen: &mut FxHashSet<Vec<u8>>,
) -> Result<()> {
    ev.nested(pos, |ev| value_in(ev, v, pos, w, drvs_seen))
}

fn value_in<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    w: &mut Writer,
    drvs_seen: &mut FxHashSet<Vec<u8>>,
) -> Result<()> {
    let unevaluated = v.evaluated().is_none();
    if unevaluated && !w.strict {
        w.empty("unevaluated", Vec::new());
        return Ok(());
    }
    let v = ev.force(v)?;
    match &v {
        Value::Int(n) => w.empty("int", vec![("value", n.to_string().into_bytes())]),
        Value::Bool(b) => w.empty(
            "bool",
            vec![(
                "value",
                if *b {
                    b"true".to_vec()
                } else {
                    b"false".to_vec()
                },
            )],
        ),
        Value::String(s) => {
            ev.json_context.add(s.context());
            w.empty("string", vec![("value", s.as_bytes().to_vec())])
        }
        Value::Path(p) => w.empty("path", vec![("value", p.as_bytes().to_vec())]),
        Value::Null => w.empty("null", Vec::new()),
        Value::Float(f) => w.empty(
            "float",
            vec![("value", crate::print::format_float(*f).into_bytes())],
        ),
        Value::Attrs(attrs) => {
            if ev.is_derivation(attrs)? {
                let mut xml_attrs = Vec::new();
                let mut drv_path = Vec::new();
                for (sym, name) in [(known::DRV_PATH, "drvPath"), (known::OUT_PATH, "outPath")] {
                    if let Some(x) = attrs.get(sym).cloned()
                        && let Value::String(s) = ev.force(&x)?
                    {
                        if sym == known::DRV_PATH {
                            drv_path = s.as_bytes().to_vec();
                        }
                        xml_attrs.push((name, s.as_bytes().to_vec()));
                    }
                }
                w.open("derivation", xml_attrs);
                if !drv_path.is_empty() && drvs_seen.insert(drv_path) {
                    show_attrs(ev, attrs, w, drvs_seen)?;
                } else {
                    w.empty("repeated", Vec::new());
                }
                w.close("derivation");
            } else {
                w.open("attrs", Vec::new());
                show_attrs(ev, attrs, w, drvs_seen)?;
                w.close("attrs");
            }
        }
        Value::List(list) => {
            w.open("list", Vec::new());
            for item in list.as_slice() {
                value(ev, item, pos, w, drvs_seen)?;
            }
            w.close("list");
        }
        Value::Lambda(closure) => {
            let lambda = closure.lambda;
            let mut xml_attrs = Vec::new();
            if w.location {
                pos_attrs(ev, lambda.pos, &mut xml_attrs);
            }
            w.open("function", xml_attrs);
            match &lambda.param {
                Param::Ident(name) => {
                    w.empty("varpat", vec![("name", ev.symbols.bytes(*name).to_vec())])
                }
                Param::Formals(formals) => {
                    let mut pat_attrs = Vec::new();
                    if let Some(bind) = formals.bind {
                        pat_attrs.push(("name", ev.symbols.bytes(bind).to_vec()));
                    }
                    if formals.ellipsis {
                        pat_attrs.push(("ellipsis", b"1".to_vec()));
                    }
                    w.open("attrspat", pat_attrs);
                    let mut names: Vec<&[u8]> = formals
                        .entries
                        .iter()
                        .map(|f| ev.symbols.bytes(f.name))
                        .collect();
                    names.sort();
                    for name in names {
                        w.empty("attr", vec![("name", name.to_vec())]);
                    }
                    w.close("attrspat");
                }
            }
            w.close("function");
        }
        _ => w.empty("unevaluated", Vec::new()),
    }
    Ok(())
}
