{
  description = "A project for trying Chock: a package built with nothing but /bin/sh, and a fetch";

  outputs = { self }: {
    packages.x86_64-linux.default = derivation {
      name = "hello-chock";
      system = "x86_64-linux";
      builder = "/bin/sh";
      args = [ "-c" "echo 'hello from a build Chock allowed' > $out" ];
    };

    # A fetch: GNU hello's source, by its published hash. `chock build
    # --plan` names the host it would reach; a build asks you about that
    # host first, since no rule in chock.zon answers it.
    packages.x86_64-linux.source = derivation {
      name = "hello-2.12.1.tar.gz";
      system = "x86_64-linux";
      builder = "builtin:fetchurl";
      url = "https://ftpmirror.gnu.org/hello/hello-2.12.1.tar.gz";
      outputHashMode = "flat";
      outputHashAlgo = "sha256";
      outputHash = "sha256-jZkUKv2SV28wsM18tCqNxoCZmLxdYH2Idh9RLibH2yA=";
    };
  };
}
