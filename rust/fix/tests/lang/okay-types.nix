# Type predicates, typeOf on every kind, foldl' strictness, the constants.
let
  values = [ null true 1 1.5 "s" ./okay-types.nix { } [ ] (x: x) builtins.add (builtins.add 1) ];
  preds = with builtins; [ isNull isBool isInt isFloat isString isPath isAttrs isList isFunction ];
in
{
  table = map (p: map p values) preds;
  types = map builtins.typeOf values;
  foldl = builtins.foldl' (acc: x: acc * 10 + x) 0 [ 1 2 3 4 ];
  foldlStrict = (builtins.tryEval (builtins.foldl' (a: b: b) 0 [ (throw "forced") 1 ])).success;
  foldlEmpty = builtins.foldl' (a: b: throw "never") "start" [ ];
  langVersion = builtins.langVersion;
  nixVersionOk = builtins.compareVersions builtins.nixVersion "2.18" >= 0;
  storeDir = builtins.storeDir;
  system = builtins.isString builtins.currentSystem && builtins.currentSystem != "";
  found = builtins.findFile [ { prefix = "here"; path = ./data; } ] "here";
  foundSub = builtins.findFile [ { prefix = ""; path = ./.; } ] "data";
  contextless = map (f: f "plain") [
    builtins.unsafeDiscardOutputDependency
    builtins.unsafeDiscardStringContext
  ];
  appended = builtins.appendContext "plain" { };
}
