//! A recording as the recorder thread sees it: one member of the physical
//! recorder, with its own configuration, its own list of chunks and its
//! own losses.
//!
//! The physical recorder (one recorder thread, one chunk stream) runs
//! while at least one recording is live. Starting or stopping a recording
//! while others run rotates, so each member's list holds exactly the
//! chunks written during its life. A finished chunk is held by every
//! member live when it ended (reference-counted in the
//! [`Repository`](crate::repository::store::Repository)); each member applies its
//! own `max_age`/`max_size` to its own list, and a dump or the stop of one
//! writes its own list only.
//!
//! The chunk stream follows the members: a chunk is cut at the smallest
//! `max_chunk_size` (for a member kept in memory, at most a quarter of its
//! `memory_size`) and `max_chunk_age` of the live members, flushed at
//! their shortest flush interval, and written to the repository directory
//! if any live member asks for disk (in memory otherwise).
//!
//! Invariant: every chunk sequence number in a member's list is one the
//! repository holds once for it (released exactly once: by retention or at
//! the member's stop).

use std::collections::VecDeque;
use std::time::Duration;

use crate::base::loss::LossCounts;
use crate::config::builder::RecordingConfig;
use crate::lifecycle::active_recording::RecordingInfo;

/// One live recording.
#[derive(Debug)]
pub(crate) struct Member {
    /// The recording's id (1, 2, ... in the process).
    pub(crate) id: u64,
    pub(crate) config: RecordingConfig,
    /// What each chunk's `jdk.ActiveRecording` says of it.
    pub(crate) info: RecordingInfo,
    /// Its finished chunks (repository sequence numbers), oldest first.
    pub(crate) chunks: VecDeque<u64>,
    /// The process's loss counts when it started.
    pub(crate) losses_at_start: LossCounts,
}

impl Member {
    /// Recording `id`, starting now with `losses` counted so far.
    pub(crate) fn new(id: u64, config: RecordingConfig, losses: LossCounts) -> Self {
        let info = RecordingInfo::new(id, &config, crate::base::clock::wall_nanos());
        Self {
            id,
            config,
            info,
            chunks: VecDeque::new(),
            losses_at_start: losses,
        }
    }
}

/// What the chunk stream follows, over the live members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stream {
    pub(crate) max_chunk_size: u64,
    pub(crate) max_chunk_age: Option<Duration>,
    pub(crate) flush_interval: Duration,
    pub(crate) on_disk: bool,
}

impl Stream {
    /// The smallest limits and the shortest interval of `members`; on disk
    /// if any asks for it.
    pub(crate) fn of(members: &[Member]) -> Stream {
        let mut s = Stream {
            max_chunk_size: u64::MAX,
            max_chunk_age: None,
            flush_interval: Duration::MAX,
            on_disk: false,
        };
        for m in members {
            let c = &m.config;
            s.max_chunk_size = s.max_chunk_size.min(c.chunk_size_limit());
            s.max_chunk_age = match (s.max_chunk_age, c.max_chunk_age) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            s.flush_interval = s.flush_interval.min(c.flush_interval);
            s.on_disk |= c.disk;
        }
        s
    }
}
