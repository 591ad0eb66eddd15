# `<nix/fetchurl.nix>`: a fixed-output derivation that Nix's built-in
# `builtin:fetchurl` builder downloads. Written for fix from the documented
# interface: url, an SRI `hash` or one of the legacy md5/sha1/sha256/sha512
# attributes, `executable`, `unpack` (the download is a NAR), `name`.
{
  url,
  hash ? "",
  md5 ? "",
  sha1 ? "",
  sha256 ? "",
  sha512 ? "",
  executable ? false,
  unpack ? false,
  name ? baseNameOf (toString url),
  impure ? false,
  # Obsolete; the builder runs on every system.
  system ? "",
}:

let
  legacy =
    if sha512 != "" then { algo = "sha512"; value = sha512; }
    else if sha256 != "" then { algo = "sha256"; value = sha256; }
    else if sha1 != "" then { algo = "sha1"; value = sha1; }
    else { algo = "md5"; value = md5; };
  hashAttrs =
    if impure then { __impure = true; }
    else if hash != "" then { outputHashAlgo = ""; outputHash = hash; }
    else { outputHashAlgo = legacy.algo; outputHash = legacy.value; };
in
derivation (
  {
    builder = "builtin:fetchurl";
    system = "builtin";
    inherit name url executable;
    # Lets nix-prefetch-url find the URL.
    urls = [ url ];
    unpack = unpack;
    outputHashMode = if unpack || executable then "recursive" else "flat";
    preferLocalBuild = true;
    impureEnvVars = [ "http_proxy" "https_proxy" "ftp_proxy" "all_proxy" "no_proxy" ];
  }
  // hashAttrs
)
