//! Where the HCA's notifications go: completion events to a CQ's channel, asynchronous
//! events to the context's async fd. The kernel side implements these over real fds.

/// Receives what the HCA reports outside the CQs.
pub trait EventSink: Send + Sync {
    /// A completion event for the CQ created with `user_handle` (one per arm). Returns
    /// false if it could not be delivered (the channel was closed).
    fn completion_event(&self, user_handle: u64) -> bool;
    /// An affiliated or unaffiliated asynchronous event (`uverbs::event::*`) about the
    /// object created with `element` as its user handle. Returns false if it could not be
    /// delivered (only delivered events count in what DESTROY reports).
    fn async_event(&self, element: u64, event_type: u32) -> bool;
}
