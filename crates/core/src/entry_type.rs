//! What kind of call an entry is.

/// Direction of a call. Inbound calls count into the global inbound node and are subject to system rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EntryType {
    /// A request this service receives.
    In,
    /// A call this service makes (Sentinel's default).
    #[default]
    Out,
}

/// The kind of resource (Sentinel's `resourceType`, reported as the metric line's classification).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum ResourceType {
    /// Anything (0).
    #[default]
    Common = 0,
    /// A web endpoint (1).
    Web = 1,
    /// An RPC method (2).
    Rpc = 2,
    /// An API gateway route (3).
    ApiGateway = 3,
    /// A database statement (4).
    DbSql = 4,
}
