#!/usr/bin/env python3
"""Differential test of fix against Nix: random expressions over the part
of the language whose meaning Nix 2.8 shares with current Nix, evaluated by
`chock eval --strict --expr` and `nix-instantiate --eval --strict -E`;
both must fail, or both print the same value.

usage: run.py CHOCK_BIN [SEED] [COUNT]; exits 1 on any difference.
"""

import random
import subprocess
import sys


def generator(rng):
    def leaf():
        return rng.choice(["0", "1", "2", "7", "-1", "42", "1.5", "true", "false", "null", "[ ]", "{ }",
                           '"foo"', '""', '"a b"', '"x${toString 1}y"', "''\n  ind\n    ent\n''",
                           '"q\\"uote"', '"tab\\t"'])

    def expr(d):
        if d <= 0:
            return leaf()
        e = lambda: expr(d - 1)
        forms = [
            lambda: f"[ {e()} {e()} {e()} ]",
            lambda: f"{{ a = {e()}; b = {e()}; }}",
            lambda: f"(let x = {e()}; y = {e()}; in [ x y ])",
            lambda: f"(if {rng.choice(['true', 'false'])} then {e()} else {e()})",
            lambda: f"((x: [ x x ]) {e()})",
            lambda: f"(builtins.length [ {e()} {e()} ])",
            lambda: f"(builtins.toJSON [ {e()} ])",
            lambda: f"(builtins.map (x: [ x ]) [ {e()} {e()} ])",
            lambda: f"(builtins.attrNames {{ z = {e()}; a = 1; m = {e()}; }})",
            lambda: f"({{ a = {e()}; }} // {{ b = {e()}; a = 2; }})",
            lambda: f'(builtins.concatStringsSep "," [ "p" (builtins.typeOf {e()}) ])',
            lambda: f"(builtins.tryEval {e()})",
            lambda: f"({e()} == {e()})",
            lambda: f"(rec {{ a = 1; b = a + 1; c = {e()}; }})",
            lambda: f"(builtins.foldl' (acc: v: acc ++ [ v ]) [ ] [ {e()} {e()} ])",
            lambda: f"(builtins.filter (v: builtins.isInt v) [ 1 {e()} 2 ])",
            lambda: f'({{ a = {{ b = {e()}; }}; }}.a.b or "default")',
            lambda: f"(with {{ w = {e()}; }}; [ w ])",
            lambda: f"(builtins.sort (p: q: p < q) [ 3 1 {rng.choice(['2', '0', '9'])} ])",
            lambda: f'(builtins.listToAttrs [ {{ name = "k"; value = {e()}; }} ])',
            lambda: f"({{ f = {{ a, b ? {e()} }}: [ a b ]; }}.f {{ a = {e()}; }})",
            lambda: f"(builtins.elemAt [ {e()} {e()} ] {rng.choice(['0', '1', '2'])})",
            lambda: f'(builtins.replaceStrings [ "o" ] [ "0" ] "foo ${{builtins.typeOf {e()}}}")',
            lambda: f"(builtins.mapAttrs (n: v: [ n v ]) {{ p = {e()}; }})",
            lambda: f"({e()} + {e()})",
        ]
        return rng.choice(forms)()

    return lambda: expr(rng.randint(1, 4))


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) > 1 else 2)
    chock = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    make = generator(random.Random(seed))
    differences = 0
    for _ in range(count):
        text = make()
        ours = run([chock, "eval", "--strict", "--expr", text])
        nix = run(["nix-instantiate", "--eval", "--strict", "-E", text])
        if (ours[0] == 0) != (nix[0] == 0) or (ours[0] == 0 and ours[1] != nix[1]):
            differences += 1
            print(f"DIFFERENT: {text}\n  fix: {ours}\n  nix: {nix}")
    print(f"differential: {count - differences} of {count} expressions agree with Nix (seed {seed})")
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
