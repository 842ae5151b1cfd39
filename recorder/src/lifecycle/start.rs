//! Starting a recording: the first one in the process starts the
//! recorder (the runtime, the repository, the recorder thread, then every
//! feature); a later one joins the running recorder, which ends its current
//! chunk so the new recording's chunks start at the next.
//!
//! The feature table ([`crate::feature_table`]) is installed here, before
//! any hook can run: the one place above the core that names it.

use crate::base::sync::mpsc;
use std::io;
use std::path::PathBuf;

use crate::base::clock;
use crate::config::builder::{RecordingConfig, StartError};
use crate::config::settings::Settings;
use crate::epoch::membarrier;
use crate::event::registry::registry;
use crate::feature;
use crate::lifecycle::active_recording;
use crate::lifecycle::handle::Recording;
use crate::lifecycle::member::Member;
use crate::lifecycle::physical::{PHYSICAL, Physical, Turn};
use crate::lifecycle::statistics::{Role, RoleThread};
use crate::output::recorder_thread::{Command, Recorder};
use crate::repository::store::Repository;
use crate::runtime::{self, Runtime};

impl Recording {
    /// Starts recording. The first recording in the process starts the
    /// recorder; a later one joins it (the current chunk ends, and the new
    /// recording holds the chunks from the next one on). A name already in
    /// use by a running recording is refused ([`StartError::NameInUse`]).
    pub fn start(config: RecordingConfig) -> Result<Recording, StartError> {
        feature::install(crate::feature_table::TABLE);
        config.validate()?;
        let config = config.effective();
        clock::init();
        crate::event::spread::init();
        crate::process::fork::install();
        membarrier::register();
        // Held for the whole start (a rotation, when others record); the
        // recorder itself is locked only for moments, so a `fork()`
        // meanwhile does not wait (see `crate::lifecycle::physical`).
        let _turn = Turn::take();
        let running = PHYSICAL.lock().as_ref().map(|p| {
            let name_taken = config.name.as_deref().and_then(|n| p.named(n));
            (p.commands.clone(), p.rt, name_taken)
        });
        if let Some((commands, rt, name_taken)) = running {
            return Self::join(commands, rt, name_taken, config);
        }
        let reg = registry();
        if !reg.claim_recording() {
            return Err(StartError::AlreadyRecording);
        }
        let release = |e: StartError| {
            reg.apply(Settings::new(), false);
            e
        };
        // Whether the samples carry `contextId`, for the recorder's life.
        crate::labels::latch::latch_for_recording(feature::any(|f| f.labels_in_samples(&config)));
        let rt = runtime::init(
            config.thread_buffer_size,
            config.buffer_blocks(),
            config.max_stack_depth,
            config.constant_memory(),
        );
        let repo = if config.disk {
            Repository::create(config.repository.as_deref(), config.keep_repository)
                .map_err(release)?
        } else {
            Repository::in_memory()
        };
        let repository = repo.dir().to_path_buf();
        let id = active_recording::next_id();
        let member = Member::new(id, config.clone(), rt.losses.snapshot());
        let recorder = Recorder::new(rt, member, repo).map_err(|source| {
            release(StartError::Io {
                path: repository.clone(),
                source,
            })
        })?;
        start_member(id, &config).map_err(release)?;
        reg.add_live(id, config.settings.clone());
        crate::lifecycle::statistics::reset();
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("flightrec-recorder".into())
            .spawn(move || {
                let _role = RoleThread::enter(Role::Recorder);
                recorder.run_guarded(rx)
            })
            .map_err(|source| {
                reg.clear_live();
                feature::each(|f| f.member_gone(id));
                release(StartError::Io {
                    path: PathBuf::from("<recorder thread>"),
                    source,
                })
            })?;
        crate::process::panics::start();
        feature::each(|f| f.started(rt));
        *PHYSICAL.lock() = Some(Physical {
            commands: tx,
            thread,
            rt,
            members: vec![(id, config.name.clone())],
        });
        feature::each(|f| f.member_started(id, &config));
        Ok(Self::running(id, rt, repository, &config))
    }

    /// Starts a recording beside the running ones (the caller holds the
    /// turn): `commands` reach their recorder thread, `name_taken` is the
    /// running recording with the new one's name, if any.
    fn join(
        commands: mpsc::Sender<Command>,
        rt: &'static Runtime,
        name_taken: Option<u64>,
        config: RecordingConfig,
    ) -> Result<Recording, StartError> {
        let config = config.effective();
        if let Some(name) = &config.name
            && let Some(id) = name_taken
        {
            return Err(StartError::NameInUse {
                name: name.clone(),
                id,
            });
        }
        let id = active_recording::next_id();
        let member = Member::new(id, config.clone(), rt.losses.snapshot());
        start_member(id, &config)?;
        let (tx, rx) = mpsc::channel();
        let gone = || StartError::Io {
            path: PathBuf::from("<recorder thread>"),
            source: io::Error::other("the recorder thread has stopped"),
        };
        let added = commands
            .send(Command::Add {
                member: Box::new(member),
                reply: tx,
            })
            .map_err(|_| gone())
            .and_then(|()| {
                rt.pool.wake_for_command();
                rx.recv().map_err(|_| gone())?
            });
        let dir = match added {
            Ok(dir) => dir,
            Err(e) => {
                feature::each(|f| f.member_gone(id));
                return Err(e);
            }
        };
        let repository = if config.disk { dir } else { PathBuf::new() };
        registry().add_live(id, config.settings.clone());
        feature::each(|f| f.settings_changed());
        if let Some(p) = PHYSICAL.lock().as_mut() {
            p.members.push((id, config.name.clone()));
        }
        feature::each(|f| f.member_started(id, &config));
        Ok(Self::running(id, rt, repository, &config))
    }

    /// The handle of recording `id`, which runs on `rt` with `config`.
    fn running(
        id: u64,
        rt: &'static Runtime,
        repository: PathBuf,
        config: &RecordingConfig,
    ) -> Self {
        Recording {
            id,
            rt,
            repository,
            pid: std::process::id(),
            stopped: false,
            memory_bound: config.memory_bound(),
        }
    }
}

/// Tells every feature that recording `id` with `config` joins; if one
/// refuses, those before it forget the recording again.
fn start_member(id: u64, config: &RecordingConfig) -> Result<(), StartError> {
    for (i, f) in feature::all().iter().enumerate() {
        if let Err(e) = f.start_member(id, config) {
            for earlier in &feature::all()[..i] {
                earlier.member_gone(id);
            }
            return Err(e);
        }
    }
    Ok(())
}
