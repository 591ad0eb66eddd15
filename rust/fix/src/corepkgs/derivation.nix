# `derivation`: derivationStrict computes the paths; this wraps its answer
# in the set Nix users know. Written for fix from the documented shape:
# the attributes given, then per output `outPath`, `drvPath`, `type`,
# `outputName`, every output reachable from every other by name, `all`
# (every output) and `drvAttrs` (the attributes given). The value is the
# first output's set.
drvAttrs@{ outputs ? [ "out" ], ... }:

let
  strict = derivationStrict drvAttrs;

  shared =
    drvAttrs
    // (builtins.listToAttrs perOutput)
    // {
      all = map (o: o.value) perOutput;
      inherit drvAttrs;
    };

  forOutput = outputName: {
    name = outputName;
    value = shared // {
      outPath = builtins.getAttr outputName strict;
      drvPath = strict.drvPath;
      type = "derivation";
      inherit outputName;
    };
  };

  perOutput = map forOutput outputs;

in
(builtins.head perOutput).value
