//! System adaptive protection: system rules, the slot that checks inbound traffic against them, and the
//! probes that read the machine's load and CPU usage.

mod limit;
mod manager;
mod os_probe;
mod probe;
mod procfs;
mod rule;
mod slot;

pub use limit::{SystemLimit, SystemLimitType, SystemThresholds};
pub(crate) use manager::SystemKind;
pub use manager::SystemStatus;
pub use os_probe::OsProbe;
pub use probe::{ManualProbe, SystemProbe};
pub use rule::SystemRule;
pub(crate) use slot::SystemSlot;
