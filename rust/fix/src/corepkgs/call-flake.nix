# `builtins.getFlake`: the flake at the root of a lock graph, called with
# its inputs. fix builds the graph in Rust from flake.lock (every `follows`
# already resolved to a node key) and hands it here:
#
#   root   the key of the flake itself
#   nodes  key -> { name; flake; dir; inputs = name -> key; sourceInfo; }
#          or, for an input not in the store, { name; flake; dir; inputs; missing; }
#          (`name` says which flake it is, for messages)
#   missingInput  called with `missing` when such an input is used: it stops
#                 the evaluation naming every input of the lock that is absent
#                 (`missing` an index), or saying why Chock would not fetch
#                 it (`missing` a sentence)
#
# A flake's value is its outputs, then its source's attributes (outPath,
# narHash, rev, ...), then `inputs`, `outputs`, `sourceInfo` and
# `_type = "flake"`; `self` is that same value. A non-flake input is its
# source's attributes only. Every node is computed at most once and only
# when used, so an input nobody reads is never looked for.
{ root, nodes, missingInput }:

let
  sourceOf = node: if node ? missing then missingInput node.missing else node.sourceInfo;

  flakeFile = node: sourceInfo:
    sourceInfo.outPath + (if node.dir == "" then "" else "/${node.dir}") + "/flake.nix";

  evaluated = builtins.mapAttrs (key: node: valueOf key node) nodes;

  valueOf = key: node:
    let
      sourceInfo = sourceOf node;
      inputs = builtins.mapAttrs (_: target: evaluated.${target}) node.inputs;
      flake = import (flakeFile node sourceInfo);
      declared = builtins.attrNames (flake.inputs or { });
      unlocked = builtins.filter (name: name != "self" && !(node.inputs ? ${name})) declared;
      outputs =
        if !(flake ? outputs) then
          throw "the flake ${node.name} has no 'outputs'; a flake.nix is a set with an 'outputs' function"
        else if !builtins.isFunction flake.outputs then
          throw "the 'outputs' of the flake ${node.name} is not a function; it takes the inputs and returns the outputs"
        else if unlocked != [ ] then
          throw "the flake ${node.name} declares the input '${builtins.head unlocked}', which its flake.lock does not lock; run `nix flake lock` and evaluate again"
        else
          flake.outputs (inputs // { self = result; });
      result = outputs // sourceInfo // {
        inherit inputs outputs sourceInfo;
        _type = "flake";
      };
    in
    if node.flake then result else sourceInfo;
in
evaluated.${root}
