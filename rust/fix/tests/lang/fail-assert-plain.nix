assert false; null
