# A rec set with __overrides keeps its attributes with interpolated names;
# they are added after the overrides and see the overridden values.
rec {
  __overrides = { b = 20; c = 30; };
  "${"foo"}" = a + b;
  a = 1;
  b = 2;
  "${"bar"}" = a;
}
