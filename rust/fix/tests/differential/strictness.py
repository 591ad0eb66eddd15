#!/usr/bin/env python3
"""Strictness differential of fix against Nix 2.8: for every builtin both
have (from `builtins.attrNames builtins` of each) and every argument
position, a call gets a value that throws there: directly, inside a list
or a set (at every depth of a sample argument, and at a random depth of a
value drawn with the seed), as a function or the result of one, and for
string and path arguments as a set whose `outPath` or `__toString`
throws; a string argument is also tried with a context (a store path in
it), which Nix refuses where it takes a plain string. Each call is evaluated three ways:

  tryEval   builtins.tryEval CALL: caught, or succeeded and with which
            value (its type and, for scalars, itself; a list's length, a
            set's names);
  seq       builtins.seq CALL true, caught by tryEval;
  deepSeq   builtins.deepSeq CALL true, caught by tryEval;

and an error tryEval cannot catch (a type error, abort) is an outcome of
its own. fix (`chock eval --impure --strict`) and `nix-instantiate --eval
--strict` must give the same outcome for every case, except the ones
listed in nix-2.8-fixed.txt next to this file: Nix 2.8 behaviours that
later Nix changed, which fix follows, each with the Nix commit that
changed it (a listed case that no longer differs is an error too, so the
list stays true).

The cases run in order in one evaluation per tool, each reporting its
outcome through builtins.trace; an error that cannot be caught ends that
evaluation, is recorded for the case that raised it, and the evaluation
starts again after it.

usage: strictness.py CHOCK_BIN [--seed N] [--random N] [--show]
  --seed N     the seed of the random placements (default 1)
  --random N   random placements per argument (default 2)
  --show       print every case and both outcomes
Exits 1 on any difference not listed, or a listed one that is gone.
"""

import argparse
import fnmatch
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

THROW = '(throw "T")'

# Argument kinds: what a builtin takes at a position. The variants tried
# there depend on the kind (a list where a list is taken, ...), so that
# what the builtin does with the value decides the outcome.
ANY, LIST, SET, FN, STR, INT, NUM, PATH = "any", "list", "set", "fn", "str", "int", "num", "path"

# Samples: Python lists are Nix lists, dicts Nix sets, strings Nix text.
# The files under FILES are made in a temporary directory first.
FILES = {"f.nix": "{ a = 1; }", "d/default.nix": "2", "t.txt": "text"}


def table(tmp):
    f = f"{tmp}/f.nix"
    d = f"{tmp}/d"
    t = f"{tmp}/t.txt"
    drv = {"name": '"d"', "builder": '"b"', "system": '"s"'}
    return {
        "abort": [[(STR, '"m"')]],
        "add": [[(NUM, "1"), (NUM, "2")]],
        "addErrorContext": [[(STR, '"c"'), (ANY, "1")]],
        "all": [[(FN, "(x: true)"), (LIST, ["1", "2"])], [(FN, "(x: true)"), (LIST, [])]],
        "any": [[(FN, "(x: false)"), (LIST, ["1", "2"])], [(FN, "(x: false)"), (LIST, [])]],
        "appendContext": [[(STR, '"s"'), (SET, {})]],
        "attrNames": [[(SET, {"a": "1", "b": "2"})]],
        "attrValues": [[(SET, {"a": "1", "b": "2"})]],
        "baseNameOf": [[(STR, '"/a/b"')]],
        "bitAnd": [[(INT, "6"), (INT, "3")]],
        "bitOr": [[(INT, "6"), (INT, "3")]],
        "bitXor": [[(INT, "6"), (INT, "3")]],
        "catAttrs": [[(STR, '"a"'), (LIST, [{"a": "1"}, {"b": "2"}])]],
        "ceil": [[(NUM, "1.5")]],
        "compareVersions": [[(STR, '"1.0"'), (STR, '"2.0"')]],
        "concatLists": [[(LIST, [["1"], ["2", "3"]])]],
        "concatMap": [[(FN, "(x: [ x ])"), (LIST, ["1", "2"])]],
        "concatStringsSep": [[(STR, '","'), (LIST, ['"a"', '"b"'])]],
        "deepSeq": [[(ANY, ["1", {"a": "2"}]), (ANY, "3")]],
        "derivation": [[(SET, drv)]],
        "derivationStrict": [[(SET, drv)]],
        "dirOf": [[(STR, '"/a/b"')]],
        "div": [[(NUM, "6"), (NUM, "3")]],
        "elem": [[(ANY, "1"), (LIST, ["2", "1"])], [(ANY, "1"), (LIST, [])]],
        "elemAt": [[(LIST, ["1", "2"]), (INT, "1")]],
        "fetchGit": [[(STR, '"/nonexistent"')]],
        "fetchMercurial": [[(STR, '"/nonexistent"')]],
        "fetchTarball": [[(STR, '"file:///nonexistent"')]],
        "fetchTree": [[(SET, {"type": '"path"', "path": '"/nonexistent"'})]],
        "fetchurl": [[(STR, '"file:///nonexistent"')]],
        "filter": [[(FN, "(x: true)"), (LIST, ["1", "2"])], [(FN, "(x: true)"), (LIST, [])]],
        "filterSource": [[(FN, "(p: t: true)"), (PATH, d)]],
        "findFile": [[(LIST, [{"prefix": '"p"', "path": f'"{tmp}"'}]), (STR, '"p/f.nix"')]],
        "floor": [[(NUM, "1.5")]],
        "foldl'": [[(FN, "(a: b: b)"), (ANY, "0"), (LIST, ["1", "2"])], [(FN, "(a: b: b)"), (ANY, "0"), (LIST, [])]],
        "fromJSON": [[(STR, '"[ 1 ]"')]],
        "fromTOML": [[(STR, '"a = 1"')]],
        "functionArgs": [[(FN, "({ a, b ? 1 }: a)")]],
        "genList": [[(FN, "(x: x)"), (INT, "2")], [(FN, "(x: x)"), (INT, "0")]],
        "genericClosure": [[(SET, {"startSet": [{"key": "1"}], "operator": "(x: [ ])"})],
                           [(SET, {"startSet": [], "operator": "(x: [ ])"})]],
        "getAttr": [[(STR, '"a"'), (SET, {"a": "1"})]],
        "getContext": [[(STR, '"s"')]],
        "getEnv": [[(STR, '"FIX_STRICTNESS_UNSET"')]],
        "getFlake": [[(STR, '"/nonexistent"')]],
        "groupBy": [[(FN, '(x: "k")'), (LIST, ["1", "2"])]],
        "hasAttr": [[(STR, '"a"'), (SET, {"a": "1"})]],
        "hasContext": [[(STR, '"s"')]],
        "hashFile": [[(STR, '"sha256"'), (PATH, t)]],
        "hashString": [[(STR, '"sha256"'), (STR, '"s"')]],
        "head": [[(LIST, ["1", "2"])]],
        "import": [[(PATH, f)]],
        "intersectAttrs": [[(SET, {"a": "1"}), (SET, {"a": "2", "b": "3"})]],
        "isAttrs": [[(ANY, "1")]],
        "isBool": [[(ANY, "1")]],
        "isFloat": [[(ANY, "1")]],
        "isFunction": [[(ANY, "1")]],
        "isInt": [[(ANY, "1")]],
        "isList": [[(ANY, "1")]],
        "isNull": [[(ANY, "1")]],
        "isPath": [[(ANY, "1")]],
        "isString": [[(ANY, "1")]],
        "length": [[(LIST, ["1", "2"])]],
        "lessThan": [[(ANY, "1"), (ANY, "2")], [(ANY, ["1"]), (ANY, ["1", "2"])]],
        "listToAttrs": [[(LIST, [{"name": '"a"', "value": "1"}])]],
        "map": [[(FN, "(x: x)"), (LIST, ["1", "2"])], [(FN, "(x: x)"), (LIST, [])]],
        "mapAttrs": [[(FN, "(n: v: v)"), (SET, {"a": "1"})]],
        "match": [[(STR, '"a(.)"'), (STR, '"ab"')]],
        "mul": [[(NUM, "2"), (NUM, "3")]],
        "parseDrvName": [[(STR, '"hello-1.0"')]],
        "partition": [[(FN, "(x: true)"), (LIST, ["1", "2"])]],
        "path": [[(SET, {"path": d, "name": '"p"'})]],
        "pathExists": [[(PATH, f)]],
        "placeholder": [[(STR, '"out"')]],
        "readDir": [[(PATH, d)]],
        "readFile": [[(PATH, t)]],
        "removeAttrs": [[(SET, {"a": "1", "b": "2"}), (LIST, ['"a"'])]],
        "replaceStrings": [[(LIST, ['"a"', '"b"']), (LIST, ['"c"', '"d"']), (STR, '"a"')],
                           [(LIST, ['"a"']), (LIST, ['"b"']), (STR, '"c"')],
                           [(LIST, ['""', '"x"']), (LIST, ['"y"', '"z"']), (STR, '"ab"')],
                           [(LIST, []), (LIST, []), (STR, '"ab"')]],
        "scopedImport": [[(SET, {"x": "1"}), (PATH, f)]],
        "seq": [[(ANY, "1"), (ANY, "2")]],
        "sort": [[(FN, "(a: b: a < b)"), (LIST, ["2", "1"])], [(FN, "(a: b: a < b)"), (LIST, ["1"])],
                 [(FN, "(a: b: a < b)"), (LIST, [])]],
        "split": [[(STR, '"(b)"'), (STR, '"abc"')]],
        "splitVersion": [[(STR, '"1.2.3"')]],
        "storePath": [[(PATH, '"/nix/store/00000000000000000000000000000000-none"')]],
        "stringLength": [[(STR, '"abc"')]],
        "sub": [[(NUM, "3"), (NUM, "1")]],
        "substring": [[(INT, "0"), (INT, "1"), (STR, '"ab"')]],
        "tail": [[(LIST, ["1", "2"])]],
        "throw": [[(STR, '"m"')]],
        "toFile": [[(STR, '"n"'), (STR, '"c"')]],
        "toJSON": [[(ANY, ["1", {"a": '"b"'}])]],
        "toPath": [[(STR, '"/a"')]],
        "toString": [[(ANY, ["1", '"a"'])]],
        "toXML": [[(ANY, ["1", {"a": '"b"'}])]],
        "trace": [[(ANY, '"m"'), (ANY, "1")]],
        "tryEval": [[(ANY, "1")]],
        "typeOf": [[(ANY, "1")]],
        "unsafeDiscardOutputDependency": [[(STR, '"s"')]],
        "unsafeDiscardStringContext": [[(STR, '"s"')]],
        "unsafeGetAttrPos": [[(STR, '"a"'), (SET, {"a": "1"})]],
        "zipAttrsWith": [[(FN, "(n: vs: vs)"), (LIST, [{"a": "1"}, {"a": "2"}])]],
    }


def render(v):
    if isinstance(v, list):
        return "[ " + "".join(f"({render(x)}) " for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + "".join(f"{json.dumps(k)} = {render(x)}; " for k, x in v.items()) + "}"
    return v


def placements(v, path=""):
    """Every value inside `v` replaced by a throw, with where it was."""
    if isinstance(v, list):
        for i, x in enumerate(v):
            yield f"{path}[{i}]", v[:i] + [THROW] + v[i + 1:]
            for where, inner in placements(x, f"{path}[{i}]"):
                yield where, v[:i] + [inner] + v[i + 1:]
    elif isinstance(v, dict):
        for k in v:
            yield f"{path}.{k}", {**v, k: THROW}
            for where, inner in placements(v[k], f"{path}.{k}"):
                yield where, {**v, k: inner}


def random_nested(rng, kind, depth):
    """A value of `kind` with a throw `depth` levels down."""
    if depth == 0:
        return THROW
    inner = random_nested(rng, rng.choice([LIST, SET]), depth - 1)
    if kind == LIST:
        items = [rng.choice(["1", '"s"', "null"]) for _ in range(rng.randint(0, 2))]
        items.insert(rng.randint(0, len(items)), inner)
        return items
    names = rng.sample(["a", "b", "c"], rng.randint(1, 3))
    return {n: (inner if i == 0 else rng.choice(["1", '"s"'])) for i, n in enumerate(names)}


def variants(rng, kind, sample, randoms):
    """The throwing values tried at one argument position, with names."""
    out = [("throw", THROW)]
    out += [(f"in{where}", render(v)) for where, v in placements(sample)]
    if kind in (LIST, ANY) and not isinstance(sample, list):
        out.append(("in-list", f"[ {THROW} ]"))
    if kind in (SET, ANY) and not isinstance(sample, dict):
        out.append(("in-set", f"{{ a = {THROW}; }}"))
    if kind in (FN, ANY):
        out += [("fn-result", f"(x: {THROW})"), ("fn-result2", f"(x: y: {THROW})"),
                ("functor-result", f"{{ __functor = s: x: {THROW}; }}")]
    if kind in (STR, PATH, ANY):
        out += [("outPath", f"{{ outPath = {THROW}; }}"), ("toString", f"{{ __toString = s: {THROW}; }}")]
    if kind == STR and sample.startswith('"'):
        # The sample with a context: refused where Nix takes a plain string.
        out.append(("context", f'"${{builtins.toFile "c" "c"}}" + {sample}'))
    if kind == ANY:
        for i in range(randoms):
            k = rng.choice([LIST, SET])
            out.append((f"random{i}", render(random_nested(rng, k, rng.randint(1, 3)))))
    return out


MODES = {
    "tryEval": "(let r = builtins.tryEval ({e}); in if r.success then \"ok \" + S r.value else \"caught\")",
    "seq": "(if (builtins.tryEval (builtins.seq ({e}) true)).success then \"ok\" else \"caught\")",
    "deepSeq": "(if (builtins.tryEval (builtins.deepSeq ({e}) true)).success then \"ok\" else \"caught\")",
}

PRELUDE = """let
  S = v: let t = builtins.typeOf v; in t + (
    if t == "string" then " " + builtins.unsafeDiscardStringContext v
    else if t == "int" || t == "float" || t == "path" then " " + toString v
    else if t == "bool" then (if v then " true" else " false")
    else if t == "list" then " " + toString (builtins.length v)
    else if t == "set" then " " + builtins.concatStringsSep "," (builtins.attrNames v)
    else "");
  R = k: r: builtins.trace "@@ ${toString k} ${builtins.toJSON r}" null;
in
builtins.foldl' (n: c: builtins.seq (c null) (n + 1)) 0 [
"""


def generate(names, tmp, seed, randoms):
    rng = random.Random(seed)
    cases = []
    for name, samples in sorted(table(tmp).items()):
        if name not in names:
            continue
        fn = "derivation" if name == "derivation" else f"builtins.{name}"
        for s, sample in enumerate(samples):
            for pos, (kind, value) in enumerate(sample):
                for vname, thrown in variants(rng, kind, value, randoms):
                    args = [render(v) for _, v in sample]
                    args[pos] = thrown
                    call = fn + "".join(f" ({a})" for a in args)
                    for mode, wrap in MODES.items():
                        cases.append((f"{name}/{s}/{pos}/{vname}/{mode}", wrap.format(e=call)))
    return cases


def run_all(argv, cases, cwd):
    """Outcomes of all cases through one tool: first under tryEval, then
    under seq and deepSeq those whose tryEval raised no uncaught error
    (forcing the call, as all three do first, would raise it again)."""
    first = [i for i, (cid, _) in enumerate(cases) if cid.endswith("/tryEval")]
    outcomes, runs = run_in_order(argv, [cases[i] for i in first], cwd)
    outcomes = {first[k]: o for k, o in outcomes.items()}
    rest = []
    for i, (cid, _) in enumerate(cases):
        if cid.endswith("/tryEval"):
            continue
        # The modes of one call follow each other: tryEval, seq, deepSeq.
        shallow = outcomes[i - list(MODES).index(cid.rsplit("/", 1)[1])]
        if shallow.startswith("error"):
            outcomes[i] = shallow
        else:
            rest.append(i)
    more, runs2 = run_in_order(argv, [cases[i] for i in rest], cwd)
    outcomes.update({rest[k]: o for k, o in more.items()})
    return outcomes, runs + runs2


def program(cases, first=0):
    return PRELUDE + "".join(f"(_: R {i} {c})\n" for i, (_, c) in enumerate(cases, first)) + "]\n"


def check_parse(argv, cases, cwd):
    """Every case must parse (else each would be recorded as an error)."""
    with tempfile.NamedTemporaryFile("w", suffix=".nix", dir=cwd, delete=False) as f:
        f.write(program(cases))
    try:
        p = subprocess.run(argv + [f.name], capture_output=True, text=True, cwd=cwd)
    finally:
        os.unlink(f.name)
    if p.returncode != 0:
        sys.exit(f"strictness: the generated expression does not parse:\n{p.stderr[-2000:]}")


def run_in_order(argv, cases, cwd):
    """Outcomes of the cases through one tool, in order, starting again
    after each error tryEval cannot catch."""
    outcomes = {}
    start = 0
    runs = 0
    while start < len(cases):
        text = program(cases[start:], start)
        with tempfile.NamedTemporaryFile("w", suffix=".nix", dir=cwd, delete=False) as f:
            f.write(text)
        try:
            p = subprocess.run(argv + [f.name], capture_output=True, text=True, cwd=cwd, timeout=600)
        finally:
            os.unlink(f.name)
        runs += 1
        last = start - 1
        for line in p.stderr.splitlines():
            m = re.match(r"trace: @@ (\d+) (.*)$", line)
            if m:
                outcomes[int(m.group(1))] = json.loads(m.group(2))
                last = int(m.group(1))
        if p.returncode == 0:
            break
        failed = last + 1
        if failed >= len(cases):
            break
        errors = [l for l in p.stderr.splitlines() if l.startswith("error:")]
        outcomes[failed] = "error" + (f" ({errors[0][7:80]})" if errors else "")
        start = failed + 1
    return outcomes, runs


def kind_of(outcome):
    """An uncaught error is one outcome, whatever its message."""
    return "error" if outcome.startswith("error") else outcome


def load_known(path):
    known = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or not re.fullmatch(r"[0-9a-f]{40}", parts[1]):
                sys.exit(f"{path}:{n}: expected 'PATTERN NIX_COMMIT WHY' (a 40-hex commit); fix the line")
            known.append((parts[0], parts[1], parts[2]))
    return known


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("chock")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--random", type=int, default=2)
    ap.add_argument("--show", action="store_true")
    a = ap.parse_args()
    a.chock = os.path.abspath(a.chock)
    here = os.path.dirname(os.path.abspath(__file__))
    known = load_known(os.path.join(here, "nix-2.8-fixed.txt"))
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = os.path.realpath(tmp)
        for rel, text in FILES.items():
            os.makedirs(os.path.dirname(f"{tmp}/{rel}"), exist_ok=True)
            with open(f"{tmp}/{rel}", "w") as f:
                f.write(text)
        nix = ["nix-instantiate", "--eval", "--strict"]
        fix = [a.chock, "eval", "--impure", "--strict"]
        names_nix = set(re.findall(r'"([^"]+)"', subprocess.run(
            nix + ["-E", "builtins.attrNames builtins"], capture_output=True, text=True).stdout))
        names_fix = set(re.findall(r'"([^"]+)"', subprocess.run(
            fix + ["--expr", "builtins.attrNames builtins"], capture_output=True, text=True).stdout))
        if not names_nix or not names_fix:
            sys.exit("strictness: could not list the builtins of nix-instantiate or fix")
        both = names_nix & names_fix
        missing = " ".join(json.dumps(n) for n in sorted(both - table(tmp).keys()))
        untested = re.findall(r'"([^"]+)"', subprocess.run(
            nix + ["-E", f"builtins.filter (n: builtins.isFunction builtins.${{n}}) [ {missing} ]"],
            capture_output=True, text=True).stdout)
        if untested:
            sys.exit(f"strictness: builtins of both with no entry in the table: {' '.join(untested)}; add them")
        cases = generate(both, tmp, a.seed, a.random)
        check_parse(["nix-instantiate", "--parse"], cases, tmp)
        check_parse([a.chock, "eval", "--parse"], cases, tmp)
        ours, fix_runs = run_all(fix, cases, tmp)
        theirs, nix_runs = run_all(nix, cases, tmp)
    differences, explained, used = [], [], set()
    for i, (cid, text) in enumerate(cases):
        o, t = ours.get(i, "missing"), theirs.get(i, "missing")
        if a.show:
            print(f"{cid}: fix {o} | nix {t}")
        if kind_of(o) == kind_of(t):
            continue
        match = next((k for k in known if fnmatch.fnmatchcase(cid, k[0])), None)
        if match:
            used.add(match[0])
            explained.append((cid, match))
        else:
            differences.append((cid, text, o, t))
    for cid, text, o, t in differences:
        print(f"DIFFERENT {cid}\n  {text}\n  fix: {o}\n  nix: {t}")
    stale = [k for k in known if k[0] not in used]
    for k in stale:
        print(f"LISTED BUT NOT DIFFERENT: {k[0]} ({k[1]}); remove it from nix-2.8-fixed.txt")
    only_nix = sorted(names_nix - names_fix)
    only_fix = sorted(names_fix - names_nix)
    print(f"strictness: {len(cases)} cases over {len(both)} builtins (seed {a.seed}) compared with Nix 2.8 "
          f"in {time.monotonic() - began:.0f} s ({fix_runs} fix and {nix_runs} nix evaluations); "
          f"{len(explained)} differ as listed in nix-2.8-fixed.txt, {len(differences)} unexplained")
    if only_nix:
        print(f"strictness: only in Nix 2.8: {' '.join(only_nix)}")
    if only_fix:
        print(f"strictness: only in fix (later Nix): {' '.join(only_fix)}")
    sys.exit(1 if differences or stale else 0)


if __name__ == "__main__":
    main()
