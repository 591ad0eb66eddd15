# Tests of nix/lib/zon.nix, the ZON writer: `lib.runTests` returns [ ] when
# all pass. That Zig accepts and reads back what it writes is tested against
# Zig itself by scripts/test.d/modules.sh (checks/zon-dump.zig).
{ lib }:
let
  zon = import ../nix/lib/zon.nix { inherit lib; };
  fixtures = import ./fixtures.nix { inherit zon; };
  fails = v: !(builtins.tryEval (builtins.deepSeq v v)).success;
  r = zon.render;
in
lib.runTests {
  testScalars = {
    expr = map r [
      true
      false
      null
      0
      42
      (-7)
      "text"
    ];
    expected = [
      "true"
      "false"
      "null"
      "0"
      "42"
      "-7"
      ''"text"''
    ];
  };

  testIntegerExtremes = {
    expr = map r [
      9223372036854775807
      (-9223372036854775807 - 1)
    ];
    expected = [
      "9223372036854775807"
      "-9223372036854775808"
    ];
  };

  testNamedEscapes = {
    expr = r "a\"b\\c\nd\re\tf";
    expected = ''"a\"b\\c\nd\re\tf"'';
  };

  testControlBytesAsHex = {
    expr = r (builtins.fromJSON ''"\u0001\u001b\u001f\u007f"'');
    expected = ''"\x01\x1b\x1f\x7f"'';
  };

  # Nothing Nix interpolates or Zig would read as syntax survives unescaped.
  testNoSyntaxLeaks = {
    expr = r "\${x} // c \\\\ m";
    expected = ''"''${x} // c \\\\ m"'';
  };

  testUnicodeUnchanged = {
    expr = r "é → 漢 😀";
    expected = ''"é → 漢 😀"'';
  };

  testEnum = {
    expr = map r [
      (zon.enum "allow")
      (zon.enum "agent_then_human")
      (zon.enum "error")
      (zon.enum "two words")
    ];
    expected = [
      ".allow"
      ".agent_then_human"
      ''.@"error"''
      ''.@"two words"''
    ];
  };

  testIdentifiers = {
    expr = map zon.isIdentifier [
      "a"
      "_"
      "snake_case9"
      "CamelCase"
      ""
      "9lives"
      "kebab-case"
      "dot.ted"
      "while"
      "usingnamespace"
      "true"
      "null"
      "type"
    ];
    expected = [
      true
      true
      true
      true
      false
      false
      false
      false
      false
      false
      true
      true
      true
    ];
  };

  testQuotedFieldNames = {
    expr = zon.toZON {
      inner = {
        "fn" = 1;
        "a b" = 2;
        "x\"y" = 3;
      };
    };
    expected = ''
      .{
          .inner = .{ .@"a b" = 2, .@"fn" = 1, .@"x\"y" = 3 },
      }
    '';
  };

  testEmptyContainers = {
    expr = zon.toZON {
      struct = { };
      tuple = [ ];
      nested = [
        { }
        [ ]
      ];
      one = [ [ ] ];
    };
    expected = ''
      .{
          .nested = .{ .{}, .{} },
          .one = .{.{}},
          .@"struct" = .{},
          .tuple = .{},
      }
    '';
  };

  # The document is always one field per line; short containers of scalars
  # inside it are inline, everything else wraps.
  testLayout = {
    expr = zon.toZON {
      short = [
        1
        2
      ];
      long = lib.genList (i: i) 5;
      nested = [ [ 1 ] ];
    };
    expected = ''
      .{
          .long = .{
              0,
              1,
              2,
              3,
              4,
          },
          .nested = .{
              .{1},
          },
          .short = .{ 1, 2 },
      }
    '';
  };

  testLongLineWraps = {
    expr = zon.toZON { a = [ (lib.concatStrings (lib.genList (_: "x") 90)) ]; };
    expected = ''
      .{
          .a = .{
              "${lib.concatStrings (lib.genList (_: "x") 90)}",
          },
      }
    '';
  };

  testDerivationIsItsOutPath = {
    expr = r {
      type = "derivation";
      name = "x";
      outPath = "/nix/store/aaaa-x";
    };
    expected = ''"/nix/store/aaaa-x"'';
  };

  testPathIsAStorePath = {
    expr = lib.hasPrefix ''"${builtins.storeDir}/'' (r ./fixtures.nix);
    expected = true;
  };

  testFloatRefused = {
    expr = fails (zon.toZON { a.b = 1.5; });
    expected = true;
  };

  testFunctionRefused = {
    expr = fails (zon.toZON [ (x: x) ]);
    expected = true;
  };

  testEmptyNameRefused = {
    expr = fails (zon.toZON { "" = 1; });
    expected = true;
  };

  testEmptyEnumRefused = {
    expr = fails (zon.enum "");
    expected = true;
  };

  testNonStringEnumRefused = {
    expr = fails (zon.enum 1);
    expected = true;
  };

  testModuleValueRefused = {
    expr = fails (zon.toZON { a = lib.mkIf true 1; });
    expected = true;
  };

  testEnumSurvivesModuleMerge = {
    expr =
      (lib.evalModules {
        modules = [
          {
            options.x = lib.mkOption { type = zon.type; };
            config.x.d = zon.enum "deny";
          }
          { config.x.e = [ (zon.enum "ask") ]; }
        ];
      }).config.x;
    expected = {
      d = zon.enum "deny";
      e = [ (zon.enum "ask") ];
    };
  };

  testTypeRejectsFloat = {
    expr =
      fails
        (lib.evalModules {
          modules = [
            {
              options.x = lib.mkOption { type = zon.type; };
              config.x.f = 0.5;
            }
          ];
        }).config.x;
    expected = true;
  };

  testEdgeCasesGolden = {
    expr = zon.toZON fixtures.edgeCases;
    expected = builtins.readFile ./golden/edge-cases.zon;
  };

  testProjectGolden = {
    expr = zon.toZON fixtures.project;
    expected = builtins.readFile ./golden/chock.zon;
  };

  testVmProjectGolden = {
    expr = zon.toZON fixtures.vmProject;
    expected = builtins.readFile ./golden/vm-project.zon;
  };
}
