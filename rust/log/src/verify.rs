//! Walking the chain across every file and saying what the first break looks like.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

use crate::LogError;
use crate::lines::{Line, Walk};
use crate::link::{self, Link};
use crate::record::{Head, Sha256Hash};

impl Serialize for Sha256Hash {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl Serialize for Head {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// What a walk over the whole log found.
#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    /// The files walked, oldest first.
    pub files: Vec<PathBuf>,
    /// How many lines were read (up to and including the break, if any).
    pub lines: u64,
    /// Where the chain begins; `None` for an empty log.
    pub start: Option<ChainStart>,
    /// The newest whole record, when the chain is intact.
    pub head: Option<Head>,
    /// The first break, if any.
    #[serde(rename = "break")]
    pub broken: Option<Break>,
    /// The result of checking a head kept elsewhere, when one was given.
    pub kept_head: Option<KeptHead>,
    /// The break is a torn last line of the newest file, which a writer in
    /// the middle of its write also looks like.
    #[serde(skip)]
    torn_tail: bool,
}

impl Verification {
    /// Exit 0 for `chock log verify`: no break, and a kept head (if given) is there unchanged.
    pub fn intact(&self) -> bool {
        self.broken.is_none() && self.kept_head.as_ref().is_none_or(KeptHead::confirmed)
    }

    /// The report as `chock log verify --json` prints it: every field here
    /// plus `intact`, and `start_text` in the words the plain report uses.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            intact: bool,
            start_text: Option<String>,
            #[serde(flatten)]
            report: &'a Verification,
        }
        serde_json::to_string_pretty(&Out {
            intact: self.intact(),
            start_text: self.start.as_ref().map(ToString::to_string),
            report: self,
        })
    }
}

/// The beginning of the chain as found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChainStart {
    /// The first line ever written (seq 1, prev 64 zeros) is still here.
    Genesis,
    /// Older history was rotated away: the first line kept has this seq and names this prev.
    After { seq: u64, prev: Sha256Hash },
}

impl fmt::Display for ChainStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainStart::Genesis => {
                f.write_str("chain starts at the first line ever written (seq 1)")
            }
            ChainStart::After { seq, prev } => write!(f, "chain starts at {prev} (seq {seq})"),
        }
    }
}

/// What a break looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakKind {
    /// A line's bytes changed after the next line was written (or it is no longer a record).
    Edited,
    /// Lines are missing: the seq jumps forward.
    Deleted,
    /// A line is here that the chain does not run through.
    Inserted,
    /// A line is out of place: the seq it should have comes later.
    Reordered,
    /// A writer could not chain this line and said why.
    Unchained,
    /// A line was cut off by a crash in the middle of its write.
    Torn,
}

impl fmt::Display for BreakKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BreakKind::Edited => "edited",
            BreakKind::Deleted => "deleted",
            BreakKind::Inserted => "inserted",
            BreakKind::Reordered => "reordered",
            BreakKind::Unchained => "unchained",
            BreakKind::Torn => "torn",
        })
    }
}

/// A `seq` and `prev` pair, as expected or as found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SeqPrev {
    pub seq: u64,
    pub prev: Sha256Hash,
}

impl fmt::Display for SeqPrev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seq {} prev {}", self.seq, self.prev)
    }
}

/// The first break in the chain.
#[derive(Debug, Clone, Serialize)]
pub struct Break {
    pub kind: BreakKind,
    /// The file holding the line the break is about.
    pub file: PathBuf,
    /// That line's number in the file, from 1.
    pub line: u64,
    /// What the checked line should have said, when there was a line before it.
    pub expected: Option<SeqPrev>,
    /// What the checked line said, when it is a record.
    pub found: Option<SeqPrev>,
    /// One sentence for a person.
    pub why: String,
}

impl fmt::Display for Break {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.file.display(),
            self.line,
            self.kind,
            self.why
        )?;
        if let Some(expected) = self.expected {
            write!(f, "\n  expected {expected}")?;
        }
        if let Some(found) = self.found {
            write!(f, "\n  found    {found}")?;
        }
        Ok(())
    }
}

/// The check of a head a person kept elsewhere (`--head SEQ:SHA256`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum KeptHead {
    /// The record is there, byte for byte.
    Unchanged { head: Head },
    /// A record with that seq is there, but its bytes differ.
    Changed {
        head: Head,
        found: Sha256Hash,
        file: PathBuf,
        line: u64,
    },
    /// No record with that seq is in the log.
    Missing {
        head: Head,
        first_seq: Option<u64>,
        last_seq: Option<u64>,
    },
    /// The walk stopped at an earlier break before reaching it.
    NotReached { head: Head },
}

impl KeptHead {
    fn confirmed(&self) -> bool {
        matches!(self, KeptHead::Unchanged { .. })
    }
}

impl fmt::Display for KeptHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeptHead::Unchanged { head } => write!(f, "kept head {head} is there unchanged"),
            KeptHead::Changed {
                head,
                found,
                file,
                line,
            } => write!(
                f,
                "kept head {head} has changed: seq {} at {}:{line} now hashes to {found}; the log was rewritten after you kept the head",
                head.seq,
                file.display()
            ),
            KeptHead::Missing {
                head,
                first_seq,
                last_seq,
            } => match (first_seq, last_seq) {
                (Some(first), Some(_)) if head.seq < *first => write!(
                    f,
                    "kept head {head} is no longer in the log: it starts at seq {first} (older lines were rotated away or removed)"
                ),
                (Some(_), Some(last)) => write!(
                    f,
                    "kept head {head} is not in the log: its newest line is seq {last}; lines were deleted from the end, or the head is from another log"
                ),
                _ => write!(f, "kept head {head} is not in the log: the log is empty"),
            },
            KeptHead::NotReached { head } => {
                write!(
                    f,
                    "kept head {head} was not checked: the walk stopped at the break"
                )
            }
        }
    }
}

/// How many lines after a break are read to tell what it looks like.
const LOOKAHEAD: usize = 64;

/// A line as the walk keeps it: where it is, its hash and its link.
#[derive(Debug, Clone)]
struct Seen {
    file: usize,
    number: u64,
    hash: Sha256Hash,
    link: Result<Link, link::LinkError>,
    complete: bool,
}

impl Seen {
    fn strict(line: &Line<'_>) -> Seen {
        Seen {
            file: line.file,
            number: line.number,
            hash: Sha256Hash::of_line(line.bytes),
            link: link::strict(line.bytes),
            complete: line.complete,
        }
    }

    fn fast(line: &Line<'_>) -> Seen {
        Seen {
            file: line.file,
            number: line.number,
            hash: Sha256Hash::of_line(line.bytes),
            link: link::read(line.bytes),
            complete: line.complete,
        }
    }

    fn links_to(&self, before: Option<&Good>) -> bool {
        match (&self.link, before) {
            (Ok(link), Some(good)) => {
                link.prev == good.hash && Some(link.seq) == good.seq.checked_add(1)
            }
            (Ok(link), None) => link.prev == Sha256Hash::ZERO && link.seq == 1,
            (Err(_), _) => false,
        }
    }
}

/// A record the chain ran through.
#[derive(Debug, Clone)]
struct Good {
    seq: u64,
    hash: Sha256Hash,
    prev: Sha256Hash,
    file: usize,
    number: u64,
}

/// Walks every log file in `dir`, oldest first, and stops at the first break.
pub fn verify(dir: &Path, kept: Option<Head>) -> Result<Verification, LogError> {
    let first = walk_once(dir, kept)?;
    if !first.torn_tail {
        return Ok(first);
    }
    // A line being written right now can look torn. Writers hold the lock
    // while they write: once it has been free for a moment, look again.
    wait_for_writers(dir);
    walk_once(dir, kept)
}

/// Takes and drops the writers' lock, waiting at most [`crate::LOCK_WAIT`].
fn wait_for_writers(dir: &Path) {
    if let Ok(Some(file)) = crate::open::read(&dir.join(crate::location::LOCK)) {
        let turn = crate::lock::Turn::lock_only(file);
        let _ = crate::lock::with_turn(turn, crate::LOCK_WAIT, || false, |_| ());
    }
}

fn walk_once(dir: &Path, kept: Option<Head>) -> Result<Verification, LogError> {
    let mut walk = Walk::snapshot(dir)?;
    let files = walk.files().to_vec();
    let mut state = WalkState::default();
    let mut broken = None;
    let mut torn_tail = false;
    let mut lines = 0;
    while let Some(line) = walk.next_line()? {
        lines += 1;
        let seen = Seen::fast(&line);
        if let Some(kind) = state.step(&seen, &line, kept) {
            let found = seen.link.as_ref().ok().map(|link| SeqPrev {
                seq: link.seq,
                prev: link.prev,
            });
            let lookahead = read_ahead(&mut walk)?;
            torn_tail = matches!(kind, Trouble::Cut) && lookahead.is_empty();
            broken = Some(classify(
                &state,
                &seen,
                kind,
                &lookahead,
                walk.files(),
                found,
            ));
            break;
        }
    }
    if broken.is_none() {
        broken = state.check_last(walk.files());
    }
    let kept_head = kept.map(|head| state.kept_result(head, broken.is_some(), walk.files()));
    let head = match (&broken, &state.last) {
        (None, Some(last)) => Some(Head {
            seq: last.seq,
            hash: last.hash,
        }),
        _ => None,
    };
    Ok(Verification {
        files,
        lines,
        start: state.start,
        head,
        broken,
        kept_head,
        torn_tail,
    })
}

/// What made `step` stop: the checked line did not link as expected.
enum Trouble {
    /// The line has no newline.
    Cut,
    /// The line is not a record.
    NotRecord(String),
    /// A writer marked the line unchained.
    Unchained(String),
    /// The line's seq or prev is not what the chain needs.
    Mislinked,
}

#[derive(Default)]
struct WalkState {
    start: Option<ChainStart>,
    /// The newest record the chain ran through, and the one before it.
    last: Option<Good>,
    /// The bytes of `last`, read again as whole JSON when a break comes right after it.
    last_bytes: Vec<u8>,
    before_last: Option<(u64, Sha256Hash)>,
    first_seq: Option<u64>,
    kept_found: Option<(Sha256Hash, usize, u64)>,
}

impl WalkState {
    fn step(&mut self, seen: &Seen, line: &Line<'_>, kept: Option<Head>) -> Option<Trouble> {
        if !seen.complete {
            return Some(Trouble::Cut);
        }
        let link = match &seen.link {
            Ok(link) => link,
            Err(why) => return Some(Trouble::NotRecord(why.to_string())),
        };
        if let Some(why) = &link.unchained {
            return Some(Trouble::Unchained(why.clone()));
        }
        match &self.last {
            None => {
                self.start = Some(if link.seq == 1 && link.prev == Sha256Hash::ZERO {
                    ChainStart::Genesis
                } else {
                    ChainStart::After {
                        seq: link.seq,
                        prev: link.prev,
                    }
                });
                self.first_seq = Some(link.seq);
            }
            Some(last) if seen.links_to(Some(last)) => {}
            Some(_) => return Some(Trouble::Mislinked),
        }
        if kept.is_some_and(|head| head.seq == link.seq) && self.kept_found.is_none() {
            self.kept_found = Some((seen.hash, seen.file, seen.number));
        }
        let previous = self.last.replace(Good {
            seq: link.seq,
            hash: seen.hash,
            prev: link.prev,
            file: seen.file,
            number: seen.number,
        });
        self.before_last = previous.map(|good| (good.seq, good.hash));
        self.last_bytes.clear();
        self.last_bytes.extend_from_slice(line.bytes);
        None
    }

    /// The last line was only read fast; read it whole now, since no later
    /// line's `prev` vouches for its bytes.
    fn check_last(&self, files: &[PathBuf]) -> Option<Break> {
        let last = self.last.as_ref()?;
        let why = link::strict(&self.last_bytes).err()?;
        Some(Break {
            kind: BreakKind::Edited,
            file: file_at(files, last.file),
            line: last.number,
            expected: None,
            found: None,
            why: format!("the newest line is not a whole record ({why}): it was edited or damaged"),
        })
    }

    fn kept_result(&self, head: Head, stopped: bool, files: &[PathBuf]) -> KeptHead {
        match self.kept_found {
            Some((hash, _, _)) if hash == head.hash => KeptHead::Unchanged { head },
            Some((found, file, line)) => KeptHead::Changed {
                head,
                found,
                file: file_at(files, file),
                line,
            },
            None if stopped => KeptHead::NotReached { head },
            None => KeptHead::Missing {
                head,
                first_seq: self.first_seq,
                last_seq: self.last.as_ref().map(|last| last.seq),
            },
        }
    }
}

fn read_ahead(walk: &mut Walk) -> Result<Vec<Seen>, LogError> {
    let mut ahead = Vec::new();
    while ahead.len() < LOOKAHEAD {
        match walk.next_line()? {
            Some(line) => ahead.push(Seen::strict(&line)),
            None => break,
        }
    }
    Ok(ahead)
}

fn file_at(files: &[PathBuf], index: usize) -> PathBuf {
    files.get(index).cloned().unwrap_or_default()
}

/// Names what the break at `seen` looks like, from the line before it, the
/// line itself and the lines after it.
fn classify(
    state: &WalkState,
    seen: &Seen,
    trouble: Trouble,
    ahead: &[Seen],
    files: &[PathBuf],
    found: Option<SeqPrev>,
) -> Break {
    let last = state.last.as_ref();
    let expected = last.map(|good| SeqPrev {
        seq: good.seq.saturating_add(1),
        prev: good.hash,
    });
    let at_line = |kind, why: String| Break {
        kind,
        file: file_at(files, seen.file),
        line: seen.number,
        expected,
        found,
        why,
    };
    let next_record = ahead.iter().find(|s| s.link.is_ok());
    let next_skips_this = next_record.is_some_and(|next| next.links_to(last));
    let n = seen.number;
    let link = match trouble {
        Trouble::Cut if ahead.is_empty() => {
            return at_line(
                BreakKind::Torn,
                format!(
                    "line {n} was cut off by a crash while it was written (a torn tail); the next writer starts a fresh line and chains past it"
                ),
            );
        }
        Trouble::Cut => {
            return at_line(
                BreakKind::Torn,
                format!("line {n} was cut off by a crash while it was written and has no newline"),
            );
        }
        Trouble::NotRecord(why) if next_skips_this => {
            return at_line(
                BreakKind::Torn,
                format!(
                    "line {n} is the start of a line cut off by a crash ({why}); the line after it chains past it"
                ),
            );
        }
        Trouble::NotRecord(why) => {
            return at_line(
                BreakKind::Edited,
                format!("line {n} is not a record ({why}): it was edited or damaged"),
            );
        }
        Trouble::Unchained(why) => {
            return at_line(
                BreakKind::Unchained,
                format!("line {n} was written without the chain: {why}"),
            );
        }
        Trouble::Mislinked => match &seen.link {
            Ok(link) => link,
            Err(_) => return at_line(BreakKind::Edited, format!("line {n} is not a record")),
        },
    };
    // `step` only reports a mislink when there is a line before.
    let Some(last) = last else {
        return at_line(BreakKind::Edited, format!("line {n} does not link"));
    };
    let at_last = |kind, why: String| Break {
        kind,
        file: file_at(files, last.file),
        line: last.number,
        expected,
        found,
        why,
    };
    let prev_n = last.number;
    if let Err(why) = link::strict(&state.last_bytes) {
        return at_last(
            BreakKind::Torn,
            format!(
                "line {prev_n} is the start of a line cut off by a crash ({why}); the line after it chains past it"
            ),
        );
    }
    if let Some(copy) = ahead.iter().find(|s| s.hash == seen.hash) {
        return at_line(
            BreakKind::Inserted,
            format!(
                "line {n} was inserted: it is a copy of line {}",
                copy.number
            ),
        );
    }
    let chains_after = |s: &Seen| {
        s.hash == link.prev
            && s.link
                .as_ref()
                .is_ok_and(|l| l.seq.checked_add(1) == Some(link.seq))
    };
    if let Some(later) = ahead.iter().find(|s| chains_after(s)) {
        return at_line(
            BreakKind::Reordered,
            format!(
                "line {n} is out of place: it holds seq {} and chains to line {}, which comes after it",
                link.seq, later.number
            ),
        );
    }
    // The first line walked is taken as the start of the chain, so a line
    // moved to the very front shows only at the line that belongs before it.
    if state.before_last.is_none()
        && last.prev == seen.hash
        && link.seq.checked_add(1) == Some(last.seq)
    {
        return at_last(
            BreakKind::Reordered,
            format!(
                "line {prev_n} is out of place: it holds seq {} but seq {}, which comes first, is at line {n} after it",
                last.seq, link.seq
            ),
        );
    }
    if next_skips_this {
        return at_line(
            BreakKind::Inserted,
            format!(
                "line {n} was inserted: the line after it chains to line {prev_n}, the one before it"
            ),
        );
    }
    if state
        .before_last
        .is_some_and(|(seq, hash)| link.prev == hash && Some(link.seq) == seq.checked_add(1))
    {
        return at_last(
            BreakKind::Inserted,
            format!("line {prev_n} was inserted: line {n} chains to the line before it"),
        );
    }
    let wanted = last.seq.saturating_add(1);
    if link.prev == last.hash {
        return at_line(
            BreakKind::Edited,
            format!(
                "line {n} names line {prev_n} as prev, but its seq {} is not {wanted}: its seq was edited",
                link.seq
            ),
        );
    }
    if link.seq == wanted {
        let next_links_here = ahead.first().is_some_and(|next| {
            next.link
                .as_ref()
                .is_ok_and(|l| l.prev == seen.hash && Some(l.seq) == link.seq.checked_add(1))
        });
        if next_links_here || ahead.is_empty() {
            return at_last(
                BreakKind::Edited,
                format!(
                    "line {prev_n} was changed after line {n} was written: line {n} names a prev that line {prev_n} no longer hashes to"
                ),
            );
        }
        return at_line(
            BreakKind::Edited,
            format!(
                "line {n} was changed: its prev is not the hash of line {prev_n}, and the line after it does not chain to it either"
            ),
        );
    }
    if let Some(later) = ahead
        .iter()
        .find(|s| s.links_to(Some(last)))
        .map(|s| s.number)
    {
        return at_line(
            BreakKind::Reordered,
            format!(
                "line {n} is out of place: it holds seq {} but seq {wanted}, which comes first, is at line {later} after it",
                link.seq
            ),
        );
    }
    if link.seq > wanted {
        let missing = link.seq - wanted;
        let lines = if missing == 1 {
            format!("seq {wanted}")
        } else {
            format!("seq {wanted} to {}", link.seq - 1)
        };
        return at_line(
            BreakKind::Deleted,
            format!("{missing} line(s) ({lines}) are missing before line {n}"),
        );
    }
    at_line(
        BreakKind::Reordered,
        format!(
            "line {n} holds seq {}, which belongs before seq {} at line {prev_n}",
            link.seq, last.seq
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_head_messages_say_what_to_think() {
        let head = Head {
            seq: 5,
            hash: Sha256Hash::ZERO,
        };
        let early = KeptHead::Missing {
            head,
            first_seq: Some(9),
            last_seq: Some(20),
        };
        assert!(early.to_string().contains("rotated away"));
        let late = KeptHead::Missing {
            head,
            first_seq: Some(1),
            last_seq: Some(3),
        };
        assert!(late.to_string().contains("deleted from the end"));
    }
}
