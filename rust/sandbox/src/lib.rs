//! The Linux sandbox for run_command: namespaces, mounts, Landlock, seccomp, resource limits, the toolchain cache and doctor probes.
