//! Which connections the agent keeps open: two small pools of *unproven* connections (one for
//! loopback peers, one for the others) where the newest displaces the oldest, and a pool of
//! *established* ones that strangers cannot enter. The policy, and why, is in the docs of
//! `serve`; this is its bookkeeping.
//!
//! A connection is admitted unproven. The first of its requests that a handler lets in
//! ([`Ticket::prove`]) moves it to the established pool, waiting (in arrival order) for a place there
//! if all [`MAX_ESTABLISHED`] are taken; meanwhile it is *promoting* and keeps its place among the
//! unproven, where it cannot be displaced. When a newcomer finds its class's [`MAX_UNPROVEN`] places
//! taken, the oldest unproven connection of the peer that holds the most of them is closed to make
//! room; if every place is promoting, the newcomer is not admitted yet ([`Admission::admit`] answers
//! `None`; [`Admission::changed`] tells when to try again). An established connection that is idle
//! between requests is closed when a promotion waits for its place.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// How many unproven connections each class of peer (loopback, the others) may hold.
pub(crate) const MAX_UNPROVEN: usize = 32;
/// How many established connections the agent keeps.
pub(crate) const MAX_ESTABLISHED: usize = 64;

/// Peers whose unproven connections compete only among themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Loopback,
    Remote,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// No request let in yet: may be closed to make room.
    Unproven,
    /// A request was let in; waiting for a place among the established.
    Promoting,
    Established,
}

#[derive(Debug)]
struct Entry {
    class: Class,
    /// The peer's address, IPv4 as such and IPv6 by its /64 (one host's addresses).
    peer: u128,
    stage: Stage,
    /// Requests received whose answers are not sent yet.
    in_flight: usize,
    close: Arc<Notify>,
}

#[derive(Debug, Default)]
struct Table {
    /// Keyed by admission order: the first entry is the oldest.
    entries: BTreeMap<u64, Entry>,
    next: u64,
    /// Promotions waiting for an established place.
    waiting: usize,
}

impl Table {
    /// The connection to close for a newcomer of `class`: among the class's unproven connections,
    /// the oldest of the peer holding the most (ties: the peer whose oldest is older).
    fn victim(&self, class: Class) -> Option<u64> {
        let mut peers: HashMap<u128, (usize, u64)> = HashMap::new();
        for (&id, e) in &self.entries {
            if e.class == class && e.stage == Stage::Unproven {
                let (count, _oldest) = peers.entry(e.peer).or_insert((0, id));
                *count += 1;
            }
        }
        peers
            .into_values()
            .max_by_key(|&(count, oldest)| (count, std::cmp::Reverse(oldest)))
            .map(|(_, oldest)| oldest)
    }
}

/// The connections of one listener.
#[derive(Debug)]
pub(crate) struct Admission {
    table: Mutex<Table>,
    established: Arc<Semaphore>,
    changed: Notify,
}

impl Admission {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Admission {
            table: Mutex::default(),
            established: Arc::new(Semaphore::new(MAX_ESTABLISHED)),
            changed: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // Plain counts: a table a panicking thread left is still usable.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a connection from `peer`, closing the connection that makes room for it if its class
    /// is full; `None` when every place of the class is promoting (try again on
    /// [`changed`](Self::changed)).
    pub(crate) fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Arc<Ticket>> {
        let peer = canonical(peer);
        let class = if peer.is_loopback() {
            Class::Loopback
        } else {
            Class::Remote
        };
        let mut table = self.lock();
        let unproven = table
            .entries
            .values()
            .filter(|e| e.class == class && e.stage != Stage::Established)
            .count();
        if unproven >= MAX_UNPROVEN {
            let victim = table.victim(class)?;
            if let Some(entry) = table.entries.remove(&victim) {
                tracing::debug!(
                    "the agent has {MAX_UNPROVEN} connections without a request let in; closing the oldest"
                );
                entry.close.notify_one();
            }
        }
        let id = table.next;
        table.next += 1;
        let close = Arc::new(Notify::new());
        table.entries.insert(
            id,
            Entry {
                class,
                peer: peer_key(peer),
                stage: Stage::Unproven,
                in_flight: 0,
                close: close.clone(),
            },
        );
        Some(Arc::new(Ticket {
            id,
            admission: self.clone(),
            close,
            permit: Mutex::new(None),
            granted: AtomicBool::new(false),
        }))
    }

    /// Completes when a connection ends or stops being unproven: an admission refused may succeed.
    /// [`enable`](tokio::sync::futures::Notified::enable) it before calling [`admit`](Self::admit).
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }
}

/// `ip` with an IPv4-mapped IPv6 address as the IPv4 one (a dual-stack listener's IPv4 peers).
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn peer_key(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        // Above every IPv4 address.
        IpAddr::V6(v6) => (u128::from(v6) >> 64 << 64) | u128::from(u64::MAX),
    }
}

/// Why a request that was let in may not run: it is answered 503, and its connection closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    /// The connection was closed to make room for another while the request was read.
    #[error("this connection was closed to make room for another: try again")]
    Closed,
}

/// A connection's place, shared by its requests' handlers.
#[derive(Debug)]
pub(crate) struct Ticket {
    id: u64,
    admission: Arc<Admission>,
    close: Arc<Notify>,
    permit: Mutex<Option<OwnedSemaphorePermit>>,
    /// Whether the request in progress was let in.
    granted: AtomicBool,
}

impl Ticket {
    fn with_entry<R>(&self, f: impl FnOnce(&mut Table, Option<&mut Entry>) -> R) -> R {
        let mut table = self.admission.lock();
        let table = &mut *table;
        // The entry is taken out and put back so that `f` may read the rest of the table.
        let mut entry = table.entries.remove(&self.id);
        let result = f(table, entry.as_mut());
        if let Some(entry) = entry {
            table.entries.insert(self.id, entry);
        }
        result
    }

    /// A request arrived; its answer ends when the returned guard is dropped.
    pub(crate) fn begin_request(self: &Arc<Self>) -> InFlight {
        self.granted.store(false, Ordering::Release);
        self.with_entry(|_, entry| {
            if let Some(entry) = entry {
                entry.in_flight += 1;
            }
        });
        InFlight(self.clone())
    }

    /// The request in progress was let in (its token, or its peer, checked; without a token, read
    /// whole): the connection is proven, and waits for an established place if it was not yet. Fails
    /// if the connection was closed to make room meanwhile: the request must not run (its answer
    /// would not be sent).
    pub(crate) async fn prove(&self) -> Result<(), Refused> {
        self.granted.store(false, Ordering::Release);
        let promoting = self.with_entry(|_, entry| match entry {
            Some(entry) if entry.stage == Stage::Unproven => {
                entry.stage = Stage::Promoting;
                Ok(true)
            }
            Some(_) => Ok(false),
            None => Err(Refused::Closed),
        })?;
        if promoting {
            let established = &self.admission.established;
            let permit = match established.clone().try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => {
                    self.with_entry(|table, _| {
                        table.waiting += 1;
                        // An idle connection gives its place up (its client reconnects when it needs to).
                        let idle = table
                            .entries
                            .values()
                            .find(|e| e.stage == Stage::Established && e.in_flight == 0);
                        if let Some(idle) = idle {
                            idle.close.notify_one();
                        }
                    });
                    let waiting = Waiting(&self.admission);
                    let permit = established.clone().acquire_owned().await;
                    drop(waiting);
                    // Never closed.
                    permit.map_err(|_| Refused::Closed)?
                }
            };
            *self.permit.lock().unwrap_or_else(PoisonError::into_inner) = Some(permit);
            self.with_entry(|_, entry| {
                if let Some(entry) = entry {
                    entry.stage = Stage::Established;
                }
            });
            self.admission.changed.notify_waiters();
        }
        self.granted.store(true, Ordering::Release);
        Ok(())
    }

    /// Whether the request in progress was let in (else its connection closes after the answer).
    pub(crate) fn granted(&self) -> bool {
        self.granted.load(Ordering::Acquire)
    }

    /// Whether no request was let in yet (or the connection was closed to make room).
    pub(crate) fn is_unproven(&self) -> bool {
        self.with_entry(|_, entry| entry.is_none_or(|e| e.stage == Stage::Unproven))
    }

    /// The signal that the connection is to close (to make room for another).
    pub(crate) fn close_signal(&self) -> Arc<Notify> {
        self.close.clone()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.admission.lock().entries.remove(&self.id);
        self.admission.changed.notify_waiters();
    }
}

/// A promotion waiting for an established place (counted while the wait lasts).
struct Waiting<'a>(&'a Admission);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut table = self.0.lock();
        table.waiting = table.waiting.saturating_sub(1);
    }
}

/// A request whose answer is not sent yet; dropped with the answer's body.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<Ticket>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.with_entry(|table, entry| {
            if let Some(entry) = entry {
                entry.in_flight = entry.in_flight.saturating_sub(1);
                if entry.stage == Stage::Established && entry.in_flight == 0 && table.waiting > 0 {
                    entry.close.notify_one();
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// Whether `ticket` was told to close (without waiting).
    fn told_to_close(ticket: &Ticket) -> bool {
        let signal = ticket.close_signal();
        let notified = signal.notified();
        futures_now(notified)
    }

    fn futures_now<T>(f: impl std::future::Future<Output = T>) -> bool {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = std::pin::pin!(f);
        f.as_mut().poll(&mut cx).is_ready()
    }

    #[test]
    fn a_full_class_closes_its_oldest_unproven_connection() {
        let admission = Admission::new();
        let held: Vec<_> = (0..MAX_UNPROVEN)
            .map(|_| admission.admit(ip("127.0.0.1")).unwrap())
            .collect();
        assert!(held.iter().all(|t| !told_to_close(t)));
        let newcomer = admission.admit(ip("127.0.0.1")).unwrap();
        assert!(told_to_close(&held[0]), "the oldest");
        assert!(held[1..].iter().all(|t| !told_to_close(t)));
        assert!(!told_to_close(&newcomer));
        assert!(held[0].is_unproven(), "gone from the table: unproven");
    }

    #[test]
    fn remote_peers_never_displace_loopback_ones() {
        let admission = Admission::new();
        let local = admission.admit(ip("127.0.0.1")).unwrap();
        let remote: Vec<_> = (0..MAX_UNPROVEN * 3)
            .map(|i| admission.admit(ip(&format!("10.0.0.{}", i % 200))).unwrap())
            .collect();
        assert!(!told_to_close(&local));
        assert!(remote.iter().filter(|t| told_to_close(t)).count() >= MAX_UNPROVEN * 2);
        // An IPv4-mapped loopback peer is loopback.
        let mapped = admission.admit(ip("::ffff:127.0.0.1")).unwrap();
        assert!(!told_to_close(&local) && !told_to_close(&mapped));
    }

    #[test]
    fn the_peer_holding_the_most_gives_way_first() {
        let admission = Admission::new();
        let dashboard = admission.admit(ip("10.0.0.1")).unwrap();
        let stranger: Vec<_> = (1..MAX_UNPROVEN)
            .map(|_| admission.admit(ip("10.6.6.6")).unwrap())
            .collect();
        let _newer: Vec<_> = (0..MAX_UNPROVEN * 2)
            .map(|_| admission.admit(ip("10.6.6.6")).unwrap())
            .collect();
        assert!(!told_to_close(&dashboard), "older, but its peer holds one");
        assert!(stranger.iter().all(|t| told_to_close(t)));
        // One /64 is one peer.
        let v6: Vec<_> = (0..MAX_UNPROVEN)
            .map(|i| admission.admit(ip(&format!("2001:db8::{i:x}"))).unwrap())
            .collect();
        assert!(!told_to_close(&dashboard));
        assert!(v6.iter().filter(|t| told_to_close(t)).count() < MAX_UNPROVEN);
    }

    #[tokio::test]
    async fn proven_and_promoting_connections_are_never_displaced() {
        let admission = Admission::new();
        let proven = admission.admit(ip("127.0.0.1")).unwrap();
        let _request = proven.begin_request();
        proven.prove().await.unwrap();
        assert!(!proven.is_unproven() && proven.granted());
        let rest: Vec<_> = (0..MAX_UNPROVEN)
            .map(|_| admission.admit(ip("127.0.0.1")).unwrap())
            .collect();
        let _newer: Vec<_> = (0..MAX_UNPROVEN * 2)
            .map(|_| admission.admit(ip("127.0.0.1")).unwrap())
            .collect();
        assert!(!told_to_close(&proven));
        assert!(rest.iter().all(|t| told_to_close(t)));
    }

    #[tokio::test]
    async fn a_promotion_waits_for_an_established_place_and_idle_ones_give_theirs_up() {
        let admission = Admission::new();
        let mut established = Vec::new();
        for _ in 0..MAX_ESTABLISHED {
            let t = admission.admit(ip("10.0.0.1")).unwrap();
            let request = t.begin_request();
            t.prove().await.unwrap();
            established.push((t, Some(request)));
        }
        let newcomer = admission.admit(ip("10.0.0.2")).unwrap();
        let _request = newcomer.begin_request();
        let mut promotion = std::pin::pin!(newcomer.prove());
        assert!(
            !futures_now(promotion.as_mut()),
            "every place busy: it waits"
        );
        assert!(!newcomer.is_unproven(), "promoting");
        // Promoting places are not displaced: a class full of them admits no one.
        let _promoting: Vec<_> = {
            let mut v = Vec::new();
            for _ in 1..MAX_UNPROVEN {
                let t = admission.admit(ip("10.0.0.3")).unwrap();
                let request = t.begin_request();
                let mut p = Box::pin(async move {
                    t.prove().await.unwrap();
                    drop(request);
                });
                assert!(!futures_now(p.as_mut()));
                v.push(p);
            }
            v
        };
        assert!(
            admission.admit(ip("10.0.0.4")).is_none(),
            "no place to make"
        );
        assert!(
            admission.admit(ip("127.0.0.1")).is_some(),
            "loopback has its own"
        );
        // The first established connection to go idle is closed for the waiting promotion.
        let (first, request) = &mut established[0];
        drop(request.take());
        assert!(told_to_close(first));
        assert!(established[1..].iter().all(|(t, _)| !told_to_close(t)));
        established.remove(0);
        promotion.await.unwrap();
        assert!(!newcomer.is_unproven());
    }

    /// A connection closed to make room while its request was read: the request is refused, not
    /// run (its answer would not be sent).
    #[tokio::test]
    async fn a_connection_closed_to_make_room_proves_nothing() {
        let admission = Admission::new();
        let first = admission.admit(ip("127.0.0.1")).unwrap();
        let _request = first.begin_request();
        let _newer: Vec<_> = (0..MAX_UNPROVEN)
            .map(|_| admission.admit(ip("127.0.0.1")).unwrap())
            .collect();
        assert!(told_to_close(&first));
        assert_eq!(first.prove().await, Err(Refused::Closed));
        assert!(!first.granted());
    }
}
