//! What slots keep with an entry between its hooks, without the chain knowing what it means: a word per
//! slot ([`SlotContext::keep`](super::SlotContext::keep)), whether the slot's exit hook must see the
//! entry's exit even once the slot is no longer active
//! ([`keep_until_exit`](super::SlotContext::keep_until_exit)), and the attachments.
//!
//! Each word is filed under its slot's position in the chain, which the chain sets in the context
//! before it calls a hook. One word of a slot that marked its exit and one of a slot that did not live
//! inline (the built-in slots keep at most these two: the hot-parameter slot's generation, the flow
//! slot's borrowed pass); more words and the attachments take the heap. An admitted entry keeps only
//! the words marked for its exit: one inline, packed with its slot's key into a `u64`, or every word
//! and the attachments in one box, so that it is no bigger than an entry that keeps nothing.

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use super::Attachment;

/// Marks a boxed [`Word`] that goes with the entry to its exit.
const TO_EXIT: u32 = 1 << 31;

/// One slot's word. `key` is the slot's position + 1 (0: an empty place), with [`TO_EXIT`] when the
/// slot marked its exit.
#[derive(Debug, Clone, Copy, Default)]
struct Word {
    key: u32,
    word: u64,
}

impl Word {
    /// The slot's position + 1.
    #[inline]
    fn slot(self) -> u32 {
        self.key & !TO_EXIT
    }

    #[inline]
    fn to_exit(self) -> bool {
        self.key & TO_EXIT != 0
    }
}

/// The key of the slot at `position`.
#[inline]
fn key(position: u32) -> u32 {
    // A chain holds far fewer than 2^31 slots.
    (position + 1) & !TO_EXIT
}

/// Bits of a packed word (its slot's key takes the byte above).
const PACKED_BITS: u32 = 56;

/// `word` of the slot `key`, packed into one `u64` (never 0), if the key fits in a byte and the word
/// in 56 bits.
#[inline]
fn pack(key: u32, word: u64) -> Option<u64> {
    let key = u64::from(key);
    (key >> (64 - PACKED_BITS) == 0 && word >> PACKED_BITS == 0)
        .then_some(key << PACKED_BITS | word)
}

/// The word of the slot `key` in `packed`, if it is that slot's.
#[inline]
fn unpack(packed: u64, key: u32) -> Option<u64> {
    (packed >> PACKED_BITS == u64::from(key)).then_some(packed & ((1 << PACKED_BITS) - 1))
}

/// What does not fit inline: the attachments, and the words of more slots.
#[derive(Debug, Default)]
pub(crate) struct Extras {
    attachments: Vec<Attachment>,
    /// Two words in the box itself: an admitted entry that keeps more than one word for its exit, or
    /// keeps one besides its attachments, allocates nothing more than the box for them.
    words: [Word; 2],
    more: Vec<Word>,
}

impl Extras {
    fn find(&self, key: u32) -> Option<u64> {
        let mut words = self.words.iter().chain(self.more.iter());
        words.find(|w| w.slot() == key).map(|w| w.word)
    }

    fn take(&mut self, key: u32) -> Option<u64> {
        let mut words = self.words.iter_mut().chain(self.more.iter_mut());
        words
            .find(|w| w.slot() == key)
            .map(|w| std::mem::take(w).word)
    }

    fn push(&mut self, word: Word) {
        match self.words.iter_mut().find(|w| w.key == 0) {
            Some(free) => *free = word,
            None => self.more.push(word),
        }
    }
}

/// An optional box of [`Extras`] whose drop is inlined down to a null check (the box is the rare
/// case): the compiler's drop glue for the option was a call on every entry, ≈ 13 instructions.
#[derive(Debug, Default)]
pub(crate) struct MaybeExtras(ManuallyDrop<Option<Box<Extras>>>);

impl MaybeExtras {
    const NONE: MaybeExtras = MaybeExtras(ManuallyDrop::new(None));
}

impl Drop for MaybeExtras {
    #[inline]
    fn drop(&mut self) {
        if self.0.is_some() {
            drop_extras(&mut self.0);
        }
    }
}

#[cold]
#[inline(never)]
fn drop_extras(extras: &mut Option<Box<Extras>>) {
    drop(extras.take());
}

impl Deref for MaybeExtras {
    type Target = Option<Box<Extras>>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for MaybeExtras {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// What slots keep with an entry while it is admitted (in [`SlotContext`](super::SlotContext)).
#[derive(Debug, Default)]
pub(crate) struct Kept {
    /// The word of a slot that did not mark its exit (key 0: none).
    word: Word,
    /// The word of a slot that marked its exit, packed as an admitted entry keeps it (0: none).
    exit: u64,
    extras: MaybeExtras,
}

impl Kept {
    /// The word the slot at `position` keeps.
    #[inline]
    pub(crate) fn get(&self, position: u32) -> Option<u64> {
        let key = key(position);
        if let Some(word) = unpack(self.exit, key) {
            return Some(word);
        }
        if self.word.key == key {
            return Some(self.word.word);
        }
        self.extras.as_ref()?.find(key)
    }

    /// Whether the slot at `position` keeps a word.
    #[inline]
    pub(crate) fn holds(&self, position: u32) -> bool {
        self.get(position).is_some()
    }

    /// Keeps `word` for the slot at `position` (replacing its word), for its exit too if `to_exit`.
    pub(crate) fn put(&mut self, position: u32, word: u64, to_exit: bool) {
        let key = key(position);
        self.take_key(key);
        if to_exit {
            if self.exit == 0 {
                if let Some(packed) = pack(key, word) {
                    self.exit = packed;
                    return;
                }
            }
        } else if self.word.key == 0 {
            self.word = Word { key, word };
            return;
        }
        let key = key | if to_exit { TO_EXIT } else { 0 };
        self.extras_mut().push(Word { key, word });
    }

    /// Takes the word of the slot at `position` back (and its exit mark).
    pub(crate) fn take(&mut self, position: u32) -> Option<u64> {
        self.take_key(key(position))
    }

    fn take_key(&mut self, key: u32) -> Option<u64> {
        if let Some(word) = unpack(self.exit, key) {
            self.exit = 0;
            return Some(word);
        }
        if self.word.key == key {
            return Some(std::mem::take(&mut self.word).word);
        }
        self.extras.as_mut()?.take(key)
    }

    fn extras_mut(&mut self) -> &mut Extras {
        self.extras.get_or_insert_with(Box::default)
    }

    pub(crate) fn attachments(&self) -> &[Attachment] {
        self.extras.as_ref().map_or(&[], |e| &e.attachments)
    }

    pub(crate) fn attach(&mut self, attachment: Attachment) {
        self.extras_mut().attachments.push(attachment);
    }

    /// The attachments, to remove some.
    pub(crate) fn attachments_mut(&mut self) -> Option<&mut Vec<Attachment>> {
        Some(&mut self.extras.as_mut()?.attachments)
    }

    /// What the entry keeps once admitted: the words marked for its exit and the attachments, taken
    /// out in place (the context is dropped next).
    #[inline]
    pub(crate) fn take_exit(&mut self) -> ExitKept {
        if self.extras.is_none() {
            // The common case: at most one word for the exit, packed already.
            return ExitKept {
                inline: std::mem::take(&mut self.exit),
                extras: MaybeExtras::NONE,
            };
        }
        self.take_boxed()
    }

    #[cold]
    fn take_boxed(&mut self) -> ExitKept {
        let mut extras = self.extras.take().unwrap_or_default();
        let inline = std::mem::take(&mut self.exit);
        let inline = (inline != 0).then_some(Word {
            key: (inline >> PACKED_BITS) as u32 | TO_EXIT,
            word: inline & ((1 << PACKED_BITS) - 1),
        });
        let boxed = extras.words.iter().chain(extras.more.iter()).copied();
        let (mut words, mut more, mut n) = ([Word::default(); 2], Vec::new(), 0);
        for w in inline.into_iter().chain(boxed).filter(|w| w.to_exit()) {
            match words.get_mut(n) {
                Some(place) => *place = w,
                None => more.push(w),
            }
            n += 1;
        }
        if extras.attachments.is_empty() {
            let packed = pack(words[0].slot(), words[0].word);
            match (n, packed) {
                (0, _) => return ExitKept::default(),
                (1, Some(inline)) => {
                    return ExitKept {
                        inline,
                        extras: MaybeExtras::NONE,
                    };
                }
                _ => {}
            }
        }
        extras.words = words;
        extras.more = more;
        ExitKept {
            inline: 0,
            extras: MaybeExtras(ManuallyDrop::new(Some(extras))),
        }
    }
}

/// What an admitted entry keeps for its exit: the words of the slots that marked their exit, and the
/// attachments. In the place of an optional box and a `u64`: one slot's word inline, packed, or every
/// word and the attachments boxed.
#[derive(Debug, Default)]
pub(crate) struct ExitKept {
    /// A packed word (0: none).
    inline: u64,
    extras: MaybeExtras,
}

impl ExitKept {
    /// The word the slot at `position` kept for the exit: `Some` exactly when it marked its exit.
    #[inline]
    pub(crate) fn get(&self, position: u32) -> Option<u64> {
        let key = key(position);
        if let Some(word) = unpack(self.inline, key) {
            return Some(word);
        }
        self.extras.as_ref()?.find(key)
    }

    /// Whether the slot at `position` marked its exit.
    #[inline]
    pub(crate) fn marked(&self, position: u32) -> bool {
        self.get(position).is_some()
    }

    /// Whether no slot marked its exit and nothing is attached (the common case).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.inline == 0 && self.extras.is_none()
    }

    pub(crate) fn attachments(&self) -> &[Attachment] {
        self.extras.as_ref().map_or(&[], |e| &e.attachments)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn words_are_filed_per_slot_and_only_marked_ones_reach_the_exit() {
        let mut kept = Kept::default();
        assert_eq!(kept.get(0), None);
        kept.put(0, 10, false);
        kept.put(3, 30, true);
        kept.put(7, 70, true);
        kept.put(3, 31, true);
        assert_eq!(
            (kept.get(0), kept.get(3), kept.get(7), kept.get(5)),
            (Some(10), Some(31), Some(70), None)
        );
        assert!(kept.holds(7) && !kept.holds(1));
        let exit = kept.take_exit();
        assert!(exit.extras.is_some(), "two words for the exit");
        assert_eq!(
            (exit.get(0), exit.get(3), exit.get(7)),
            (None, Some(31), Some(70))
        );
        assert!(exit.attachments().is_empty());
    }

    #[test]
    fn one_word_for_the_exit_stays_inline_and_taking_it_back_unmarks_the_exit() {
        let mut kept = Kept::default();
        kept.put(2, 5, false);
        kept.put(6, 7, true);
        let exit = kept.take_exit();
        assert!(exit.extras.is_none() && exit.inline != 0);
        assert!(exit.marked(6) && !exit.marked(2));

        let mut kept = Kept::default();
        kept.put(6, 7, true);
        assert_eq!(kept.take(6), Some(7));
        assert_eq!(kept.take(6), None);
        let exit = kept.take_exit();
        assert!(exit.extras.is_none() && exit.inline == 0);
    }

    #[test]
    fn a_third_word_and_attachments_take_the_heap() {
        let mut kept = Kept::default();
        for p in 0..5 {
            kept.put(p, u64::from(p) + 100, p % 2 == 0);
        }
        assert_eq!(kept.take(1), Some(101));
        kept.put(9, 9, false);
        assert_eq!(kept.get(9), Some(9));
        kept.attach(Arc::new(1u8));
        let exit = kept.take_exit();
        assert_eq!(
            (0..10).filter_map(|p| exit.get(p)).collect::<Vec<_>>(),
            [100, 102, 104]
        );
        assert_eq!(exit.attachments().len(), 1);

        let mut kept = Kept::default();
        kept.attach(Arc::new(1u8));
        let exit = kept.take_exit();
        assert!(!exit.marked(0));
        assert_eq!(exit.attachments().len(), 1);
    }

    #[test]
    fn a_word_or_a_position_too_large_to_pack_is_boxed() {
        for (position, word) in [
            (3, u64::MAX),
            (3, 1 << 56),
            (254, 1),
            (255, 1),
            (100_000, 5),
        ] {
            let mut kept = Kept::default();
            kept.put(position, word, true);
            let exit = kept.take_exit();
            assert_eq!(exit.get(position), Some(word), "{position} {word}");
            assert_eq!(exit.extras.is_some(), position >= 255 || word >> 56 != 0);
            assert!(!exit.marked(position + 1));
        }
    }

    #[test]
    fn an_admitted_entry_keeps_no_more_than_an_optional_box_and_a_word() {
        assert_eq!(
            std::mem::size_of::<ExitKept>(),
            std::mem::size_of::<(Option<Box<Vec<Attachment>>>, u64)>()
        );
    }
}
