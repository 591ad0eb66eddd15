{ value = 42; twice = x: x * 2; }
