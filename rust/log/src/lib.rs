//! The hash-chained decision log: append under a lock, rotate, verify.
