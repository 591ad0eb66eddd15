x: y
