{ abc = 1; }.abd
