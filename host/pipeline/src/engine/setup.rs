//! The wasmtime engines of a host (the optimizing one calls run on, the
//! baseline one a new plugin is first described with), their
//! configuration, and the ticker thread that drives epoch deadlines while
//! guests run.

use crate::limits::Limits;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use wasmtime::{
    Config, Enabled, Engine, EngineWeak, InstanceAllocationStrategy, PoolingAllocationConfig,
    Strategy,
};

/// How often the ticker advances the epoch. A running guest yields to the
/// executor at every tick, so this bounds how late a timeout or cancellation
/// can be noticed while the guest is computing (not blocked in a host call:
/// those are interrupted by dropping the call's future).
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Wasm stack per call. Deep recursion traps with a stack overflow instead
/// of exhausting the host's stack.
pub const MAX_WASM_STACK: usize = 512 << 10;

/// Instances kept for loading plugins (`tools()`), beside the calls' ones,
/// so a reload never waits for calls in flight.
pub const LOAD_INSTANCES: u32 = 16;
/// A Rust wasip2 component holds a handful of core instances (main module,
/// WASI adapter, shims); these bound what one component may use.
const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
const MEMORIES_PER_COMPONENT: u32 = 4;
const TABLES_PER_COMPONENT: u32 = 8;

/// Memory a finished call's slot keeps mapped for the next call, reset by
/// writing zeros over the pages it dirtied (found with Linux's PAGEMAP_SCAN
/// where available) instead of `madvise`: unmapping costs a TLB shootdown
/// on every core, which measured as the largest single cost of a call.
/// A small Rust component dirties pages across its first ~1.2 MiB (stack,
/// then data and heap).
const KEEP_RESIDENT_BYTES: usize = 2 << 20;
const KEEP_RESIDENT_TABLE_BYTES: usize = 64 << 10;

/// The wasmtime configuration of every host engine. Public (hidden) so the
/// benchmark's bare-wasmtime floor runs on exactly these settings.
pub fn engine_config(limits: &Limits) -> Config {
    let instances = limits.max_instances + LOAD_INSTANCES;
    let mut pool = PoolingAllocationConfig::new();
    // A fiber stack is taken only by a store that runs (instantiates or
    // calls), and every such store holds or is taking one of the pool's
    // component instances, so the instances bound the stacks too.
    // wasmtime's default of 1,000 stacks protects a guard page for each
    // with its own `mprotect` when the engine is made, on every start.
    pool.total_component_instances(instances)
        .total_stacks(instances)
        .total_core_instances(instances * CORE_INSTANCES_PER_COMPONENT / 2)
        .total_memories(instances * 2)
        .total_tables(instances * TABLES_PER_COMPONENT / 2)
        .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
        .max_memories_per_component(MEMORIES_PER_COMPONENT)
        .max_tables_per_component(TABLES_PER_COMPONENT)
        .max_memory_size(limits.memory_bytes as usize)
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        .table_keep_resident(KEEP_RESIDENT_TABLE_BYTES)
        .pagemap_scan(Enabled::Auto);
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
        .epoch_interruption(true)
        .consume_fuel(true)
        .max_wasm_stack(MAX_WASM_STACK);
    config
}

pub(super) fn engine(limits: &Limits) -> Result<Engine, wasmtime::Error> {
    Engine::new(&engine_config(limits))
}

/// The engine a plugin is first compiled with when no cached code exists,
/// only to ask it for its tools: Winch, wasmtime's baseline compiler,
/// which compiles several times faster than Cranelift and runs slower.
/// Its guests get the same fuel, epoch deadlines, stack and (through the
/// store's limiter) memory cap; it keeps no pool, since each plugin runs
/// there once.
pub(super) fn baseline_engine() -> Result<Engine, wasmtime::Error> {
    let mut config = Config::new();
    config
        .strategy(Strategy::Winch)
        .wasm_component_model(true)
        .epoch_interruption(true)
        .consume_fuel(true)
        .max_wasm_stack(MAX_WASM_STACK);
    Engine::new(&config)
}

/// Identifies the engine settings that compiled code depends on, so cached
/// artefacts from another configuration or wasmtime version are never used.
pub(super) fn engine_key(engine: &Engine) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// Idle ticks after the last guest ended before the ticker sleeps: a burst
/// of calls keeps it awake, an idle host does not wake every 5 ms for
/// nothing (which cost ~1 % of a core).
const IDLE_TICKS_BEFORE_SLEEP: u32 = 20;

/// The thread that advances the epoch every [`EPOCH_TICK`] while guests
/// run, and sleeps while none has for [`IDLE_TICKS_BEFORE_SLEEP`] ticks.
/// Every guest runs under a [`Ticking`], which wakes it if it sleeps. It
/// stops when the ticker is dropped (or one of its engines is gone).
pub(super) struct Ticker {
    shared: Arc<Shared>,
    thread: Option<std::thread::Thread>,
}

#[derive(Default)]
struct Shared {
    running: AtomicUsize,
    asleep: AtomicBool,
    stopped: AtomicBool,
}

/// Keeps the epoch advancing while it lives: taken before a guest runs.
pub(crate) struct Ticking<'a>(&'a Ticker);

impl Ticker {
    pub fn start(engines: &[&Engine]) -> Ticker {
        let shared = Arc::new(Shared::default());
        let weak: Vec<EngineWeak> = engines.iter().map(|e| e.weak()).collect();
        let state = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("toolwarden-epoch".into())
            .spawn(move || tick(&weak, &state));
        let thread = match spawned {
            Ok(handle) => Some(handle.thread().clone()),
            Err(e) => {
                tracing::error!(
                    "cannot start the epoch ticker, deadlines rely on timers alone: {e}"
                );
                None
            }
        };
        Ticker { shared, thread }
    }

    /// Marks a guest as running until the guard is dropped.
    pub fn running(&self) -> Ticking<'_> {
        self.shared.running.fetch_add(1, Ordering::SeqCst);
        if self.shared.asleep.load(Ordering::SeqCst) {
            self.wake();
        }
        Ticking(self)
    }

    fn wake(&self) {
        if let Some(thread) = &self.thread {
            thread.unpark();
        }
    }
}

impl Drop for Ticking<'_> {
    fn drop(&mut self) {
        self.0.shared.running.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.wake();
    }
}

fn tick(engines: &[EngineWeak], shared: &Shared) {
    let mut idle_ticks = 0;
    while !shared.stopped.load(Ordering::SeqCst) {
        std::thread::sleep(EPOCH_TICK);
        for engine in engines {
            let Some(engine) = engine.upgrade() else {
                return;
            };
            engine.increment_epoch();
        }
        if shared.running.load(Ordering::SeqCst) > 0 {
            idle_ticks = 0;
            continue;
        }
        idle_ticks += 1;
        if idle_ticks < IDLE_TICKS_BEFORE_SLEEP {
            continue;
        }
        // Announce the sleep, then look again: a guest that started in
        // between either sees `asleep` and unparks (an unpark before the
        // park makes it return at once) or is seen here.
        shared.asleep.store(true, Ordering::SeqCst);
        while shared.running.load(Ordering::SeqCst) == 0 && !shared.stopped.load(Ordering::SeqCst) {
            std::thread::park();
        }
        shared.asleep.store(false, Ordering::SeqCst);
        idle_ticks = 0;
    }
}
