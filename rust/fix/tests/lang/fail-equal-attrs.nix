assert { a = 1; } == { a = 1; b = 2; }; null
