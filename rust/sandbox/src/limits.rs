//! The resource floor: rlimits always, a memory and process bound through
//! cgroup v2 when the machine delegates one to us.
//!
//! rlimits are set last before `execve`, soft equal to hard except CPU time
//! (whose soft limit sends SIGXCPU 30 s before the hard one kills), and never
//! above what the caller already had: a project can lower them, never raise.
//! The kernel exempts real uid 0 from `RLIMIT_NPROC`, so for a root caller the
//! process bound holds only where a cgroup is delegated; `chock doctor` says so.
//!
//! The cgroup is used only when `memory` and `pids` are already enabled for
//! children of our own cgroup: Chock never writes `cgroup.subtree_control`,
//! because turning controllers on is the delegating manager's decision.

use std::path::{Path, PathBuf};

const GIB: u64 = 1 << 30;

/// The limits one sandboxed program runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Limits {
    /// Processes (RLIMIT_NPROC, and `pids.max` with a cgroup).
    pub processes: u64,
    /// Memory in bytes (`memory.max` with a cgroup; swap off).
    pub memory_bytes: u64,
    /// Open files (RLIMIT_NOFILE).
    pub open_files: u64,
    /// Largest file a program may write (RLIMIT_FSIZE).
    pub file_bytes: u64,
    /// CPU seconds before SIGXCPU; killed 30 s later (RLIMIT_CPU).
    pub cpu_seconds: u64,
    /// Data segment (RLIMIT_DATA), a backstop where no cgroup bounds memory.
    pub data_bytes: u64,
}

impl Limits {
    /// The built-in floor, sized to this machine the way the policy sizes
    /// its defaults: processes = max(256, 8 × CPUs), memory = max(2 GiB,
    /// total / 8).
    pub fn for_this_machine() -> Self {
        Self::for_machine(&chock_config::Machine::detect())
    }

    /// The built-in floor for `machine`.
    pub fn for_machine(machine: &chock_config::Machine) -> Self {
        let sized = machine.default_limits();
        Limits {
            processes: sized.processes,
            memory_bytes: sized.memory_bytes,
            open_files: 1024,
            file_bytes: GIB,
            cpu_seconds: 3600,
            data_bytes: 16 * GIB,
        }
    }

    /// The same limits, lowered (never raised) by a project's or an
    /// organisation's `limits` block.
    pub fn lowered(self, processes: Option<u64>, memory_bytes: Option<u64>) -> Self {
        Limits {
            processes: processes.map_or(self.processes, |p| p.min(self.processes)),
            memory_bytes: memory_bytes.map_or(self.memory_bytes, |m| m.min(self.memory_bytes)),
            ..self
        }
    }

    /// The rlimits to set, each capped by what the caller has now.
    pub(crate) fn rlimits(&self) -> Vec<(RlimitResource, libc::rlimit)> {
        let cpu_hard = self.cpu_seconds.saturating_add(30);
        [
            (RlimitResource::RLIMIT_CORE, 0, 0),
            (
                RlimitResource::RLIMIT_FSIZE,
                self.file_bytes,
                self.file_bytes,
            ),
            (
                RlimitResource::RLIMIT_NOFILE,
                self.open_files,
                self.open_files,
            ),
            (RlimitResource::RLIMIT_NPROC, self.processes, self.processes),
            (RlimitResource::RLIMIT_CPU, self.cpu_seconds, cpu_hard),
            (
                RlimitResource::RLIMIT_DATA,
                self.data_bytes,
                self.data_bytes,
            ),
        ]
        .into_iter()
        .map(|(resource, soft, hard)| {
            let current = current_rlimit(resource);
            let hard = hard.min(current.rlim_max);
            (
                resource,
                libc::rlimit {
                    rlim_cur: soft.min(hard),
                    rlim_max: hard,
                },
            )
        })
        .collect()
    }
}

pub(crate) use nix::sys::resource::Resource as RlimitResource;

/// What the caller has now; unlimited when it cannot be read.
fn current_rlimit(resource: RlimitResource) -> libc::rlimit {
    let (rlim_cur, rlim_max) = nix::sys::resource::getrlimit(resource)
        .unwrap_or((libc::RLIM_INFINITY, libc::RLIM_INFINITY));
    libc::rlimit { rlim_cur, rlim_max }
}

/// Whether a cgroup with `memory` and `pids` is ours to use, and where.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Delegation {
    /// Children of this cgroup v2 directory get `memory` and `pids`.
    Delegated {
        /// Our own cgroup directory.
        dir: PathBuf,
    },
    /// A caller that is root, on a machine whose `memory` and `pids`
    /// controllers are cgroup v1 hierarchies: Chock makes a group in each,
    /// under its own, as root may.
    Legacy {
        /// Our own group in the v1 `memory` hierarchy.
        memory: PathBuf,
        /// Our own group in the v1 `pids` hierarchy.
        pids: PathBuf,
    },
    /// Not usable; the reason says why.
    NotDelegated {
        /// Why, in words.
        reason: String,
    },
}

/// Looks at this process's cgroups for a usable v2 delegation, else, for a
/// root caller, the v1 `memory` and `pids` hierarchies.
pub fn delegation() -> Delegation {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut mounts = Mounts::default();
    let v2 = delegation_v2(&mut mounts, &own);
    if matches!(v2, Delegation::NotDelegated { .. }) && nix::unistd::geteuid().is_root() {
        let mut group = |controller: &str| {
            let (hierarchy, path) = v1_group(&own, controller)?;
            let dir = mounts
                .v1(hierarchy, controller)?
                .join(path.trim_start_matches('/'));
            nix::unistd::access(&dir, nix::unistd::AccessFlags::W_OK)
                .is_ok()
                .then_some(dir)
        };
        if let (Some(memory), Some(pids)) = (group("memory"), group("pids")) {
            return Delegation::Legacy { memory, pids };
        }
    }
    v2
}

/// Where the cgroup hierarchies are mounted. Every start asks, so the
/// places systemd and the distributions use are tried first, each checked
/// by its file system type (`statfs`): the v2 hierarchy at
/// `/sys/fs/cgroup` or `/sys/fs/cgroup/unified`, a v1 hierarchy at
/// `/sys/fs/cgroup/<its controllers>` (`memory`, `cpu,cpuacct`), the name
/// `/proc/self/cgroup` gives it. Only when one is not there is
/// `/proc/self/mountinfo` read (once), which the kernel writes out mount by
/// mount.
#[derive(Default)]
struct Mounts {
    mountinfo: Option<String>,
}

impl Mounts {
    fn mountinfo(&mut self) -> &str {
        self.mountinfo.get_or_insert_with(|| {
            std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default()
        })
    }

    fn v2(&mut self) -> Option<PathBuf> {
        ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .into_iter()
            .find(|dir| is_fs(dir, nix::sys::statfs::CGROUP2_SUPER_MAGIC))
            .map(PathBuf::from)
            .or_else(|| cgroup2_mount(self.mountinfo()))
    }

    /// The v1 hierarchy `hierarchy` (its controllers, as `/proc/self/cgroup`
    /// names them), which holds `controller`.
    fn v1(&mut self, hierarchy: &str, controller: &str) -> Option<PathBuf> {
        let usual = Path::new("/sys/fs/cgroup").join(hierarchy);
        if !hierarchy.contains('/')
            && hierarchy != ".."
            && is_fs(&usual, nix::sys::statfs::CGROUP_SUPER_MAGIC)
        {
            return Some(usual);
        }
        v1_mount(self.mountinfo(), controller)
    }
}

/// Whether `dir` is the root of a file system of type `magic`: a folder
/// of that type whose parent is of another.
fn is_fs(dir: impl AsRef<Path>, magic: nix::sys::statfs::FsType) -> bool {
    let dir = dir.as_ref();
    let type_of = |path: &Path| {
        nix::sys::statfs::statfs(path)
            .ok()
            .map(|s| s.filesystem_type())
    };
    type_of(dir) == Some(magic) && dir.parent().and_then(type_of) != Some(magic)
}

fn delegation_v2(mounts: &mut Mounts, own: &str) -> Delegation {
    let not = |reason: String| Delegation::NotDelegated { reason };
    let Some(mount) = mounts.v2() else {
        return not("no cgroup v2 hierarchy is mounted".into());
    };
    let Some(path) = unified_path(own) else {
        return not("this process is in no cgroup v2 group".into());
    };
    let dir = mount.join(path.trim_start_matches('/'));
    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
    let missing: Vec<&str> = ["memory", "pids"]
        .into_iter()
        .filter(|c| !enabled.split_whitespace().any(|e| e == *c))
        .collect();
    if !missing.is_empty() {
        let available =
            std::fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default();
        let hint = if available.split_whitespace().any(|c| c == "memory") {
            "ask the session manager to delegate them (systemd: Delegate=memory pids)"
        } else {
            "the machine runs those controllers on cgroup v1 (a hybrid hierarchy)"
        };
        return not(format!(
            "{} not enabled for children of {} ({hint}); the rlimits still apply",
            missing.join(" and "),
            dir.display()
        ));
    }
    if nix::unistd::access(&dir, nix::unistd::AccessFlags::W_OK).is_err() {
        return not(format!("{} is not writable by this user", dir.display()));
    }
    Delegation::Delegated { dir }
}

fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let fstype = right.split_whitespace().next()?;
        (fstype == "cgroup2").then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

fn unified_path(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup.lines().find_map(|l| l.strip_prefix("0::"))
}

/// Where the v1 hierarchy holding `controller` is mounted.
fn v1_mount(mountinfo: &str, controller: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut fields = right.split_whitespace();
        let fstype = fields.next()?;
        let options = fields.nth(1)?;
        (fstype == "cgroup" && options.split(',').any(|o| o == controller))
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

/// This process's group in the v1 hierarchy holding `controller`: the
/// hierarchy's controllers (`cpu,cpuacct`) and the group's path.
fn v1_group<'a>(proc_cgroup: &'a str, controller: &str) -> Option<(&'a str, &'a str)> {
    proc_cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some((controllers, path))
    })
}

/// A cgroup made for one sandbox (one group per v1 hierarchy), removed
/// again when dropped.
#[derive(Debug)]
pub(crate) struct Cgroup {
    /// Every group made: the v2 one, or the v1 `memory` and `pids` ones.
    dirs: Vec<PathBuf>,
    /// Whether the group is a v2 one, which a process can be started in.
    unified: bool,
    /// Where `memory.events` (v2) or `memory.oom_control` (v1) is read.
    memory_events: PathBuf,
    /// Where `pids.events` is read.
    pids_events: PathBuf,
}

/// What the cgroup saw: the kernel's own record of why a program was killed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CgroupEvents {
    /// Processes the OOM killer ended because of `memory.max`.
    pub oom_kills: u64,
    /// Forks refused because of `pids.max`.
    pub pids_max: u64,
}

/// Removes the groups under `parent` that a Chock killed before it
/// removed them left behind: `chock-<pid>-<n>` whose pid is no live
/// process. The kernel refuses to remove a group that still holds a
/// process, so only empty ones go; a live pid's groups are never touched.
fn sweep_left_groups(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("chock-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
            .filter(|pid| *pid > 0)
        else {
            continue;
        };
        let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
            == Err(nix::errno::Errno::ESRCH);
        if gone {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Makes `chock-<pid>-<n>` under `parent`, after sweeping the groups that
/// killed Chocks left there (`sweep_left_groups`). A group of that name
/// can be left by an earlier Chock that had this pid and was killed before
/// it removed its groups: it is removed when empty (the kernel refuses to
/// remove a group that holds a process) and the next name is tried.
fn make_group(parent: &Path) -> std::io::Result<PathBuf> {
    sweep_left_groups(parent);
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    const ATTEMPTS: u32 = 64;
    let mut attempt = 0;
    loop {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = parent.join(format!("chock-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < ATTEMPTS => {
                let _ = std::fs::remove_dir(&dir);
                attempt += 1;
            }
            done => return done.map(|()| dir),
        }
    }
}

impl Cgroup {
    /// Makes the group(s) `delegation` allows, with the limits written;
    /// `None` when there is no cgroup to use.
    pub(crate) fn create(
        delegation: &Delegation,
        limits: &Limits,
    ) -> Result<Option<Cgroup>, (PathBuf, std::io::Error)> {
        let at = |dir: &Path| {
            let dir = dir.to_path_buf();
            move |e| (dir, e)
        };
        match delegation {
            Delegation::NotDelegated { .. } => Ok(None),
            Delegation::Delegated { dir } => {
                let group = make_group(dir).map_err(at(dir))?;
                let cgroup = Cgroup {
                    dirs: vec![group.clone()],
                    unified: true,
                    memory_events: group.join("memory.events"),
                    pids_events: group.join("pids.events"),
                };
                let write = |file: &str, value: String| {
                    std::fs::write(group.join(file), value).map_err(at(&group))
                };
                write("memory.max", limits.memory_bytes.to_string())?;
                // Not every kernel has swap accounting; without it there is no swap to bound.
                let _ = write("memory.swap.max", "0".into());
                write("pids.max", limits.processes.to_string())?;
                Ok(Some(cgroup))
            }
            Delegation::Legacy { memory, pids } => {
                let memory = make_group(memory).map_err(at(memory))?;
                let mut cgroup = Cgroup {
                    dirs: vec![memory.clone()],
                    unified: false,
                    memory_events: memory.join("memory.oom_control"),
                    pids_events: PathBuf::new(),
                };
                let pids = make_group(pids).map_err(at(pids))?;
                cgroup.dirs.push(pids.clone());
                cgroup.pids_events = pids.join("pids.events");
                let write = |dir: &Path, file: &str, value: String| {
                    std::fs::write(dir.join(file), value).map_err(at(dir))
                };
                write(
                    &memory,
                    "memory.limit_in_bytes",
                    limits.memory_bytes.to_string(),
                )?;
                // Memory plus swap, where the kernel accounts swap at all.
                if memory.join("memory.memsw.limit_in_bytes").exists() {
                    write(
                        &memory,
                        "memory.memsw.limit_in_bytes",
                        limits.memory_bytes.to_string(),
                    )?;
                }
                write(&pids, "pids.max", limits.processes.to_string())?;
                Ok(Some(cgroup))
            }
        }
    }

    /// The v2 group's directory, opened for `clone3`'s `CLONE_INTO_CGROUP`
    /// (`sys::clone_process_into`); `None` for v1 groups, which a process
    /// can only be moved into, or where the directory cannot be opened.
    pub(crate) fn open_for_clone(&self) -> Option<std::os::fd::OwnedFd> {
        let dir = self.dirs.first().filter(|_| self.unified)?;
        nix::fcntl::open(
            dir,
            nix::fcntl::OFlag::O_RDONLY
                | nix::fcntl::OFlag::O_DIRECTORY
                | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .ok()
    }

    /// The `tasks` file of each v1 group, opened for init to write itself
    /// into (`child::join_cgroups`); none for a v2 group.
    pub(crate) fn open_tasks(
        &self,
    ) -> Result<Vec<std::os::fd::OwnedFd>, (PathBuf, std::io::Error)> {
        if self.unified {
            return Ok(Vec::new());
        }
        self.dirs
            .iter()
            .map(|dir| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.join("tasks"))
                    .map(std::os::fd::OwnedFd::from)
                    .map_err(|e| (dir.clone(), e))
            })
            .collect()
    }

    /// Moves `pid` into every group: a write to each `cgroup.procs`.
    pub(crate) fn attach(&self, pid: libc::pid_t) -> std::io::Result<()> {
        for dir in &self.dirs {
            std::fs::write(dir.join("cgroup.procs"), pid.to_string())?;
        }
        Ok(())
    }

    pub(crate) fn events(&self) -> CgroupEvents {
        let count = |file: &Path, key: &str| {
            std::fs::read_to_string(file)
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                })
                .unwrap_or(0)
        };
        CgroupEvents {
            oom_kills: count(&self.memory_events, "oom_kill "),
            pids_max: count(&self.pids_events, "max "),
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for dir in &self.dirs {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names left by a killed Chock that had this pid: an empty one is
    /// removed and made again, one that cannot be removed (a group still
    /// holding a process; here a folder with a file) is passed over.
    #[test]
    fn a_group_left_by_an_earlier_process_with_this_pid_is_passed_over() {
        let parent = tempfile::tempdir().expect("tempdir");
        for n in 0..32 {
            let stale = parent
                .path()
                .join(format!("chock-{}-{n}", std::process::id()));
            std::fs::create_dir(&stale).expect("mkdir");
            if n % 2 == 0 {
                std::fs::write(stale.join("tasks"), "1\n").expect("write");
            }
        }
        let mut made = Vec::new();
        for _ in 0..3 {
            let group = make_group(parent.path()).expect("a group is made");
            assert!(group.is_dir(), "{}", group.display());
            assert!(!group.join("tasks").exists(), "a busy group was reused");
            assert!(!made.contains(&group));
            made.push(group);
        }
    }

    /// A pid that was a process and is gone.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let dead = child.id();
        child.wait().expect("reaped");
        dead
    }

    /// The names a sweep reads: an empty group whose pid is gone is
    /// removed; a live pid's and any other name stay.
    #[test]
    fn groups_left_by_killed_processes_are_swept_by_name() {
        let parent = tempfile::tempdir().expect("tempdir");
        let dead = dead_pid();
        let live = std::process::id();
        let dir = |name: String| {
            let path = parent.path().join(name);
            std::fs::create_dir(&path).expect("mkdir");
            path
        };
        let left = dir(format!("chock-{dead}-0"));
        let ours = dir(format!("chock-{live}-7"));
        let others = [
            dir(format!("chock-x-{dead}")),
            dir(format!("chock-{dead}")),
            dir(format!("other-{dead}-0")),
            dir("chock-0-0".into()),
        ];
        sweep_left_groups(parent.path());
        assert!(!left.exists(), "an empty group of a dead pid stays");
        for kept in others.iter().chain([&ours]) {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
    }

    #[test]
    fn a_project_lowers_and_never_raises() {
        let base = Limits::for_this_machine();
        let lowered = base.lowered(Some(10), Some(u64::MAX));
        assert_eq!(lowered.processes, 10);
        assert_eq!(lowered.memory_bytes, base.memory_bytes);
        assert!(base.processes >= 256 && base.memory_bytes >= 2 * GIB);
    }

    #[test]
    fn rlimits_never_exceed_what_the_caller_has() {
        for (resource, limit) in Limits::for_this_machine().rlimits() {
            assert!(limit.rlim_cur <= limit.rlim_max);
            assert!(limit.rlim_max <= current_rlimit(resource).rlim_max);
        }
    }

    #[test]
    fn the_cgroup2_mount_and_own_path_are_found() {
        let mountinfo = "24 18 0:22 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
                         30 24 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(mountinfo),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(cgroup2_mount("1 2 0:1 / / rw - ext4 /dev/vda rw\n"), None);
        assert_eq!(
            unified_path("4:memory:/x\n0::/user.slice/a.scope\n"),
            Some("/user.slice/a.scope")
        );
        assert_eq!(
            v1_mount(mountinfo, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory"))
        );
        assert_eq!(v1_mount(mountinfo, "pids"), None);
        assert_eq!(
            v1_group("4:memory:/x\n3:cpu,cpuacct:/y\n0::/z\n", "cpuacct"),
            Some(("cpu,cpuacct", "/y"))
        );
    }

    /// The usual places, checked by file system type, name the same
    /// hierarchies as the mount table on this machine.
    #[test]
    fn the_hierarchies_found_without_the_mount_table_are_the_mounted_ones() {
        let own = std::fs::read_to_string("/proc/self/cgroup").expect("own cgroups");
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").expect("mounts");
        let mut mounts = Mounts::default();
        let mut found = vec![cgroup2_mount(&mountinfo)];
        assert_eq!(mounts.v2(), found[0]);
        for controller in ["memory", "pids"] {
            if let Some((hierarchy, _)) = v1_group(&own, controller) {
                found.push(v1_mount(&mountinfo, controller));
                assert_eq!(
                    mounts.v1(hierarchy, controller),
                    found[found.len() - 1],
                    "{controller}"
                );
            }
        }
        let usual = found
            .iter()
            .flatten()
            .all(|dir| dir.starts_with("/sys/fs/cgroup"));
        assert!(
            !usual || found[0].is_none() || mounts.mountinfo.is_none(),
            "the mount table was read although the usual places held the hierarchies"
        );
        assert!(!is_fs(
            "/sys/fs/cgroup/no-such-hierarchy",
            nix::sys::statfs::CGROUP_SUPER_MAGIC
        ));
    }

    #[test]
    fn a_cgroup_gets_the_limits_in_the_files_the_kernel_reads_and_goes_away() {
        let parent = tempfile::tempdir().expect("tempdir");
        let limits = Limits {
            processes: 77,
            memory_bytes: 5 << 20,
            ..Limits::for_this_machine()
        };
        let delegation = Delegation::Delegated {
            dir: parent.path().to_path_buf(),
        };
        let cgroup = Cgroup::create(&delegation, &limits)
            .expect("create")
            .expect("a cgroup");
        let dir = cgroup.dirs[0].clone();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect("file");
        assert_eq!(read("memory.max"), (5u64 << 20).to_string());
        assert_eq!(read("memory.swap.max"), "0");
        assert_eq!(read("pids.max"), "77");
        cgroup.attach(4242).expect("attach");
        assert_eq!(read("cgroup.procs"), "4242");
        std::fs::write(
            dir.join("memory.events"),
            "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
        )
        .expect("events");
        std::fs::write(dir.join("pids.events"), "max 9\n").expect("events");
        assert_eq!(
            cgroup.events(),
            CgroupEvents {
                oom_kills: 1,
                pids_max: 9
            }
        );
        for f in [
            "memory.max",
            "memory.swap.max",
            "pids.max",
            "cgroup.procs",
            "memory.events",
            "pids.events",
        ] {
            std::fs::remove_file(dir.join(f)).expect("a real cgroup's files go with it");
        }
        drop(cgroup);
        assert!(!dir.exists(), "the cgroup is removed when the sandbox ends");
    }

    /// The cgroup v2 hierarchy, for a test that needs root to make groups
    /// in it (controllers are not needed to hold a process).
    fn v2_hierarchy_as_root() -> Option<PathBuf> {
        let mount = Mounts::default()
            .v2()
            .filter(|_| nix::unistd::geteuid().is_root());
        if mount.is_none() {
            eprintln!("skipped: needs root and a cgroup v2 hierarchy");
        }
        mount
    }

    /// A process cloned into the v2 group `cgroup` (`clone3` with
    /// `CLONE_INTO_CGROUP`), waiting there until `release`.
    struct Held {
        pid: libc::pid_t,
        hold: std::os::fd::OwnedFd,
    }

    impl Held {
        fn in_group(cgroup: &Cgroup) -> Held {
            use std::os::fd::AsRawFd;
            let dir = cgroup.open_for_clone().expect("the group's directory");
            let (wait, hold) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).expect("pipe");
            // The child only closes its copy of the write end and reads the
            // pipe until the parent's copy closes.
            let child = || {
                crate::sys::close(hold.as_raw_fd());
                let mut byte = [0u8; 1];
                let _ = nix::unistd::read(&wait, &mut byte);
                0
            };
            let (pid, _pidfd) = crate::sys::fork_with_pidfd(0, Some(dir.as_raw_fd()), &child)
                .expect("clone3 into the group");
            Held { pid, hold }
        }

        fn release(self) {
            drop(self.hold);
            nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(self.pid), None).expect("reaped");
        }
    }

    fn v2_group(dir: PathBuf) -> Cgroup {
        Cgroup {
            dirs: vec![dir],
            unified: true,
            memory_events: PathBuf::new(),
            pids_events: PathBuf::new(),
        }
    }

    /// As root, on the real cgroup v2 hierarchy: a process cloned into a v2
    /// group is in it from its start, with no move; a v1 group offers no
    /// directory to clone into.
    #[test]
    fn a_process_is_cloned_straight_into_a_v2_group() {
        let Some(mount) = v2_hierarchy_as_root() else {
            return;
        };
        let group = make_group(&mount).expect("a group under the v2 root");
        let cgroup = v2_group(group.clone());
        // The same directory seen as a v1 group (not dropped: it would
        // remove the group).
        let legacy = std::mem::ManuallyDrop::new(Cgroup {
            dirs: vec![group.clone()],
            unified: false,
            memory_events: PathBuf::new(),
            pids_events: PathBuf::new(),
        });
        assert!(legacy.open_for_clone().is_none());
        let held = Held::in_group(&cgroup);
        let name = group
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let own =
            std::fs::read_to_string(format!("/proc/{}/cgroup", held.pid)).expect("its cgroups");
        let procs =
            std::fs::read_to_string(group.join("cgroup.procs")).expect("the group's processes");
        let pid = held.pid;
        held.release();
        assert!(
            unified_path(&own).is_some_and(|path| path.ends_with(&format!("/{name}"))),
            "{own}"
        );
        assert_eq!(procs.trim(), pid.to_string());
        drop(cgroup);
        assert!(!group.exists(), "the empty group is removed");
    }

    /// As root, on the real cgroup v2 hierarchy: of two groups named for a
    /// pid that is gone, the empty one is swept and the one still holding a
    /// process stays (the kernel refuses to remove it).
    #[test]
    fn a_sweep_removes_empty_left_groups_and_never_a_busy_one() {
        let Some(mount) = v2_hierarchy_as_root() else {
            return;
        };
        let dead = dead_pid();
        let left = mount.join(format!("chock-{dead}-0"));
        let busy = v2_group(mount.join(format!("chock-{dead}-1")));
        for dir in [&left, &busy.dirs[0]] {
            std::fs::create_dir(dir).expect("a group under the v2 root");
        }
        let held = Held::in_group(&busy);
        sweep_left_groups(&mount);
        let busy_stayed = busy.dirs[0].exists();
        held.release();
        let _ = std::fs::remove_dir(&left);
        drop(busy);
        assert!(busy_stayed, "a group holding a process was removed");
        assert!(!left.exists(), "an empty group of a dead pid stays");
    }

    proptest::proptest! {
        #[test]
        fn any_mount_and_cgroup_table_parses_without_panic(text in "[ -~\n]{0,300}") {
            let _ = cgroup2_mount(&text);
            let _ = unified_path(&text);
            let _ = v1_mount(&text, "memory");
            let _ = v1_group(&text, "pids");
        }
    }
}
