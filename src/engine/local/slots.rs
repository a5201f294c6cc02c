//! Which KV slot a prompt goes to: the policy alone, with no llama.cpp in
//! it, so it is tested as plain data. The model thread applies the
//! [`Placement`] to its cache.
//!
//! - A prompt with a key (the HUD's questions) gets the slot holding that
//!   key, else the least recently used one.
//! - A keyless prompt (a chat) gets the keyless slot sharing its longest
//!   prefix. When using that slot in place would cut its cache short (the
//!   prompt branches off inside it), the cache is forked into the least
//!   recently used other slot, so both branches stay cached.
//! - Otherwise the least recently used slot, cleared.

/// A slot's key and the tokens its cache holds, position by position.
#[derive(Debug, Clone)]
struct Slot<T> {
    key: Option<String>,
    tokens: Vec<T>,
    last_used: u64,
}

/// What to do to the cache before decoding a prompt into slot
/// [`Placement::slot`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Use the slot as it is; its prefix shared with the prompt is kept.
    Reuse(usize),
    /// Clear the slot, then use it.
    Clear(usize),
    /// Clear `to`, copy `from` into it and cut the copy to its first `keep`
    /// tokens, then use `to`.
    Fork { from: usize, to: usize, keep: usize },
}

impl Placement {
    /// The slot the prompt is decoded into.
    pub fn slot(self) -> usize {
        match self {
            Placement::Reuse(i) | Placement::Clear(i) => i,
            Placement::Fork { to, .. } => to,
        }
    }
}

/// The slots' bookkeeping: keys, cached tokens, recency.
#[derive(Debug)]
pub struct Slots<T> {
    slots: Vec<Slot<T>>,
    clock: u64,
}

impl<T: PartialEq + Clone> Slots<T> {
    pub fn new(count: usize) -> Self {
        let slot = Slot {
            key: None,
            tokens: Vec::new(),
            last_used: 0,
        };
        Slots {
            slots: vec![slot; count.max(1)],
            clock: 0,
        }
    }

    pub fn count(&self) -> usize {
        self.slots.len()
    }

    /// Whether any slot holds cached tokens.
    pub fn holds_any(&self) -> bool {
        self.slots.iter().any(|s| !s.tokens.is_empty())
    }

    /// Picks the slot for `tokens` under `key`, marks it used and keyed.
    /// The caller applies the placement to the cache, and to the tokens
    /// here with [`Slots::clear`], [`Slots::fork`] and [`Slots::truncate`].
    pub fn place(&mut self, key: Option<&str>, tokens: &[T]) -> Placement {
        self.clock += 1;
        let placement = match key {
            Some(k) => match self.slots.iter().position(|s| s.key.as_deref() == Some(k)) {
                Some(i) => Placement::Reuse(i),
                None => Placement::Clear(self.lru(None)),
            },
            None => {
                let best = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.key.is_none())
                    .map(|(i, s)| (i, common_prefix(&s.tokens, tokens)))
                    .filter(|&(_, n)| n > 0)
                    .max_by_key(|&(_, n)| n);
                match best {
                    Some((i, n)) if n < self.slots[i].tokens.len() && self.slots.len() > 1 => Placement::Fork {
                        from: i,
                        to: self.lru(Some(i)),
                        keep: n,
                    },
                    Some((i, _)) => Placement::Reuse(i),
                    None => Placement::Clear(self.lru(None)),
                }
            }
        };
        let slot = &mut self.slots[placement.slot()];
        slot.key = key.map(str::to_owned);
        slot.last_used = self.clock;
        placement
    }

    /// The least recently used slot other than `keep`.
    fn lru(&self, keep: Option<usize>) -> usize {
        (0..self.slots.len())
            .filter(|&i| Some(i) != keep)
            .min_by_key(|&i| self.slots[i].last_used)
            .unwrap_or(0)
    }

    /// The tokens slot `index` holds.
    pub fn tokens(&self, index: usize) -> &[T] {
        &self.slots[index].tokens
    }

    /// Records tokens decoded into slot `index`.
    pub fn extend(&mut self, index: usize, tokens: &[T]) {
        self.slots[index].tokens.extend_from_slice(tokens);
    }

    pub fn clear(&mut self, index: usize) {
        self.slots[index].tokens.clear();
    }

    pub fn truncate(&mut self, index: usize, len: usize) {
        self.slots[index].tokens.truncate(len);
    }

    /// The key slot `index` was last used under.
    pub fn key(&self, index: usize) -> Option<&str> {
        self.slots[index].key.as_deref()
    }

    /// The slots holding tokens, keyed ones first (the HUD's questions come
    /// back), then the most recently used.
    pub fn by_worth(&self) -> Vec<usize> {
        let mut held: Vec<usize> = (0..self.slots.len())
            .filter(|&i| !self.slots[i].tokens.is_empty())
            .collect();
        held.sort_by_key(|&i| (self.slots[i].key.is_none(), std::cmp::Reverse(self.slots[i].last_used)));
        held
    }

    /// Records a cache put back into slot `index` (after a reload).
    pub fn restore(&mut self, index: usize, key: Option<String>, tokens: Vec<T>) {
        self.clock += 1;
        self.slots[index] = Slot {
            key,
            tokens,
            last_used: self.clock,
        };
    }

    /// Records that slot `from`'s cache was copied into `to`.
    pub fn fork(&mut self, from: usize, to: usize) {
        self.slots[to].tokens = self.slots[from].tokens.clone();
    }
}

/// How many leading tokens `a` and `b` share.
pub fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places `tokens` and records them as decoded, as the model thread does.
    fn run(slots: &mut Slots<u32>, key: Option<&str>, tokens: &[u32]) -> Placement {
        let placement = slots.place(key, tokens);
        match placement {
            Placement::Clear(i) => slots.clear(i),
            Placement::Fork { from, to, keep } => {
                slots.fork(from, to);
                slots.truncate(to, keep);
            }
            Placement::Reuse(_) => {}
        }
        let i = placement.slot();
        let shared = common_prefix(slots.tokens(i), tokens);
        slots.truncate(i, shared);
        slots.extend(i, &tokens[shared..]);
        placement
    }

    #[test]
    fn a_key_keeps_its_slot_and_others_never_take_its_cache() {
        let mut s = Slots::new(2);
        let q = run(&mut s, Some("hud:questions"), &[1, 2, 3]);
        assert_eq!(q, Placement::Clear(0));
        // A chat sharing the prefix does not reuse the keyed slot.
        assert_eq!(run(&mut s, None, &[1, 2, 9]), Placement::Clear(1));
        assert_eq!(run(&mut s, Some("hud:questions"), &[1, 2, 3, 4]), Placement::Reuse(0));
        assert_eq!(s.tokens(0), &[1, 2, 3, 4]);
    }

    #[test]
    fn a_growing_chat_reuses_its_slot() {
        let mut s = Slots::new(3);
        let first = run(&mut s, None, &[1, 2, 3]);
        assert_eq!(run(&mut s, None, &[1, 2, 3, 4, 5]), Placement::Reuse(first.slot()));
        assert_eq!(run(&mut s, None, &[1, 2, 3, 4, 5, 6]), Placement::Reuse(first.slot()));
    }

    #[test]
    fn a_branch_inside_a_cached_prompt_forks_it() {
        let mut s = Slots::new(2);
        run(&mut s, None, &[1, 2, 3, 4]);
        // Branches off after two tokens: both branches stay cached.
        let p = run(&mut s, None, &[1, 2, 7]);
        assert_eq!(
            p,
            Placement::Fork {
                from: 0,
                to: 1,
                keep: 2
            }
        );
        assert_eq!(s.tokens(0), &[1, 2, 3, 4]);
        assert_eq!(s.tokens(1), &[1, 2, 7]);
        // With one slot there is nowhere to fork to: the slot is cut.
        let mut one = Slots::new(1);
        run(&mut one, None, &[1, 2, 3]);
        assert_eq!(run(&mut one, None, &[1, 9]), Placement::Reuse(0));
        assert_eq!(one.tokens(0), &[1, 9]);
    }

    #[test]
    fn keyed_slots_are_worth_keeping_first_then_the_most_recent() {
        let mut s = Slots::new(4);
        run(&mut s, None, &[1]);
        run(&mut s, Some("hud"), &[2]);
        run(&mut s, None, &[3]);
        assert_eq!(s.by_worth(), vec![1, 2, 0]);
        let mut back = Slots::new(4);
        back.restore(2, Some("hud".into()), vec![2]);
        assert_eq!((back.key(2), back.tokens(2)), (Some("hud"), &[2][..]));
        // A restored slot counts as used: the next keyless prompt evicts another.
        assert_eq!(run(&mut back, None, &[5]), Placement::Clear(0));
    }

    #[test]
    fn unrelated_prompts_evict_the_least_recently_used() {
        let mut s = Slots::new(2);
        run(&mut s, None, &[1]);
        run(&mut s, None, &[2]);
        run(&mut s, None, &[1, 1]); // slot 0 used again
        assert_eq!(run(&mut s, None, &[3]), Placement::Clear(1));
        assert_eq!(run(&mut s, Some("k"), &[4]), Placement::Clear(0));
    }
}
