# Derivations of every shape Nix 2.8 writes, for checking chock-store
# against Nix byte for byte: plain, several outputs, fixed output (flat and
# recursive, every algorithm, hashes written in every encoding),
# builtins.toFile texts, path sources, structured attrs, builtin:fetchurl,
# .drv files as sources, and chains of input derivations.
# `nix-instantiate corpus.nix` prints one .drv path per derivation.
let
  system = "x86_64-linux";
  range = n: builtins.genList (i: i) n;
  mk = attrs: derivation ({ inherit system; builder = "/bin/sh"; args = [ "-c" "echo > $out" ]; } // attrs);
  control = builtins.fromJSON ''"ctl\u0001\u001f end"'';
  odd = [ "quote \" backslash \\ dollar \${x}" "new\nline\ttab\rcr" "unicode é ✓ 🦀" control "" ];

  plain = map (i: mk {
    name = "plain-${toString i}";
    args = [ "-c" "echo ${toString i} ${builtins.elemAt odd (i - (i / 5) * 5)} > $out" ];
    number = i;
    flag = i / 2 * 2 == i;
    nothing = null;
    list = [ i "two" [ "nested" 3 ] true false null ];
    text = builtins.elemAt odd (i - (i / 5) * 5);
  }) (range 50);

  multi = map (i: mk {
    name = "multi-${toString i}";
    outputs = if i / 2 * 2 == i then [ "out" "dev" "lib" ] else [ "bin" "out" "man" "doc" ];
    args = [ "-c" "for o in $outputs; do echo $o > \${!o}; done" ];
  }) (range 20);

  # sha256 of "fixed\n"-style contents; the hashes need not match anything that builds.
  algos = [ "md5" "sha1" "sha256" "sha512" ];
  fixedHash = algo: i: builtins.hashString algo "fixed ${toString i}\n";
  abc = {
    md5 = [ "3jgzhjhz9zjvbb0kyj7jc500ch" "kAFQmDzST7DWlj99KOF/cg==" ];
    sha1 = [ "kpcd173cq987hw957sx6m0868wv3x6d9" "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=" ];
    sha256 = [ "1b8m03r63zqhnjf7l5wnldhh7c134ap5vpj0850ymkq1iyzicy5s" "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=" ];
    sha512 = [ "2gs8k559z4rlahfx0y688s49m2vvszylcikrfinm30ly9rak69236nkam5ydvly1ai7xac99vxfc4ii84hawjbk876blyk1jfhkbbyx" "3a81oZNherrMQXNJriBBMRLm+k6JqX6iCp7u5ktV05ohkpkqJ0/BqDa6PCOj/uu9RU1EI2Q86A4qmslPpUyknw==" ];
  };
  fods = builtins.concatLists (map (i:
    builtins.concatLists (map (algo: map (mode: mk {
      name = "fod-${algo}-${mode}-${toString i}";
      outputHashAlgo = algo;
      outputHashMode = mode;
      # The hash of "abc" in nix32 (i = 1) and base64 (i = 2); hex otherwise.
      outputHash = if i == 0 then fixedHash algo i else builtins.elemAt abc.${algo} (i - 1);
      url = "https://example.invalid/${algo}/${toString i}";
    }) [ "flat" "recursive" ]) algos)) (range 3));

  # The same hashes given as SRI strings (outputHashAlgo left empty).
  sri = map (i: mk {
    name = "fod-sri-${toString i}";
    outputHashMode = "recursive";
    outputHash = "sha256-${builtins.elemAt [ "iUUXyRY8iW7DGirb0zwGgf1fRbLA7wimTJKgP7l/OQ8=" "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" ] (i - (i / 2) * 2)}";
    salt = toString i;
  }) (range 6);

  texts = map (i:
    let
      t = builtins.toFile "text-${toString i}" "line one ${toString i}\n\"quoted\" \\ back\n";
      u = builtins.toFile "text-ref-${toString i}" "refers to ${t}\n";
    in mk {
      name = "uses-text-${toString i}";
      args = [ "-c" "cat ${u} > $out" ];
      script = t;
    }) (range 20);

  sources = map (i: mk {
    name = "uses-source-${toString i}";
    src = ./source-tree;
    args = [ "-c" "cp -r $src $out; echo ${toString i}" ];
  }) (range 6);

  structured = map (i: mk {
    name = "structured-${toString i}";
    __structuredAttrs = true;
    outputs = if i / 3 * 3 == i then [ "out" "dev" ] else [ "out" ];
    nested = { a = i; b = [ "x" { c = null; } ]; d = 1.5; e = true; };
    text = builtins.elemAt odd (i - (i / 5) * 5);
    args = [ "-c" ". .attrs.sh; echo > $out" ];
  }) (range 20);

  fetchers = map (i: import <nix/fetchurl.nix> {
    url = "http://example.invalid/file-${toString i}.tar.gz";
    sha256 = builtins.hashString "sha256" "fetch ${toString i}";
    unpack = i / 2 * 2 == i;
  }) (range 6);

  # Chains: each link depends on the previous one, on an output of a
  # multi-output derivation, and on a fixed-output derivation.
  chain = builtins.foldl' (acc: i:
    let
      prev = if acc == [ ] then null else builtins.head acc;
      m = builtins.elemAt multi (i - (i / 20) * 20);
      f = builtins.elemAt fods (i - (i / 24) * 24);
      link = mk ({
        name = "chain-${toString i}";
        args = [ "-c" "echo ${if prev == null then "start" else prev} ${builtins.head (builtins.attrValues (builtins.removeAttrs m [ "all" "drvAttrs" "drvPath" "name" "outPath" "outputName" "outputs" "system" "type" "builder" "args" ]))} ${f} > $out" ];
      } // (if i / 4 * 4 == i then { fixedInput = f; } else { }));
    in [ link ] ++ acc) [ ] (range 40);

  # A .drv file as an input source (drvPath string context).
  drvRefs = map (i: mk {
    name = "drv-ref-${toString i}";
    recipe = builtins.unsafeDiscardOutputDependency (builtins.elemAt chain i).drvPath;
  }) (range 6);

  # Several outputs of one input, and dev outputs of several.
  fanIn = map (i: mk {
    name = "fan-in-${toString i}";
    deps = map (m: m.dev or m.man) (builtins.genList (j: builtins.elemAt multi (j + i)) 5);
    lib = (builtins.elemAt multi (2 * i)).lib;
  }) (range 8);
in
plain ++ multi ++ fods ++ sri ++ texts ++ sources ++ structured ++ fetchers ++ chain ++ drvRefs ++ fanIn
