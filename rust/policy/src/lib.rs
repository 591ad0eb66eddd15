//! Chock's policy engine: action names, rules, shipped defaults, layers and the readings that answer them.
