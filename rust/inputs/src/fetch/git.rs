//! A git input at its locked revision, with the `git` command.
//!
//! git runs with no system or user configuration (so no `insteadOf` can
//! send it to another host), redirects off (a hop it would follow was never
//! asked about), only the URL's own protocol allowed, no credential helper
//! and no prompt. The fetch is bounded in time and in the bytes the
//! repository grows to. The tree is then written from the revision's
//! objects (`ls-tree` and `cat-file`), byte for byte, so no attribute,
//! filter or hook of the repository runs.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::tree::{TreeWriter, io_error, path_from_bytes};
use super::{FetchError, Limits, blocking};
use crate::progress::{Event, Reporter};
use chock_flakelock::Location;

/// The most of git's stderr kept for a message.
const STDERR_KEPT: usize = 4096;

pub(crate) struct Git {
    pub(crate) limits: Limits,
    pub(crate) ca_file: Option<PathBuf>,
}

impl Git {
    /// `git` with a clean environment and the configuration described above.
    fn command(&self, home: &Path, protocol: &str) -> Command {
        let mut command = Command::new("git");
        command.env_clear();
        for (key, value) in std::env::vars_os() {
            let keep = key == "PATH"
                || key.to_str().is_some_and(|k| {
                    k.eq_ignore_ascii_case("http_proxy")
                        || k.eq_ignore_ascii_case("https_proxy")
                        || k.eq_ignore_ascii_case("no_proxy")
                        || k.eq_ignore_ascii_case("all_proxy")
                });
            if keep {
                command.env(key, value);
            }
        }
        command
            .env("HOME", home)
            .env("LC_ALL", "C")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PROTOCOL_FROM_USER", "0");
        if let Some(ca) = &self.ca_file {
            command.env("GIT_SSL_CAINFO", ca);
        }
        let settings = [
            "protocol.allow=never".to_string(),
            format!("protocol.{protocol}.allow=always"),
            "http.followRedirects=false".to_string(),
            "credential.helper=".to_string(),
            "core.askPass=".to_string(),
            "core.hooksPath=/dev/null".to_string(),
            "core.fsmonitor=false".to_string(),
            "http.lowSpeedLimit=1".to_string(),
            format!(
                "http.lowSpeedTime={}",
                self.limits.idle_timeout.as_secs().max(1)
            ),
        ];
        for setting in settings {
            command.arg("-c").arg(setting);
        }
        command
    }

    pub(crate) async fn fetch(
        &self,
        location: &Location,
        rev: &str,
        git_ref: Option<&str>,
        work: &Path,
        tree: &Path,
        report: &Reporter<'_>,
    ) -> Result<(), FetchError> {
        let (url, protocol) = match location {
            Location::Url(url) => (
                url.clone(),
                url.split_once("://")
                    .map_or("https", |(s, _)| s)
                    .to_string(),
            ),
            Location::Local(path) => (format!("file://{}", path.display()), "file".to_string()),
        };
        let repo = work.join("repo.git");
        let mut init = self.command(work, &protocol);
        init.args(["init", "--bare", "--quiet"]).arg(&repo);
        run(init, "init").await?;
        report.send(Event::Start {
            from: &url,
            bytes: None,
        });
        let fetch = |args: Vec<OsString>| {
            let mut command = self.command(work, &protocol);
            command.arg("-C").arg(&repo).args(args);
            command
        };
        let quiet = |extra: &[&str], what: &str| -> Vec<OsString> {
            let mut args: Vec<OsString> =
                ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head"]
                    .iter()
                    .chain(extra)
                    .map(OsString::from)
                    .collect();
            args.extend(["--".into(), url.clone().into(), what.into()]);
            args
        };
        // The revision itself, shallow (servers that allow it, as GitHub
        // does); else the ref it was locked from, whole.
        let by_rev = self
            .bounded(fetch(quiet(&["--depth=1"], rev)), &repo, "fetch")
            .await;
        if by_rev.is_err() || !self.has_commit(work, &repo, rev).await {
            let from = git_ref.unwrap_or("HEAD");
            self.bounded(fetch(quiet(&[], from)), &repo, "fetch")
                .await?;
            if !self.has_commit(work, &repo, rev).await {
                return Err(FetchError::Git {
                    step: "fetch".into(),
                    stderr: format!("the revision {rev} is not on `{from}` of {url}"),
                });
            }
        }
        report.send(Event::Stage("writing the tree"));
        let (repo, tree, rev, limits) = (repo, tree.to_path_buf(), rev.to_string(), self.limits);
        let home = work.to_path_buf();
        let plain = Git {
            limits,
            ca_file: None,
        };
        blocking(move || plain.write_tree(&home, &repo, &rev, &tree)).await
    }

    async fn has_commit(&self, home: &Path, repo: &Path, rev: &str) -> bool {
        let mut command = self.command(home, "file");
        command
            .arg("-C")
            .arg(repo)
            .args(["cat-file", "-e"])
            .arg(format!("{rev}^{{commit}}"));
        run(command, "cat-file").await.is_ok()
    }

    /// Runs a network step, killing it when it runs past the total time or
    /// the repository grows past the download limit.
    async fn bounded(&self, command: Command, repo: &Path, step: &str) -> Result<(), FetchError> {
        let mut command = tokio::process::Command::from(command);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(FetchError::GitMissing)?;
        let mut stderr = child.stderr.take();
        // Everything is read (so git never blocks on a full pipe), and only
        // the tail is kept: a server's messages must not fill memory.
        let collect = async move {
            let mut text = Vec::new();
            let mut chunk = [0u8; 4096];
            while let Some(err) = stderr.as_mut() {
                match tokio::io::AsyncReadExt::read(err, &mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        text.extend_from_slice(chunk.get(..n).unwrap_or_default());
                        let extra = text.len().saturating_sub(2 * STDERR_KEPT);
                        text.drain(..extra);
                    }
                }
            }
            text
        };
        let collected = tokio::spawn(collect);
        let deadline = tokio::time::Instant::now() + self.limits.total_timeout;
        let status = loop {
            tokio::select! {
                status = child.wait() => break status.map_err(|e| io_error(repo, e))?,
                () = tokio::time::sleep(Duration::from_millis(200)) => {
                    let limit = self.limits.max_download_bytes;
                    let dir = repo.to_path_buf();
                    let size = tokio::task::spawn_blocking(move || dir_size(&dir)).await.unwrap_or(0);
                    let stop = if size > limit {
                        Some(format!("the repository grew past {limit} bytes"))
                    } else if tokio::time::Instant::now() > deadline {
                        Some(format!("it ran past {} s", self.limits.total_timeout.as_secs()))
                    } else {
                        None
                    };
                    if let Some(why) = stop {
                        let _ = child.kill().await;
                        return Err(FetchError::Git { step: step.into(), stderr: why });
                    }
                }
            }
        };
        let stderr = collected.await.unwrap_or_default();
        if status.success() {
            Ok(())
        } else {
            Err(FetchError::Git {
                step: step.into(),
                stderr: tail(&stderr),
            })
        }
    }

    /// Writes the tree of `rev` into `tree` from the repository's objects.
    fn write_tree(
        &self,
        home: &Path,
        repo: &Path,
        rev: &str,
        tree: &Path,
    ) -> Result<(), FetchError> {
        let mut list = self.command(home, "file");
        list.arg("-C")
            .arg(repo)
            .args(["ls-tree", "-r", "-z", "--full-tree"])
            .arg(rev);
        let listed = list.output().map_err(FetchError::GitMissing)?;
        if !listed.status.success() {
            return Err(FetchError::Git {
                step: "ls-tree".into(),
                stderr: tail(&listed.stderr),
            });
        }
        let entries = parse_ls_tree(&listed.stdout)?;
        let mut writer = TreeWriter::new(tree, self.limits);
        let blobs: Vec<&Entry> = entries.iter().filter(|e| e.mode != "160000").collect();
        for gitlink in entries.iter().filter(|e| e.mode == "160000") {
            // A submodule's place: an empty directory, as git archive gives.
            writer.dir(path_from_bytes(&gitlink.path))?;
        }
        let mut cat = self.command(home, "file");
        cat.arg("-C")
            .arg(repo)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cat.spawn().map_err(FetchError::GitMissing)?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| git_error("cat-file", "no stdin"))?;
        let ids: Vec<u8> = blobs
            .iter()
            .flat_map(|e| format!("{}\n", e.id).into_bytes())
            .collect();
        let feeder = std::thread::spawn(move || {
            let _ = stdin.write_all(&ids);
        });
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| git_error("cat-file", "no stdout"))?;
        let mut objects = BufReader::new(stdout);
        for entry in &blobs {
            let size = object_header(&mut objects, &entry.id)?;
            let mut contents = (&mut objects).take(size);
            let path = path_from_bytes(&entry.path);
            match entry.mode.as_str() {
                "120000" => {
                    let mut target = Vec::new();
                    contents
                        .read_to_end(&mut target)
                        .map_err(|e| io_error(tree, e))?;
                    writer.symlink(path, path_from_bytes(&target))?;
                }
                "100755" => writer.file(path, &mut contents, true)?,
                "100644" | "100664" => writer.file(path, &mut contents, false)?,
                other => {
                    return Err(git_error(
                        "ls-tree",
                        &format!(
                            "`{}` has the mode {other}, which a tree does not hold",
                            path.display()
                        ),
                    ));
                }
            }
            let mut newline = [0u8; 1];
            objects
                .read_exact(&mut newline)
                .map_err(|e| io_error(tree, e))?;
        }
        let _ = feeder.join();
        let _ = child.wait();
        Ok(())
    }
}

struct Entry {
    mode: String,
    id: String,
    path: Vec<u8>,
}

fn git_error(step: &str, why: &str) -> FetchError {
    FetchError::Git {
        step: step.into(),
        stderr: why.into(),
    }
}

/// `<mode> SP <type> SP <id> TAB <path> NUL`, repeated.
fn parse_ls_tree(output: &[u8]) -> Result<Vec<Entry>, FetchError> {
    let mut entries = Vec::new();
    for record in output.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let bad = || git_error("ls-tree", "it printed a line Chock cannot read");
        let tab = record.iter().position(|b| *b == b'\t').ok_or_else(bad)?;
        let (meta, path) = (
            record.get(..tab).ok_or_else(bad)?,
            record.get(tab + 1..).ok_or_else(bad)?,
        );
        let meta = std::str::from_utf8(meta).map_err(|_| bad())?;
        let mut fields = meta.split(' ');
        let (Some(mode), Some(_kind), Some(id), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(bad());
        };
        if !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        entries.push(Entry {
            mode: mode.to_string(),
            id: id.to_string(),
            path: path.to_vec(),
        });
    }
    Ok(entries)
}

/// Reads `<id> blob <size>\n` for the object `id` and returns the size.
fn object_header(objects: &mut impl BufRead, id: &str) -> Result<u64, FetchError> {
    let mut line = Vec::new();
    objects
        .take(256)
        .read_until(b'\n', &mut line)
        .map_err(|e| git_error("cat-file", &e.to_string()))?;
    let text = String::from_utf8_lossy(&line);
    let mut fields = text.trim_end().split(' ');
    match (fields.next(), fields.next(), fields.next()) {
        (Some(got), Some("blob"), Some(size)) if got == id => size
            .parse()
            .map_err(|_| git_error("cat-file", "it printed a size Chock cannot read")),
        _ => Err(git_error(
            "cat-file",
            &format!("the object {id} is not a blob here: {}", text.trim_end()),
        )),
    }
}

async fn run(command: Command, step: &str) -> Result<(), FetchError> {
    let mut command = tokio::process::Command::from(command);
    command.stdin(Stdio::null()).kill_on_drop(true);
    let out = command.output().await.map_err(FetchError::GitMissing)?;
    if out.status.success() {
        Ok(())
    } else {
        Err(FetchError::Git {
            step: step.into(),
            stderr: tail(&out.stderr),
        })
    }
}

fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    let start = text.len().saturating_sub(STDERR_KEPT);
    let start = (start..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    text.get(start..).unwrap_or("").to_string()
}

/// The bytes of every file under `dir` (what a fetch has written so far).
fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => stack.push(entry.path()),
                Ok(meta) => total += meta.len(),
                Err(_) => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ls_tree_records_are_read_and_garbage_refused() {
        let out =
            b"100644 blob 0123abcd\ta b\x00120000 blob 89ef\tlink\x00160000 commit 77\tsub\x00";
        let entries = parse_ls_tree(out).expect("reads");
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].path, b"a b");
        assert_eq!(entries[2].mode, "160000");
        assert!(parse_ls_tree(b"100644 blob xyz\tp\0").is_err());
        assert!(parse_ls_tree(b"no tab here\0").is_err());
    }

    #[test]
    fn object_headers_must_name_the_blob_asked_for() {
        let mut ok = &b"abc blob 5\nhello\n"[..];
        assert_eq!(object_header(&mut ok, "abc").expect("header"), 5);
        let mut other = &b"abd blob 5\n"[..];
        assert!(object_header(&mut other, "abc").is_err());
        let mut missing = &b"abc missing\n"[..];
        assert!(object_header(&mut missing, "abc").is_err());
    }
}
