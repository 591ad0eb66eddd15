assert 1 == 2; null
