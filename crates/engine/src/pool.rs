//! The bounded in-process ingestion pool (seed 0 §3 "Hot path").
//!
//! `submit` never blocks: when the queue is full the work is dropped, a
//! counter grows and a warning is logged (the caller's source stays
//! replayable). Each worker takes whatever is queued, up to a batch, and runs
//! it through `Palace::ingest_batch`, so chunks of several submissions share
//! embedding calls. `shutdown` stops accepting work and waits until every
//! queued and in-flight job is done.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::ingest::{IngestReport, IngestRequest};
use crate::palace::Palace;

/// Default worker count (seed 0 `CRAWBL_AUTOINGEST_WORKERS`).
pub const DEFAULT_WORKERS: usize = 16;
/// Default queue depth (seed 0 `CRAWBL_AUTOINGEST_CAPACITY`).
pub const DEFAULT_CAPACITY: usize = 1_024;
/// Most submissions one worker runs together.
const MAX_BATCH: usize = 32;

/// Pool sizing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Worker threads.
    pub workers: usize,
    /// Queue depth.
    pub capacity: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self { workers: DEFAULT_WORKERS, capacity: DEFAULT_CAPACITY }
    }
}

/// Counters of a pool.
#[derive(Debug, Default)]
pub struct PoolMetrics {
    /// Submissions accepted.
    pub submitted: AtomicU64,
    /// Submissions dropped because the queue was full.
    pub dropped: AtomicU64,
    /// Submissions processed (successfully or not).
    pub processed: AtomicU64,
    /// Submissions whose processing failed.
    pub failed: AtomicU64,
}

/// Why a submission was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitError {
    /// The queue is full; the work was dropped and counted.
    QueueFull,
    /// The pool is shutting down.
    ShutDown,
}

/// A callback told of each finished submission (tests, progress).
pub type OnDone = Arc<dyn Fn(&IngestRequest, &Result<IngestReport, String>) + Send + Sync>;

/// The pool.
pub struct IngestPool {
    sender: Mutex<Option<SyncSender<IngestRequest>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    metrics: Arc<PoolMetrics>,
}

impl IngestPool {
    /// Starts `config.workers` workers filing into `palace`.
    pub fn start(palace: Palace, config: PoolConfig, on_done: Option<OnDone>) -> Self {
        let (sender, receiver) = sync_channel::<IngestRequest>(config.capacity.max(1));
        let receiver = Arc::new(Mutex::new(receiver));
        let metrics = Arc::new(PoolMetrics::default());
        let workers = (0..config.workers.max(1))
            .map(|index| {
                let (palace, receiver, metrics, on_done) =
                    (palace.clone(), Arc::clone(&receiver), Arc::clone(&metrics), on_done.clone());
                std::thread::Builder::new()
                    .name(format!("ingest-{index}"))
                    .spawn(move || worker(palace, receiver, metrics, on_done))
                    .expect("spawning an ingest worker")
            })
            .collect();
        Self { sender: Mutex::new(Some(sender)), workers: Mutex::new(workers), metrics }
    }

    /// Queues work without blocking.
    pub fn submit(&self, request: IngestRequest) -> Result<(), SubmitError> {
        let sender = self.sender.lock().expect("pool poisoned");
        let Some(sender) = sender.as_ref() else { return Err(SubmitError::ShutDown) };
        match sender.try_send(request) {
            Ok(()) => {
                self.metrics.submitted.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(TrySendError::Full(request)) => {
                let dropped = self.metrics.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::warn!(wing = %request.wing, room = %request.room, dropped, "ingest queue full; dropping work");
                Err(SubmitError::QueueFull)
            }
            Err(TrySendError::Disconnected(_)) => Err(SubmitError::ShutDown),
        }
    }

    /// The counters.
    pub fn metrics(&self) -> &PoolMetrics {
        &self.metrics
    }

    /// Stops accepting work and waits for every queued and in-flight job.
    pub fn shutdown(&self) {
        self.sender.lock().expect("pool poisoned").take();
        let workers: Vec<JoinHandle<()>> = self.workers.lock().expect("pool poisoned").drain(..).collect();
        for worker in workers {
            if worker.join().is_err() {
                tracing::error!("an ingest worker panicked");
            }
        }
    }
}

impl Drop for IngestPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn worker(
    palace: Palace,
    receiver: Arc<Mutex<Receiver<IngestRequest>>>,
    metrics: Arc<PoolMetrics>,
    on_done: Option<OnDone>,
) {
    loop {
        let batch: Vec<IngestRequest> = {
            let receiver = receiver.lock().expect("pool receiver poisoned");
            let Ok(first) = receiver.recv() else { return };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match receiver.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            batch
        };
        let reports = palace.ingest_batch(batch.clone());
        for (request, report) in batch.iter().zip(reports) {
            metrics.processed.fetch_add(1, Ordering::Relaxed);
            let report = report.map_err(|error| error.to_string());
            if let Err(error) = &report {
                metrics.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%error, wing = %request.wing, room = %request.room, "ingest failed");
            }
            if let Some(on_done) = &on_done {
                on_done(request, &report);
            }
        }
    }
}
