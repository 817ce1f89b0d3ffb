//! Checked handles. A handle is never a pointer to memory: it encodes the
//! object's kind, a slot index and the slot's generation. A NULL handle is
//! `GC_ERROR_INVALID_ARGUMENT`; a handle of the wrong kind, a destroyed one
//! (its slot's generation moved on) or garbage is `GC_ERROR_INVALID_HANDLE`,
//! never undefined behaviour.

use graphcore_core::{Error, ErrorKind, Result};
use std::sync::RwLock;

const KIND_SHIFT: u32 = 56;
const INDEX_SHIFT: u32 = 32;
const INDEX_MASK: u64 = (1 << 24) - 1;

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

struct Slots<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

/// One table per handle kind, of graphcore-core objects (cheap, reference
/// counted clones). Lookups take a read lock and clone the object, so calls
/// on different objects never wait on each other, and an object lives until
/// the last call using it returns, even if its handle is destroyed meanwhile.
pub(crate) struct Registry<T> {
    kind: u8,
    name: &'static str,
    table: RwLock<Slots<T>>,
}

/// The C name of the handle kind encoded in `h`, for messages.
fn kind_name(h: u64) -> &'static str {
    match (h >> KIND_SHIFT) as u8 {
        1 => "gc_context",
        2 => "gc_stream",
        3 => "gc_pool",
        4 => "gc_module",
        5 => "gc_function",
        6 => "gc_graph",
        7 => "gc_exec",
        8 => "gc_runner",
        9 => "gc_event",
        _ => "not a graphcore handle",
    }
}

impl<T: Clone> Registry<T> {
    /// An empty table for handles of `kind` (its C type name is `name`).
    pub(crate) const fn new(kind: u8, name: &'static str) -> Self {
        Registry {
            kind,
            name,
            table: RwLock::new(Slots {
                slots: Vec::new(),
                free: Vec::new(),
            }),
        }
    }

    /// Stores `value` and returns its handle.
    pub(crate) fn insert(&self, value: T) -> Result<u64> {
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        let index = match t.free.pop() {
            Some(i) => i,
            None => {
                let i = t.slots.len();
                if i as u64 > INDEX_MASK {
                    return Err(Error::new(
                        ErrorKind::OutOfMemory,
                        format!("too many live {} handles", self.name),
                    ));
                }
                t.slots.push(Slot {
                    generation: 1,
                    value: None,
                });
                i as u32
            }
        };
        let slot = &mut t.slots[index as usize];
        slot.value = Some(value);
        let h = (self.kind as u64) << KIND_SHIFT
            | (index as u64) << INDEX_SHIFT
            | slot.generation as u64;
        Ok(h)
    }

    fn decode(&self, h: u64, arg: &str) -> Result<(usize, u32)> {
        if h == 0 {
            return Err(Error::invalid_argument(format!("`{arg}` is NULL")));
        }
        if (h >> KIND_SHIFT) as u8 != self.kind {
            return Err(Error::new(
                ErrorKind::InvalidHandle,
                format!("`{arg}` is not a {} handle ({})", self.name, kind_name(h)),
            ));
        }
        Ok((((h >> INDEX_SHIFT) & INDEX_MASK) as usize, h as u32))
    }

    fn stale(&self, arg: &str) -> Error {
        Error::new(
            ErrorKind::InvalidHandle,
            format!(
                "`{arg}` is a destroyed (or never valid) {} handle",
                self.name
            ),
        )
    }

    /// The object behind handle `h` (`arg` names the parameter in errors).
    pub(crate) fn get(&self, h: u64, arg: &str) -> Result<T> {
        let (index, generation) = self.decode(h, arg)?;
        let t = self.table.read().unwrap_or_else(|e| e.into_inner());
        match t.slots.get(index) {
            Some(Slot {
                generation: g,
                value: Some(v),
            }) if *g == generation => Ok(v.clone()),
            _ => Err(self.stale(arg)),
        }
    }

    /// Runs `f` on the object behind `h` under the table's read lock,
    /// without cloning it: for short, hot calls (pool alloc/free, launch).
    /// Creating or destroying handles of this kind waits until `f` returns.
    pub(crate) fn with<R>(&self, h: u64, arg: &str, f: impl FnOnce(&T) -> Result<R>) -> Result<R> {
        let (index, generation) = self.decode(h, arg)?;
        let t = self.table.read().unwrap_or_else(|e| e.into_inner());
        match t.slots.get(index) {
            Some(Slot {
                generation: g,
                value: Some(v),
            }) if *g == generation => f(v),
            _ => Err(self.stale(arg)),
        }
    }

    /// Removes handle `h`; NULL is a no-op (`Ok(None)`).
    pub(crate) fn remove(&self, h: u64, arg: &str) -> Result<Option<T>> {
        if h == 0 {
            return Ok(None);
        }
        let (index, generation) = self.decode(h, arg)?;
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        let slot = match t.slots.get_mut(index) {
            Some(s) if s.generation == generation && s.value.is_some() => s,
            _ => return Err(self.stale(arg)),
        };
        let v = slot.value.take();
        slot.generation = slot.generation.wrapping_add(1).max(1);
        t.free.push(index as u32);
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_checked() {
        let a: Registry<u32> = Registry::new(3, "gc_pool");
        let b: Registry<u32> = Registry::new(2, "gc_stream");
        let h = a.insert(7).unwrap();
        assert_eq!(a.get(h, "pool").unwrap(), 7);
        assert_eq!(
            b.get(h, "stream").unwrap_err().kind(),
            ErrorKind::InvalidHandle
        );
        assert_eq!(
            a.get(0, "pool").unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        a.remove(h, "pool").unwrap();
        assert_eq!(
            a.get(h, "pool").unwrap_err().kind(),
            ErrorKind::InvalidHandle
        );
        assert_eq!(
            a.remove(h, "pool").unwrap_err().kind(),
            ErrorKind::InvalidHandle
        );
        // The slot is reused with a new generation: the old handle stays dead.
        let h2 = a.insert(8).unwrap();
        assert_ne!(h, h2);
        assert_eq!(
            a.get(h, "pool").unwrap_err().kind(),
            ErrorKind::InvalidHandle
        );
        assert_eq!(a.get(h2, "pool").unwrap(), 8);
        assert!(a.remove(0, "pool").unwrap().is_none());
        assert_eq!(
            a.get(0x0300_0000_0000_0001 | (5 << 32), "pool")
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidHandle
        );
    }
}
