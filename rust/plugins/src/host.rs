//! The host: one wasmtime engine, a linker built once per plugin from what
//! was granted, and a fresh bounded instance for every call.

use std::sync::Arc;

use wasmtime::component::{
    Component, ComponentExportIndex, HasSelf, InstancePre, Linker, ResourceTable, WasmStr,
};
use wasmtime::{Config, Engine, ResourceLimiter, Store, Trap};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::capability::{Capability, Grants};
use crate::error::PluginError;
use crate::reach::{Acting, Reach};

pub(crate) mod bindings {
    wasmtime::component::bindgen!({ path: "wit", world: "plugin" });
}

use bindings::chock::plugin::{fs_read, fs_write, net_fetch};

/// The interface a plugin's tools are exported in, and its one function.
const TOOL_INTERFACE: &str = "chock:plugin/tool@0.1.0";
const TOOL_CALL: &str = "call";
/// The most table elements an instance may have (function references).
const MAX_TABLE_ELEMENTS: usize = 1 << 16;

/// What one call may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Units of fuel, about one per WebAssembly instruction.
    pub fuel: u64,
    /// Bytes of linear memory, all memories of the instance together.
    pub memory_bytes: usize,
    /// Bytes of the answer (or of the error's text).
    pub output_bytes: usize,
    /// Time the call's capabilities may take, all together: fuel bounds
    /// the guest's own work, this bounds what it waits on (a fetch).
    pub wall: std::time::Duration,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            fuel: 2_000_000_000,
            memory_bytes: 64 << 20,
            output_bytes: 1 << 20,
            wall: std::time::Duration::from_secs(30),
        }
    }
}

/// The runtime plugins are compiled and run by.
pub struct Host {
    engine: Engine,
    bounds: Bounds,
}

/// A plugin compiled and linked with what it was granted, ready to call.
pub struct Loaded {
    pre: InstancePre<Guest>,
    call: ComponentExportIndex,
    grants: Arc<Grants>,
    reach: Reach,
    bounds: Bounds,
}

/// A call's store: WASI with nothing in reach, the memory bound, and what
/// the granted capabilities act on.
pub(crate) struct Guest {
    wasi: WasiCtx,
    table: ResourceTable,
    memory: MemoryBound,
    pub(crate) acting: Acting,
}

impl WasiView for Guest {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Refuses memory past the bound, and remembers that it did: the trap
/// that follows is then told as the bound it met.
struct MemoryBound {
    limit: usize,
    refused: bool,
}

impl ResourceLimiter for MemoryBound {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> anyhow::Result<bool> {
        if desired > self.limit {
            self.refused = true;
            anyhow::bail!(
                "memory of {desired} bytes is over the {}-byte bound",
                self.limit
            );
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> anyhow::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

impl Host {
    pub fn new(bounds: Bounds) -> Result<Host, PluginError> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.consume_fuel(true);
        let engine = Engine::new(&config).map_err(|e| PluginError::Engine(format!("{e:#}")))?;
        Ok(Host { engine, bounds })
    }

    /// Compiles `wasm` and links it with WASI (nothing in reach) and the
    /// capability interfaces `grants` holds, and no other. A component that
    /// imports an interface not linked fails here, before any of its code
    /// runs.
    pub fn load(&self, wasm: &[u8], grants: Grants, reach: Reach) -> Result<Loaded, PluginError> {
        let component = Component::new(&self.engine, wasm)
            .map_err(|e| PluginError::Compile(format!("{e:#}")))?;
        let call = tool_call(&component)?;
        let linker = self.linker(&grants)?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| PluginError::Link(format!("{e:#}")))?;
        Ok(Loaded {
            pre,
            call,
            grants: Arc::new(grants),
            reach,
            bounds: self.bounds,
        })
    }

    /// Compiles `wasm` and finds its tool export, linking nothing: what
    /// `chock plugins install` checks before it writes.
    pub fn check(&self, wasm: &[u8]) -> Result<(), PluginError> {
        let component = Component::new(&self.engine, wasm)
            .map_err(|e| PluginError::Compile(format!("{e:#}")))?;
        tool_call(&component).map(drop)
    }

    fn linker(&self, grants: &Grants) -> Result<Linker<Guest>, PluginError> {
        let engine_error = |e: anyhow::Error| PluginError::Engine(format!("{e:#}"));
        let mut linker = Linker::new(&self.engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(engine_error)?;
        if grants.has(&Capability::FsRead) {
            fs_read::add_to_linker::<Guest, HasSelf<Guest>>(&mut linker, |g| g)
                .map_err(engine_error)?;
        }
        if grants.has(&Capability::FsWrite) {
            fs_write::add_to_linker::<Guest, HasSelf<Guest>>(&mut linker, |g| g)
                .map_err(engine_error)?;
        }
        if grants.fetches() {
            net_fetch::add_to_linker::<Guest, HasSelf<Guest>>(&mut linker, |g| g)
                .map_err(engine_error)?;
        }
        Ok(linker)
    }
}

/// Where `chock:plugin/tool#call` is among the component's exports.
fn tool_call(component: &Component) -> Result<ComponentExportIndex, PluginError> {
    let missing = || {
        PluginError::Link(format!(
            "the component exports no `{TOOL_INTERFACE}` with a `{TOOL_CALL}` function"
        ))
    };
    let interface = component
        .get_export_index(None, TOOL_INTERFACE)
        .ok_or_else(missing)?;
    component
        .get_export_index(Some(&interface), TOOL_CALL)
        .ok_or_else(missing)
}

impl Loaded {
    /// What this plugin was granted.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Calls `tool` with `input` in a fresh instance, within the bounds.
    /// It blocks (a fetch waits on the reach's runtime): call it from a
    /// blocking thread, not from an async task.
    pub fn call(
        &self,
        tool: &str,
        input: &serde_json::Value,
    ) -> Result<serde_json::Value, PluginError> {
        let mut store = self.store()?;
        let input = input.to_string();
        let answer = self
            .run(&mut store, tool, &input)
            .map_err(|e| self.stopped(&store, e))??;
        serde_json::from_str(&answer).map_err(|e| PluginError::NotJson(e.to_string()))
    }

    fn store(&self) -> Result<Store<Guest>, PluginError> {
        let guest = Guest {
            wasi: WasiCtxBuilder::new()
                .allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false)
                .build(),
            table: ResourceTable::new(),
            memory: MemoryBound {
                limit: self.bounds.memory_bytes,
                refused: false,
            },
            acting: Acting {
                grants: self.grants.clone(),
                reach: self.reach.clone(),
                wall: self.bounds.wall,
                deadline: std::time::Instant::now() + self.bounds.wall,
            },
        };
        let mut store = Store::new(self.pre.engine(), guest);
        store.limiter(|guest| &mut guest.memory);
        store
            .set_fuel(self.bounds.fuel)
            .map_err(|e| PluginError::Engine(format!("{e:#}")))?;
        Ok(store)
    }

    /// Instantiates and calls; the outer error is the guest stopped, the
    /// inner one its answer refused.
    fn run(
        &self,
        store: &mut Store<Guest>,
        tool: &str,
        input: &str,
    ) -> anyhow::Result<Result<String, PluginError>> {
        let instance = self.pre.instantiate(&mut *store)?;
        let call = instance
            .get_typed_func::<(&str, &str), (Result<WasmStr, WasmStr>,)>(&mut *store, self.call)?;
        let (answer,) = call.call(&mut *store, (tool, input))?;
        let answer = match answer {
            Ok(text) => self.bounded(store, &text),
            Err(text) => self
                .bounded(store, &text)
                .and_then(|t| Err(PluginError::Tool(t))),
        };
        call.post_return(&mut *store)?;
        Ok(answer)
    }

    /// The guest's string, refused past the output bound before it is
    /// copied out of the guest's memory.
    fn bounded(&self, store: &Store<Guest>, text: &WasmStr) -> Result<String, PluginError> {
        let text = text
            .to_str(store)
            .map_err(|e| PluginError::Trap(format!("{e:#}")))?;
        if text.len() > self.bounds.output_bytes {
            return Err(PluginError::OutputTooLarge {
                size: text.len(),
                limit: self.bounds.output_bytes,
            });
        }
        Ok(text.into_owned())
    }

    /// Why the guest stopped, told as the bound it met where it met one.
    fn stopped(&self, store: &Store<Guest>, error: anyhow::Error) -> PluginError {
        if store.data().memory.refused {
            PluginError::OutOfMemory {
                limit: self.bounds.memory_bytes,
            }
        } else if error.downcast_ref::<Trap>() == Some(&Trap::OutOfFuel) {
            PluginError::OutOfFuel {
                fuel: self.bounds.fuel,
            }
        } else {
            PluginError::Trap(format!("{error:#}"))
        }
    }
}
