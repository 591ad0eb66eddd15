<nixpkgs>
