let ${"a"} = 1; ${toString 2} = 2; in a
