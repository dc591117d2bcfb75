//! Which connections the agent keeps open: three pools of *unproven* connections (for the peers let
//! in by address, for the other loopback peers, for the rest) where newcomers displace the older
//! ones, and a pool of *established* ones that strangers cannot enter. The policy, and why, is in
//! the docs of `serve`; this is its bookkeeping.
//!
//! A connection is admitted unproven, at a time the caller gives ([`Admission::admit`]). When a
//! newcomer finds its class's [`MAX_UNPROVEN`] places taken, the table picks the connection that
//! makes room (`Table::make_room`: the oldest of the peer holding the most, unless another peer's
//! is spared by [`MIN_AGE`]) or answers `None`, and the server closes the newcomer.
//!
//! The first of its requests that a handler lets in ([`Ticket::prove`]) moves it to the established
//! pool: it is *promoting*, keeping its place among the unproven (where it cannot be displaced),
//! until a place is free there and its peer holds fewer than [`MAX_ESTABLISHED_PER_PEER`] of them.
//! Promotions get places in arrival order, except that one whose peer holds its share lets the next
//! ones by. One that waits [`PROMOTION_TIMEOUT`] without a place gives up ([`Refused::Busy`]): its
//! request is refused and its connection closed. While promotions wait, idle established
//! connections are told to close, one for each promotion that needs a place (of its own peer's,
//! when its peer holds its share), and none twice. Idle is between requests: no request in
//! progress, and the answers written out — hyper takes an answer's body before it has written it,
//! so an answer counts until hyper next flushes the connection ([`Ticket::flushed`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::cidr::Cidr;

/// How many unproven connections each class of peer (those let in by address, loopback, the others)
/// may hold.
pub(crate) const MAX_UNPROVEN: usize = 64;
/// How long an unproven connection is spared from another peer's newcomers (the dashboards send
/// their request at once), and how long a peer that lost one to another's newcomer cannot take
/// another peer's place in turn.
pub(crate) const MIN_AGE: Duration = Duration::from_millis(500);
/// How many established connections the agent keeps.
pub(crate) const MAX_ESTABLISHED: usize = 64;
/// How many established connections one peer may hold: the other half stays for other peers.
pub(crate) const MAX_ESTABLISHED_PER_PEER: usize = MAX_ESTABLISHED / 2;
/// How long a promotion waits for an established place before its request is refused.
pub(crate) const PROMOTION_TIMEOUT: Duration = Duration::from_secs(2);

/// Peers whose unproven connections compete only among themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// In [`tokenless_from`](crate::AgentBuilder::tokenless_from).
    LetInByAddress,
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
    /// The peer ([`peer_key`]).
    peer: u128,
    /// When the connection was admitted.
    since: Instant,
    stage: Stage,
    /// Requests received whose answers are not handed to hyper yet.
    in_flight: usize,
    /// An answer was handed to hyper that was not seen written out yet ([`Ticket::flushed`]).
    unflushed: bool,
    /// Told to close, to give its established place to a waiting promotion.
    closing: bool,
    close: Arc<Notify>,
    /// Signalled when its waiting promotion got a place.
    promoted: Arc<Notify>,
}

impl Entry {
    /// An established connection between requests (no request in progress, no answer being
    /// written), not told to close yet.
    fn idle(&self) -> bool {
        self.stage == Stage::Established && !self.closing && self.in_flight == 0 && !self.unflushed
    }
}

#[derive(Debug, Default)]
struct Table {
    /// Keyed by admission order: the first entry is the oldest.
    entries: BTreeMap<u64, Entry>,
    next: u64,
    /// Promotions waiting for an established place, in arrival order.
    waiting: VecDeque<u64>,
    /// Peers that lost an unproven connection to another peer's newcomer, and when (forgotten
    /// after [`MIN_AGE`]).
    displaced: HashMap<u128, Instant>,
}

impl Table {
    /// The connection to close for a newcomer from `peer` that finds its `class` full, or `None`
    /// if the newcomer is to be closed instead. Among the class's unproven connections, the oldest
    /// of the peer holding the most (ties: the peer whose oldest is older), which is the newcomer's
    /// own peer's oldest when that peer holds the most. Another peer's is spared, though, if after
    /// the exchange that peer would hold fewer than the newcomer's (it holds at most one more) and
    /// either it is younger than [`MIN_AGE`] or the newcomer's peer was itself displaced within the
    /// last [`MIN_AGE`]: then the newcomer's peer gives way from its own oldest, and a newcomer
    /// whose peer holds none is closed.
    fn make_room(&mut self, class: Class, peer: u128, now: Instant) -> Option<u64> {
        // Per peer: how many it holds, its oldest, and when that one came.
        let mut peers: HashMap<u128, (usize, u64, Instant)> = HashMap::new();
        for (&id, e) in &self.entries {
            if e.class == class && e.stage == Stage::Unproven {
                peers.entry(e.peer).or_insert((0, id, e.since)).0 += 1;
            }
        }
        let own = peers.get(&peer).copied();
        let (&most, &(held, oldest, since)) = peers
            .iter()
            .max_by_key(|&(_, &(held, oldest, _))| (held, Reverse(oldest)))?;
        if most == peer {
            return Some(oldest);
        }
        let own_held = own.map_or(0, |(held, _, _)| held);
        let hogging = held >= own_held + 2;
        let young = now.saturating_duration_since(since) < MIN_AGE;
        if hogging || !(young || self.displaced.contains_key(&peer)) {
            self.displaced.insert(most, now);
            return Some(oldest);
        }
        own.map(|(_, oldest, _)| oldest)
    }

    /// How many established places are held, in all and by each peer; with `closing`, also those
    /// of connections told to close.
    fn held(&self, closing: bool) -> (usize, HashMap<u128, usize>) {
        let mut by_peer: HashMap<u128, usize> = HashMap::new();
        let mut total = 0;
        for e in self.entries.values() {
            if e.stage == Stage::Established && (closing || !e.closing) {
                total += 1;
                *by_peer.entry(e.peer).or_default() += 1;
            }
        }
        (total, by_peer)
    }

    /// Gives the free established places to the waiting promotions, in arrival order: one whose
    /// peer holds its share lets the next ones by.
    fn grant(&mut self) {
        let (mut total, mut by_peer) = self.held(true);
        let Table {
            entries, waiting, ..
        } = self;
        waiting.retain(|id| entries.get(id).is_some_and(|e| e.stage == Stage::Promoting));
        let mut i = 0;
        while i < waiting.len() && total < MAX_ESTABLISHED {
            let Some(entry) = entries.get_mut(&waiting[i]) else {
                i += 1;
                continue;
            };
            let held = by_peer.entry(entry.peer).or_default();
            if *held < MAX_ESTABLISHED_PER_PEER {
                *held += 1;
                total += 1;
                entry.stage = Stage::Established;
                entry.promoted.notify_one();
                waiting.remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Tells idle established connections to close for the waiting promotions that need a place:
    /// counting the places of the connections already told to close as free, each waiting
    /// promotion takes a free one, else gets one idle connection closed for it (of its own peer's
    /// when its peer holds its share); none is told twice.
    fn reclaim(&mut self) {
        let (held, mut by_peer) = self.held(false);
        let closing = self
            .entries
            .values()
            .filter(|e| e.stage == Stage::Established && e.closing)
            .count();
        let mut free = MAX_ESTABLISHED.saturating_sub(held);
        debug_assert!(free >= closing);
        let Table {
            entries, waiting, ..
        } = self;
        for id in waiting.iter() {
            let Some(peer) = entries.get(id).map(|e| e.peer) else {
                continue;
            };
            let room = by_peer.get(&peer).copied().unwrap_or(0) < MAX_ESTABLISHED_PER_PEER;
            if free > 0 && room {
                free -= 1;
                *by_peer.entry(peer).or_default() += 1;
                continue;
            }
            let idle = entries
                .values_mut()
                .find(|e| e.idle() && (room || e.peer == peer));
            if let Some(idle) = idle {
                // Its place goes to this promotion (its client reconnects when it needs to).
                idle.closing = true;
                idle.close.notify_one();
                if let Some(n) = by_peer.get_mut(&idle.peer) {
                    *n -= 1;
                }
                *by_peer.entry(peer).or_default() += 1;
            }
        }
    }
}

/// The agent's connections (on its command port and its Prometheus port).
#[derive(Debug)]
pub(crate) struct Admission {
    table: Mutex<Table>,
    /// The peers let in without the token, who have a class of their own.
    let_in_by_address: Vec<Cidr>,
}

impl Admission {
    pub(crate) fn new(let_in_by_address: Vec<Cidr>) -> Arc<Self> {
        Arc::new(Admission {
            table: Mutex::default(),
            let_in_by_address,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // Plain counts: a table a panicking thread left is still usable.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a connection from `peer` arriving `now`, closing the connection that makes room for
    /// it if its class is full; `None` when there is none to close (the newcomer is to be closed).
    pub(crate) fn admit(self: &Arc<Self>, peer: IpAddr, now: Instant) -> Option<Arc<Ticket>> {
        let peer = canonical(peer);
        let class = if self.let_in_by_address.iter().any(|n| n.contains(peer)) {
            Class::LetInByAddress
        } else if peer.is_loopback() {
            Class::Loopback
        } else {
            Class::Remote
        };
        let key = peer_key(peer);
        let mut table = self.lock();
        table
            .displaced
            .retain(|_, &mut at| now.saturating_duration_since(at) < MIN_AGE);
        let unproven = table
            .entries
            .values()
            .filter(|e| e.class == class && e.stage != Stage::Established)
            .count();
        if unproven >= MAX_UNPROVEN {
            let victim = table.make_room(class, key, now)?;
            if let Some(entry) = table.entries.remove(&victim) {
                tracing::debug!(
                    "the agent has {MAX_UNPROVEN} connections of a kind without a request let in; \
                     closing one"
                );
                entry.close.notify_one();
            }
        }
        let id = table.next;
        table.next += 1;
        let close = Arc::new(Notify::new());
        let promoted = Arc::new(Notify::new());
        table.entries.insert(
            id,
            Entry {
                class,
                peer: key,
                since: now,
                stage: Stage::Unproven,
                in_flight: 0,
                unflushed: false,
                closing: false,
                close: close.clone(),
                promoted: promoted.clone(),
            },
        );
        Some(Arc::new(Ticket {
            id,
            admission: self.clone(),
            close,
            promoted,
            granted: AtomicBool::new(false),
            unflushed: AtomicBool::new(false),
        }))
    }
}

/// `ip` with an IPv4-mapped IPv6 address as the IPv4 one (a dual-stack listener's IPv4 peers).
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A peer, as far as telling strangers apart goes: an IPv4 address, or an IPv6 /56 — what one
/// site is commonly given (a /64 per network of its 256), so that one holder of a /56 is one peer
/// however many of its addresses it uses. Two hosts of one /56 count as one peer.
fn peer_key(ip: IpAddr) -> u128 {
    const HOST_BITS: u32 = 128 - 56;
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        // The host bits all set: above every IPv4 address.
        IpAddr::V6(v6) => (u128::from(v6) >> HOST_BITS << HOST_BITS) | ((1 << HOST_BITS) - 1),
    }
}

/// Why a request that was let in may not run: it is answered 503, and its connection closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    /// The connection was closed to make room for another while the request was read.
    #[error("this connection was closed to make room for another: try again")]
    Closed,
    /// No established place came free within [`PROMOTION_TIMEOUT`].
    #[error("the agent's connections for callers it knows are all busy: try again")]
    Busy,
}

/// A connection's place, shared by its requests' handlers.
#[derive(Debug)]
pub(crate) struct Ticket {
    id: u64,
    admission: Arc<Admission>,
    close: Arc<Notify>,
    promoted: Arc<Notify>,
    /// Whether the request in progress was let in.
    granted: AtomicBool,
    /// Whether an answer was handed to hyper since the last flush (the entry's `unflushed`, read
    /// without the table's lock on each flush).
    unflushed: AtomicBool,
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

    /// The request in progress was let in (its token checked, or, from a peer that needs none or
    /// without a token, read whole): the connection is proven, and waits for an established place
    /// if it was not yet. Fails if the connection was closed to make room meanwhile, or no place
    /// came free within [`PROMOTION_TIMEOUT`]: the request must not run.
    pub(crate) async fn prove(&self) -> Result<(), Refused> {
        self.granted.store(false, Ordering::Release);
        let placed = {
            let mut table = self.admission.lock();
            let entry = table.entries.get_mut(&self.id).ok_or(Refused::Closed)?;
            match entry.stage {
                Stage::Established => true,
                // One request at a time: not a second promotion.
                Stage::Promoting => return Err(Refused::Busy),
                Stage::Unproven => {
                    entry.stage = Stage::Promoting;
                    table.waiting.push_back(self.id);
                    table.grant();
                    let placed = table
                        .entries
                        .get(&self.id)
                        .is_some_and(|e| e.stage == Stage::Established);
                    if !placed {
                        table.reclaim();
                    }
                    placed
                }
            }
        };
        if !placed {
            let waiting = Withdraw(self);
            let _ = tokio::time::timeout(PROMOTION_TIMEOUT, self.promoted.notified()).await;
            std::mem::forget(waiting);
            self.withdraw()?;
        }
        self.granted.store(true, Ordering::Release);
        Ok(())
    }

    /// Ends a promotion: `Ok` if it got its place, else it stops waiting and the connection is
    /// unproven again.
    fn withdraw(&self) -> Result<(), Refused> {
        let mut table = self.admission.lock();
        let entry = table.entries.get_mut(&self.id).ok_or(Refused::Closed)?;
        if entry.stage == Stage::Established {
            return Ok(());
        }
        entry.stage = Stage::Unproven;
        table.waiting.retain(|&id| id != self.id);
        Err(Refused::Busy)
    }

    /// Whether the request in progress was let in (else its connection closes after the answer).
    pub(crate) fn granted(&self) -> bool {
        self.granted.load(Ordering::Acquire)
    }

    /// Whether no request was let in yet (or the connection was closed to make room).
    pub(crate) fn is_unproven(&self) -> bool {
        self.with_entry(|_, entry| entry.is_none_or(|e| e.stage == Stage::Unproven))
    }

    /// Whether the connection holds an established place (closing it gracefully lets the answer
    /// in progress finish).
    pub(crate) fn is_established(&self) -> bool {
        self.with_entry(|_, entry| entry.is_some_and(|e| e.stage == Stage::Established))
    }

    /// hyper flushed the connection: its write buffer is empty, so the answers it was handed are
    /// written out (to the socket), and the connection may be idle.
    pub(crate) fn flushed(&self) {
        if !self.unflushed.swap(false, Ordering::AcqRel) {
            return;
        }
        let mut table = self.admission.lock();
        let idle = table.entries.get_mut(&self.id).is_some_and(|entry| {
            entry.unflushed = false;
            entry.idle()
        });
        if idle && !table.waiting.is_empty() {
            table.reclaim();
        }
    }

    /// The signal that the connection is to close (to make room for another).
    pub(crate) fn close_signal(&self) -> Arc<Notify> {
        self.close.clone()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut table = self.admission.lock();
        if table.entries.remove(&self.id).is_some() {
            table.grant();
            table.reclaim();
        }
    }
}

/// A waiting promotion dropped before it ended (its connection closed): it stops waiting.
struct Withdraw<'a>(&'a Ticket);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let _ = self.0.withdraw();
    }
}

/// A request whose answer is not handed to hyper yet; dropped with the answer's body, when hyper
/// has taken its last bytes (which it may still be writing: the connection is idle once it
/// flushed them, [`Ticket::flushed`]).
#[derive(Debug)]
pub(crate) struct InFlight(Arc<Ticket>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut table = self.0.admission.lock();
        if let Some(entry) = table.entries.get_mut(&self.0.id) {
            entry.in_flight = entry.in_flight.saturating_sub(1);
            entry.unflushed = true;
            self.0.unflushed.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// Whether `ticket` was told to close (without waiting, and leaving the signal as it was).
    fn told_to_close(ticket: &Ticket) -> bool {
        let signal = ticket.close_signal();
        let told = futures_now(signal.notified());
        if told {
            signal.notify_one();
        }
        told
    }

    fn futures_now<T>(f: impl std::future::Future<Output = T>) -> bool {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = std::pin::pin!(f);
        f.as_mut().poll(&mut cx).is_ready()
    }

    /// An admission whose newcomers each arrive [`MIN_AGE`] after the one before: every earlier
    /// connection is old enough to give way, and no displaced peer is still held back.
    struct Spaced {
        admission: Arc<Admission>,
        now: Instant,
    }

    impl Spaced {
        fn new(admission: &Arc<Admission>) -> Self {
            Spaced {
                admission: admission.clone(),
                now: Instant::now(),
            }
        }

        fn admit(&mut self, peer: &str) -> Option<Arc<Ticket>> {
            self.now += MIN_AGE;
            self.admission.admit(ip(peer), self.now)
        }
    }

    /// A connection from `peer` whose first request was let in, with that request still in
    /// progress (drop it to make the connection idle).
    async fn established(admission: &Arc<Admission>, peer: &str) -> (Arc<Ticket>, InFlight) {
        let ticket = admission.admit(ip(peer), Instant::now()).unwrap();
        let request = ticket.begin_request();
        ticket.prove().await.unwrap();
        (ticket, request)
    }

    /// Every established place taken, each by a peer of its own, with a request in progress.
    async fn all_established(admission: &Arc<Admission>) -> Vec<(Arc<Ticket>, Option<InFlight>)> {
        let mut all = Vec::new();
        for i in 0..MAX_ESTABLISHED {
            let (ticket, request) = established(admission, &format!("10.0.1.{i}")).await;
            all.push((ticket, Some(request)));
        }
        all
    }

    #[test]
    fn a_full_class_closes_its_oldest_unproven_connection() {
        let admission = Admission::new(Vec::new());
        let mut at = Spaced::new(&admission);
        let held: Vec<_> = (0..MAX_UNPROVEN)
            .map(|_| at.admit("127.0.0.1").unwrap())
            .collect();
        assert!(held.iter().all(|t| !told_to_close(t)));
        let newcomer = at.admit("127.0.0.1").unwrap();
        assert!(told_to_close(&held[0]), "the oldest");
        assert!(held[1..].iter().all(|t| !told_to_close(t)));
        assert!(!told_to_close(&newcomer));
        assert!(held[0].is_unproven(), "gone from the table: unproven");
    }

    #[test]
    fn remote_peers_never_displace_loopback_ones() {
        let admission = Admission::new(Vec::new());
        let mut at = Spaced::new(&admission);
        let local = at.admit("127.0.0.1").unwrap();
        let remote: Vec<_> = (0..MAX_UNPROVEN * 3)
            .map(|i| at.admit(&format!("10.0.{}.{}", i / 200, i % 200)).unwrap())
            .collect();
        assert!(!told_to_close(&local));
        assert_eq!(
            remote.iter().filter(|t| told_to_close(t)).count(),
            MAX_UNPROVEN * 2
        );
        // An IPv4-mapped loopback peer is loopback.
        let mapped = at.admit("::ffff:127.0.0.1").unwrap();
        assert!(!told_to_close(&local) && !told_to_close(&mapped));
    }

    #[test]
    fn the_peer_holding_the_most_gives_way_first() {
        let admission = Admission::new(Vec::new());
        let mut at = Spaced::new(&admission);
        let dashboard = at.admit("10.0.0.1").unwrap();
        let stranger: Vec<_> = (1..MAX_UNPROVEN)
            .map(|_| at.admit("10.6.6.6").unwrap())
            .collect();
        let _newer: Vec<_> = (0..MAX_UNPROVEN * 2)
            .map(|_| at.admit("10.6.6.6").unwrap())
            .collect();
        assert!(!told_to_close(&dashboard), "older, but its peer holds one");
        assert!(stranger.iter().all(|t| told_to_close(t)));
        // One /56 is one peer: its 256 /64s as much as one /64's addresses.
        let v6: Vec<_> = (0..MAX_UNPROVEN)
            .map(|i| at.admit(&format!("2001:db8:0:{i:x}::1")).unwrap())
            .collect();
        assert!(!told_to_close(&dashboard));
        let given_way = v6.iter().filter(|t| told_to_close(t)).count();
        assert!(given_way > 0 && given_way < MAX_UNPROVEN, "{given_way}");
        let v6_held = MAX_UNPROVEN - given_way;
        let _more: Vec<_> = (0..MAX_UNPROVEN)
            .map(|i| at.admit(&format!("2001:db8:0:{i:x}::2")).unwrap())
            .collect();
        assert_eq!(
            v6.iter().filter(|t| told_to_close(t)).count(),
            given_way + v6_held.min(MAX_UNPROVEN),
            "the /56's own give way to it"
        );
        // Another /56 is another peer.
        let other = at.admit("2001:db8:0:100::1").unwrap();
        assert!(!told_to_close(&other) && !told_to_close(&dashboard));
    }

    /// Strangers on many addresses, each renewing at once a connection closed to make room: each
    /// renewal closed the next oldest connection, so a dashboard's fresh one was closed after a
    /// few dozen accepts (milliseconds), before its request came.
    #[test]
    fn strangers_on_many_addresses_cannot_churn_out_a_fresh_connection() {
        let admission = Admission::new(Vec::new());
        let t0 = Instant::now();
        let mut held: Vec<(String, Arc<Ticket>)> = (0..MAX_UNPROVEN)
            .map(|i| {
                let peer = format!("10.1.0.{i}");
                let ticket = admission.admit(ip(&peer), t0).unwrap();
                (peer, ticket)
            })
            .collect();
        let now = t0 + Duration::from_secs(1);
        let dashboard = admission.admit(ip("10.9.9.9"), now).unwrap();
        // Every stranger closed (or refused) comes back at once, 10 000 times in all.
        let mut renewing = VecDeque::new();
        let mut closed = 0;
        for _ in 0..10_000 {
            while let Some(i) = held.iter().position(|(_, t)| told_to_close(t)) {
                renewing.push_back(held.remove(i).0);
                closed += 1;
            }
            let Some(peer) = renewing.pop_front() else {
                break;
            };
            match admission.admit(ip(&peer), now) {
                Some(ticket) => held.push((peer, ticket)),
                None => renewing.push_back(peer),
            }
        }
        assert!(!told_to_close(&dashboard));
        assert_eq!(
            closed, 1,
            "the dashboard's arrival closed one, and that was all"
        );
        // Once no longer held back, that stranger takes the oldest stranger's place, not the
        // dashboard's.
        let out = renewing.pop_front().unwrap();
        assert!(admission.admit(ip(&out), now + MIN_AGE).is_some());
        assert!(told_to_close(&held[0].1) && !told_to_close(&dashboard));
    }

    /// A flood from ever new addresses (none of them held back) closes the older strangers' connections,
    /// then the newcomers themselves, never a connection younger than the minimum age.
    #[test]
    fn a_fresh_connection_outlives_a_flood_from_new_addresses() {
        let admission = Admission::new(Vec::new());
        let t0 = Instant::now();
        let old: Vec<_> = (0..MAX_UNPROVEN - 1)
            .map(|i| admission.admit(ip(&format!("10.1.0.{i}")), t0).unwrap())
            .collect();
        let now = t0 + Duration::from_secs(1);
        let dashboard = admission.admit(ip("10.9.9.9"), now).unwrap();
        let admitted: Vec<_> = (0..1000)
            .filter_map(|i| admission.admit(ip(&format!("10.2.{}.{}", i / 200, i % 200)), now))
            .collect();
        assert_eq!(
            admitted.len(),
            MAX_UNPROVEN - 1,
            "in the old ones' places only"
        );
        assert!(old.iter().all(|t| told_to_close(t)));
        assert!(!told_to_close(&dashboard));
        // Old enough, it gives way like the others.
        let later = now + MIN_AGE;
        assert!(admission.admit(ip("10.3.0.1"), later).is_some());
        assert!(told_to_close(&dashboard));
    }

    /// The minimum age spares a connection from peers holding as many as its own, not from one
    /// holding more: a peer filling the class gives way however young its connections are.
    #[test]
    fn a_peer_hogging_the_class_gives_way_however_young() {
        let admission = Admission::new(Vec::new());
        let now = Instant::now();
        let hog: Vec<_> = (0..MAX_UNPROVEN)
            .map(|_| admission.admit(ip("10.6.6.6"), now).unwrap())
            .collect();
        let a = admission.admit(ip("10.0.0.1"), now).unwrap();
        assert!(told_to_close(&hog[0]));
        // Its own newcomers make room from its own.
        let _again = admission.admit(ip("10.6.6.6"), now).unwrap();
        assert!(told_to_close(&hog[1]) && !told_to_close(&a));
        let b = admission.admit(ip("10.0.0.2"), now).unwrap();
        assert!(told_to_close(&hog[2]));
        // The first peer's second connection still takes the hog's place (62 against 2).
        let _a2 = admission.admit(ip("10.0.0.1"), now).unwrap();
        assert!(told_to_close(&hog[3]));
        assert!(!told_to_close(&a) && !told_to_close(&b));
    }

    #[test]
    fn peers_let_in_by_address_have_places_of_their_own() {
        let admission = Admission::new(vec!["10.0.0.5/32".parse().unwrap()]);
        let mut at = Spaced::new(&admission);
        let dashboard = at.admit("10.0.0.5").unwrap();
        let mut strangers = Vec::new();
        for i in 0..MAX_UNPROVEN * 3 {
            strangers.push(at.admit(&format!("10.0.{}.{}", 1 + i / 200, i % 200)));
            strangers.push(at.admit(&format!("127.0.{}.{}", 1 + i / 200, i % 200)));
        }
        assert!(strangers.iter().all(Option::is_some));
        let closed = strangers.iter().flatten().filter(|t| told_to_close(t));
        assert_eq!(closed.count(), 2 * (MAX_UNPROVEN * 3 - MAX_UNPROVEN));
        assert!(!told_to_close(&dashboard));
        // Among themselves, as in any class.
        let rest: Vec<_> = (1..MAX_UNPROVEN)
            .map(|_| at.admit("10.0.0.5").unwrap())
            .collect();
        assert!(!told_to_close(&dashboard));
        let _newest = at.admit("10.0.0.5").unwrap();
        assert!(told_to_close(&dashboard) && !told_to_close(&rest[0]));
    }

    #[tokio::test]
    async fn proven_and_promoting_connections_are_never_displaced() {
        let admission = Admission::new(Vec::new());
        let (proven, _request) = established(&admission, "127.0.0.1").await;
        assert!(!proven.is_unproven() && proven.granted());
        let rest: Vec<_> = (0..MAX_UNPROVEN)
            .map(|_| admission.admit(ip("127.0.0.1"), Instant::now()).unwrap())
            .collect();
        let _newer: Vec<_> = (0..MAX_UNPROVEN * 2)
            .map(|_| admission.admit(ip("127.0.0.1"), Instant::now()).unwrap())
            .collect();
        assert!(!told_to_close(&proven));
        assert!(rest.iter().all(|t| told_to_close(t)));
    }

    #[tokio::test]
    async fn a_promotion_waits_for_an_established_place_and_idle_ones_give_theirs_up() {
        let admission = Admission::new(Vec::new());
        let mut established = all_established(&admission).await;
        let newcomer = admission.admit(ip("10.0.0.2"), Instant::now()).unwrap();
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
            for i in 1..MAX_UNPROVEN {
                let t = admission
                    .admit(ip(&format!("10.0.0.{}", 100 + i)), Instant::now())
                    .unwrap();
                let request = t.begin_request();
                let mut p = Box::pin(async move {
                    let _ = t.prove().await;
                    drop(request);
                });
                assert!(!futures_now(p.as_mut()));
                v.push(p);
            }
            v
        };
        assert!(
            admission.admit(ip("10.0.0.4"), Instant::now()).is_none(),
            "no place to make"
        );
        assert!(
            admission.admit(ip("127.0.0.1"), Instant::now()).is_some(),
            "loopback has its own"
        );
        // The first established connection to go idle is closed for the waiting promotion.
        let (first, request) = &mut established[0];
        drop(request.take());
        assert!(!told_to_close(first), "its answer is not written out yet");
        first.flushed();
        assert!(told_to_close(first));
        assert!(established[1..].iter().all(|(t, _)| !told_to_close(t)));
        established.remove(0);
        promotion.await.unwrap();
        assert!(!newcomer.is_unproven() && newcomer.granted());
    }

    /// A promotion waited for as long as every established place was busy (10 s, a body's
    /// deadline, renewably), and the accept loop with it.
    #[tokio::test(start_paused = true)]
    async fn a_promotion_gives_up_after_its_deadline() {
        let admission = Admission::new(Vec::new());
        let _established = all_established(&admission).await;
        let newcomer = admission.admit(ip("10.0.0.2"), Instant::now()).unwrap();
        let _request = newcomer.begin_request();
        let started = tokio::time::Instant::now();
        assert_eq!(newcomer.prove().await, Err(Refused::Busy));
        assert_eq!(started.elapsed(), PROMOTION_TIMEOUT);
        assert!(newcomer.is_unproven() && !newcomer.granted());
        assert!(admission.lock().waiting.is_empty(), "no longer waiting");
    }

    /// One address held every established place.
    #[tokio::test(start_paused = true)]
    async fn one_peer_holds_at_most_half_the_established_places() {
        let admission = Admission::new(Vec::new());
        let mut mine = Vec::new();
        for _ in 0..MAX_ESTABLISHED_PER_PEER {
            let (ticket, request) = established(&admission, "10.0.0.1").await;
            mine.push((ticket, Some(request)));
        }
        let one_more = admission.admit(ip("10.0.0.1"), Instant::now()).unwrap();
        let _request = one_more.begin_request();
        let mut promotion = std::pin::pin!(one_more.prove());
        assert!(!futures_now(promotion.as_mut()), "its peer holds its share");
        // Another peer gets a place at once, and its idle connection is not closed for the first
        // peer's promotion: one of that peer's own is.
        let (other, other_request) = established(&admission, "10.0.0.2").await;
        drop(other_request);
        other.flushed();
        assert!(!told_to_close(&other));
        drop(mine[5].1.take());
        mine[5].0.flushed();
        assert!(told_to_close(&mine[5].0));
        mine.remove(5);
        promotion.await.unwrap();
        // With none of its own idle, it gives up.
        let again = admission.admit(ip("10.0.0.1"), Instant::now()).unwrap();
        let _request = again.begin_request();
        assert_eq!(again.prove().await, Err(Refused::Busy));
        assert!(!told_to_close(&other));
    }

    /// Every established connection that finished a request while a promotion waited was closed:
    /// one waiting promotion closed many.
    #[tokio::test]
    async fn one_waiting_promotion_closes_one_idle_connection() {
        let admission = Admission::new(Vec::new());
        let mut established = all_established(&admission).await;
        let newcomer = admission.admit(ip("10.0.0.2"), Instant::now()).unwrap();
        let _request = newcomer.begin_request();
        let mut promotion = std::pin::pin!(newcomer.prove());
        assert!(!futures_now(promotion.as_mut()));
        for (ticket, request) in &mut established[..10] {
            drop(request.take());
            ticket.flushed();
        }
        let told = established.iter().filter(|(t, _)| told_to_close(t)).count();
        assert_eq!(told, 1);
    }

    /// Two promotions picked the same idle connection, and the second waited for a place that
    /// would not come.
    #[tokio::test]
    async fn two_waiting_promotions_close_two_idle_connections() {
        let admission = Admission::new(Vec::new());
        let mut established = all_established(&admission).await;
        for (ticket, request) in &mut established {
            drop(request.take());
            ticket.flushed();
        }
        let mut promotions = Vec::new();
        for peer in ["10.0.0.2", "10.0.0.3"] {
            let newcomer = admission.admit(ip(peer), Instant::now()).unwrap();
            let request = newcomer.begin_request();
            let mut promotion = Box::pin(async move {
                let proven = newcomer.prove().await;
                drop(request);
                proven
            });
            assert!(!futures_now(promotion.as_mut()));
            promotions.push(promotion);
        }
        let told: Vec<_> = established
            .iter()
            .enumerate()
            .filter(|(_, (t, _))| told_to_close(t))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(told, [0, 1], "the first two idle ones, once each");
        established.drain(..2);
        for promotion in promotions {
            assert_eq!(promotion.await, Ok(()));
        }
    }

    /// A connection whose answer was handed to hyper but not written out yet counted as idle, and
    /// was closed (cutting the answer off) for a waiting promotion.
    #[tokio::test]
    async fn a_connection_writing_an_answer_is_not_idle() {
        let admission = Admission::new(Vec::new());
        let mut established = all_established(&admission).await;
        // The first one's answer is handed to hyper, still being written; the second's is written.
        drop(established[0].1.take());
        drop(established[1].1.take());
        established[1].0.flushed();
        let newcomer = admission.admit(ip("10.0.0.2"), Instant::now()).unwrap();
        let _request = newcomer.begin_request();
        let mut promotion = std::pin::pin!(newcomer.prove());
        assert!(!futures_now(promotion.as_mut()));
        assert!(!told_to_close(&established[0].0), "still writing");
        assert!(told_to_close(&established[1].0), "idle");
        // A flush before the answer was handed over says nothing of it.
        let (third, request) = &mut established[2];
        third.flushed();
        drop(request.take());
        assert!(!told_to_close(third));
    }

    /// A connection closed to make room while its request was read: the request is refused, not
    /// run (its answer would not be sent).
    #[tokio::test]
    async fn a_connection_closed_to_make_room_proves_nothing() {
        let admission = Admission::new(Vec::new());
        let first = admission.admit(ip("127.0.0.1"), Instant::now()).unwrap();
        let _request = first.begin_request();
        let _newer: Vec<_> = (0..MAX_UNPROVEN)
            .map(|_| admission.admit(ip("127.0.0.1"), Instant::now()).unwrap())
            .collect();
        assert!(told_to_close(&first));
        assert_eq!(first.prove().await, Err(Refused::Closed));
        assert!(!first.granted());
    }
}
